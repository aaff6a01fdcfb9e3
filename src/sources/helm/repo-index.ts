/**
 * A Helm repository's index.yaml, read as Helm reads it (helm.sh/helm/v3 pkg/repo): where the
 * index lives, which of a chart's versions a version or range picks, and where that version's
 * tarball is. Pure: no I/O.
 *
 * - **Reading.** YAML (or JSON) as sigs.k8s.io/yaml reads it (Hoist's kubectl-compatible reader,
 *   src/processors/yaml/), under a node budget with aliases counted as expanded, so an alias bomb
 *   or a deeply nested index is refused before it is built. `apiVersion` is required (Helm:
 *   "no API version specified"); entries without a string `version` or without `urls` are
 *   skipped, as Helm skips invalid entries.
 * - **Choosing.** A version listed exactly as written is taken (Helm's IndexFile.Get checks that
 *   first); otherwise the highest version the semver range admits (semver-select.ts, the rules of
 *   image and git ranges); no version: `*`, the newest release.
 * - **Locating.** Helm's ResolveReferenceURL: an absolute URL is used as it is; a relative one
 *   is resolved against the repository URL with a trailing slash and gets the repository URL's
 *   query.
 */
import semver from 'semver';
import { isHoistError, redactUrl, type HoistError } from '../../util/errors.ts';
import { yamlBudget } from '../../processors/yaml/budget.ts';
import { parseManifestStream, prescanManifest } from '../../processors/yaml/stream.ts';
import { isJsonObject, type JsonValue } from '../../processors/yaml/values.ts';
import { admits, semverRangeProblem, tagVersion } from '../semver-select.ts';
import { SourceCode, sourceError } from '../errors.ts';

/** one version of a chart, as the index lists it */
export interface ChartVersion {
  version: string;
  urls: string[];
  /** the index's `digest` as written (Helm writes the sha256 of the tarball in hex) */
  digest?: string;
}

export interface IndexedChart {
  /** the chart's usable versions, in index order */
  versions: ChartVersion[];
  /** entries of the chart skipped: no string version, or no urls */
  skipped: number;
}

export interface ParsedIndex {
  /** the chart asked for; undefined when the index does not list it */
  chart: IndexedChart | undefined;
  /** every chart name the index lists, sorted */
  names: string[];
}

/** `<repoURL>/index.yaml`, the repository URL's query kept (Helm: path.Join(path, "index.yaml")) */
export function indexUrl(repo: URL): URL {
  const u = new URL(repo.toString());
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/index.yaml`;
  u.hash = '';
  return u;
}

/**
 * Where an index entry's URL points (Helm's ResolveReferenceURL). Throws a terminal resolve
 * error for a URL that does not parse, is not http(s) or carries credentials.
 */
export function chartUrl(repo: URL, ref: string, what: string): URL {
  const subject = redactUrl(repo.toString());
  const fail = (why: string, code: SourceCode): HoistError =>
    sourceError(`${what}: the index gives the chart URL ${JSON.stringify(redactUrl(ref))}, which ${why}`, { stage: 'resolve', code, subject, terminal: true });
  let url: URL;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(ref)) {
    try {
      url = new URL(ref);
    } catch {
      throw fail('is not a valid URL', SourceCode.InvalidUrl);
    }
  } else {
    const base = new URL(repo.toString());
    base.pathname = `${base.pathname.replace(/\/+$/, '')}/`;
    try {
      url = new URL(ref, base);
    } catch {
      throw fail('is not a valid URL', SourceCode.InvalidUrl);
    }
    url.search = base.search;
  }
  url.hash = '';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw fail(`is not http or https`, SourceCode.InvalidUrl);
  // credentials in a URL would reach logs and status; a repository's belong in its auth Secret
  if (url.username !== '' || url.password !== '') throw fail('contains credentials', SourceCode.CredentialsInUrl);
  return url;
}

/**
 * Reads `text` (an index.yaml) for `chart`, within `maxNodes` YAML nodes (aliases expanded).
 * Gives the event loop back while a large index is prescanned. Throws a terminal `invalid-index`
 * resolve error naming the index (and line) for YAML that does not parse, is over the budget or
 * is not an index.
 */
export async function parseIndex(text: string, chart: string, opts: { subject: string; maxNodes: number; signal?: AbortSignal }): Promise<ParsedIndex> {
  const fail = (message: string): HoistError =>
    sourceError(message, { stage: 'resolve', code: SourceCode.InvalidIndex, subject: opts.subject, terminal: true });
  const budget = yamlBudget(opts.maxNodes, opts.maxNodes);
  let value: JsonValue | undefined;
  try {
    await prescanManifest(text, 'index.yaml', budget, opts.signal);
    value = parseManifestStream(text, 'index.yaml', budget, { prescanned: true }).documents[0]?.value;
  } catch (e) {
    if (!isHoistError(e)) throw e;
    throw fail(`index.yaml is not readable (${e.subject ?? 'index.yaml'}): ${e.message}`);
  }
  if (!isJsonObject(value)) throw fail('index.yaml is not a Helm repository index: it holds no mapping');
  if (typeof value.apiVersion !== 'string' || value.apiVersion === '') throw fail('index.yaml is not a Helm repository index: no apiVersion');
  const entries = value.entries ?? {};
  if (!isJsonObject(entries)) throw fail('index.yaml is not a Helm repository index: entries is not a mapping');
  const names = Object.keys(entries).sort();
  const listed = entries[chart];
  if (!Object.hasOwn(entries, chart)) return { chart: undefined, names };
  if (listed !== null && !Array.isArray(listed)) throw fail(`index.yaml is not a Helm repository index: entries.${chart} is not a list`);
  const versions: ChartVersion[] = [];
  let skipped = 0;
  for (const item of listed ?? []) {
    const v = isJsonObject(item) ? item : undefined;
    const urls = Array.isArray(v?.urls) ? v.urls.filter((u): u is string => typeof u === 'string' && u !== '') : [];
    if (!v || typeof v.version !== 'string' || v.version === '' || urls.length === 0) {
      skipped++;
      continue;
    }
    versions.push({ version: v.version, urls, ...(typeof v.digest === 'string' && v.digest !== '' ? { digest: v.digest } : {}) });
  }
  return { chart: { versions, skipped }, names };
}

/**
 * The version `wanted` picks among `versions`: listed exactly as written, else the highest the
 * range admits (undefined `wanted`: `*`). Undefined when none does. `wanted` must already have
 * passed `semverRangeProblem`.
 */
export function selectVersion(versions: readonly ChartVersion[], wanted: string | undefined): ChartVersion | undefined {
  if (wanted !== undefined) {
    const exact = versions.find((v) => v.version === wanted);
    if (exact) return exact;
  }
  const range = wanted ?? '*';
  let best: { entry: ChartVersion; version: string } | undefined;
  for (const entry of versions) {
    const version = tagVersion(entry.version);
    if (version === undefined || !admits(range, version)) continue;
    if (!best || semver.gt(version, best.version)) best = { entry, version };
  }
  return best?.entry;
}

/** The `n` highest versions listed (semantic versions first, highest first; others after, as listed). */
export function newestVersions(versions: readonly ChartVersion[], n: number): string[] {
  const valid = versions.filter((v) => tagVersion(v.version) !== undefined);
  const other = versions.filter((v) => tagVersion(v.version) === undefined);
  valid.sort((a, b) => semver.rcompare(tagVersion(a.version)!, tagVersion(b.version)!));
  return [...new Set([...valid, ...other].map((v) => v.version))].slice(0, n);
}

/** why `version` is not a version or range this source reads; undefined when it is */
export function versionProblem(version: string | undefined): string | undefined {
  return version === undefined ? undefined : semverRangeProblem(version);
}

/** The hex sha256 an index `digest` names (bare hex, as Helm writes it, or `sha256:<hex>`); undefined when it names none. */
export function digestHex(digest: string): string | undefined {
  const m = /^(?:sha256:)?([0-9a-fA-F]{64})$/.exec(digest.trim());
  return m ? m[1]!.toLowerCase() : undefined;
}
