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
import { yamlPackageTree } from './document-reader.ts';
import { eventTree } from './event-reader.ts';
import { parseJsonStream } from './json-stream.ts';
import { isHoistError } from '../../util/errors.ts';
import { YAML_BUDGET_CODE, yamlBudget } from './budget.ts';
import type { YamlBudget } from './budget.ts';
import type { YNode } from './node-tree.ts';
import type { ParsedStream } from './values.ts';
import { walkDocuments } from './walk.ts';

/**
 * Parses a multi-document stream. Content whose first non-blank character is `{` is read as a
 * JSON stream (kubectl sniffs the same way), anything else as YAML. `file` is the path used in
 * error subjects; `budget` is the bundle's YAML node budget (budget.ts; a fresh one when absent).
 * Throws a terminal HoistError (code parse-error naming file and line, or yaml-alias-budget).
 */
export function parseManifestStream(text: string, file: string, budget?: YamlBudget): ParsedStream {
  const firstChar = /\S/.exec(text)?.[0];
  if (firstChar === '{') return { documents: parseJsonStream(text, file), warnings: [] };
  return parseYamlStream(text, file, budget);
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

export function parseYamlStream(text: string, file: string, budget: YamlBudget = yamlBudget()): ParsedStream {
  let roots: YNode[] | undefined;
  try {
    roots = eventTree(text);
  } catch {
    // js-yaml refused it (or met something unusual): the reference reader decides
    roots = undefined;
  }
  if (roots !== undefined) {
    try {
      return walkDocuments(roots, text, file, budget);
    } catch (e) {
      if (isHoistError(e) && e.code === YAML_BUDGET_CODE) throw e;
      // the reference reader produces the error, with the message and line it always had
    }
  }
  return walkDocuments(yamlPackageTree(text, file), text, file, budget);
}
