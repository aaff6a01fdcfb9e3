/**
 * The YAML node budget: how many nodes a document, and all documents of one bundle, may expand
 * to once aliases are followed. Fixed numbers, not a multiple of the input's size, so a small
 * file full of aliases ("billion laughs") and a large one padded with comments meet the same
 * limit, as kube-apiserver's fix for CVE-2019-11253 does.
 *
 * The expanded size of a document is counted on the node tree before any value is built
 * (`expandedSize`: one pass over the tree, each anchored node counted once), so a refusal
 * costs memory proportional to the text, never to the expansion.
 *
 * Why these numbers (measured over every YAML file under testdata/ on 2026-11-27): the largest
 * document expands to 20,921 nodes (argocd-operator v0.6.0's ApplicationSet CRD) and the largest
 * bundle to 38,304 nodes (that bundle's manifests). A document cannot usefully exceed 1,000,000
 * nodes: as JSON every node takes at least 2 bytes, and etcd stores at most 1.5 MiB per object
 * (48 times the largest fixture). 4,000,000 per bundle is about 100 times the largest fixture
 * bundle and bounds the values a render builds to a few hundred MiB.
 *
 * Pure.
 */
import type { HoistError } from '../../util/errors.ts';
import { processError } from '../errors.ts';
import { MAX_DEPTH } from './node-tree.ts';
import { exceedsAtLeast, exceedsAtLeastYielding } from './prescan.ts';
import type { YNode } from './node-tree.ts';
import { ProcessCode } from '../errors.ts';

export const YAML_MAX_NODES_PER_DOCUMENT = 1_000_000;
export const YAML_MAX_NODES_PER_BUNDLE = 4_000_000;

/** What one render may still expand; shared by every file it parses. */
export interface YamlBudget {
  readonly perDocument: number;
  readonly perBundle: number;
  /** nodes left for the bundle's remaining documents */
  remaining: number;
}

export function yamlBudget(perDocument = YAML_MAX_NODES_PER_DOCUMENT, perBundle = YAML_MAX_NODES_PER_BUNDLE): YamlBudget {
  return { perDocument, perBundle, remaining: perBundle };
}

/** the code of a budget refusal: terminal, and the reference reader is not tried after it */
export const YAML_BUDGET_CODE = ProcessCode.YamlAliasBudget;

/**
 * Nodes the document rooted at `root` becomes with every alias expanded (a null item or value
 * counts as one node, as the walk builds one value for it). Only aliases' targets are memoised
 * (`memo`, shared by the documents of one stream): a node is reached twice only through an alias,
 * so a document without aliases is counted without allocating anything. Nesting beyond MAX_DEPTH,
 * and a cycle (an alias inside its own anchor, which the walk would follow until it is too deep),
 * call `onTooDeep`, so the error is the walk's own.
 */
export function expandedSize(root: YNode, memo: Map<YNode, number>, onTooDeep: (node: YNode) => never): number {
  /** aliases' targets being counted: meeting one again is a cycle */
  const open = new Set<YNode>();
  const visit = (node: YNode, depth: number): number => {
    if (depth > MAX_DEPTH) onTooDeep(node);
    let size = 1;
    switch (node.kind) {
      case 'alias': {
        const target = node.target;
        if (!target) break;
        let known = memo.get(target);
        if (known === undefined) {
          if (open.has(target)) onTooDeep(target);
          open.add(target);
          known = visit(target, depth + 1);
          open.delete(target);
          memo.set(target, known);
        }
        size += known;
        break;
      }
      case 'seq':
        for (const item of node.items) size += item === null ? 1 : visit(item, depth + 1);
        break;
      case 'map':
        for (const [k, v] of node.pairs) size += (k === null ? 1 : visit(k, depth + 1)) + (v === null ? 1 : visit(v, depth + 1));
        break;
      case 'scalar':
        break;
    }
    return size;
  };
  return visit(root, 0);
}

/**
 * Checks a stream's documents against the budget before they are walked; throws a terminal
 * HoistError (code yaml-alias-budget, subject the file) naming the limit. Returns the nodes the
 * stream will use; the caller charges them with `charge` once the walk succeeded.
 */
export function checkBudget(roots: readonly YNode[], budget: YamlBudget, file: string, onTooDeep: (node: YNode) => never): number {
  const memo = new Map<YNode, number>();
  let total = 0;
  for (const root of roots) {
    const size = expandedSize(root, memo, onTooDeep);
    if (size > budget.perDocument) throw overBudget('document', budget, file);
    total += size;
    if (total > budget.remaining) throw overBudget('bundle', budget, file);
  }
  return total;
}

/**
 * Checks a stream's text against the budget before either reader parses it, by a lower bound
 * of its nodes counted on the lexer's tokens (prescan.ts): both readers hold a whole parse in
 * memory, so a stream certainly over the budget is refused before any is built. Throws as
 * checkBudget does; a stream that passes is checked exactly on its tree.
 */
export function checkBudgetBeforeParse(text: string, budget: YamlBudget, file: string): void {
  const over = exceedsAtLeast(text, budget.perDocument, budget.remaining);
  if (over) throw overBudget(over, budget, file);
}

/** checkBudgetBeforeParse, giving the event loop back every few milliseconds while it lexes */
export async function checkBudgetBeforeParseYielding(text: string, budget: YamlBudget, file: string, signal?: AbortSignal): Promise<void> {
  const over = await exceedsAtLeastYielding(text, budget.perDocument, budget.remaining, signal);
  if (over) throw overBudget(over, budget, file);
}

function overBudget(which: 'document' | 'bundle', budget: YamlBudget, file: string): HoistError {
  return which === 'document'
    ? processError(
        `a YAML document expands to more than ${budget.perDocument} nodes (the limit per document; aliases are counted as expanded)`,
        YAML_BUDGET_CODE,
        file,
      )
    : processError(
        `the bundle's YAML expands to more than ${budget.perBundle} nodes (the limit per bundle; aliases are counted as expanded)`,
        YAML_BUDGET_CODE,
        file,
      );
}
