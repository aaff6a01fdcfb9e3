/**
 * A lower bound of the nodes a YAML stream's tree has, counted on the `yaml` package's lexer
 * tokens before either reader parses the text. Both readers hold a whole stream's parse in memory
 * before the node budget (budget.ts) can look at it — js-yaml's event list takes about 130 bytes
 * an event, the node tree about 75 bytes a node — so a 15 MiB document of one-digit numbers
 * (7.5 M nodes, no aliases) grew the process to 1.8 GiB and 30 s of CPU before it was refused.
 * The lexer holds one token at a time, and the count stops as soon as it passes the budget.
 *
 * The count: every scalar, alias and flow collection is one node of the tree; an indicator (`-`,
 * `?`, `:`) whose slot holds none of those (nothing up to the next indicator, `,` or the end of
 * its flow collection or document) is one more node, the null or the block collection in that
 * slot. Block collections are counted no other way, so the count never exceeds the nodes the
 * tree has, before aliases are expanded, and the tree's own check stays the exact one.
 *
 * Pure: no I/O.
 */
import { createRequire } from 'node:module';
import type * as YamlPackage from 'yaml';

// loaded on first use, as the reference reader loads it (document-reader.ts): most manifests are
// smaller than PRESCAN_MIN_CHARS
const require = createRequire(import.meta.url);
let yamlPackage: typeof YamlPackage | undefined;
const yaml = (): typeof YamlPackage => (yamlPackage ??= require('yaml') as typeof YamlPackage);

/**
 * Streams shorter than this are parsed without a prescan: at most about one node per character,
 * so their parse stays under about 100 MiB whatever they hold. The largest fixture file
 * (argo-rollouts' install.yaml, 1 MB) is prescanned; the lexer costs about a third of its parse.
 */
export const PRESCAN_MIN_CHARS = 256 * 1024;

const CONTENT = new Set(['scalar', 'single-quoted-scalar', 'double-quoted-scalar', 'alias', 'flow-map-start', 'flow-seq-start']);
const INDICATOR = new Set(['seq-item-ind', 'explicit-key-ind', 'map-value-ind']);
/** tokens that end an indicator's slot */
const SLOT_END = new Set(['comma', 'flow-map-end', 'flow-seq-end', 'flow-error-end', 'doc-start', 'doc-end', 'doc-mode']);
const DOCUMENT_START = new Set(['doc-start', 'doc-end', 'doc-mode']);

export interface NodeCount {
  /** nodes of the largest document so far */
  document: number;
  /** nodes of every document so far */
  total: number;
}

/**
 * The lower bound of a stream's nodes (module comment): of its largest document and of all.
 * Counting stops once the largest document passes `stop.document` or all pass `stop.total`.
 */
export function countNodesAtLeast(text: string, stop: NodeCount = { document: Infinity, total: Infinity }): NodeCount {
  const { Lexer, CST } = yaml();
  const out: NodeCount = { document: 0, total: 0 };
  let inDocument = 0;
  let pending = false;
  const count = (): boolean => {
    inDocument++;
    out.total++;
    if (inDocument > out.document) out.document = inDocument;
    return out.document > stop.document || out.total > stop.total;
  };
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (!type) continue;
    let done = false;
    if (CONTENT.has(type)) {
      pending = false;
      done = count();
    } else if (INDICATOR.has(type)) {
      if (pending) done = count();
      pending = true;
    } else if (SLOT_END.has(type)) {
      if (pending) done = count();
      pending = false;
      if (DOCUMENT_START.has(type)) inDocument = 0;
    }
    if (done) return out;
  }
  if (pending) count();
  return out;
}

/**
 * Which budget the stream certainly exceeds: 'document' when one document has more than
 * `perDocument` nodes, 'bundle' when all together have more than `remaining`; undefined when the
 * lower bound fits both (the tree is then checked exactly).
 */
export function exceedsAtLeast(text: string, perDocument: number, remaining: number): 'document' | 'bundle' | undefined {
  const n = countNodesAtLeast(text, { document: perDocument, total: remaining });
  return n.document > perDocument ? 'document' : n.total > remaining ? 'bundle' : undefined;
}
