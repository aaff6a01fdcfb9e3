/**
 * helm validates values against each chart's `values.schema.json`, and its JSON Schema compiler
 * loads every URI a schema refers to (`$ref`, `$dynamicRef`, `$recursiveRef`, an unknown
 * `$schema`) with a file and an http loader: a chart could make helm read any file of the
 * controller (`file:///dev/zero` until memory runs out, or another tenant's cached content as an
 * oracle) from outside its content tree. So before helm runs, every schema of the chart and its
 * unpacked subcharts may only refer inside itself (`#…`) and name a well-known meta-schema,
 * which the compiler has built in. Subcharts vendored as `.tgz` are not opened (see README).
 *
 * Reads the tree through the bundle reader.
 */
import type { ContentTree } from '../../util/content-tree.ts';
import { joinRel } from './chart.ts';

import { ProcessCode, processError } from '../errors.ts';

const REFERENCE_KEYWORDS = new Set(['$ref', '$dynamicRef', '$recursiveRef']);
/** drafts 4, 6, 7, 2019-09 and 2020-12 (and 3), with or without the empty fragment */
const KNOWN_METASCHEMA = /^https?:\/\/json-schema\.org\/(draft-0[3467]\/schema|draft\/20(19-09|20-12)\/schema)#?$/;
const SCHEMA_FILE = 'values.schema.json';
const MAX_DEPTH = 16;

/** Where a schema refers outside itself: "$ref at /properties/x: \"file:///etc/hostname\"". Pure. */
export function schemaReferenceProblems(schema: unknown): string[] {
  const problems: string[] = [];
  const visit = (node: unknown, pointer: string): void => {
    if (Array.isArray(node)) {
      node.forEach((v, i) => visit(v, `${pointer}/${i}`));
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      const at = `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
      if (typeof value === 'string') {
        if (REFERENCE_KEYWORDS.has(key) && !value.startsWith('#')) problems.push(`${key} at ${pointer || '/'}: ${JSON.stringify(value)}`);
        if (key === '$schema' && !KNOWN_METASCHEMA.test(value)) problems.push(`$schema at ${pointer || '/'}: ${JSON.stringify(value)}`);
        continue;
      }
      visit(value, at);
    }
  };
  visit(schema, '');
  return problems;
}

/** Refuses (terminal, code invalid-chart, subject the schema file) a schema helm would resolve outside the tree. */
export async function checkSchemaReferences(tree: ContentTree, chartRelDir: string, depth = 0): Promise<void> {
  if (depth > MAX_DEPTH) return;
  const file = joinRel(chartRelDir, SCHEMA_FILE);
  const text = await tree.readTextOptional(file);
  if (text !== undefined) {
    let schema: unknown;
    try {
      schema = JSON.parse(text);
    } catch {
      schema = undefined; // helm reports invalid JSON itself
    }
    const problems = schemaReferenceProblems(schema);
    if (problems.length > 0) {
      throw processError(
        `${SCHEMA_FILE} refers outside itself (${problems.slice(0, 5).join('; ')}); helm would load that from the controller's filesystem or network, so only references within the schema ("#/...") and the standard meta-schemas are allowed`,
        ProcessCode.InvalidChart,
        file,
      );
    }
  }
  const subs = (await tree.list(joinRel(chartRelDir, 'charts'))) ?? [];
  for (const s of subs) if (s.isDirectory()) await checkSchemaReferences(tree, joinRel(chartRelDir, 'charts', s.name), depth + 1);
}
