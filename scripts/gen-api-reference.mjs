#!/usr/bin/env node
/**
 * Writes docs/reference/*.md from the CRDs Hoist ships (api/v1alpha2/*-crd.yaml, the single
 * source the installer and the chart's copies come from): for every field its path, type,
 * whether it is required, its default, its bounds and enums, its description, and the messages
 * of the CEL rules (x-kubernetes-validations) the API server checks on it.
 *
 * test/unit/scripts/gen-api-reference.test.ts fails when a checked-in page differs from what
 * this script writes, so a CRD change lands with its reference.
 * Usage: node scripts/gen-api-reference.mjs          (writes the pages)
 *        node scripts/gen-api-reference.mjs --check  (exit 1 when a page is out of date)
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';

const root = normalize(join(dirname(fileURLToPath(import.meta.url)), '..'));

export const REGENERATE = 'node scripts/gen-api-reference.mjs';

/** the CRDs and their pages, relative to the repository */
export const PAGES = [
  { crd: 'api/v1alpha2/bundledeployment-crd.yaml', page: 'docs/reference/bundledeployment.md' },
  { crd: 'api/v1alpha2/notificationprovider-crd.yaml', page: 'docs/reference/notificationprovider.md' },
  { crd: 'api/v1alpha2/notificationroute-crd.yaml', page: 'docs/reference/notificationroute.md' },
];

/** one table cell: a single line, pipes escaped (GitHub's table parser splits on them even in code) */
const cell = (s) =>
  String(s)
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\|/g, '\\|');
const code = (v) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  // a code span holding a backtick needs a longer fence
  return s.includes('`') ? `\`\` ${s} \`\`` : `\`${s === '' ? '""' : s}\``;
};

/** the type as a user writes it: string, integer (int64), []object, map[string]string, int-or-string */
function typeOf(node) {
  if (node['x-kubernetes-int-or-string']) return 'int-or-string';
  if (node.type === 'array') return `[]${node.items ? typeOf(node.items) : 'any'}`;
  if (node.type === 'object' && node.additionalProperties && typeof node.additionalProperties === 'object' && !node.properties)
    return `map[string]${typeOf(node.additionalProperties)}`;
  if (node.type === 'object' && node['x-kubernetes-preserve-unknown-fields'] && !node.properties) return 'object (any fields, kept as written)';
  const t = node.type ?? 'any';
  return node.format ? `${t} (${node.format})` : t;
}

/** bounds, enums and list semantics of one node (not its rules) */
function constraints(node) {
  const out = [];
  if (node.enum) out.push(`one of ${node.enum.map(code).join(', ')}`);
  if (node.pattern !== undefined) out.push(`pattern ${code(node.pattern)}`);
  for (const [k, label] of [
    ['minLength', 'min length'],
    ['maxLength', 'max length'],
    ['minItems', 'min items'],
    ['maxItems', 'max items'],
    ['minProperties', 'min entries'],
    ['maxProperties', 'max entries'],
    ['minimum', 'minimum'],
    ['maximum', 'maximum'],
  ])
    if (node[k] !== undefined) out.push(`${label} ${node[k]}`);
  if (node['x-kubernetes-list-type']) {
    const keys = node['x-kubernetes-list-map-keys'];
    out.push(`list type ${code(node['x-kubernetes-list-type'])}${keys ? ` keyed by ${keys.map(code).join(', ')}` : ''}`);
  }
  // a scalar list's or map's element bounds belong to the list's row: elements have no row of their own
  const items = node.type === 'array' && node.items && !hasChildren(node.items) ? constraints(node.items) : [];
  if (items.length) out.push(`items: ${items.join(', ')}`);
  const ap = node.additionalProperties;
  const values = node.type === 'object' && ap && typeof ap === 'object' && !node.properties && !hasChildren(ap) ? constraints(ap) : [];
  if (values.length) out.push(`values: ${values.join(', ')}`);
  return out;
}

const hasChildren = (node) =>
  Boolean(node.properties) ||
  (node.type === 'array' && node.items !== undefined && hasChildren(node.items)) ||
  (node.type === 'object' && !node.properties && typeof node.additionalProperties === 'object' && hasChildren(node.additionalProperties));

/**
 * Walks a schema depth first: one row per field, the rules of each node (and of a scalar list's
 * items, which have no row) attached to its path.
 */
function walk(node, path, required, rows, rules) {
  const rowRules = [...(node['x-kubernetes-validations'] ?? [])];
  if (node.type === 'array' && node.items && !hasChildren(node.items)) rowRules.push(...(node.items['x-kubernetes-validations'] ?? []));
  if (path !== '') {
    rows.push({
      path,
      type: typeOf(node),
      required,
      default: node.default,
      constraints: constraints(node),
      description: node.description ?? '',
    });
  }
  for (const r of rowRules) rules.push({ path: path === '' ? '(the object)' : path, ...r });
  if (node.properties) {
    const req = new Set(node.required ?? []);
    for (const [name, child] of Object.entries(node.properties)) walk(child, path === '' ? name : `${path}.${name}`, req.has(name), rows, rules);
  } else if (node.type === 'array' && node.items && hasChildren(node.items)) {
    walkElement(node.items, `${path}[]`, rows, rules);
  } else if (node.type === 'object' && typeof node.additionalProperties === 'object' && hasChildren(node.additionalProperties)) {
    walkElement(node.additionalProperties, `${path}.*`, rows, rules);
  }
}

/** an element of a list or a map: no row of its own (its list has one), its rules and fields under `path` */
function walkElement(node, path, rows, rules) {
  for (const r of node['x-kubernetes-validations'] ?? []) rules.push({ path, ...r });
  const req = new Set(node.required ?? []);
  for (const [name, child] of Object.entries(node.properties ?? {})) walk(child, `${path}.${name}`, req.has(name), rows, rules);
  if (node.type === 'array' && node.items && hasChildren(node.items)) walkElement(node.items, `${path}[]`, rows, rules);
}

function ruleLine(r) {
  const message =
    r.message !== undefined ? cell(r.message) : r.messageExpression !== undefined ? `(computed) ${code(cell(r.messageExpression))}` : '(no message)';
  const extra = [r.fieldPath ? `reported at ${code(r.fieldPath)}` : '', r.reason ? `reason ${code(r.reason)}` : ''].filter(Boolean).join(', ');
  return `| ${code(r.path)} | ${message} | ${code(cell(r.rule))}${extra ? ` (${extra})` : ''} |`;
}

function fieldTable(rows) {
  const lines = ['| Field | Type | Required | Default | Validation | Description |', '|---|---|---|---|---|---|'];
  for (const r of rows)
    lines.push(
      `| ${code(r.path)} | ${cell(r.type)} | ${r.required ? 'yes' : ''} | ${r.default === undefined ? '' : code(r.default)} | ${cell(r.constraints.join('; '))} | ${cell(r.description)} |`,
    );
  return lines;
}

function ruleTable(rules) {
  return ['| On | Message | Rule |', '|---|---|---|', ...rules.map(ruleLine)];
}

/** the reference page of one CRD, as a string */
export function renderCRD(crd, source) {
  const { names, group, scope } = crd.spec;
  const out = [
    `# ${names.kind} (\`${group}\`)`,
    '',
    `<!-- Generated by \`${REGENERATE}\` from ${source}; do not edit by hand. -->`,
    '',
    `Generated from [\`${source}\`](../../${source}), the CRD the API server enforces: every field with`,
    'its type, default and bounds, and the CEL rules (`x-kubernetes-validations`) with the message',
    '`kubectl apply` shows when one refuses an object. What the controller does with each field is in',
    'the [user guides](../README.md#user-guide).',
    '',
    `- Resource: \`${names.plural}.${group}\`, kind \`${names.kind}\`, list kind \`${names.listKind}\``,
    `- Scope: ${scope}`,
  ];
  if (names.shortNames?.length) out.push(`- Short names: ${names.shortNames.map(code).join(', ')}`);
  if (names.categories?.length) out.push(`- Categories: ${names.categories.map(code).join(', ')}`);
  for (const v of crd.spec.versions) {
    const schema = v.schema.openAPIV3Schema;
    out.push('', `## ${v.name}`, '');
    out.push(`Served: ${v.served ? 'yes' : 'no'}; storage version: ${v.storage ? 'yes' : 'no'}; status subresource: ${v.subresources?.status ? 'yes' : 'no'}.`);
    if (schema.description) out.push('', cell(schema.description));
    if (v.additionalPrinterColumns?.length) {
      out.push(
        '',
        '### Printer columns',
        '',
        '`kubectl get` shows these (priority 1: with `-o wide`).',
        '',
        '| Column | Type | JSONPath | Priority | Description |',
        '|---|---|---|---|---|',
      );
      for (const c of v.additionalPrinterColumns)
        out.push(`| ${c.name} | ${c.type} | ${code(cell(c.jsonPath))} | ${c.priority ?? 0} | ${cell(c.description ?? '')} |`);
    }
    const rootRules = schema['x-kubernetes-validations'] ?? [];
    if (rootRules.length) out.push('', '### Rules on the whole object', '', ...ruleTable(rootRules.map((r) => ({ path: '(the object)', ...r }))));
    // one section per top-level member (spec, status), one sub-section per member of each
    for (const [top, topNode] of Object.entries(schema.properties ?? {})) {
      if (top === 'apiVersion' || top === 'kind' || top === 'metadata') continue;
      out.push('', `### ${top}`, '');
      if (topNode.description) out.push(cell(topNode.description), '');
      const req = (topNode.required ?? []).map(code);
      out.push(`${(schema.required ?? []).includes(top) ? 'Required.' : 'Optional.'}${req.length ? ` Required members: ${req.join(', ')}.` : ''}`);
      const topRules = topNode['x-kubernetes-validations'] ?? [];
      if (topRules.length) out.push('', `Rules on \`${top}\`:`, '', ...ruleTable(topRules.map((r) => ({ path: top, ...r }))));
      const reqSet = new Set(topNode.required ?? []);
      for (const [name, child] of Object.entries(topNode.properties ?? {})) {
        const rows = [];
        const rules = [];
        walk(child, `${top}.${name}`, reqSet.has(name), rows, rules);
        out.push('', `#### ${top}.${name}`, '', ...fieldTable(rows));
        if (rules.length) out.push('', ...ruleTable(rules));
      }
    }
  }
  return out.join('\n') + '\n';
}

/** every page as { page, text }, from the CRD files of `base` (default: this repository) */
export function render(base = root) {
  return PAGES.map(({ crd, page }) => ({ page, text: renderCRD(load(readFileSync(join(base, crd), 'utf8')), crd) }));
}

if (process.argv[1] && normalize(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const { page, text } of render()) {
    const file = join(root, page);
    if (check) {
      let current = '';
      try {
        current = readFileSync(file, 'utf8');
      } catch {
        // a missing page is out of date
      }
      if (current !== text) {
        stale++;
        console.error(`${page} is out of date: run ${REGENERATE}`);
      }
    } else {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text);
      console.log(`wrote ${page}`);
    }
  }
  process.exit(stale ? 1 : 0);
}
