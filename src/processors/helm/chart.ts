/**
 * Finding the chart in a content tree and reading the little of Chart.yaml Hoist needs before
 * handing the chart to helm: its name and version (for error subjects) and its declared
 * dependencies (which must be vendored, see ./dependencies.ts).
 *
 * The chart is the tree root when it has a Chart.yaml, else the one directory directly below the
 * root that has one. Looking no deeper keeps the rule predictable: a tree holding several charts,
 * or a chart whose subcharts would be mistaken for the chart, is refused as ambiguous rather than
 * guessed at. A Helm OCI artifact arrives from the image source unpacked as `<name>/Chart.yaml`,
 * which the one-level rule covers.
 *
 * Reads the tree only, through the bundle reader (../bundle-files.ts: containment rule, size
 * caps); no helm process.
 */
import path from 'node:path';
import type { ContentTree } from '../../util/content-tree.ts';

import { ProcessCode, processError } from '../errors.ts';

export interface ChartDependency {
  /** the dependency chart's name (an alias only renames it inside the parent) */
  name: string;
  version?: string;
  repository?: string;
  alias?: string;
}

export interface ChartInfo {
  /** absolute path of the chart directory (for helm only: never put it in a message) */
  dir: string;
  /** the chart directory relative to the tree, "" for the root */
  relDir: string;
  name: string;
  version: string;
  apiVersion: string;
  dependencies: ChartDependency[];
}

/** "name-version", the way Helm names a chart in messages and in the helm.sh/chart label. */
export function chartLabel(chart: Pick<ChartInfo, 'name' | 'version'>): string {
  return `${chart.name}-${chart.version}`;
}

/** `a/b` joined the way tree-relative paths are ("" is the root). */
export function joinRel(...parts: string[]): string {
  return parts.filter((p) => p !== '').join('/');
}

async function isFile(tree: ContentTree, rel: string): Promise<boolean> {
  return (await tree.resolveFile(rel)) !== undefined;
}

/** Locates the chart directory in a tree (see the module comment for the rule). */
export async function locateChart(tree: ContentTree): Promise<ChartInfo> {
  if (await isFile(tree, 'Chart.yaml')) return readChart(tree, '');
  const entries = (await tree.list('')) ?? [];
  const candidates: string[] = [];
  // byte order (list sorts so), so the "ambiguous" message lists directories the same way every time
  for (const entry of entries) {
    // hidden directories (.git, .github) are tooling, never the chart
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    if (await isFile(tree, `${entry.name}/Chart.yaml`)) candidates.push(entry.name);
  }
  if (candidates.length === 0) {
    throw processError(
      'no helm chart found: no Chart.yaml at the root of the content tree or in a directory directly below it',
      ProcessCode.ChartNotFound,
      'Chart.yaml',
    );
  }
  if (candidates.length > 1) {
    throw processError(
      `more than one helm chart in the content tree (${candidates.map((c) => `${c}/Chart.yaml`).join(', ')}): ` +
        'put exactly one chart at the root or one level below it',
      ProcessCode.ChartAmbiguous,
      'Chart.yaml',
    );
  }
  return readChart(tree, candidates[0] as string);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads Chart.yaml (and requirements.yaml for apiVersion v1 charts) of the chart at `relDir` of the tree. */
export async function readChart(tree: ContentTree, relDir: string): Promise<ChartInfo> {
  const dir = relDir === '' ? tree.root : path.join(tree.root, relDir);
  const file = joinRel(relDir, 'Chart.yaml');
  const meta = await readYamlMap(tree, file);
  const name = typeof meta['name'] === 'string' ? meta['name'] : '';
  const version = meta['version'] === undefined || meta['version'] === null ? '' : String(meta['version']);
  if (name === '') throw processError('Chart.yaml has no name', ProcessCode.InvalidChart, file);
  if (version === '') throw processError(`Chart.yaml of chart ${name} has no version`, ProcessCode.InvalidChart, file);
  const apiVersion = typeof meta['apiVersion'] === 'string' ? meta['apiVersion'] : 'v1';
  let declared: unknown = meta['dependencies'];
  // Helm 2 style charts declare dependencies in requirements.yaml, which Helm 3 still honours.
  if (apiVersion === 'v1' && declared === undefined) {
    const reqFile = joinRel(relDir, 'requirements.yaml');
    if (await isFile(tree, reqFile)) declared = (await readYamlMap(tree, reqFile))['dependencies'];
  }
  const dependencies: ChartDependency[] = [];
  if (declared !== undefined && declared !== null) {
    if (!Array.isArray(declared)) throw processError('dependencies must be a list', ProcessCode.InvalidChart, file);
    for (const d of declared) {
      if (!isRecord(d) || typeof d['name'] !== 'string' || d['name'] === '') {
        throw processError('a dependency without a name', ProcessCode.InvalidChart, file);
      }
      dependencies.push({
        name: d['name'],
        ...(d['version'] === undefined || d['version'] === null ? {} : { version: String(d['version']) }),
        ...(typeof d['repository'] === 'string' && d['repository'] !== '' ? { repository: d['repository'] } : {}),
        ...(typeof d['alias'] === 'string' && d['alias'] !== '' ? { alias: d['alias'] } : {}),
      });
    }
  }
  return { dir, relDir, name, version, apiVersion, dependencies };
}

async function readYamlMap(tree: ContentTree, file: string): Promise<Record<string, unknown>> {
  const text = await tree.readText(file);
  // loaded on first use: a controller without Helm bundles does not pay for it (issue 10)
  const { parse: parseYaml } = await import('yaml');
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (e) {
    throw processError(`invalid YAML: ${((e as Error).message.split('\n')[0] ?? '').trim()}`, ProcessCode.InvalidChart, file, e);
  }
  if (!isRecord(value)) throw processError('not a YAML map', ProcessCode.InvalidChart, file);
  return value;
}
