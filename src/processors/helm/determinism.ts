/**
 * Warnings for templates whose output is not a function of the chart and values. Hoist
 * identifies a revision by the digest of the rendered objects, so a chart that calls
 * `randAlphaNum` or `genCA` renders a different revision every time it is rendered, and `lookup`
 * always returns nothing under `helm template` (no cluster access, by design). Helm itself is
 * not changed: the render goes ahead and the warning tells the user why revisions churn.
 *
 * Reads the template files of the chart and its unpacked subcharts through the bundle reader;
 * archives are not opened.
 */
import type { ContentTree } from '../../util/content-tree.ts';
import { joinRel } from './chart.ts';

const NON_DETERMINISTIC: ReadonlyMap<string, string> = new Map([
  ['randAlphaNum', 'random'],
  ['randAlpha', 'random'],
  ['randNumeric', 'random'],
  ['randAscii', 'random'],
  ['randBytes', 'random'],
  ['randInt', 'random'],
  ['shuffle', 'random'],
  ['uuidv4', 'random'],
  ['genPrivateKey', 'random'],
  ['genCA', 'random'],
  ['genCAWithKey', 'random'],
  ['genSelfSignedCert', 'random'],
  ['genSelfSignedCertWithKey', 'random'],
  ['genSignedCert', 'random'],
  ['genSignedCertWithKey', 'random'],
  ['htpasswd', 'random'],
  ['bcrypt', 'random'],
  ['now', 'time'],
  ['lookup', 'lookup'],
]);

const ACTION = /\{\{-?([\s\S]*?)-?\}\}/g;
const IDENT = /\b[A-Za-z][A-Za-z0-9]*\b/g;
const MAX_FILES = 2000;

/** Names of non-deterministic functions called in one template's actions (comments and strings skipped). Pure. */
export function nonDeterministicCalls(template: string): string[] {
  const found = new Set<string>();
  for (const m of template.matchAll(ACTION)) {
    const action = (m[1] ?? '').trim();
    if (action.startsWith('/*')) continue;
    const code = action.replace(/"(?:[^"\\]|\\.)*"|`[^`]*`/g, '""');
    for (const id of code.matchAll(IDENT)) {
      // a field (.Values.now) or a variable ($now) is not a call
      const before = code[(id.index ?? 0) - 1];
      if (before === '.' || before === '$') continue;
      if (NON_DETERMINISTIC.has(id[0])) found.add(id[0]);
    }
  }
  return [...found].sort();
}

/** One warning per template file that calls a non-deterministic function. */
export async function determinismWarnings(tree: ContentTree, chartRelDir: string, chartName: string): Promise<string[]> {
  const warnings: string[] = [];
  const files: Array<{ shown: string; rel: string }> = [];
  await collectTemplates(tree, chartRelDir, chartName, files, 0);
  for (const { shown, rel } of files.sort((a, b) => (a.shown < b.shown ? -1 : a.shown > b.shown ? 1 : 0))) {
    let text: string;
    try {
      text = await tree.readText(rel);
    } catch {
      continue;
    }
    const calls = nonDeterministicCalls(text);
    if (calls.length === 0) continue;
    const kinds = new Set(calls.map((c) => NON_DETERMINISTIC.get(c)));
    const why =
      kinds.has('lookup') && kinds.size === 1
        ? 'lookup returns nothing when rendering without cluster access'
        : 'its output changes from render to render, so each render is a new revision';
    warnings.push(`${shown} calls ${calls.join(', ')}: ${why}`);
  }
  return warnings;
}

type Template = { shown: string; rel: string };

/** Template files of a chart and its unpacked subcharts: "<chart>/templates/x.yaml" for messages, and the tree path. */
async function collectTemplates(tree: ContentTree, dirRel: string, prefix: string, out: Template[], depth: number): Promise<void> {
  if (depth > 16 || out.length >= MAX_FILES) return;
  await walk(tree, joinRel(dirRel, 'templates'), `${prefix}/templates`, out);
  const subs = await tree.list(joinRel(dirRel, 'charts')).catch(() => undefined);
  for (const s of subs ?? []) {
    if (s.isDirectory()) await collectTemplates(tree, joinRel(dirRel, 'charts', s.name), `${prefix}/charts/${s.name}`, out, depth + 1);
  }
}

async function walk(tree: ContentTree, dirRel: string, shown: string, out: Template[]): Promise<void> {
  const entries = await tree.list(dirRel).catch(() => undefined);
  for (const e of entries ?? []) {
    if (out.length >= MAX_FILES) return;
    if (e.isDirectory()) await walk(tree, `${dirRel}/${e.name}`, `${shown}/${e.name}`, out);
    else if (e.isFile()) out.push({ shown: `${shown}/${e.name}`, rel: `${dirRel}/${e.name}` });
  }
}
