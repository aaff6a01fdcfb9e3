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
import { YAMLException } from 'js-yaml';
import { yamlPackageTree } from './document-reader.ts';
import { eventTree } from './event-reader.ts';
import { parseJsonStream } from './json-stream.ts';
import { isHoistError, type HoistError } from '../../util/errors.ts';
import { processError, ProcessCode } from '../errors.ts';
import { YAML_BUDGET_CODE, checkBudgetBeforeParse, checkBudgetBeforeParseYielding, yamlBudget } from './budget.ts';
import type { YamlBudget } from './budget.ts';
import type { YNode } from './node-tree.ts';
import { exceedsAtLeast, PRESCAN_MIN_CHARS } from './prescan.ts';
import type { ParsedStream } from './values.ts';
import { walkDocuments } from './walk.ts';

/**
 * Parses a multi-document stream. Content whose first non-blank character is `{` is read as a
 * JSON stream (kubectl sniffs the same way), anything else as YAML. `file` is the path used in
 * error subjects; `budget` is the bundle's YAML node budget (budget.ts; a fresh one when absent).
 * Throws a terminal HoistError (code parse-error naming file and line, or yaml-alias-budget).
 */
export function parseManifestStream(text: string, file: string, budget?: YamlBudget, opts: ParseOptions = {}): ParsedStream {
  if (isJsonStream(text)) return { documents: parseJsonStream(text, file), warnings: [] };
  return parseYamlStream(text, file, budget, opts);
}

export interface ParseOptions {
  /** the text already passed prescanManifest with this budget: not lexed again */
  prescanned?: boolean;
}

function isJsonStream(text: string): boolean {
  return /\S/.exec(text)?.[0] === '{';
}

/**
 * The budget's lower-bound check (prescan.ts) of a YAML stream large enough to need one, giving
 * the event loop back every few milliseconds; then parse with `{ prescanned: true }`. Throws as
 * parseManifestStream does for a stream certainly over the budget.
 */
export async function prescanManifest(text: string, file: string, budget: YamlBudget, signal?: AbortSignal): Promise<void> {
  if (text.length >= PRESCAN_MIN_CHARS && !isJsonStream(text)) await checkBudgetBeforeParseYielding(text, budget, file, signal);
}

// YAML: two readers build the same small node tree, and one walk turns it into JSON values:
//   - the fast one reads js-yaml's event stream (parseEvents: a flat list of offsets, no AST), an
//     order of magnitude faster than the `yaml` package on a 1 MB manifest;
//   - the reference one reads the `yaml` package's documents (failsafe schema, nothing
//     interpreted). It is used whenever the fast one meets anything unusual: a js-yaml syntax
//     error, %TAG directives, tagged collections, tag forms other than !x, !!x, ! and !<x>, an
//     unknown alias, or any error of the walk. Errors therefore always come from the reference
//     reader, with its messages and lines, exactly as before — except a refusal by the node
//     budget: both readers build the same tree, so it is not walked again.
// Both hold a whole parse in memory — the fast one about 200 bytes a node, the reference one
// about 1 KiB — so a stream of PRESCAN_MIN_CHARS or more is first checked against the node
// budget by a lower bound counted on lexer tokens (prescan.ts), and the reference reader reads at
// most REFERENCE_READER_MAX_NODES nodes: past it, the fast reader's own error is reported, with
// its file and line (or js-yaml's syntax error).

/** the most nodes the reference reader parses: 5 times the largest fixture document, about 100 MiB of its parse */
export const REFERENCE_READER_MAX_NODES = 100_000;

export function parseYamlStream(text: string, file: string, budget: YamlBudget = yamlBudget(), opts: ParseOptions = {}): ParsedStream {
  if (text.length >= PRESCAN_MIN_CHARS && !opts.prescanned) checkBudgetBeforeParse(text, budget, file);
  let roots: YNode[] | undefined;
  let declined: unknown;
  try {
    roots = eventTree(text);
  } catch (e) {
    // js-yaml refused it (or met something unusual): the reference reader decides
    declined = e;
  }
  if (roots !== undefined) {
    try {
      return walkDocuments(roots, text, file, budget);
    } catch (e) {
      if (isHoistError(e) && e.code === YAML_BUDGET_CODE) throw e;
      // the reference reader produces the error, with the message and line it always had
      declined = e;
    }
  }
  if (exceedsAtLeast(text, REFERENCE_READER_MAX_NODES, REFERENCE_READER_MAX_NODES)) throw tooLargeForReference(declined, file);
  return walkDocuments(yamlPackageTree(text, file), text, file, budget);
}

/** the fast reader's own error for a stream too large for the reference reader */
function tooLargeForReference(declined: unknown, file: string): HoistError {
  if (isHoistError(declined)) return declined;
  if (declined instanceof YAMLException) {
    return processError(`invalid YAML: ${declined.reason}`, ProcessCode.ParseError, declined.mark ? `${file}:${declined.mark.line + 1}` : file, declined);
  }
  const why = declined instanceof Error ? declined.message : 'an unusual construct';
  return processError(
    `${why}: this YAML needs the reference reader, which reads at most ${REFERENCE_READER_MAX_NODES} nodes per stream (the limit; the stream has more)`,
    YAML_BUDGET_CODE,
    file,
  );
}
