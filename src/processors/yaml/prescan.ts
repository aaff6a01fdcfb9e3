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
 * No I/O; the yielding count waits for the event loop between slices.
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

/** counts one stream's tokens (module comment); feed() is true once the count passes `stop` */
class NodeCounter {
  readonly out: NodeCount = { document: 0, total: 0 };
  private inDocument = 0;
  private pending = false;

  constructor(private readonly stop: NodeCount) {}

  feed(type: string): boolean {
    if (CONTENT.has(type)) {
      this.pending = false;
      return this.count();
    }
    if (INDICATOR.has(type)) {
      const done = this.pending && this.count();
      this.pending = true;
      return done;
    }
    if (SLOT_END.has(type)) {
      const done = this.pending && this.count();
      this.pending = false;
      if (DOCUMENT_START.has(type)) this.inDocument = 0;
      return done;
    }
    return false;
  }

  end(): NodeCount {
    if (this.pending) this.count();
    this.pending = false;
    return this.out;
  }

  private count(): boolean {
    this.inDocument++;
    this.out.total++;
    if (this.inDocument > this.out.document) this.out.document = this.inDocument;
    return this.out.document > this.stop.document || this.out.total > this.stop.total;
  }
}

/**
 * The lower bound of a stream's nodes (module comment): of its largest document and of all.
 * Counting stops once the largest document passes `stop.document` or all pass `stop.total`.
 */
export function countNodesAtLeast(text: string, stop: NodeCount = { document: Infinity, total: Infinity }): NodeCount {
  const { Lexer, CST } = yaml();
  const counter = new NodeCounter(stop);
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (type && counter.feed(type)) return counter.out;
  }
  return counter.end();
}

/** how long the yielding count runs before it lets the event loop serve others */
const SLICE_MS = 5;

/**
 * countNodesAtLeast that gives the event loop back every few milliseconds: lexing a hostile
 * 15 MiB stream up to the budget takes about a second of CPU, which must not hold every other
 * BundleDeployment's reconcile (and the watches) for that long.
 */
export async function countNodesAtLeastYielding(
  text: string,
  stop: NodeCount = { document: Infinity, total: Infinity },
  signal?: AbortSignal,
): Promise<NodeCount> {
  const { Lexer, CST } = yaml();
  const counter = new NodeCounter(stop);
  let sliceStart = performance.now();
  let n = 0;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (type && counter.feed(type)) return counter.out;
    if (++n % 1024 === 0 && performance.now() - sliceStart > SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
      sliceStart = performance.now();
    }
  }
  return counter.end();
}

/**
 * Whether the stream holds an alias (`*name`), by the lexer's tokens: a `*` in a quoted or plain
 * scalar, a comment or a block scalar is none. Gives the event loop back every few milliseconds.
 */
export async function hasAliasYielding(text: string, signal?: AbortSignal): Promise<boolean> {
  const { Lexer, CST } = yaml();
  let sliceStart = performance.now();
  let n = 0;
  for (const token of new Lexer().lex(text)) {
    if (CST.tokenType(token) === 'alias') return true;
    if (++n % 1024 === 0 && performance.now() - sliceStart > SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
      sliceStart = performance.now();
    }
  }
  return false;
}

/**
 * Which budget the stream certainly exceeds: 'document' when one document has more than
 * `perDocument` nodes, 'bundle' when all together have more than `remaining`; undefined when the
 * lower bound fits both (the tree is then checked exactly).
 */
export function exceedsAtLeast(text: string, perDocument: number, remaining: number): 'document' | 'bundle' | undefined {
  return exceeded(countNodesAtLeast(text, { document: perDocument, total: remaining }), perDocument, remaining);
}

/** exceedsAtLeast, giving the event loop back every few milliseconds */
export async function exceedsAtLeastYielding(
  text: string,
  perDocument: number,
  remaining: number,
  signal?: AbortSignal,
): Promise<'document' | 'bundle' | undefined> {
  return exceeded(await countNodesAtLeastYielding(text, { document: perDocument, total: remaining }, signal), perDocument, remaining);
}

function exceeded(n: NodeCount, perDocument: number, remaining: number): 'document' | 'bundle' | undefined {
  return n.document > perDocument ? 'document' : n.total > remaining ? 'bundle' : undefined;
}
