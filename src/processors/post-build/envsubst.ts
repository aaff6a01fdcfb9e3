/**
 * Flux's envsubst dialect (github.com/fluxcd/pkg/envsubst v1.7.0, the code kustomize-controller
 * runs for `spec.postBuild`; a fork of drone/envsubst): `${var}`, `${var:=default}`,
 * `${var:-default}`, `${var=default}`, `${#var}`, `${var^}`, `${var^^}`, `${var,}`, `${var,,}`,
 * `${var:offset}`, `${var:offset:length}`, `${var#pattern}`, `${var##pattern}`,
 * `${var%pattern}`, `${var%%pattern}`, `${var/old/new}`, `${var//old/new}`, `${var/#old/new}`,
 * `${var/%old/new}`; `$$` is a literal `$` (so `$${var}` stays `${var}`), and a bare `$var` is
 * left alone. The scanner and parser are a line-by-line port of parse/scan.go and parse/parse.go,
 * quirks included, on byte strings (go-text.ts) — the same text parses to the same tree, or fails
 * with the same error, as in Flux.
 *
 * Where Hoist differs (docs/decisions.md, "Post-build substitution"):
 * - `${var:?message}` fails naming the variable and the message when the variable is unset or
 *   empty, as in a shell. Flux's envsubst reads `:?` as one more default (the message becomes the
 *   value); its README lists it as unsupported. (`${var?message}` without the colon does not
 *   parse, there as here.)
 * - Bounds: expressions nest at most MAX_NESTING deep (Go recurses without a limit), every byte
 *   produced and every pattern comparison is counted against the caller's budget, and a
 *   `${var:offset:length}` with a negative length is an error (Go's slice would panic).
 *
 * Variables are substituted once: a value is written as it is, never parsed again.
 *
 * Pure but for the budget counters.
 */
import { BadLength, lookupFunc, type FuncBudget } from './envsubst-funcs.ts';
import { decodeRune, fromBytes, isDigit, isLetter } from './go-text.ts';

/** the deepest `${…${…}…}` nesting parsed; deeper input is refused (a hostile `${a:=${b:=…}}`) */
export const MAX_NESTING = 32;

/** envsubst's parse errors, by their Go messages (parse/parse.go) */
export type ParseProblem =
  | 'bad substitution'
  | 'missing closing brace'
  | 'unable to parse variable name'
  | 'unable to parse substitution within function'
  | 'unable to parse default function'
  | 'nested too deep';

export class EnvsubstError extends Error {
  constructor(
    message: string,
    /** byte offset in the text where it was noticed */
    readonly offset: number,
    readonly kind: 'parse' | 'unset' | 'required' | 'value' | 'budget',
    /** the variable, for 'unset', 'required' and 'value' */
    readonly variable?: string,
  ) {
    super(message);
  }
}

export type Node = TextNode | FuncNode | ListNode;
export interface TextNode {
  type: 'text';
  value: string;
}
export interface FuncNode {
  type: 'func';
  /** the variable */
  param: string;
  /** the operator: '' for `${var}`, ':=', '#', '//' … */
  name: string;
  args: Node[];
  /** byte offset of the `$` */
  offset: number;
}
export interface ListNode {
  type: 'list';
  nodes: Node[];
}

// ---- scanner (parse/scan.go) ----

const EOF = 0;
type Token = 'illegal' | 'eof' | 'ident' | 'lbrack' | 'rbrack';
const SCAN_IDENT = 1;
const SCAN_LBRACK = 2;
const SCAN_RBRACK = 4;
const SCAN_ESCAPE = 8;
const ESC_DOLLAR = 1;
const ESC_BACKSLASH = 2;
const ESC_ALL = ESC_DOLLAR | ESC_BACKSLASH;
type Accept = (r: number, i: number) => boolean;

const DOLLAR = 0x24;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const BACKSLASH = 0x5c;
const SLASH = 0x2f;

/**
 * Go's scanner edits its buffer in place (`skip` cuts the escape byte out, shifting the rest), so
 * the same text can read differently after an escape. The buffer is kept as Go holds it, in two
 * parts: the bytes before the cursor (`done`, a preallocated array: the buffer only ever shrinks)
 * and those after it (`back`, bytes put back by unread, then `src` from `next`). Every operation
 * is O(1) but unread, which moves at most a few bytes.
 */
class Scanner {
  private readonly done: Uint8Array;
  private pos = 0;
  private readonly back: number[] = [];
  private next = 0;
  start = 0;
  private width = 0;
  mode = 0;
  escapeChars = 0;
  accept: Accept = acceptRune;

  constructor(private readonly src: string) {
    this.done = new Uint8Array(src.length + 4);
  }

  /** where the cursor is in the original text (for messages; escapes make it approximate) */
  offset(): number {
    return this.next - this.back.length;
  }

  private ahead(k: number): number | undefined {
    const b = this.back.length;
    if (k < b) return this.back[b - 1 - k];
    const i = this.next + (k - b);
    return i < this.src.length ? this.src.charCodeAt(i) : undefined;
  }

  private take(): number {
    const b = this.back.pop();
    if (b !== undefined) return b;
    return this.src.charCodeAt(this.next++);
  }

  read(): number {
    const b0 = this.ahead(0);
    if (b0 === undefined) {
      this.width = 0;
      return EOF;
    }
    let r: number;
    let w: number;
    if (b0 < 0x80) [r, w] = [b0, 1];
    else {
      let s = '';
      for (let k = 0; k < 4; k++) {
        const b = this.ahead(k);
        if (b === undefined) break;
        s += String.fromCharCode(b);
      }
      [r, w] = decodeRune(s, 0);
    }
    for (let k = 0; k < w; k++) this.done[this.pos++] = this.take();
    this.width = w;
    return r;
  }

  unread(): void {
    for (let k = 0; k < this.width; k++) this.back.push(this.done[--this.pos]!);
  }

  /** cut the byte before the cursor out of the buffer: the next byte moves under the cursor */
  skip(): void {
    this.pos--;
    this.done[this.pos++] = this.take();
  }

  peek(): number {
    const r = this.read();
    this.unread();
    return r;
  }

  string(): string {
    let s = '';
    for (let i = this.start; i < this.pos; i += 8192) s += String.fromCharCode(...this.done.subarray(i, Math.min(this.pos, i + 8192)));
    return s;
  }

  scan(): Token {
    this.start = this.pos;
    const r = this.read();
    if (r === EOF) return 'eof';
    if (this.scanLbrack(r)) return 'lbrack';
    if (this.scanRbrack(r)) return 'rbrack';
    if (this.scanIdent(r)) return 'ident';
    return 'illegal';
  }

  private scanIdent(r: number): boolean {
    if ((this.mode & SCAN_IDENT) === 0) return false;
    if (this.scanEscaped(r)) this.skip();
    else if (!this.accept(r, this.pos - this.start)) return false;
    for (;;) {
      const c = this.read();
      if (c === EOF) {
        this.unread();
        break;
      }
      if (this.scanLbrack(c)) {
        this.unread();
        this.unread();
        break;
      }
      if (this.scanEscaped(c)) {
        this.skip();
        continue;
      }
      if (!this.accept(c, this.pos - this.start)) {
        this.unread();
        break;
      }
    }
    return true;
  }

  private scanLbrack(r: number): boolean {
    if ((this.mode & SCAN_LBRACK) === 0) return false;
    if (r === DOLLAR) {
      if (this.read() === LBRACE) return true;
      this.unread();
    }
    return false;
  }

  private scanRbrack(r: number): boolean {
    return (this.mode & SCAN_RBRACK) !== 0 && r === RBRACE;
  }

  private scanEscaped(r: number): boolean {
    if ((this.mode & SCAN_ESCAPE) === 0) return false;
    if (r === DOLLAR && (this.escapeChars & ESC_DOLLAR) !== 0 && this.peek() === DOLLAR) return true;
    if (r === BACKSLASH && (this.escapeChars & ESC_BACKSLASH) !== 0) {
      const p = this.peek();
      return p === SLASH || p === BACKSLASH;
    }
    return false;
  }
}

const acceptRune: Accept = () => true;
const acceptIdent: Accept = (r) => isLetter(r) || isDigit(r) || r === 0x5f;
const acceptColon: Accept = (r) => r === 0x3a;
const acceptOneHash: Accept = (r, i) => r === 0x23 && i === 1;
const acceptNotClosing: Accept = (r) => r !== RBRACE;
const acceptHashFunc: Accept = (r, i) => r === 0x23 && i < 3;
const acceptPercentFunc: Accept = (r, i) => r === 0x25 && i < 3;
const acceptDefaultFunc: Accept = (r, i) => (i === 1 && r === 0x3a) || (i === 2 && (r === 0x3d || r === 0x2d || r === 0x3f || r === 0x2b));
const acceptReplaceFunc: Accept = (r, i) => (i === 1 && r === SLASH) || (i === 2 && (r === SLASH || r === 0x23 || r === 0x25));
const acceptOneEqual: Accept = (r, i) => i === 1 && r === 0x3d;
const acceptOneColon: Accept = (r, i) => i === 1 && r === 0x3a;
const rejectColonClose: Accept = (r) => r !== 0x3a && r !== RBRACE;
const acceptSlash: Accept = (r) => r === SLASH;
const acceptNotSlash: Accept = (r) => r !== SLASH;
const acceptCasingFunc: Accept = (r, i) => (r === 0x2c || r === 0x5e) && i < 3;

// ---- parser (parse/parse.go) ----

class Parser {
  private readonly s: Scanner;
  constructor(src: string) {
    this.s = new Scanner(src);
  }

  private fail(problem: ParseProblem): never {
    throw new EnvsubstError(problem, this.s.offset(), 'parse');
  }

  /** parseAny, its tail recursion as a loop (the same tree, flattened into one list) */
  parseAll(): Node {
    const nodes: Node[] = [];
    for (;;) {
      const s = this.s;
      s.accept = acceptRune;
      s.mode = SCAN_IDENT | SCAN_LBRACK | SCAN_ESCAPE;
      s.escapeChars = ESC_DOLLAR;
      const offset = s.offset();
      const tok = s.scan();
      if (tok === 'ident') nodes.push({ type: 'text', value: s.string() });
      else if (tok === 'eof') break;
      else if (tok === 'lbrack') nodes.push(this.parseFunc(1, offset));
      else this.fail('bad substitution');
    }
    if (nodes.length === 1) return nodes[0]!;
    return { type: 'list', nodes };
  }

  private parseFunc(depth: number, offset: number): Node {
    if (depth > MAX_NESTING) this.fail('nested too deep');
    const s = this.s;
    s.escapeChars = ESC_ALL;
    if (s.peek() === 0x23) return this.parseLenFunc(offset);
    s.accept = acceptIdent;
    s.mode = SCAN_IDENT;
    if (s.scan() !== 'ident') this.fail('unable to parse variable name');
    const name = s.string();
    switch (s.peek()) {
      case 0x3a:
        return this.parseDefaultOrSubstr(name, depth, offset);
      case 0x3d:
        return this.parseDefaultFunc(name, depth, offset);
      case 0x2c:
      case 0x5e:
        return this.parseCasingFunc(name, offset);
      case SLASH:
        return this.parseReplaceFunc(name, depth, offset);
      case 0x23:
        return this.parseRemoveFunc(name, acceptHashFunc, depth, offset);
      case 0x25:
        return this.parseRemoveFunc(name, acceptPercentFunc, depth, offset);
    }
    s.accept = acceptIdent;
    s.mode = SCAN_RBRACK;
    if (s.scan() === 'rbrack') return { type: 'func', param: name, name: '', args: [], offset };
    return this.fail('missing closing brace');
  }

  private parseParam(accept: Accept, mode: number, depth: number): Node {
    const s = this.s;
    s.accept = accept;
    s.mode = mode | SCAN_LBRACK;
    const offset = s.offset();
    switch (s.scan()) {
      case 'lbrack':
        return this.parseFunc(depth + 1, offset);
      case 'ident':
      case 'rbrack':
        return { type: 'text', value: s.string() };
      default:
        return this.fail('unable to parse substitution within function');
    }
  }

  private parseDefaultOrSubstr(name: string, depth: number, offset: number): Node {
    const s = this.s;
    s.read();
    const r = s.peek();
    s.unread();
    if (r === 0x3d || r === 0x2d || r === 0x3f || r === 0x2b) return this.parseDefaultFunc(name, depth, offset);
    return this.parseSubstrFunc(name, depth, offset);
  }

  private operator(accept: Accept, problem: ParseProblem = 'bad substitution'): string {
    const s = this.s;
    s.accept = accept;
    s.mode = SCAN_IDENT;
    if (s.scan() !== 'ident') this.fail(problem);
    return s.string();
  }

  private parseSubstrFunc(param: string, depth: number, offset: number): Node {
    const s = this.s;
    const node: FuncNode = { type: 'func', param, name: this.operator(acceptOneColon), args: [], offset };
    node.args.push(this.parseParam(rejectColonClose, SCAN_IDENT, depth));
    s.accept = acceptColon;
    s.mode = SCAN_IDENT | SCAN_RBRACK;
    const tok = s.scan();
    if (tok === 'rbrack') return node;
    if (tok !== 'ident') this.fail('bad substitution');
    node.args.push(this.parseParam(acceptNotClosing, SCAN_IDENT, depth));
    this.consumeRbrack();
    return node;
  }

  private parseRemoveFunc(param: string, accept: Accept, depth: number, offset: number): Node {
    const node: FuncNode = { type: 'func', param, name: this.operator(accept), args: [], offset };
    node.args.push(this.parseParam(acceptNotClosing, SCAN_IDENT, depth));
    this.consumeRbrack();
    return node;
  }

  private parseReplaceFunc(param: string, depth: number, offset: number): Node {
    const s = this.s;
    const node: FuncNode = { type: 'func', param, name: this.operator(acceptReplaceFunc), args: [], offset };
    node.args.push(this.parseParam(acceptNotSlash, SCAN_IDENT | SCAN_ESCAPE, depth));
    this.operator(acceptSlash);
    if (s.peek() === RBRACE) {
      this.consumeRbrack();
      return node;
    }
    node.args.push(this.parseParam(acceptNotClosing, SCAN_IDENT | SCAN_ESCAPE, depth));
    this.consumeRbrack();
    return node;
  }

  private parseDefaultFunc(param: string, depth: number, offset: number): Node {
    const s = this.s;
    const accept = s.peek() === 0x3d ? acceptOneEqual : acceptDefaultFunc;
    const node: FuncNode = { type: 'func', param, name: this.operator(accept, 'unable to parse default function'), args: [], offset };
    for (;;) {
      if (s.peek() === RBRACE) {
        this.consumeRbrack();
        return node;
      }
      node.args.push(this.parseParam(acceptNotClosing, SCAN_IDENT, depth));
    }
  }

  private parseCasingFunc(param: string, offset: number): Node {
    const node: FuncNode = { type: 'func', param, name: this.operator(acceptCasingFunc), args: [], offset };
    this.consumeRbrack();
    return node;
  }

  private parseLenFunc(offset: number): Node {
    const s = this.s;
    const name = this.operator(acceptOneHash);
    s.accept = acceptIdent;
    s.mode = SCAN_IDENT;
    if (s.scan() !== 'ident') this.fail('bad substitution');
    const node: FuncNode = { type: 'func', param: s.string(), name, args: [], offset };
    this.consumeRbrack();
    return node;
  }

  private consumeRbrack(): void {
    this.s.mode = SCAN_RBRACK;
    if (this.s.scan() !== 'rbrack') this.fail('bad substitution');
  }
}

/** parse.Parse: the template of a byte string; throws EnvsubstError (kind 'parse') */
export function parseTemplate(bytes: string): Node {
  return new Parser(bytes).parseAll();
}

// ---- evaluation (template.go) ----

/** a variable's value as a byte string, or undefined when it is not set (name: a byte string) */
export type Lookup = (name: string) => string | undefined;

/** what evaluation may produce: `produce` counts bytes written, `allow` checks a size before it is built */
export interface EnvsubstBudget extends FuncBudget {
  produce(bytes: number): void;
}

/** the operators that supply their own value for an unset variable (template.go isDefaultOp) */
const DEFAULT_OPS = new Set(['-', '+', '=', '?', ':-', ':+', ':=', ':?']);

/**
 * Template.Execute with the strict mapper kustomize-controller uses by default (its
 * StrictPostBuildSubstitutions feature gate, on since v1.9): a variable that is not set fails,
 * unless its operator supplies a default. Returns the byte string; throws EnvsubstError.
 */
export function evalTemplate(root: Node, lookup: Lookup, budget: EnvsubstBudget): string {
  const out: string[] = [];
  evalInto(root, lookup, budget, (s) => {
    budget.produce(s.length);
    out.push(s);
  });
  return out.join('');
}

function evalInto(node: Node, lookup: Lookup, budget: EnvsubstBudget, write: (s: string) => void): void {
  if (node.type === 'text') return write(node.value);
  if (node.type === 'list') {
    for (const n of node.nodes) evalInto(n, lookup, budget, write);
    return;
  }
  // every argument is evaluated first, used or not, as in Go
  const args = node.args.map((a) => evalTemplate(a, lookup, budget));
  const v = lookup(node.param);
  const exists = v !== undefined;
  const variable = fromBytes(node.param);
  if (node.name === ':?' && !v) {
    const message = fromBytes(args.join(''));
    throw new EnvsubstError(`variable ${JSON.stringify(variable)} is not set${message ? `: ${message}` : ''}`, node.offset, 'required', variable);
  }
  if (!exists && !DEFAULT_OPS.has(node.name)) {
    throw new EnvsubstError(`variable ${JSON.stringify(variable)} is not set`, node.offset, 'unset', variable);
  }
  if (node.name === ':?') return write(v!);
  let result: string;
  try {
    result = lookupFunc(node.name, args.length)(v ?? '', args, budget);
  } catch (e) {
    if (e instanceof BadLength) throw new EnvsubstError(`\${${variable}${node.name}…}: the length is negative`, node.offset, 'value', variable);
    throw e;
  }
  write(result);
}
