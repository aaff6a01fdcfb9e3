/**
 * The reference YAML reader: builds the node tree from the `yaml` package's documents (failsafe
 * schema, nothing interpreted). Used whenever the fast reader (event-reader.ts) declines or the
 * walk fails on its tree, so every parse error comes from here, with its message and line.
 *
 * Pure: no I/O. Throws a terminal HoistError (code parse-error) naming file and line.
 */
import { createRequire } from 'node:module';
import type { Document, LineCounter, Node as YamlNode } from 'yaml';
import type * as YamlPackage from 'yaml';
import { processError } from '../errors.ts';
import type { YNode } from './node-tree.ts';
import { shortTag } from './scalars.ts';
import { ProcessCode } from '../errors.ts';

// Loaded on first use (synchronously, as this reader is): most manifests never need it, and the
// package costs ~10 MiB of resident memory (issue 10).
const require = createRequire(import.meta.url);
let yamlPackage: typeof YamlPackage | undefined;
const yaml = (): typeof YamlPackage => (yamlPackage ??= require('yaml') as typeof YamlPackage);

export function yamlPackageTree(text: string, file: string): YNode[] {
  const { LineCounter, parseAllDocuments } = yaml();
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
      throw processError(`invalid YAML: ${firstLine(err.message)}`, ProcessCode.ParseError, `${file}:${line}`, err);
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
  if (yaml().isAlias(node)) {
    const target = node.resolve(c.doc);
    return { kind: 'alias', pos, name: node.source, target: target ? fromYamlNode(target, c) : undefined };
  }
  if (yaml().isScalar(node)) {
    const text = node.value === null || node.value === undefined ? '' : String(node.value);
    const out: YNode = { kind: 'scalar', pos, text, plain: node.type === 'PLAIN', tag: shortTag(node.tag) };
    c.seen.set(node, out);
    return out;
  }
  if (yaml().isSeq(node)) {
    const out: YNode = { kind: 'seq', pos, items: [] };
    c.seen.set(node, out);
    for (const item of node.items) out.items.push(child(item));
    return out;
  }
  if (yaml().isMap(node)) {
    const out: YNode = { kind: 'map', pos, pairs: [] };
    c.seen.set(node, out);
    for (const pair of node.items) out.pairs.push([child(pair.key), child(pair.value)]);
    return out;
  }
  throw processError('unsupported YAML node', ProcessCode.ParseError, `${c.file}:${c.lines.linePos(pos).line}`);
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}
