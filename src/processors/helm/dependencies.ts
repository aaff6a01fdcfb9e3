/**
 * Vendored dependencies: every dependency a chart declares must be in its `charts/` directory,
 * at a version that satisfies the declared constraint, checked before the chart is rendered.
 *
 * Why check at all when `helm template` refuses a missing top-level dependency itself? Because
 * Helm is quiet in the other cases: a vendored dependency whose version does not satisfy the
 * constraint, and any missing or mismatched dependency of a subchart, are silently left out of
 * the render (chartutil.ProcessDependencies). A bundle that installs less than its author
 * declared is worse than one that fails, so Hoist fails, naming the dependency.
 *
 * The verdict per dependency is Helm's own (`helm dependency list`, which matches names and
 * SemVer constraints exactly as Helm does) rather than a reimplementation of SemVer ranges.
 * It runs only for charts that declare dependencies; unpacked subcharts are checked
 * recursively. Subcharts vendored as .tgz archives are checked by name and version but not
 * opened to check their own dependencies.
 */
import type { ContentTree } from '../../util/content-tree.ts';
import { redactUrl } from '../../util/errors.ts';
import { chartLabel, joinRel, readChart } from './chart.ts';
import type { ChartDependency, ChartInfo } from './chart.ts';

import { ProcessCode, processError } from '../errors.ts';

/** Runs `helm dependency list <dir>` and returns its stdout; throws a HoistError on failure. */
export type DependencyLister = (chartDir: string) => Promise<string>;

/** One row of `helm dependency list`. */
export interface DependencyStatus {
  name: string;
  version: string;
  repository: string;
  /** ok | unpacked | missing | wrong version | invalid version | misnamed | corrupt | too many matches | ... */
  status: string;
}

/** Statuses meaning the dependency is vendored and will be rendered. */
const PRESENT = new Set(['ok', 'unpacked']);

/** Parses helm's dependency table (tab-separated columns NAME, VERSION, REPOSITORY, STATUS). Pure. */
export function parseDependencyList(stdout: string): DependencyStatus[] {
  const rows: DependencyStatus[] = [];
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') continue;
    const cols = line.split('\t').map((c) => c.trim());
    if (cols.length < 4 || (cols[0] === 'NAME' && cols[3] === 'STATUS')) continue;
    rows.push({
      name: cols[0] as string,
      version: cols[1] as string,
      repository: cols[2] as string,
      status: cols.slice(3).join(' ').trim(),
    });
  }
  return rows;
}

function describeDependency(d: ChartDependency): string {
  const version = d.version ? ` ${d.version}` : '';
  const repo = d.repository ? ` from ${redactUrl(d.repository)}` : '';
  return `"${d.name}"${version}${repo}`;
}

function problemFor(d: ChartDependency, status: string): string {
  switch (status) {
    case 'missing':
      return `dependency ${describeDependency(d)} is declared but missing from charts/ (vendor it with "helm dependency build" before publishing the bundle)`;
    case 'wrong version':
      return `dependency ${describeDependency(d)} is vendored in charts/ at a version that does not satisfy the constraint (helm would silently leave it out)`;
    default:
      return `dependency ${describeDependency(d)} in charts/ is unusable: helm reports "${status}"`;
  }
}

/**
 * Throws one terminal HoistError (code missing-dependency) listing every declared dependency,
 * at any depth of unpacked subcharts, that helm would not render.
 */
export async function checkDependencies(tree: ContentTree, chart: ChartInfo, list: DependencyLister): Promise<void> {
  const problems: string[] = [];
  await visit(tree, chart, '', list, problems, 0);
  if (problems.length > 0) {
    throw processError(problems.join('; '), ProcessCode.MissingDependency, `helm chart ${chartLabel(chart)}`);
  }
}

/** Subcharts nest rarely more than two or three levels; a bound protects against symlink loops. */
const MAX_DEPTH = 16;

async function visit(tree: ContentTree, chart: ChartInfo, where: string, list: DependencyLister, problems: string[], depth: number): Promise<void> {
  if (depth > MAX_DEPTH) return;
  const prefix = where === '' ? '' : `subchart ${where} (${chartLabel(chart)}): `;
  if (chart.dependencies.length > 0) {
    const rows = parseDependencyList(await list(chart.dir));
    for (const dep of chart.dependencies) {
      const row = rows.find((r) => r.name === dep.name);
      // helm lists every declared dependency; a row that is absent means it could not judge it
      const status = row?.status ?? 'missing';
      if (!PRESENT.has(status)) problems.push(prefix + problemFor(dep, status));
    }
  }
  for (const sub of await unpackedSubcharts(tree, chart.relDir)) {
    const rel = where === '' ? `charts/${sub}` : `${where}/charts/${sub}`;
    let info: ChartInfo;
    try {
      info = await readChart(tree, joinRel(chart.relDir, 'charts', sub));
    } catch {
      // an unreadable subchart is reported by helm itself when it loads the chart
      continue;
    }
    await visit(tree, info, rel, list, problems, depth + 1);
  }
}

async function unpackedSubcharts(tree: ContentTree, relDir: string): Promise<string[]> {
  const entries = (await tree.list(joinRel(relDir, 'charts'))) ?? [];
  return entries.filter((entry) => entry.isDirectory() && !entry.name.startsWith('.')).map((entry) => entry.name);
}
