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
 * Reads the tree only; no helm process.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { helmError } from './helm-errors.ts';

export interface ChartDependency {
  /** the dependency chart's name (an alias only renames it inside the parent) */
  name: string;
  version?: string;
  repository?: string;
  alias?: string;
}

export interface ChartInfo {
  /** absolute path of the chart directory */
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

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

/** Locates the chart directory in a tree (see the module comment for the rule). */
export async function locateChart(tree: string): Promise<ChartInfo> {
  if (await isFile(path.join(tree, 'Chart.yaml'))) return readChart(tree, '');
  let entries;
  try {
    entries = await readdir(tree, { withFileTypes: true });
  } catch (e) {
    throw helmError(`cannot read the content tree: ${(e as Error).message}`, 'read-error', undefined, e);
  }
  const candidates: string[] = [];
  // byte order, so the "ambiguous" message lists directories the same way every time
  for (const entry of [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    // hidden directories (.git, .github) are tooling, never the chart
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    if (await isFile(path.join(tree, entry.name, 'Chart.yaml'))) candidates.push(entry.name);
  }
  if (candidates.length === 0) {
    throw helmError(
      'no helm chart found: no Chart.yaml at the root of the content tree or in a directory directly below it',
      'chart-not-found',
      'Chart.yaml',
    );
  }
  if (candidates.length > 1) {
    throw helmError(
      `more than one helm chart in the content tree (${candidates.map((c) => `${c}/Chart.yaml`).join(', ')}): ` +
        'put exactly one chart at the root or one level below it',
      'chart-ambiguous',
      'Chart.yaml',
    );
  }
  const only = candidates[0] as string;
  return readChart(path.join(tree, only), only);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads Chart.yaml (and requirements.yaml for apiVersion v1 charts) of a chart directory. */
export async function readChart(dir: string, relDir: string): Promise<ChartInfo> {
  const file = relDir === '' ? 'Chart.yaml' : `${relDir}/Chart.yaml`;
  const meta = await readYamlMap(path.join(dir, 'Chart.yaml'), file);
  const name = typeof meta['name'] === 'string' ? meta['name'] : '';
  const version = meta['version'] === undefined || meta['version'] === null ? '' : String(meta['version']);
  if (name === '') throw helmError('Chart.yaml has no name', 'invalid-chart', file);
  if (version === '') throw helmError(`Chart.yaml of chart ${name} has no version`, 'invalid-chart', file);
  const apiVersion = typeof meta['apiVersion'] === 'string' ? meta['apiVersion'] : 'v1';
  let declared: unknown = meta['dependencies'];
  // Helm 2 style charts declare dependencies in requirements.yaml, which Helm 3 still honours.
  if (apiVersion === 'v1' && declared === undefined) {
    const reqFile = relDir === '' ? 'requirements.yaml' : `${relDir}/requirements.yaml`;
    if (await isFile(path.join(dir, 'requirements.yaml'))) {
      declared = (await readYamlMap(path.join(dir, 'requirements.yaml'), reqFile))['dependencies'];
    }
  }
  const dependencies: ChartDependency[] = [];
  if (declared !== undefined && declared !== null) {
    if (!Array.isArray(declared)) throw helmError('dependencies must be a list', 'invalid-chart', file);
    for (const d of declared) {
      if (!isRecord(d) || typeof d['name'] !== 'string' || d['name'] === '') {
        throw helmError('a dependency without a name', 'invalid-chart', file);
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

async function readYamlMap(abs: string, file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(abs, 'utf8');
  } catch (e) {
    throw helmError(`cannot read ${path.basename(abs)}: ${(e as Error).message}`, 'read-error', file, e);
  }
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (e) {
    throw helmError(`invalid YAML: ${((e as Error).message.split('\n')[0] ?? '').trim()}`, 'invalid-chart', file, e);
  }
  if (!isRecord(value)) throw helmError('not a YAML map', 'invalid-chart', file);
  return value;
}
