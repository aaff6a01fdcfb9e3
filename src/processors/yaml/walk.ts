/**
 * go-yaml v2 semantics over the node tree: turns what a reader built into JSON values as
 * sigs.k8s.io/yaml would (merge keys, last-wins duplicate keys with a warning, non-string keys
 * made strings, scalars resolved by scalars.ts), within a depth limit and a node budget so alias
 * bombs fail instead of eating memory.
 *
 * Pure: no I/O. Throws a terminal HoistError (code parse-error) naming file and line.
 */
import { processError } from '../errors.ts';
import { checkBudget, yamlBudget } from './budget.ts';
import type { YamlBudget } from './budget.ts';
import { MAX_DEPTH } from './node-tree.ts';
import type { YNode, YScalar } from './node-tree.ts';
import { formatGoFloat32, plainIsText, resolveYamlScalar } from './scalars.ts';
import type { Resolved } from './scalars.ts';
import { isJsonObject, setKey } from './values.ts';
import type { JsonObject, JsonValue, ParsedDocument, ParsedStream } from './values.ts';
import { ProcessCode } from '../errors.ts';

interface Walk {
  lineAt: (pos: number) => number;
  file: string;
  warnings: string[];
}

/**
 * Walks every document of a stream. The budget (one per bundle; a fresh one by default) is
 * checked against the documents' expanded size before anything is walked, and charged only when
 * the walk succeeded, so a stream walked a second time by the reference reader is charged once.
 */
export function walkDocuments(roots: YNode[], text: string, file: string, budget: YamlBudget = yamlBudget()): ParsedStream {
  const walk: Walk = { lineAt: lineIndex(text), file, warnings: [] };
  const nodes = checkBudget(roots, budget, file, (node) => tooDeep(walk, node));
  const documents: ParsedDocument[] = [];
  for (const root of roots) {
    const value = toJson(root, walk, 0);
    if (value === null) continue;
    documents.push({ value, line: walk.lineAt(root.pos) });
  }
  budget.remaining -= nodes;
  return { documents, warnings: walk.warnings };
}

/** 1-based line of an offset, by binary search over the offsets of the line breaks. */
export function lineIndex(text: string): (pos: number) => number {
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

function fail(walk: Walk, node: YNode | null | undefined, message: string): never {
  const subject = node ? `${walk.file}:${walk.lineAt(node.pos)}` : walk.file;
  throw processError(message, ProcessCode.ParseError, subject);
}

function tooDeep(walk: Walk, node: YNode): never {
  fail(walk, node, `nesting deeper than ${MAX_DEPTH} levels`);
}

function toJson(node: YNode, walk: Walk, depth: number): JsonValue {
  if (depth > MAX_DEPTH) tooDeep(walk, node);
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
  if (!node.pairs.some(([k]) => k !== null && isMergeKey(k))) return plainMapValue(node, walk, depth);
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
      warnDuplicate(walk, keyNode ?? node, key);
    }
    seen.add(key);
    setKey(out, key, value);
  }
  return out;
}

/**
 * A map without merge keys (nearly every map of a manifest), built in place: the same keys in the
 * same order and the same warnings as the general path, without its lists of pairs and keys seen
 * (an assignment to a key already present keeps its place and takes the later value)
 */
function plainMapValue(node: Extract<YNode, { kind: 'map' }>, walk: Walk, depth: number): JsonObject {
  const out: JsonObject = {};
  for (const [keyNode, valueNode] of node.pairs) {
    const key = mapKey(keyNode, walk, node);
    const value = valueNode === null ? null : toJson(valueNode, walk, depth + 1);
    if (Object.hasOwn(out, key)) {
      warnDuplicate(walk, keyNode ?? node, key);
    }
    setKey(out, key, value);
  }
  return out;
}

/** a key given twice in one map: kubectl keeps the last value, and says so */
function warnDuplicate(walk: Walk, at: YNode, key: string): void {
  walk.warnings.push(`${walk.file}:${walk.lineAt(at.pos)}: duplicate key "${key}", the last value is used (as kubectl does)`);
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

/** Map keys the way sigs.k8s.io/yaml turns go-yaml v2 keys into JSON object keys. */
function mapKey(keyNode: YNode | null, walk: Walk, mapNode: YNode): string {
  const target = keyNode?.kind === 'alias' ? (keyNode.target ?? null) : keyNode;
  if (target === null) fail(walk, mapNode, 'unsupported map key: null');
  if (target.kind !== 'scalar') fail(walk, target, 'unsupported map key: a map or sequence cannot be a JSON object key');
  if (target.tag === '' && (!target.plain || plainIsText(target.text))) return target.text;
  const key = keyString(resolveScalarNode(target, walk));
  if (key === undefined) fail(walk, target, 'unsupported map key: null');
  return key;
}

/** The JSON object key a resolved map key becomes (sigs.k8s.io/yaml); undefined for null, which it refuses. */
export function keyString(resolved: Resolved): string | undefined {
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
      return undefined;
  }
}

function scalarValue(node: YScalar, walk: Walk): JsonValue {
  // a quoted or block scalar without a tag is its text (resolveScalarNode's first rule), and so
  // is a plain one that cannot be anything else: no Resolved built to hold it
  if (node.tag === '' && (!node.plain || plainIsText(node.text))) return node.text;
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
