/**
 * scripts/gen-api-reference.mjs: the checked-in docs/reference pages are what the script writes
 * from the CRDs (so a CRD change without regenerating fails here), and the pages name every
 * field, default, enum value and rule message of the schema.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { PAGES, REGENERATE, render, renderCRD } from '../../../scripts/gen-api-reference.mjs';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

type Node = {
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node | boolean;
  default?: unknown;
  enum?: unknown[];
  'x-kubernetes-validations'?: { rule: string; message?: string; messageExpression?: string }[];
};
type CRD = { spec: { names: { kind: string }; versions: { schema: { openAPIV3Schema: Node } }[] } };

/** every field path of a schema as the page writes it (list elements `[]`, map values `.*`), with the node */
function fields(node: Node, path: string, out: [string, Node][] = []): [string, Node][] {
  if (path !== '' && !path.endsWith('[]') && !path.endsWith('.*')) out.push([path, node]);
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    if (path === '' && ['apiVersion', 'kind', 'metadata'].includes(name)) continue;
    fields(child, path === '' ? name : `${path}.${name}`, out);
  }
  if (node.items?.properties || node.items?.items?.properties) fields(node.items, `${path}[]`, out);
  const ap = node.additionalProperties;
  if (typeof ap === 'object' && ap.properties && !node.properties) fields(ap, `${path}.*`, out);
  return out;
}

function rules(node: Node, out: { rule: string; message?: string; messageExpression?: string }[] = []) {
  out.push(...(node['x-kubernetes-validations'] ?? []));
  for (const child of Object.values(node.properties ?? {})) rules(child, out);
  if (node.items) rules(node.items, out);
  if (typeof node.additionalProperties === 'object') rules(node.additionalProperties, out);
  return out;
}

/** the page's text with table escaping undone, to search for a message as written in the CRD */
const plain = (text: string) => text.replace(/\\\|/g, '|');
/** a value as the page writes it: a code span, "" for the empty string */
const literal = (v: unknown) => `\`${v === '' ? '""' : typeof v === 'string' ? v : JSON.stringify(v)}\``;
const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ');

describe('docs/reference (generated from the CRDs)', () => {
  for (const { page, text } of render()) {
    it(`${page} is current (regenerate with: ${REGENERATE})`, () => {
      let current = '';
      try {
        current = readFileSync(join(ROOT, page), 'utf8');
      } catch {
        // missing: the comparison below fails with the message
      }
      expect(current === text, `${page} differs from what the CRD generates: run \`${REGENERATE}\` and commit the result`).toBe(true);
    });
  }

  for (const { crd: source } of PAGES) {
    const crd = load(readFileSync(join(ROOT, source), 'utf8')) as CRD;
    const text = plain(renderCRD(crd, source));
    const schema = crd.spec.versions[0]!.schema.openAPIV3Schema;

    it(`${crd.spec.names.kind}: every field has a row with its default and enum values`, () => {
      const all = fields(schema, '');
      expect(all.length).toBeGreaterThan(5);
      for (const [path, node] of all) {
        // spec and status are sections, not rows
        if (!path.includes('.')) {
          expect(text, path).toContain(`\n### ${path}\n`);
          continue;
        }
        const row = text.split('\n').find((l) => l.startsWith(`| \`${path}\` |`));
        expect(row, `no row for ${path}`).toBeDefined();
        if (node.default !== undefined) expect(row, path).toContain(literal(node.default));
        for (const v of node.enum ?? []) expect(row, path).toContain(literal(v));
      }
    });

    it(`${crd.spec.names.kind}: every CEL rule is listed with its message`, () => {
      for (const r of rules(schema)) {
        expect(text, r.rule).toContain(oneLine(r.rule));
        const message = r.message ?? r.messageExpression;
        if (message !== undefined) expect(text, r.rule).toContain(oneLine(message));
      }
    });
  }

  it('a changed schema changes the page (a new field, a new default, a new rule message)', () => {
    const source = PAGES[0]!.crd;
    const crd = load(readFileSync(join(ROOT, source), 'utf8')) as CRD;
    const before = renderCRD(crd, source);
    const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
    spec.properties!.newField = {
      default: 'x',
      'x-kubernetes-validations': [{ rule: "self != 'y'", message: 'newField must not be y' }],
    } as Node;
    const after = renderCRD(crd, source);
    expect(after).not.toBe(before);
    expect(after).toContain('#### spec.newField');
    expect(after).toContain('newField must not be y');
  });
});
