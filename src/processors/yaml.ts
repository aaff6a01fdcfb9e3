/**
 * Reads YAML and JSON manifest streams the way kubectl does, so an object renders to the same
 * values whether it is applied with `kubectl apply -f` or through Hoist.
 *
 * kubectl reads YAML with sigs.k8s.io/yaml, which decodes with go-yaml v2 (YAML 1.1 scalars) and
 * converts the result to JSON. We read the YAML structure only (every scalar text, nothing
 * interpreted: js-yaml's event stream, or the `yaml` package's failsafe schema for what that
 * leaves aside, see below) and then resolve each scalar with go-yaml v2's own rules
 * (goyaml.v2/resolve.go), rather than a library's yaml-1.1 schema, because the two disagree on
 * details kubectl users meet: go-yaml v2 has no sexagesimal numbers (`1:20` stays a string),
 * keeps timestamps as strings, reads `08` as the float 8, and turns non-string map keys into
 * strings (`yes:` → "true", `0755:` → "493").
 *
 * Pure: no I/O; same text in, same values out.
 */
import { EVENT_ID, getScalarValue, parseEvents } from 'js-yaml';
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseAllDocuments } from 'yaml';
import type { Document, Node as YamlNode } from 'yaml';
import { processError } from './errors.ts';

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export interface ParsedDocument {
  /** never null: empty documents are dropped, as kubectl drops them */
  value: JsonValue;
  /** 1-based line where the document's content starts */
  line: number;
}

export interface ParsedStream {
  documents: ParsedDocument[];
  warnings: string[];
}

/** Nesting beyond this is refused rather than risking the stack. */
const MAX_DEPTH = 512;

/**
 * Parses a multi-document stream. Content whose first non-blank character is `{` is read as a
 * JSON stream (kubectl sniffs the same way), anything else as YAML. `file` is the path used in
 * error subjects. Throws a terminal HoistError (code parse-error) naming file and line.
 */
export function parseManifestStream(text: string, file: string): ParsedStream {
  const firstChar = /\S/.exec(text)?.[0];
  if (firstChar === '{') return { documents: parseJsonStream(text, file), warnings: [] };
  return parseYamlStream(text, file);
}

// ---------------------------------------------------------------------------------------------
// YAML
//
// Two readers build the same small node tree, and one walk turns it into JSON values:
//   - the fast one reads js-yaml's event stream (parseEvents: a flat list of offsets, no AST), an
//     order of magnitude faster than the `yaml` package on a 1 MB manifest;
//   - the reference one reads the `yaml` package's documents (failsafe schema, nothing
//     interpreted). It is used whenever the fast one meets anything unusual: a js-yaml syntax
//     error, %TAG directives, tagged collections, tag forms other than !x, !!x, ! and !<x>, an
//     unknown alias, or any error of the walk. Errors therefore always come from the reference
//     reader, with its messages and lines, exactly as before.

/** A scalar, sequence, mapping or alias, with the offset its line is reported from. */
type YNode =
  | { kind: 'scalar'; pos: number; text: string; plain: boolean; tag: string }
  | { kind: 'seq'; pos: number; items: Array<YNode | null> }
  | { kind: 'map'; pos: number; pairs: Array<[YNode | null, YNode | null]> }
  | { kind: 'alias'; pos: number; name: string; target: YNode | undefined };
type YScalar = Extract<YNode, { kind: 'scalar' }>;

interface Walk {
  lineAt: (pos: number) => number;
  file: string;
  warnings: string[];
  /** remaining node budget: alias expansion ("billion laughs") must not exhaust memory */
  budget: number;
}

/** Thrown by the fast reader for input it leaves to the reference reader. */
class UseReferenceReader extends Error {}

export function parseYamlStream(text: string, file: string): ParsedStream {
  let roots: YNode[] | undefined;
  try {
    roots = eventTree(text);
  } catch {
    // js-yaml refused it (or met something unusual): the reference reader decides
    roots = undefined;
  }
  if (roots !== undefined) {
    try {
      return walkDocuments(roots, text, file);
    } catch {
      // the reference reader produces the error, with the message and line it always had
    }
  }
  return walkDocuments(yamlPackageTree(text, file), text, file);
}

function walkDocuments(roots: YNode[], text: string, file: string): ParsedStream {
  const walk: Walk = { lineAt: lineIndex(text), file, warnings: [], budget: 2_000_000 + 50 * text.length };
  const documents: ParsedDocument[] = [];
  for (const root of roots) {
    const value = toJson(root, walk, 0);
    if (value === null) continue;
    documents.push({ value, line: walk.lineAt(root.pos) });
  }
  return { documents, warnings: walk.warnings };
}

/** 1-based line of an offset, by binary search over the offsets of the line breaks. */
function lineIndex(text: string): (pos: number) => number {
  let breaks: number[] | undefined;
  return (pos) => {
    if (breaks === undefined) {
      breaks = [];
      for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) breaks.push(i);
    }
    let lo = 0;
    let hi = breaks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((breaks[mid] as number) < pos) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  };
}

// --- fast reader: js-yaml events

const YAML_SCALAR_STYLE_PLAIN = 1;
const YAML_BLOCK_STYLES = new Set([4, 5]);

function eventTree(text: string): YNode[] {
  const events = parseEvents(text, { maxDepth: MAX_DEPTH + 1 });
  const roots: YNode[] = [];
  let anchors = new Map<string, YNode>();
  // open collections; a mapping collects keys and values alternately
  const stack: Array<{ node: Extract<YNode, { kind: 'seq' | 'map' }>; key: YNode | null | undefined }> = [];
  let lastPos = 0;
  const add = (node: YNode): void => {
    const top = stack[stack.length - 1];
    if (top === undefined) roots.push(node);
    else if (top.node.kind === 'seq') top.node.items.push(node);
    else if (top.key === undefined) top.key = node;
    else {
      top.node.pairs.push([top.key, node]);
      top.key = undefined;
    }
  };
  const anchor = (ev: { anchorStart: number; anchorEnd: number }, node: YNode): void => {
    if (ev.anchorStart >= 0) anchors.set(text.slice(ev.anchorStart, ev.anchorEnd), node);
  };
  for (const ev of events) {
    switch (ev.type) {
      case EVENT_ID.DOCUMENT:
        if (ev.directives.some((d) => d.kind === 'tag')) throw new UseReferenceReader('%TAG directive');
        anchors = new Map();
        break;
      case EVENT_ID.SCALAR: {
        const style = ev.style;
        let pos = ev.valueStart < 0 ? lastPos : ev.valueStart;
        // the reference reader places a block scalar at its header, the line before its content
        if (YAML_BLOCK_STYLES.has(style) && ev.valueStart > 0) pos = ev.valueStart - 1;
        lastPos = pos;
        const tag = ev.tagStart < 0 ? '' : eventTag(text.slice(ev.tagStart, ev.tagEnd));
        const node: YNode = { kind: 'scalar', pos, text: getScalarValue(text, ev), plain: style === YAML_SCALAR_STYLE_PLAIN, tag };
        // the reference reader refuses an implicit key longer than 1024 characters (as go-yaml does)
        const top = stack[stack.length - 1];
        if (top?.node.kind === 'map' && top.key === undefined && ev.valueEnd - ev.valueStart > 1000) {
          throw new UseReferenceReader('long key');
        }
        anchor(ev, node);
        add(node);
        break;
      }
      case EVENT_ID.SEQUENCE:
      case EVENT_ID.MAPPING: {
        if (ev.tagStart >= 0) throw new UseReferenceReader('tagged collection');
        lastPos = ev.start;
        const node: Extract<YNode, { kind: 'seq' | 'map' }> =
          ev.type === EVENT_ID.SEQUENCE ? { kind: 'seq', pos: ev.start, items: [] } : { kind: 'map', pos: ev.start, pairs: [] };
        anchor(ev, node);
        add(node);
        stack.push({ node, key: undefined });
        break;
      }
      case EVENT_ID.ALIAS: {
        const name = text.slice(ev.anchorStart, ev.anchorEnd);
        const target = anchors.get(name);
        if (target === undefined) throw new UseReferenceReader('unknown alias');
        lastPos = ev.anchorStart;
        add({ kind: 'alias', pos: ev.anchorStart, name, target });
        break;
      }
      case EVENT_ID.POP: {
        const top = stack.pop();
        if (top?.key !== undefined) throw new UseReferenceReader('mapping key without value');
        break;
      }
    }
  }
  return roots;
}

/** The short tag the reference reader would report for a tag as written; unusual forms are left to it. */
function eventTag(raw: string): string {
  if (raw.includes('%')) throw new UseReferenceReader('escaped tag');
  if (raw.startsWith('!<') && raw.endsWith('>')) return shortTag(raw.slice(2, -1));
  if (raw === '!' || /^!!?[^!]+$/.test(raw)) return raw;
  throw new UseReferenceReader('named tag handle');
}

// --- reference reader: the `yaml` package

function yamlPackageTree(text: string, file: string): YNode[] {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, {
    schema: 'failsafe',
    // duplicates are resolved last-wins by the walk, with a warning, as go-yaml v2 does
    uniqueKeys: false,
    merge: false,
    // keep !!binary, !!timestamp, !!set, !!omap as written; go-yaml's rules are applied by the walk
    resolveKnownTags: false,
    lineCounter: lines,
    prettyErrors: false,
  });
  const roots: YNode[] = [];
  // an input without documents yields an empty array-like EmptyStream
  for (const doc of docs) {
    const err = doc.errors[0];
    if (err) {
      const line = err.linePos?.[0].line ?? lines.linePos(err.pos[0]).line;
      throw processError(`invalid YAML: ${firstLine(err.message)}`, 'parse-error', `${file}:${line}`, err);
    }
    if (doc.contents === null) continue;
    roots.push(fromYamlNode(doc.contents as YamlNode, { doc, seen: new Map(), file, lines }));
  }
  return roots;
}

interface Conversion {
  doc: Document.Parsed;
  seen: Map<YamlNode, YNode>;
  file: string;
  lines: LineCounter;
}

function fromYamlNode(node: YamlNode, c: Conversion): YNode {
  const known = c.seen.get(node);
  if (known) return known;
  const pos = node.range?.[0] ?? 0;
  const child = (n: unknown): YNode | null => (n === null || n === undefined ? null : fromYamlNode(n as YamlNode, c));
  if (isAlias(node)) {
    const target = node.resolve(c.doc);
    return { kind: 'alias', pos, name: node.source, target: target ? fromYamlNode(target, c) : undefined };
  }
  if (isScalar(node)) {
    const text = node.value === null || node.value === undefined ? '' : String(node.value);
    const out: YNode = { kind: 'scalar', pos, text, plain: node.type === 'PLAIN', tag: shortTag(node.tag) };
    c.seen.set(node, out);
    return out;
  }
  if (isSeq(node)) {
    const out: YNode = { kind: 'seq', pos, items: [] };
    c.seen.set(node, out);
    for (const item of node.items) out.items.push(child(item));
    return out;
  }
  if (isMap(node)) {
    const out: YNode = { kind: 'map', pos, pairs: [] };
    c.seen.set(node, out);
    for (const pair of node.items) out.pairs.push([child(pair.key), child(pair.value)]);
    return out;
  }
  throw processError('unsupported YAML node', 'parse-error', `${c.file}:${c.lines.linePos(pos).line}`);
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}

// --- the walk: go-yaml v2 semantics over the node tree

function fail(walk: Walk, node: YNode | null | undefined, message: string): never {
  const subject = node ? `${walk.file}:${walk.lineAt(node.pos)}` : walk.file;
  throw processError(message, 'parse-error', subject);
}

function toJson(node: YNode, walk: Walk, depth: number): JsonValue {
  if (depth > MAX_DEPTH) fail(walk, node, `nesting deeper than ${MAX_DEPTH} levels`);
  if (--walk.budget < 0) fail(walk, node, 'document expands to too many nodes (alias expansion)');
  switch (node.kind) {
    case 'alias':
      if (!node.target) fail(walk, node, `unknown alias *${node.name}`);
      return toJson(node.target, walk, depth + 1);
    case 'scalar':
      return scalarValue(node, walk);
    case 'seq':
      return node.items.map((item) => (item === null ? null : toJson(item, walk, depth + 1)));
    case 'map':
      return mapValue(node, walk, depth);
  }
}

function mapValue(node: Extract<YNode, { kind: 'map' }>, walk: Walk, depth: number): JsonObject {
  const explicit: Array<[string, JsonValue, YNode | null]> = [];
  const merged: JsonObject[] = [];
  for (const [keyNode, valueNode] of node.pairs) {
    if (keyNode !== null && isMergeKey(keyNode)) {
      merged.push(...mergeSources(valueNode, walk, depth));
      continue;
    }
    const key = mapKey(keyNode, walk, node);
    const value = valueNode === null ? null : toJson(valueNode, walk, depth + 1);
    explicit.push([key, value, keyNode]);
  }
  const out: JsonObject = {};
  // YAML merge keys: explicit keys win over merged ones, earlier merge sources over later ones
  for (let i = merged.length - 1; i >= 0; i--) {
    for (const [k, v] of Object.entries(merged[i] as JsonObject)) setKey(out, k, v);
  }
  const seen = new Set<string>();
  for (const [key, value, keyNode] of explicit) {
    if (seen.has(key)) {
      const line = walk.lineAt((keyNode ?? node).pos);
      walk.warnings.push(`${walk.file}:${line}: duplicate key "${key}", the last value is used (as kubectl does)`);
    }
    seen.add(key);
    setKey(out, key, value);
  }
  return out;
}

function isMergeKey(node: YNode): boolean {
  if (node.kind !== 'scalar' || node.text !== '<<') return false;
  return node.tag === '!!merge' || (node.tag === '' && node.plain);
}

function mergeSources(valueNode: YNode | null, walk: Walk, depth: number): JsonObject[] {
  const target = valueNode?.kind === 'alias' ? (valueNode.target ?? null) : valueNode;
  if (target?.kind === 'seq') {
    return target.items.map((item) => {
      const v = item === null ? null : toJson(item, walk, depth + 1);
      if (!isJsonObject(v)) fail(walk, valueNode, 'map merge requires a map or a sequence of maps');
      return v;
    });
  }
  const v = valueNode === null ? null : toJson(valueNode, walk, depth + 1);
  if (!isJsonObject(v)) fail(walk, valueNode, 'map merge requires a map or a sequence of maps');
  return [v];
}

/** Assigns an own property, also for the key "__proto__" (a plain assignment would set the prototype). */
export function setKey(obj: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Map keys the way sigs.k8s.io/yaml turns go-yaml v2 keys into JSON object keys. */
function mapKey(keyNode: YNode | null, walk: Walk, mapNode: YNode): string {
  const target = keyNode?.kind === 'alias' ? (keyNode.target ?? null) : keyNode;
  if (target === null) fail(walk, mapNode, 'unsupported map key: null');
  if (target.kind !== 'scalar') fail(walk, target, 'unsupported map key: a map or sequence cannot be a JSON object key');
  const resolved = resolveScalarNode(target, walk);
  switch (resolved.kind) {
    case 'str':
      return resolved.value;
    case 'bool':
      return resolved.value ? 'true' : 'false';
    case 'int':
      return resolved.value.toString(10);
    case 'float':
      return formatGoFloat32(resolved.value);
    case 'null':
      fail(walk, target, 'unsupported map key: null');
  }
}

function scalarValue(node: YScalar, walk: Walk): JsonValue {
  const r = resolveScalarNode(node, walk);
  switch (r.kind) {
    case 'str':
    case 'bool':
      return r.value;
    case 'null':
      return null;
    case 'int': {
      const n = Number(r.value);
      if (!Number.isSafeInteger(n)) {
        fail(walk, node, `integer ${r.value} cannot be represented exactly (beyond ±2^53)`);
      }
      return n;
    }
    case 'float':
      if (!Number.isFinite(r.value)) fail(walk, node, `value ${node.text} cannot be represented in JSON`);
      return r.value;
  }
}

// ---------------------------------------------------------------------------------------------
// go-yaml v2 scalar resolution

export type Resolved =
  | { kind: 'str'; value: string }
  | { kind: 'bool'; value: boolean }
  | { kind: 'null' }
  | { kind: 'int'; value: bigint }
  | { kind: 'float'; value: number };

const LONG_TAG_PREFIX = 'tag:yaml.org,2002:';

function shortTag(tag: string | undefined): string {
  if (tag === undefined) return '';
  return tag.startsWith(LONG_TAG_PREFIX) ? `!!${tag.slice(LONG_TAG_PREFIX.length)}` : tag;
}

function resolveScalarNode(node: YScalar, walk: Walk): Resolved {
  const { text, tag } = node;
  // go-yaml v2: a quoted or block scalar without a tag is a string; only plain scalars are resolved
  if (tag === '' && !node.plain) return { kind: 'str', value: text };
  if (tag === '!!binary') {
    const compact = text.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) {
      fail(walk, node, '!!binary value is not valid base64');
    }
    return { kind: 'str', value: Buffer.from(compact, 'base64').toString('utf8') };
  }
  try {
    return resolveYamlScalar(text, tag);
  } catch (e) {
    fail(walk, node, e instanceof Error ? e.message : String(e));
  }
}

const BOOL_NULL: ReadonlyMap<string, Resolved> = new Map<string, Resolved>([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'].map(
    (s): [string, Resolved] => [s, { kind: 'bool', value: true }],
  ),
  ...['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'].map(
    (s): [string, Resolved] => [s, { kind: 'bool', value: false }],
  ),
  ...['', '~', 'null', 'Null', 'NULL'].map((s): [string, Resolved] => [s, { kind: 'null' }]),
  ...['.nan', '.NaN', '.NAN'].map((s): [string, Resolved] => [s, { kind: 'float', value: Number.NaN }]),
  ...['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF'].map(
    (s): [string, Resolved] => [s, { kind: 'float', value: Number.POSITIVE_INFINITY }],
  ),
  ...['-.inf', '-.Inf', '-.INF'].map((s): [string, Resolved] => [s, { kind: 'float', value: Number.NEGATIVE_INFINITY }]),
]);

const RESOLVABLE_TAGS = new Set(['', '!!str', '!!bool', '!!int', '!!float', '!!null', '!!timestamp']);
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
const TIMESTAMP = /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?)?$/;

type Hint = 'S' | 'D' | 'M' | '.' | 'N' | '';
function hintOf(text: string): Hint {
  const c = text[0];
  if (c === undefined) return 'N';
  if (c === '+' || c === '-') return 'S';
  if (c >= '0' && c <= '9') return 'D';
  if ('yYnNtTfFoO~'.includes(c)) return 'M';
  if (c === '.') return '.';
  return '';
}

/**
 * go-yaml v2's resolve(tag, in) for a scalar's text and its short tag ("" when untagged, "!!int",
 * ...). Non-standard tags leave the text a string, as go-yaml does when decoding into
 * interface{}. Throws when an explicit tag does not fit the text ("cannot decode ...").
 */
export function resolveYamlScalar(text: string, tag = ''): Resolved {
  if (!RESOLVABLE_TAGS.has(tag)) return { kind: 'str', value: text };
  const resolved = resolveUntyped(text, tag);
  if (tag === '' || tag === '!!str') return resolved;
  const rtag = `!!${resolved.kind}`;
  if (tag === rtag) return resolved;
  if (tag === '!!float' && resolved.kind === 'int') return { kind: 'float', value: Number(resolved.value) };
  // go-yaml keeps timestamps as strings when decoding into interface{}
  if (tag === '!!timestamp' && resolved.kind === 'str' && TIMESTAMP.test(text)) return resolved;
  throw new Error(`cannot decode ${rtag} \`${text}\` as a ${tag}`);
}

function resolveUntyped(text: string, tag: string): Resolved {
  const hint = hintOf(text);
  if (hint === '' || tag === '!!str') return { kind: 'str', value: text };
  const known = BOOL_NULL.get(text);
  if (known) return known;
  switch (hint) {
    case '.':
      if (/^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(text)) return { kind: 'float', value: Number(text) };
      break;
    case 'D':
    case 'S': {
      const plain = text.replaceAll('_', '');
      const int = parseGoIntBase0(plain);
      if (int !== undefined) return { kind: 'int', value: int };
      if (YAML_STYLE_FLOAT.test(plain)) {
        const f = Number(plain);
        // strconv.ParseFloat fails on overflow, and go-yaml then keeps the text as a string
        if (Number.isFinite(f)) return { kind: 'float', value: f };
      }
      break;
    }
    default:
      break;
  }
  return { kind: 'str', value: text };
}

/**
 * strconv.ParseInt(s, 0, 64), falling back to ParseUint and big.Int as go-yaml v2 does: an
 * optional sign, then 0x/0o/0b prefixes, a leading 0 for octal, else decimal.
 */
function parseGoIntBase0(s: string): bigint | undefined {
  const m = /^([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(s);
  if (!m) return undefined;
  const sign = m[1] === '-' ? -1n : 1n;
  const body = m[2] as string;
  let magnitude: bigint;
  if (/^0[xXoObB]/.test(body)) {
    magnitude = BigInt(`0${body[1]?.toLowerCase()}${body.slice(2)}`);
  } else if (body.length > 1 && body.startsWith('0')) {
    magnitude = BigInt(`0o${body.slice(1)}`);
  } else {
    magnitude = BigInt(body);
  }
  return sign * magnitude;
}

/**
 * strconv.FormatFloat(f, 'g', -1, 32): how sigs.k8s.io/yaml spells a float map key. Only used
 * for keys, which are rare, but `1.5: x` should become "1.5" exactly as kubectl makes it.
 */
export function formatGoFloat32(value: number): string {
  if (Number.isNaN(value)) return '.nan';
  if (value === Number.POSITIVE_INFINITY) return '.inf';
  if (value === Number.NEGATIVE_INFINITY) return '-.inf';
  const f = Math.fround(value);
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const neg = f < 0;
  const abs = Math.abs(f);
  let digits = '';
  let exp = 0;
  for (let p = 1; p <= 9; p++) {
    const e = abs.toExponential(p - 1);
    if (Math.fround(Number(e)) === abs || p === 9) {
      const [mant = '', ex = '0'] = e.split('e');
      digits = mant.replace('.', '').replace(/0+$/, '') || '0';
      exp = Number(ex);
      break;
    }
  }
  const nd = digits.length;
  const dp = exp + 1;
  let out: string;
  if (exp < -4 || exp >= 6) {
    const mant = nd > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const es = Math.abs(exp) < 10 ? `0${Math.abs(exp)}` : `${Math.abs(exp)}`;
    out = `${mant}e${exp < 0 ? '-' : '+'}${es}`;
  } else if (dp <= 0) {
    out = `0.${'0'.repeat(-dp)}${digits}`;
  } else if (dp >= nd) {
    out = digits + '0'.repeat(dp - nd);
  } else {
    out = `${digits.slice(0, dp)}.${digits.slice(dp)}`;
  }
  return neg ? `-${out}` : out;
}

// ---------------------------------------------------------------------------------------------
// JSON

interface ReviverContext {
  source?: string;
}

/** A stream of concatenated JSON values, as kubectl's JSON decoder accepts. */
function parseJsonStream(text: string, file: string): ParsedDocument[] {
  const documents: ParsedDocument[] = [];
  let i = 0;
  let line = 1;
  while (i < text.length) {
    // skip whitespace, counting lines
    while (i < text.length && /\s/.test(text[i] as string)) {
      if (text[i] === '\n') line++;
      i++;
    }
    if (i >= text.length) break;
    const end = jsonValueEnd(text, i);
    const chunk = text.slice(i, end);
    let value: JsonValue;
    try {
      value = JSON.parse(chunk, (_key: string, v: unknown, ctx?: ReviverContext) => {
        if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source)) {
          throw new Error(`integer ${ctx.source} cannot be represented exactly (beyond ±2^53)`);
        }
        return v;
      }) as JsonValue;
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      const pos = /position (\d+)/.exec(msg)?.[1];
      const errLine = pos === undefined ? line : line + countNewlines(chunk.slice(0, Number(pos)));
      throw processError(`invalid JSON: ${msg.replace(/ \(line \d+ column \d+\)/, '')}`, 'parse-error', `${file}:${errLine}`, e);
    }
    if (value !== null) documents.push({ value, line });
    line += countNewlines(chunk);
    i = end;
  }
  return documents;
}

function countNewlines(s: string): number {
  let n = 0;
  for (const c of s) if (c === '\n') n++;
  return n;
}

/** End offset of the JSON value starting at `start`: balanced brackets outside strings. */
function jsonValueEnd(text: string, start: number): number {
  const open = text[start];
  if (open !== '{' && open !== '[') {
    // a scalar: up to the next whitespace; JSON.parse reports anything malformed
    const m = /\s/.exec(text.slice(start));
    return m ? start + m.index : text.length;
  }
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}
