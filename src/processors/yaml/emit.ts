/**
 * YAML text exactly as go-yaml v2 (go.yaml.in/yaml/v2 v2.4, the encoder under sigs.k8s.io/yaml)
 * writes a JSON value: `yaml.JSONToYAML`, which kustomize's `Resource.AsYAML` calls and Flux's
 * post-build substitution runs envsubst over. Keys sorted with go-yaml's key order (digits compared
 * as numbers), two-space indentation, sequences in mappings not indented, strings plain when they
 * read back as the same string and have no indicator, else single- or double-quoted, multi-line
 * strings as literal blocks, long plain and quoted strings folded at spaces past column 80, keys
 * over 128 bytes as explicit `? ` keys.
 *
 * The byte layout matters, not only the value: envsubst edits this text, so where a `${…}` sits
 * (plain, quoted, in a literal block, folded onto the next line) decides what a substituted value
 * turns into. This is a port of encode.go's scalar choices and emitterc.go's writers over the
 * subset of events a JSON value makes (no anchors, tags or flow collections other than `[]` and
 * `{}`), on UTF-8 bytes as the Go code works.
 *
 * Pure.
 */
import type { JsonValue } from './values.ts';

/** where each scalar (key or value) starts in the text, for messages: "spec.containers[0].image" */
export interface EmitMark {
  /** byte offset of the scalar */
  offset: number;
  path: string;
  /** the scalar, when it is a string (a key or a value) */
  text?: string;
}

export interface Emitted {
  /** the YAML as a byte string (one character per UTF-8 byte) */
  bytes: string;
  marks: EmitMark[];
}

export interface EmitOptions {
  /**
   * Write strings holding U+2028 / U+2029 double-quoted (`\L`, `\P`) instead of go-yaml's single
   * quotes or literal block: go-yaml reads those characters as line breaks and the indentation
   * after them as indentation, Hoist's YAML reader (YAML 1.2) as content, so only the escaped form
   * reads back as the same string. Off: go-yaml's bytes exactly.
   */
  escapeLineSeparators?: boolean;
}

/** a JSON value (an object, for a Kubernetes object) as go-yaml v2 marshals it, in UTF-8 bytes */
export function emitGoYamlBytes(value: JsonValue, opts: EmitOptions = {}): Emitted {
  const e = new Emitter(opts.escapeLineSeparators === true);
  e.node(value, { root: true, sequence: false, mapping: false, simpleKey: false }, '');
  // the document end: a final line break unless the last scalar wrote one
  e.writeIndent();
  return { bytes: e.out.join(''), marks: e.marks };
}

/** why kustomize's AsYAML cannot convert a value, at a field */
export class YamlConversionError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
  }
}

/**
 * kustomize's Resource.AsYAML: the object through Go's json.Marshal, the JSON read back by go-yaml
 * v2 (sigs.k8s.io/yaml JSONToYAML), then emitGoYamlBytes. The JSON step is not neutral where Go's
 * JSON leaves a character unescaped that YAML reads differently: a NEL (U+0085) is a line break to
 * go-yaml, folded with the spaces around it into one space (or kept newlines, for several), and in
 * a key it makes the key span two lines, which go-yaml refuses; so does a key whose JSON is over
 * 1024 characters (the longest implicit key), and a C1 control character or U+FFFE/U+FFFF
 * anywhere ("control characters are not allowed"). Throws YamlConversionError for those.
 */
export function kustomizeYamlBytes(value: JsonValue, opts: EmitOptions = {}): Emitted {
  return emitGoYamlBytes(jsonRoundTrip(value, ''), opts);
}

const NEEDS_ROUND_TRIP = /[\u007f-\u009f\ufffe\uffff]/;

/** whether kustomizeYamlBytes could differ from emitGoYamlBytes (or fail) for this value; cheap */
export function needsRoundTrip(v: JsonValue): boolean {
  if (typeof v === 'string') return NEEDS_ROUND_TRIP.test(v);
  if (Array.isArray(v)) return v.some(needsRoundTrip);
  if (v === null || typeof v !== 'object') return false;
  for (const k of Object.keys(v)) if (NEEDS_ROUND_TRIP.test(k) || (k.length > 170 && goJsonLength(k) > 1022) || needsRoundTrip(v[k]!)) return true;
  return false;
}
const CONTROL = /[\u007f-\u0084\u0086-\u009f\ufffe\uffff]/;

function jsonRoundTrip(v: JsonValue, path: string): JsonValue {
  if (typeof v === 'string') {
    if (!NEEDS_ROUND_TRIP.test(v)) return v;
    if (CONTROL.test(v)) throw new YamlConversionError('a string holds a control character that YAML does not allow', path);
    try {
      return foldNel(v);
    } catch (e) {
      if (e instanceof DocumentMarker)
        throw new YamlConversionError('a string holds a NEL (U+0085) followed by a document marker, which go-yaml refuses', path);
      throw e;
    }
  }
  if (Array.isArray(v)) {
    let copy: JsonValue[] | undefined;
    v.forEach((item, i) => {
      const r = jsonRoundTrip(item, `${path}[${i}]`);
      if (r !== item) (copy ??= [...v])[i] = r;
    });
    return copy ?? v;
  }
  if (v === null || typeof v !== 'object') return v;
  let copy: { [k: string]: JsonValue } | undefined;
  for (const key of Object.keys(v)) {
    const child = path ? `${path}.${key}` : key;
    if (NEEDS_ROUND_TRIP.test(key)) {
      if (CONTROL.test(key)) throw new YamlConversionError('a key holds a control character that YAML does not allow', path);
      throw new YamlConversionError('a key holds a NEL (U+0085): go-yaml reads it as a line break and refuses the key', path);
    }
    if (key.length > 170 && goJsonLength(key) > 1022)
      throw new YamlConversionError('a key is longer than the 1024 characters go-yaml reads as an implicit key', path);
    const r = jsonRoundTrip(v[key]!, child);
    if (r !== v[key]) (copy ??= { ...v })[key] = r;
  }
  return copy ?? v;
}

/** characters of a string as Go's json.Marshal writes it, quotes left out */
function goJsonLength(s: string): number {
  let n = 0;
  for (const c of s) {
    const cp = c.codePointAt(0)!;
    if (c === '"' || c === '\\' || c === '\n' || c === '\r' || c === '\t' || c === '\b' || c === '\f') n += 2;
    else if (cp < 0x20 || c === '<' || c === '>' || c === '&' || cp === 0x2028 || cp === 0x2029) n += 6;
    else n += 1;
  }
  return n;
}

class DocumentMarker extends Error {}

/** go-yaml's flow scalar folding over raw spaces and NELs (yaml_parser_scan_flow_scalar) */
function foldNel(s: string): string {
  let out = '';
  for (let i = 0; i < s.length;) {
    const c = s[i];
    if (c !== ' ' && c !== '\u0085') {
      out += c;
      i++;
      continue;
    }
    let whitespace = '';
    let leadingBreak = false;
    let trailing = '';
    for (; i < s.length && (s[i] === ' ' || s[i] === '\u0085'); i++) {
      if (s[i] === ' ') {
        if (!leadingBreak) whitespace += ' ';
      } else {
        if (!leadingBreak) {
          whitespace = '';
          leadingBreak = true;
        } else trailing += '\n';
        // a line that starts with a document marker ends the document, in a quoted scalar too
        if (/^(---|\.\.\.)[ \u0085]/.test(s.slice(i + 1, i + 5))) throw new DocumentMarker();
      }
    }
    out += leadingBreak ? trailing || ' ' : whitespace;
  }
  return out;
}

/** emitGoYamlBytes as text */
export function emitGoYaml(value: JsonValue): string {
  return Buffer.from(emitGoYamlBytes(value).bytes, 'latin1').toString('utf8');
}

type Style = 'plain' | 'single' | 'double' | 'literal';
interface Context {
  root: boolean;
  sequence: boolean;
  mapping: boolean;
  simpleKey: boolean;
}

interface Analysis {
  multiline: boolean;
  flowPlain: boolean;
  blockPlain: boolean;
  singleQuoted: boolean;
  block: boolean;
}

const BEST_WIDTH = 80;
const BEST_INDENT = 2;

class Emitter {
  constructor(private readonly escapeLineSeparators: boolean) {}
  readonly out: string[] = [];
  readonly marks: EmitMark[] = [];
  private bytes = 0;
  private column = 0;
  private whitespace = true;
  private indention = true;
  private indent = -1;
  private readonly indents: number[] = [];
  private flowLevel = 0;
  private mappingContext = false;
  private simpleKeyContext = false;

  // ---- output primitives (put, put_break, write, write_break) ----

  private put(c: string): void {
    this.out.push(c);
    this.bytes += 1;
    this.column++;
  }

  private putBreak(): void {
    this.out.push('\n');
    this.bytes += 1;
    this.column = 0;
  }

  /** one UTF-8 character of v at i: its bytes, one column; returns the next index */
  private write(v: string, i: number): number {
    const w = width(v.charCodeAt(i));
    this.out.push(v.slice(i, i + w));
    this.bytes += w;
    this.column++;
    return i + w;
  }

  private writeAll(s: string): void {
    for (let i = 0; i < s.length;) i = this.write(s, i);
  }

  private writeBreak(v: string, i: number): number {
    if (v.charCodeAt(i) === 0x0a) {
      this.putBreak();
      return i + 1;
    }
    const next = this.write(v, i);
    this.column = 0;
    return next;
  }

  writeIndent(): void {
    const indent = Math.max(this.indent, 0);
    if (!this.indention || this.column > indent || (this.column === indent && !this.whitespace)) this.putBreak();
    while (this.column < indent) this.put(' ');
    this.whitespace = true;
    this.indention = true;
  }

  private writeIndicator(indicator: string, needWhitespace: boolean, isWhitespace: boolean, isIndention: boolean): void {
    if (needWhitespace && !this.whitespace) this.put(' ');
    this.writeAll(indicator);
    this.whitespace = isWhitespace;
    this.indention = this.indention && isIndention;
  }

  private increaseIndent(flow: boolean, indentless: boolean): void {
    this.indents.push(this.indent);
    if (this.indent < 0) this.indent = flow ? BEST_INDENT : 0;
    else if (!indentless) this.indent += BEST_INDENT;
  }

  private popIndent(): void {
    this.indent = this.indents.pop()!;
  }

  // ---- nodes ----

  node(value: JsonValue, ctx: Context, path: string): void {
    this.mappingContext = ctx.mapping;
    this.simpleKeyContext = ctx.simpleKey;
    if (Array.isArray(value)) return this.sequence(value, path);
    if (value !== null && typeof value === 'object') return this.mapping(value, path);
    this.scalarValue(value, ctx, path);
  }

  private sequence(items: JsonValue[], path: string): void {
    if (this.flowLevel > 0 || items.length === 0) return this.emptyFlow('[', ']');
    this.increaseIndent(false, this.mappingContext && !this.indention);
    items.forEach((item, i) => {
      this.writeIndent();
      this.writeIndicator('-', true, false, true);
      this.node(item, { root: false, sequence: true, mapping: false, simpleKey: false }, `${path}[${i}]`);
    });
    this.popIndent();
  }

  private mapping(obj: { [key: string]: JsonValue }, path: string): void {
    const keys = Object.keys(obj);
    if (this.flowLevel > 0 || keys.length === 0) return this.emptyFlow('{', '}');
    sortKeys(keys);
    this.increaseIndent(false, false);
    for (const key of keys) {
      const child = path ? `${path}.${key}` : key;
      this.writeIndent();
      const k = this.stringEvent(key);
      const analysis = analyzeScalar(k.bytes);
      // yaml_emitter_check_simple_key: one line and at most 128 bytes
      if (!analysis.multiline && k.bytes.length <= 128) {
        this.scalar(k, analysis, { root: false, sequence: false, mapping: true, simpleKey: true }, child);
        this.writeIndicator(':', false, false, false);
      } else {
        this.writeIndicator('?', true, false, true);
        this.scalar(k, analysis, { root: false, sequence: false, mapping: true, simpleKey: false }, child);
        this.writeIndent();
        this.writeIndicator(':', true, false, true);
      }
      this.node(obj[key]!, { root: false, sequence: false, mapping: true, simpleKey: false }, child);
    }
    this.popIndent();
  }

  /** an empty sequence or mapping: `[]` / `{}` (flow style) */
  private emptyFlow(open: string, close: string): void {
    this.writeIndicator(open, true, true, false);
    this.increaseIndent(true, false);
    this.popIndent();
    this.writeIndicator(close, false, false, false);
  }

  private scalarValue(value: null | boolean | number | string, ctx: Context, path: string): void {
    let event: ScalarEvent;
    if (value === null) event = { bytes: 'null', style: 'plain' };
    else if (typeof value === 'boolean') event = { bytes: value ? 'true' : 'false', style: 'plain' };
    else if (typeof value === 'number') event = { bytes: formatNumber(value), style: 'plain' };
    else event = this.stringEvent(value);
    this.scalar(event, analyzeScalar(event.bytes), ctx, path);
  }

  private scalar(event: ScalarEvent, a: Analysis, ctx: Context, path: string): void {
    this.mappingContext = ctx.mapping;
    this.simpleKeyContext = ctx.simpleKey;
    const style = this.selectStyle(event, a);
    this.marks.push(event.text === undefined ? { offset: this.bytes, path } : { offset: this.bytes, path, text: event.text });
    this.increaseIndent(true, false);
    const v = event.bytes;
    const allowBreaks = !this.simpleKeyContext;
    if (style === 'plain') this.writePlain(v, allowBreaks);
    else if (style === 'single') this.writeSingleQuoted(v, allowBreaks);
    else if (style === 'double') this.writeDoubleQuoted(v, allowBreaks);
    else this.writeLiteral(v);
    this.popIndent();
  }

  private stringEvent(s: string): ScalarEvent {
    const event = stringEvent(s);
    return this.escapeLineSeparators && /[\u2028\u2029]/.test(s) ? { ...event, forceDouble: true } : event;
  }

  /** yaml_emitter_select_scalar_style for an implicit (untagged) scalar */
  private selectStyle(event: ScalarEvent, a: Analysis): Style {
    if (event.forceDouble) return 'double';
    let style = event.style;
    if (this.simpleKeyContext && a.multiline) style = 'double';
    if (style === 'plain') {
      if ((this.flowLevel > 0 && !a.flowPlain) || (this.flowLevel === 0 && !a.blockPlain)) style = 'single';
      if (event.bytes.length === 0 && (this.flowLevel > 0 || this.simpleKeyContext)) style = 'single';
    }
    if (style === 'single' && !a.singleQuoted) style = 'double';
    if (style === 'literal' && (!a.block || this.flowLevel > 0 || this.simpleKeyContext)) style = 'double';
    return style;
  }

  // ---- scalar writers (emitterc.go) ----

  private writePlain(v: string, allowBreaks: boolean): void {
    if (!this.whitespace) this.put(' ');
    this.writeFoldable(v, allowBreaks, false);
    this.whitespace = false;
    this.indention = false;
  }

  private writeSingleQuoted(v: string, allowBreaks: boolean): void {
    this.writeIndicator("'", true, false, false);
    this.writeFoldable(v, allowBreaks, true);
    this.writeIndicator("'", false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  /**
   * The shared loop of yaml_emitter_write_plain_scalar and _single_quoted_scalar: a space past
   * the width becomes a line break (Go's plain writer omits the `i > 0 && i < len-1` guard, which
   * holds anyway: a plain scalar neither starts nor ends with a space), breaks are written as they
   * are (a plain scalar has none: they forbid the style), quotes doubled when quoted.
   */
  private writeFoldable(v: string, allowBreaks: boolean, quoted: boolean): void {
    let spaces = false;
    let breaks = false;
    for (let i = 0; i < v.length;) {
      const c = v.charCodeAt(i);
      if (c === 0x20) {
        if (allowBreaks && !spaces && this.column > BEST_WIDTH && i > 0 && i < v.length - 1 && v.charCodeAt(i + 1) !== 0x20) {
          this.writeIndent();
          i += 1;
        } else i = this.write(v, i);
        spaces = true;
      } else if (isBreak(v, i)) {
        if (!breaks && c === 0x0a) this.putBreak();
        i = this.writeBreak(v, i);
        this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        if (quoted && c === 0x27) this.put("'");
        i = this.write(v, i);
        this.indention = false;
        spaces = false;
        breaks = false;
      }
    }
  }

  private writeDoubleQuoted(v: string, allowBreaks: boolean): void {
    let spaces = false;
    this.writeIndicator('"', true, false, false);
    // is_bom(value, i) looks at the start of the value whatever i is: a value starting with a
    // byte order mark is escaped in full
    const bom = v.charCodeAt(0) === 0xef && v.charCodeAt(1) === 0xbb && v.charCodeAt(2) === 0xbf;
    for (let i = 0; i < v.length;) {
      const c = v.charCodeAt(i);
      if (!isPrintable(v, i) || bom || isBreak(v, i) || c === 0x22 || c === 0x5c) {
        const w = width(c) || 1;
        let r = w === 1 ? c & 0x7f : w === 2 ? c & 0x1f : w === 3 ? c & 0x0f : c & 0x07;
        for (let k = 1; k < w; k++) r = (r << 6) + (v.charCodeAt(i + k) & 0x3f);
        i += w;
        this.put('\\');
        const short = SHORT_ESCAPES.get(r);
        if (short) this.put(short);
        else {
          const [letter, digits] = r <= 0xff ? ['x', 2] : r <= 0xffff ? ['u', 4] : ['U', 8];
          this.put(letter);
          for (let k = (digits - 1) * 4; k >= 0; k -= 4) this.put('0123456789ABCDEF'[(r >> k) & 0x0f]!);
        }
        spaces = false;
      } else if (c === 0x20) {
        if (allowBreaks && !spaces && this.column > BEST_WIDTH && i > 0 && i < v.length - 1) {
          this.writeIndent();
          if (v.charCodeAt(i + 1) === 0x20) this.put('\\');
          i += 1;
        } else i = this.write(v, i);
        spaces = true;
      } else {
        i = this.write(v, i);
        spaces = false;
      }
    }
    this.writeIndicator('"', false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  private writeLiteral(v: string): void {
    this.writeIndicator('|', true, false, false);
    // yaml_emitter_write_block_scalar_hints
    if (v.charCodeAt(0) === 0x20 || isBreak(v, 0)) this.writeIndicator(String(BEST_INDENT), false, false, false);
    const chomp = chompHint(v);
    if (chomp) this.writeIndicator(chomp, false, false, false);
    this.putBreak();
    this.indention = true;
    this.whitespace = true;
    let breaks = true;
    for (let i = 0; i < v.length;) {
      if (isBreak(v, i)) {
        i = this.writeBreak(v, i);
        this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        i = this.write(v, i);
        this.indention = false;
        breaks = false;
      }
    }
  }
}

interface ScalarEvent {
  /** UTF-8 bytes */
  bytes: string;
  /** the string it is, for strings */
  text?: string;
  style: Style;
  forceDouble?: boolean;
}

const SHORT_ESCAPES: ReadonlyMap<number, string> = new Map([
  [0x00, '0'],
  [0x07, 'a'],
  [0x08, 'b'],
  [0x09, 't'],
  [0x0a, 'n'],
  [0x0b, 'v'],
  [0x0c, 'f'],
  [0x0d, 'r'],
  [0x1b, 'e'],
  [0x22, '"'],
  [0x5c, '\\'],
  [0x85, 'N'],
  [0xa0, '_'],
  [0x2028, 'L'],
  [0x2029, 'P'],
]);

/** '-' (strip) when the value does not end in a line break, '+' (keep) when it ends in two or is one, else none (clip) */
function chompHint(v: string): string {
  if (v.length === 0) return '-';
  let i = v.length - 1;
  while ((v.charCodeAt(i) & 0xc0) === 0x80) i--;
  if (!isBreak(v, i)) return '-';
  if (i === 0) return '+';
  i--;
  while ((v.charCodeAt(i) & 0xc0) === 0x80) i--;
  return isBreak(v, i) ? '+' : '';
}

/** encode.go stringv: plain when it reads back as this string, literal when it has a line break, else double-quoted */
function stringEvent(s: string): ScalarEvent {
  const bytes = Buffer.from(s, 'utf8').toString('latin1');
  const canUsePlain = resolvesToString(s) && !isBase60Float(s);
  const style: Style = s.includes('\n') ? 'literal' : canUsePlain ? 'plain' : 'double';
  return { bytes, style, text: s };
}

/**
 * A number as the Go round trip writes it: an integral value as an integer (the JSON has no
 * fraction, go-yaml reads an int), anything else as strconv.FormatFloat(f, 'g', -1, 64).
 */
function formatNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return Object.is(n, -0) ? '0' : n.toFixed(0);
  if (!Number.isFinite(n)) return n > 0 ? '.inf' : n < 0 ? '-.inf' : '.nan';
  const [mant = '', ex = '0'] = Math.abs(n).toExponential().split('e');
  const digits = mant.replace('.', '');
  const exp = Number(ex);
  const sign = n < 0 ? '-' : '';
  if (exp < -4 || exp >= 6) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  const dp = exp + 1;
  if (dp <= 0) return `${sign}0.${'0'.repeat(-dp)}${digits}`;
  if (dp >= digits.length) return sign + digits + '0'.repeat(dp - digits.length);
  return `${sign}${digits.slice(0, dp)}.${digits.slice(dp)}`;
}

// ---- go-yaml v2's resolve(), as the encoder asks it: would this plain text read back as a string? ----

const HINTS: Record<string, 'S' | 'D' | 'M' | '.'> = { '+': 'S', '-': 'S', '.': '.' };
for (const c of '0123456789') HINTS[c] = 'D';
for (const c of 'yYnNtTfFoO~') HINTS[c] = 'M';
const IN_MAP = new Set([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'],
  ...['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'],
  ...['', '~', 'null', 'Null', 'NULL', '.nan', '.NaN', '.NAN', '.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF', '-.inf', '-.Inf', '-.INF'],
]);
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

/** resolve("", s) returns the str tag */
export function resolvesToString(s: string): boolean {
  if (s === '') return false;
  const hint = HINTS[s[0]!];
  if (hint === undefined) return true;
  if (IN_MAP.has(s)) return false;
  switch (hint) {
    case 'M':
      return true;
    case '.':
      return !(/^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(s) && Number.isFinite(Number(s)));
    default: {
      if (isGoTimestamp(s)) return false;
      const plain = s.replaceAll('_', '');
      if (goParseInt(plain, 0, true) || goParseInt(plain, 0, false)) return false;
      if (YAML_STYLE_FLOAT.test(plain) && Number.isFinite(Number(plain))) return false;
      if (plain.startsWith('0b')) return !(goParseInt(plain.slice(2), 2, true) || goParseInt(plain.slice(2), 2, false));
      if (plain.startsWith('-0b')) return !goParseInt(`-${plain.slice(3)}`, 2, true);
      return true;
    }
  }
}

const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** strconv.ParseInt(s, base, 64) (signed) or ParseUint(s, base, 64) succeeds */
function goParseInt(s: string, base: 0 | 2, signed: boolean): boolean {
  let body = s;
  let neg = false;
  if (signed && (body[0] === '+' || body[0] === '-')) {
    neg = body[0] === '-';
    body = body.slice(1);
  }
  let radix = base === 2 ? 2 : 10;
  if (base === 0) {
    if (/^0[xX]/.test(body)) [radix, body] = [16, body.slice(2)];
    else if (/^0[oO]/.test(body)) [radix, body] = [8, body.slice(2)];
    else if (/^0[bB]/.test(body)) [radix, body] = [2, body.slice(2)];
    else if (body.length > 1 && body[0] === '0') [radix, body] = [8, body.slice(1)];
  }
  const digits = radix === 16 ? /^[0-9a-fA-F]+$/ : radix === 8 ? /^[0-7]+$/ : radix === 2 ? /^[01]+$/ : /^[0-9]+$/;
  if (!digits.test(body)) return false;
  const prefix = radix === 16 ? '0x' : radix === 8 ? '0o' : radix === 2 ? '0b' : '';
  const magnitude = BigInt(prefix + body);
  if (!signed) return magnitude <= UINT64_MAX;
  return neg ? magnitude <= INT64_MAX + 1n : magnitude <= INT64_MAX;
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const TIMESTAMP_T = /^(\d{4})-(\d{1,2})-(\d{1,2})[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})([.,]\d+)?(Z|[+-]\d{2}:\d{2})$/;
const TIMESTAMP_SPACE = /^(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})([.,]\d+)?$/;
const DATE = /^(\d{4})-(\d{1,2})-(\d{1,2})$/;

/** go-yaml v2's parseTimestamp: time.Parse with its four layouts, ranges checked as time.Parse does */
function isGoTimestamp(s: string): boolean {
  const m = TIMESTAMP_T.exec(s) ?? TIMESTAMP_SPACE.exec(s) ?? DATE.exec(s);
  if (!m) return false;
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((x) => (x === undefined ? undefined : Number(x))) as number[];
  if (month! < 1 || month! > 12) return false;
  const leap = (year! % 4 === 0 && year! % 100 !== 0) || year! % 400 === 0;
  const days = month === 2 && leap ? 29 : DAYS[month! - 1]!;
  if (day! < 1 || day! > days) return false;
  if (hour >= 24 || minute >= 60 || second >= 60) return false;
  const zone = m[8];
  if (zone && zone !== 'Z') {
    const [hh, mm] = zone.slice(1).split(':').map(Number) as [number, number];
    if (hh > 24 || mm > 60) return false;
  }
  return true;
}

const BASE60_FLOAT = /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/;
function isBase60Float(s: string): boolean {
  return /^[-+0-9]/.test(s) && s.includes(':') && BASE60_FLOAT.test(s);
}

// ---- yaml_emitter_analyze_scalar ----

function analyzeScalar(v: string): Analysis {
  if (v.length === 0) return { multiline: false, flowPlain: false, blockPlain: true, singleQuoted: true, block: false };
  let blockIndicators = false;
  let flowIndicators = false;
  let lineBreaks = false;
  let special = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  let previousSpace = false;
  let previousBreak = false;
  if (v.startsWith('---') || v.startsWith('...')) {
    blockIndicators = true;
    flowIndicators = true;
  }
  let precededByWhitespace = true;
  for (let i = 0, w = 0; i < v.length; i += w) {
    w = width(v.charCodeAt(i));
    const followedByWhitespace = i + w >= v.length || isBlank(v, i + w);
    const c = v[i]!;
    if (i === 0) {
      if ('#,[]{}&*!|>\'"%@`'.includes(c)) {
        flowIndicators = true;
        blockIndicators = true;
      } else if (c === '?' || c === ':') {
        flowIndicators = true;
        if (followedByWhitespace) blockIndicators = true;
      } else if (c === '-' && followedByWhitespace) {
        flowIndicators = true;
        blockIndicators = true;
      }
    } else if (',?[]{}'.includes(c)) flowIndicators = true;
    else if (c === ':') {
      flowIndicators = true;
      if (followedByWhitespace) blockIndicators = true;
    } else if (c === '#' && precededByWhitespace) {
      flowIndicators = true;
      blockIndicators = true;
    }
    // the emitter writes unicode (yaml_emitter_set_unicode), so only unprintable characters are special
    if (!isPrintable(v, i)) special = true;
    if (c === ' ') {
      if (i === 0) leadingSpace = true;
      if (i + w === v.length) trailingSpace = true;
      if (previousBreak) breakSpace = true;
      previousSpace = true;
      previousBreak = false;
    } else if (isBreak(v, i)) {
      lineBreaks = true;
      if (i === 0) leadingBreak = true;
      if (i + w === v.length) trailingBreak = true;
      if (previousSpace) spaceBreak = true;
      previousSpace = false;
      previousBreak = true;
    } else {
      previousSpace = false;
      previousBreak = false;
    }
    precededByWhitespace = isBlankz(v, i);
    // width 0 (a stray continuation byte) would never advance; Go's loop has the same hazard but
    // never meets it: encode.go marshals only valid UTF-8 as a string
    if (w === 0) w = 1;
  }
  const a: Analysis = { multiline: lineBreaks, flowPlain: true, blockPlain: true, singleQuoted: true, block: true };
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak) a.flowPlain = a.blockPlain = false;
  if (trailingSpace) a.block = false;
  if (breakSpace) a.flowPlain = a.blockPlain = a.singleQuoted = false;
  if (spaceBreak || special) a.flowPlain = a.blockPlain = a.singleQuoted = a.block = false;
  if (lineBreaks) a.flowPlain = a.blockPlain = false;
  if (flowIndicators) a.flowPlain = false;
  if (blockIndicators) a.blockPlain = false;
  return a;
}

// ---- yamlprivateh.go character classes, on bytes ----

function width(b: number): number {
  if ((b & 0x80) === 0) return 1;
  if ((b & 0xe0) === 0xc0) return 2;
  if ((b & 0xf0) === 0xe0) return 3;
  if ((b & 0xf8) === 0xf0) return 4;
  return 0;
}

function at(v: string, i: number): number {
  return i < v.length ? v.charCodeAt(i) : 0;
}

function isPrintable(v: string, i: number): boolean {
  const b = at(v, i);
  const b1 = at(v, i + 1);
  const b2 = at(v, i + 2);
  return (
    b === 0x0a ||
    (b >= 0x20 && b <= 0x7e) ||
    (b === 0xc2 && b1 >= 0xa0) ||
    (b > 0xc2 && b < 0xed) ||
    (b === 0xed && b1 < 0xa0) ||
    b === 0xee ||
    (b === 0xef && !(b1 === 0xbb && b2 === 0xbf) && !(b1 === 0xbf && (b2 === 0xbe || b2 === 0xbf)))
  );
}

function isBreak(v: string, i: number): boolean {
  const b = at(v, i);
  return (
    b === 0x0d ||
    b === 0x0a ||
    (b === 0xc2 && at(v, i + 1) === 0x85) ||
    (b === 0xe2 && at(v, i + 1) === 0x80 && (at(v, i + 2) === 0xa8 || at(v, i + 2) === 0xa9))
  );
}

function isBlank(v: string, i: number): boolean {
  const b = at(v, i);
  return b === 0x20 || b === 0x09;
}

function isBlankz(v: string, i: number): boolean {
  return isBlank(v, i) || isBreak(v, i) || i >= v.length || at(v, i) === 0;
}

// ---- go-yaml v2's key order (sorter.go keyList.Less) for string keys ----

function isLetterRune(r: number): boolean {
  return r < 0x80 ? (r >= 0x41 && r <= 0x5a) || (r >= 0x61 && r <= 0x7a) : /^\p{L}$/u.test(String.fromCodePoint(r));
}
function isDigitRune(r: number): boolean {
  return r < 0x80 ? r >= 0x30 && r <= 0x39 : /^\p{Nd}$/u.test(String.fromCodePoint(r));
}

/**
 * sort.Sort(keyList): Go's pdqsort sorts up to 12 elements by insertion sort, and keyList.Less is
 * not a strict order for every set of keys (a digit run past int64 wraps around), so for those
 * the algorithm decides the order: up to 12 keys are sorted exactly as Go does; more, with a
 * stable sort, which agrees with Go whenever the order is consistent.
 */
function sortKeys(keys: string[]): void {
  if (keys.length <= 12) {
    for (let i = 1; i < keys.length; i++) {
      for (let j = i; j > 0 && keyLess(keys[j]!, keys[j - 1]!); j--) [keys[j], keys[j - 1]] = [keys[j - 1]!, keys[j]!];
    }
    return;
  }
  keys.sort((a, b) => (keyLess(a, b) ? -1 : keyLess(b, a) ? 1 : 0));
}

export function keyLess(a: string, b: string): boolean {
  const ar = Array.from(a, (c) => c.codePointAt(0)!);
  const br = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < ar.length && i < br.length; i++) {
    if (ar[i] === br[i]) continue;
    const al = isLetterRune(ar[i]!);
    const bl = isLetterRune(br[i]!);
    if (al && bl) return ar[i]! < br[i]!;
    if (al || bl) return bl;
    let an = 0n;
    let bn = 0n;
    if (ar[i] === 0x30 || br[i] === 0x30) {
      for (let j = i - 1; j >= 0 && isDigitRune(ar[j]!); j--) {
        if (ar[j] !== 0x30) {
          an = 1n;
          bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    for (; ai < ar.length && isDigitRune(ar[ai]!); ai++) an = BigInt.asIntN(64, an * 10n + BigInt(ar[ai]! - 0x30));
    let bi = i;
    for (; bi < br.length && isDigitRune(br[bi]!); bi++) bn = BigInt.asIntN(64, bn * 10n + BigInt(br[bi]! - 0x30));
    if (an !== bn) return an < bn;
    if (ai !== bi) return ai < bi;
    return ar[i]! < br[i]!;
  }
  return ar.length < br.length;
}
