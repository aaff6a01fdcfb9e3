/**
 * A SOPS file read as SOPS reads it (getsops/sops stores/yaml, stores/json): an ordered tree of
 * documents ("branches"), each an ordered list of key/value items, with every scalar typed the way
 * the Go value sops holds is typed — go-yaml v3's resolution for YAML (yaml.v3 resolve.go: YAML
 * 1.2 booleans only, `0755` still octal, timestamps as times), encoding/json with UseNumber for
 * JSON (an int64 is an int, any other number a float64). The MAC and the decrypted output depend
 * on exactly these types and this order, so no generic YAML or JSON reader is used for them.
 *
 * Comments are not kept: SOPS leaves them out of the MAC, and the decrypted manifest does not
 * need them. Files that choose what to encrypt by comments (encrypted_comment_regex,
 * unencrypted_comment_regex) are refused by the decryptor instead.
 *
 * Pure: text in, tree out. Throws a terminal HoistError (code parse-error or decrypt-failed)
 * naming the file and, where known, the line; never the text of a value.
 */
import type { YamlBudget } from '../yaml/budget.ts';
import { checkBudget, checkBudgetBeforeParse } from '../yaml/budget.ts';
import { yamlPackageTree } from '../yaml/document-reader.ts';
import { MAX_DEPTH, type YNode, type YScalar } from '../yaml/node-tree.ts';
import { parseGoIntBase0 } from '../yaml/scalars.ts';
import { lineIndex } from '../yaml/walk.ts';
import { ProcessCode, processError } from '../errors.ts';
import { parseYamlV3Timestamp, formatRFC3339Nano } from './go-format.ts';

export type SopsScalar =
  | { t: 'str'; v: string }
  /** a Go int (int64), kept as its decimal text: SOPS hashes and prints it so */
  | { t: 'int'; v: bigint }
  | { t: 'float'; v: number }
  | { t: 'bool'; v: boolean }
  /** a time.Time, kept as its MarshalText (RFC 3339 with nanoseconds) */
  | { t: 'time'; v: string }
  | { t: 'null' };
export type SopsValue = SopsScalar | { t: 'map'; items: Array<[string, SopsValue]> } | { t: 'list'; items: SopsValue[] };
export type SopsMap = Extract<SopsValue, { t: 'map' }>;

/** One SOPS file: its documents (a JSON file has one) and which store read it. */
export interface SopsFile {
  format: 'yaml' | 'json';
  branches: SopsMap[];
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function fail(message: string, subject: string, code: ProcessCode = ProcessCode.DecryptFailed): never {
  throw processError(message, code, subject);
}

// ---------------------------------------------------------------------------------------------
// YAML: the node tree of the reference reader (the `yaml` package, nothing interpreted), typed
// by go-yaml v3's rules.

const V3_BOOL_NULL: ReadonlyMap<string, SopsScalar> = new Map<string, SopsScalar>([
  ...['true', 'True', 'TRUE'].map((s): [string, SopsScalar] => [s, { t: 'bool', v: true }]),
  ...['false', 'False', 'FALSE'].map((s): [string, SopsScalar] => [s, { t: 'bool', v: false }]),
  ...['', '~', 'null', 'Null', 'NULL'].map((s): [string, SopsScalar] => [s, { t: 'null' }]),
  ...['.nan', '.NaN', '.NAN'].map((s): [string, SopsScalar] => [s, { t: 'float', v: Number.NaN }]),
  ...['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF'].map((s): [string, SopsScalar] => [s, { t: 'float', v: Number.POSITIVE_INFINITY }]),
  ...['-.inf', '-.Inf', '-.INF'].map((s): [string, SopsScalar] => [s, { t: 'float', v: Number.NEGATIVE_INFINITY }]),
]);
const RESOLVABLE = new Set(['', '!!str', '!!bool', '!!int', '!!float', '!!null', '!!timestamp']);
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

/** yaml.v3 resolve(tag, in) without the tag check: what the text would be untagged */
function resolveV3(text: string, tag: string): SopsScalar | 'uint64' {
  const c = text[0];
  const hint = c === undefined ? 'N' : c === '+' || c === '-' ? 'S' : c >= '0' && c <= '9' ? 'D' : 'yYnNtTfFoO~'.includes(c) ? 'M' : c === '.' ? '.' : '';
  if (hint === '' || tag === '!!str') return { t: 'str', v: text };
  const known = V3_BOOL_NULL.get(text);
  if (known) return known;
  if (hint === '.') {
    if (/^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(text)) return { t: 'float', v: Number(text) };
  } else if (hint === 'D' || hint === 'S') {
    if (tag === '' || tag === '!!timestamp') {
      const time = parseYamlV3Timestamp(text);
      if (time) return { t: 'time', v: formatRFC3339Nano(time) };
    }
    const plain = text.replaceAll('_', '');
    const int = parseGoIntBase0(plain);
    if (int !== undefined) {
      if (int >= INT64_MIN && int <= INT64_MAX) return { t: 'int', v: int };
      // strconv.ParseUint: an unsigned value past int64, which SOPS cannot walk
      if (int > 0n && int < 2n ** 64n && !plain.startsWith('+')) return 'uint64';
    }
    if (YAML_STYLE_FLOAT.test(plain)) {
      const f = Number(plain);
      if (Number.isFinite(f)) return { t: 'float', v: f };
    }
  }
  return { t: 'str', v: text };
}

function scalarV3(node: YScalar, subject: string): SopsScalar {
  const { text, tag } = node;
  // yaml.v3's indicatedString: a quoted or block scalar without a tag (or with "!") is a string
  if ((tag === '' || tag === '!') && !node.plain) return { t: 'str', v: text };
  if (tag === '!!str') return { t: 'str', v: text };
  if (tag === '!!binary') {
    const compact = text.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) fail('a !!binary value is not valid base64', subject, ProcessCode.ParseError);
    const bytes = Buffer.from(compact, 'base64');
    const str = bytes.toString('utf8');
    if (!Buffer.from(str, 'utf8').equals(bytes)) fail('a !!binary value is not UTF-8 text, which a manifest cannot hold', subject);
    return { t: 'str', v: str };
  }
  // any other tag keeps the text, as decoding into interface{} does
  if (!RESOLVABLE.has(tag)) return { t: 'str', v: text };
  const r = resolveV3(text, tag);
  if (r === 'uint64') fail('an integer beyond the int64 range (sops cannot read it either)', subject);
  if (tag === '' || tag === `!!${r.t}` || (tag === '!!timestamp' && r.t === 'time')) return r;
  if (tag === '!!float' && r.t === 'int') return { t: 'float', v: Number(r.v) };
  fail(`cannot decode a !!${r.t === 'time' ? 'timestamp' : r.t} as a ${tag}`, subject, ProcessCode.ParseError);
}

interface YamlRead {
  file: string;
  lineAt: (pos: number) => number;
}

function at(r: YamlRead, node: YNode | null | undefined): string {
  return node ? `${r.file}:${r.lineAt(node.pos)}` : r.file;
}

function yamlValue(node: YNode | null, r: YamlRead, depth: number, unique: boolean): SopsValue {
  if (node === null) return { t: 'null' };
  if (depth > MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} levels`, at(r, node), ProcessCode.ParseError);
  switch (node.kind) {
    case 'alias':
      if (!node.target) fail(`unknown alias *${node.name}`, at(r, node), ProcessCode.ParseError);
      return yamlValue(node.target, r, depth + 1, unique);
    case 'scalar':
      return scalarV3(node, at(r, node));
    case 'seq':
      return { t: 'list', items: node.items.map((i) => yamlValue(i, r, depth + 1, unique)) };
    case 'map':
      return yamlMap(node, r, depth, unique);
  }
}

/**
 * `unique`: the first document, which sops also decodes into a Go map to have go-yaml v3 check
 * that no key is given twice; later documents keep a repeated key twice, as sops's tree does.
 */
function yamlMap(node: Extract<YNode, { kind: 'map' }>, r: YamlRead, depth: number, unique: boolean): SopsMap {
  const items: Array<[string, SopsValue]> = [];
  const seen = new Set<string>();
  for (const [k, v] of node.pairs) {
    const keyNode = k?.kind === 'alias' ? (k.target ?? null) : k;
    if (keyNode === null || keyNode.kind !== 'scalar') fail('a map key that is not a string (sops reads string keys only)', at(r, k ?? node));
    const key = scalarV3(keyNode, at(r, keyNode));
    if (key.t !== 'str') fail(`a map key that is not a string but a ${key.t} (sops reads string keys only)`, at(r, keyNode));
    if (unique && seen.has(key.v)) fail(`mapping key ${JSON.stringify(key.v)} already defined`, at(r, keyNode), ProcessCode.ParseError);
    seen.add(key.v);
    items.push([key.v, yamlValue(v, r, depth + 1, unique)]);
  }
  return { t: 'map', items };
}

/**
 * A YAML file as sops's YAML store loads it: every document a mapping, aliases expanded within
 * the bundle's node budget. Documents without content are left out (sops prints them as `{}`).
 */
export function readSopsYaml(text: string, file: string, budget: YamlBudget): SopsFile {
  checkBudgetBeforeParse(text, budget, file);
  const roots = yamlPackageTree(text, file);
  const r: YamlRead = { file, lineAt: lineIndex(text) };
  const nodes = checkBudget(roots, budget, file, (node) => fail(`nesting deeper than ${MAX_DEPTH} levels`, at(r, node), ProcessCode.ParseError));
  const branches: SopsMap[] = [];
  for (const root of roots) {
    const doc = root.kind === 'alias' ? root.target : root;
    if (doc?.kind === 'seq') fail('a YAML document that is a sequence (sops reads mappings only)', at(r, root));
    if (doc?.kind === 'scalar') {
      // a document without content (a trailing `---`): sops prints it as `{}`, which kubectl
      // would refuse; left out, as kubectl leaves the empty document of the plaintext out
      if (scalarV3(doc, at(r, doc)).t === 'null') continue;
      fail('a YAML document that is a single value (sops reads mappings only)', at(r, root));
    }
    branches.push(yamlMap(doc as Extract<YNode, { kind: 'map' }>, r, 0, branches.length === 0));
  }
  budget.remaining -= nodes;
  return { format: 'yaml', branches };
}

// ---------------------------------------------------------------------------------------------
// JSON: one object, keys in order (duplicates kept, as the token decoder keeps them).

/** A JSON file as sops's JSON store loads it: its first value, which must be an object. */
export function readSopsJson(text: string, file: string): SopsFile {
  const p = new JsonParser(text, file);
  p.space();
  if (text[p.i] !== '{') fail('sops reads JSON files holding one object only', file);
  const branch = p.value(0);
  p.space();
  // sops ignores whatever follows the first object; a manifest stream would apply it: refused
  if (p.i < text.length) fail('more than one JSON value: a SOPS JSON file holds one object', `${file}:${p.line()}`);
  return { format: 'json', branches: [branch as SopsMap] };
}

const JSON_STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const JSON_NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;

class JsonParser {
  i = 0;
  constructor(
    private readonly s: string,
    private readonly file: string,
  ) {}

  line(): number {
    let n = 1;
    for (let j = 0; j < this.i && j < this.s.length; j++) if (this.s[j] === '\n') n++;
    return n;
  }

  private bad(what: string): never {
    fail(`invalid JSON: ${what}`, `${this.file}:${this.line()}`, ProcessCode.ParseError);
  }

  space(): void {
    while (this.i < this.s.length && ' \t\n\r'.includes(this.s[this.i] as string)) this.i++;
  }

  value(depth: number): SopsValue {
    if (depth > MAX_DEPTH) this.bad(`nesting deeper than ${MAX_DEPTH} levels`);
    this.space();
    const c = this.s[this.i];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return { t: 'str', v: this.string() };
    for (const [word, v] of [
      ['true', { t: 'bool', v: true }],
      ['false', { t: 'bool', v: false }],
      ['null', { t: 'null' }],
    ] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return v;
      }
    }
    return this.number();
  }

  private object(depth: number): SopsMap {
    this.i++;
    const items: Array<[string, SopsValue]> = [];
    this.space();
    if (this.s[this.i] === '}') {
      this.i++;
      return { t: 'map', items };
    }
    for (;;) {
      this.space();
      if (this.s[this.i] !== '"') this.bad('expected a string key');
      const key = this.string();
      this.space();
      if (this.s[this.i] !== ':') this.bad("expected ':' after a key");
      this.i++;
      items.push([key, this.value(depth + 1)]);
      this.space();
      const c = this.s[this.i++];
      if (c === '}') return { t: 'map', items };
      if (c !== ',') this.bad("expected ',' or '}'");
    }
  }

  private array(depth: number): SopsValue {
    this.i++;
    const items: SopsValue[] = [];
    this.space();
    if (this.s[this.i] === ']') {
      this.i++;
      return { t: 'list', items };
    }
    for (;;) {
      items.push(this.value(depth + 1));
      this.space();
      const c = this.s[this.i++];
      if (c === ']') return { t: 'list', items };
      if (c !== ',') this.bad("expected ',' or ']'");
    }
  }

  private string(): string {
    JSON_STRING.lastIndex = this.i;
    const m = JSON_STRING.exec(this.s);
    if (!m) this.bad('a malformed string');
    this.i += m[0].length;
    return JSON.parse(m[0]) as string;
  }

  private number(): SopsValue {
    JSON_NUMBER.lastIndex = this.i;
    const m = JSON_NUMBER.exec(this.s);
    if (!m) this.bad('an unexpected character');
    this.i += m[0].length;
    // json.Number: Int64() when the text is an int64, else Float64()
    if (m[2] === undefined && m[3] === undefined) {
      const int = BigInt(m[0]);
      if (int >= INT64_MIN && int <= INT64_MAX) return { t: 'int', v: int };
    }
    const f = Number(m[0]);
    if (!Number.isFinite(f)) this.bad('a number out of the float64 range');
    return { t: 'float', v: f };
  }
}
