/**
 * The `helm` source: a chart from a Helm HTTP repository (an index.yaml and chart tarballs), by
 * repository URL, chart name and an exact version or semver range (README.md in this folder).
 *
 * Identity is the sha256 of the chart tarball's bytes (the index's `digest`), and the
 * content-store key `sha256:<hex>`, the same key an http source gives the same tarball.
 * - Unpinned: resolve reads `<repoURL>/index.yaml` (at most `maxIndexBytes`; with
 *   If-None-Match / If-Modified-Since on a re-check, a 304 keeping the previous resolution),
 *   chooses the version and records it with the tarball's URL and digest. An entry without a
 *   digest is downloaded by resolve to learn it (into the store, so fetch finds it).
 * - Pinned (`helm.sha256`): resolve makes no request; fetch reads the index once when no earlier
 *   resolution of the same digest recorded the tarball's URL (needed to prove access, too).
 * - fetch downloads the tarball when the store lacks it, hashing while it unpacks: bytes that do
 *   not match the index's digest (or the pin) are refused and nothing lands in the store.
 *
 * Credentials: the auth Secret goes to the index's host as for any http source
 * (credential-hosts.ts); the chart tarball gets it only when its URL has the repository URL's
 * scheme, host and port. A chart the index places on another host is downloaded anonymously
 * (Helm's default without --pass-credentials; docs/security.md).
 */
import type { ResolvedSourceStatus, SourceSpec } from '../../../api/v1alpha2/types.ts';
import type { ContentStore, SpaceAllowance } from '../../cache/content-store.ts';
import { YAML_MAX_NODES_PER_DOCUMENT } from '../../processors/yaml/budget.ts';
import { formatBytes } from '../../util/content-tree.ts';
import { HoistError, isHoistError, redactUrl } from '../../util/errors.ts';
import type { UnpackLimits } from '../../util/unpack-tar.ts';
import { credentialsForUrl } from '../credential-hosts.ts';
import { authorization, fetchTarball, inScratch, requestBytes, statusError, tarballDigest, tarballKey, tarballOrigin, unpackHashed } from '../tarball.ts';
import { DEFAULT_FETCH_TIMEOUT_MS, withDeadline } from '../transport/deadline.ts';
import { headerValue, HttpTransport, readCapped, type TransportOptions } from '../transport/transport.ts';
import type { Credentials, Resolved, Source, SourceContext } from '../source.ts';
import { tagVersion } from '../semver-select.ts';
import { SourceCode, sourceError } from '../errors.ts';
import {
  chartUrl,
  digestHex,
  indexUrl,
  MAX_PARSED_INDEX_BYTES,
  newestVersions,
  parseIndex,
  selectVersion,
  versionProblem,
  type ChartVersion,
} from './repo-index.ts';

/**
 * the largest index.yaml read by default (hoist run --helm-index-max-size): Flux's default. Only
 * the chart's part of it is parsed (repo-index.ts), so the size costs a scan, not a parse.
 */
export const DEFAULT_HELM_INDEX_MAX_BYTES = 50 * 1024 * 1024;

/** versions named in a "no version matches" message */
const NEWEST_SHOWN = 5;
/** chart names in a "chart not in the index" message */
const NAMES_SHOWN = 10;

export interface HelmSourceOptions extends TransportOptions {
  /** the store resolve lands a tarball in when the index gives no digest (fetch then finds it) */
  store?: ContentStore;
  /** overall deadline of one resolve or one fetch; default 10 min */
  timeoutMs?: number;
  /** the largest index.yaml read, in bytes (--helm-index-max-size); default 50 MiB */
  maxIndexBytes?: number;
  /** size and count limits of the unpacked chart; `maxArchiveBytes` caps the download */
  unpackLimits?: Partial<UnpackLimits>;
  /** share a transport instead of creating one from the options above */
  transport?: HttpTransport;
  now?: () => Date;
}

/** The spec's parts, checked. */
interface HelmSpec {
  repo: URL;
  chart: string;
  version: string | undefined;
  pin: string | undefined;
}

export class HelmSource implements Source {
  readonly kind = 'helm' as const;
  private readonly options: HelmSourceOptions;
  private readonly transport: HttpTransport;
  private readonly ownsTransport: boolean;
  private readonly timeoutMs: number;
  private readonly maxIndexBytes: number;

  constructor(options: HelmSourceOptions = {}) {
    this.options = options;
    this.transport = options.transport ?? new HttpTransport(options);
    this.ownsTransport = options.transport === undefined;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.maxIndexBytes = options.maxIndexBytes ?? DEFAULT_HELM_INDEX_MAX_BYTES;
  }

  /** Closes the transport's connections (when it is this source's own). */
  async close(): Promise<void> {
    if (this.ownsTransport) await this.transport.close();
  }

  /**
   * Pinned: no I/O. A recorded resolution of this generation without a re-check: no I/O. Else
   * one GET of index.yaml (conditional when re-checking), and, only for an entry without a
   * digest, one GET of the chart.
   */
  async resolve(spec: SourceSpec, ctx: SourceContext): Promise<Resolved> {
    const p = parseSpec(spec);
    const index = indexUrl(p.repo);
    const auth = authorization(credentialsForUrl(ctx.credentials, index, 'resolve'));
    const prev = ctx.previous?.kind === 'helm' ? ctx.previous : undefined;
    if (p.pin) {
      // what an earlier resolution learnt about this very tarball still holds
      const known = prev?.sha256 === p.pin ? prev : undefined;
      const version = known?.version ?? (p.version !== undefined && tagVersion(p.version) ? p.version : undefined);
      const status: ResolvedSourceStatus = {
        kind: 'helm',
        sha256: p.pin,
        ...(version ? { version } : {}),
        ...(known?.chartURL ? { chartURL: known.chartURL } : {}),
      };
      return { status, key: tarballKey(p.pin), pinned: true };
    }
    // resolved once per spec generation: the recorded identity is reused without a request
    if (prev?.sha256 && !ctx.recheck) return { status: { ...prev }, key: tarballKey(prev.sha256), pinned: false };
    const conditional: Record<string, string> = {};
    if (prev?.sha256) {
      if (prev.etag) conditional['if-none-match'] = prev.etag;
      if (prev.lastModified) conditional['if-modified-since'] = prev.lastModified;
    }
    const t = this.transport.withCA(ctx.ca?.pem);
    return withDeadline(ctx.signal, this.timeoutMs, 'resolve', redactUrl(index.toString()), async (signal) => {
      const read = await this.readIndex(t, p, auth, conditional, signal);
      if (read === 'not-modified' && prev?.sha256) return { status: { ...prev }, key: tarballKey(prev.sha256), pinned: false };
      if (read === 'not-modified') throw sourceError('index.yaml answered 304 to a request that was not conditional', notReadable(index));
      const entry = chosen(p, read.versions, index);
      const url = chartUrl(p.repo, entry.urls[0]!, describe(p.chart, entry.version));
      let sha256 = entryDigest(p, entry, index);
      if (sha256 === undefined) sha256 = await this.hashChart(t, p, url, ctx.credentials, signal);
      const status: ResolvedSourceStatus = {
        kind: 'helm',
        version: entry.version,
        sha256,
        // a query may carry a credential: such a URL is found again in the index by fetch
        ...(url.search === '' ? { chartURL: url.toString() } : {}),
        resolvedAt: (this.options.now?.() ?? new Date()).toISOString(),
      };
      if (read.etag) status.etag = read.etag;
      if (read.lastModified) status.lastModified = read.lastModified;
      return { status, key: tarballKey(sha256), pinned: false };
    });
  }

  /**
   * Idempotent. The tarball's URL comes from the resolution (or, when it has none, from one read
   * of the index); then as every tarball (tarball.ts fetchTarball): a store hit this URL and
   * credential proved makes no request, a miss downloads once, verified against the digest.
   */
  async fetch(spec: SourceSpec, resolved: Resolved, store: ContentStore, ctx: SourceContext): Promise<string> {
    const p = parseSpec(spec);
    const index = indexUrl(p.repo);
    const expected = tarballDigest(resolved.key);
    if (!expected) {
      throw sourceError(`resolved key ${JSON.stringify(resolved.key)} is not a sha256 digest`, {
        stage: 'fetch',
        code: SourceCode.BadResolution,
        subject: redactUrl(index.toString()),
        terminal: true,
      });
    }
    const t = this.transport.withCA(ctx.ca?.pem);
    return withDeadline(ctx.signal, this.timeoutMs, 'fetch', redactUrl(index.toString()), async (signal) => {
      const version = resolved.status.version;
      const recorded = resolved.status.chartURL;
      const url = recorded
        ? chartUrl(p.repo, recorded, describe(p.chart, version))
        : await this.locate(t, p, expected, authorization(credentialsForUrl(ctx.credentials, index, 'fetch')), signal);
      const what = describe(p.chart, version);
      return fetchTarball({
        transport: t,
        url,
        auth: chartAuthorization(p.repo, url, ctx.credentials, 'fetch'),
        expected,
        store,
        ctx,
        signal,
        limits: this.options.unpackLimits,
        hint: withoutCredentialsHint(p.repo, url, ctx.credentials),
        mismatch: (actual) =>
          sourceError(
            resolved.pinned
              ? `${what}: digest mismatch: spec pins sha256 ${expected}, the server sent sha256 ${actual}`
              : `${what}: digest mismatch: index.yaml gives sha256 ${expected}, the server sent sha256 ${actual}`,
            // the repository serves a tarball its index does not describe: retrying the same
            // resolution cannot help; the next poll or a requested reconcile reads the index again
            { stage: 'fetch', code: SourceCode.DigestMismatch, subject: redactUrl(url.toString()), terminal: true },
          ),
      });
    });
  }

  /**
   * One GET of index.yaml, read whole up to `maxIndexBytes` and parsed for the chart; a 304 to a
   * conditional request is `not-modified`. The chart missing from the index is a transient
   * error (it may be published yet).
   */
  private async readIndex(
    t: HttpTransport,
    p: HelmSpec,
    auth: string | undefined,
    conditional: Record<string, string>,
    signal: AbortSignal,
  ): Promise<'not-modified' | { versions: ChartVersion[]; etag: string | undefined; lastModified: string | undefined }> {
    const index = indexUrl(p.repo);
    const subject = redactUrl(index.toString());
    const res = await requestBytes(t, 'GET', index, auth, conditional, signal, 'resolve');
    if (res.status === 304) {
      await res.body.dump();
      return 'not-modified';
    }
    if (res.status !== 200) throw await statusError(res, index, 'resolve');
    let body: Buffer;
    try {
      body = await readCapped(res, this.maxIndexBytes, 'index.yaml', 'resolve', subject, signal);
    } catch (e) {
      if (isHoistError(e) && e.is(SourceCode.TooLarge)) {
        throw sourceError(
          `index.yaml is larger than ${formatBytes(this.maxIndexBytes)}, the limit (hoist run --helm-index-max-size); nothing of it was read further`,
          { stage: 'resolve', code: SourceCode.TooLarge, subject, terminal: true },
        );
      }
      throw e;
    }
    // the node budget follows what may be parsed: a real index has about one node per 15 bytes
    const maxNodes = Math.max(YAML_MAX_NODES_PER_DOCUMENT, Math.ceil(Math.min(this.maxIndexBytes, MAX_PARSED_INDEX_BYTES) / 8));
    const parsed = await parseIndex(body, p.chart, { subject, maxNodes, signal });
    if (!parsed.chart) {
      const some = parsed.names.slice(0, NAMES_SHOWN).join(', ');
      const more = parsed.names.length > NAMES_SHOWN ? ', …' : '';
      throw sourceError(
        `chart ${JSON.stringify(p.chart)} is not in the repository's index.yaml (${parsed.names.length} charts${parsed.names.length > 0 ? `: ${some}${more}` : ''})`,
        { stage: 'resolve', code: SourceCode.UnknownChart, subject, terminal: false },
      );
    }
    return { versions: parsed.chart.versions, etag: headerValue(res.headers, 'etag'), lastModified: headerValue(res.headers, 'last-modified') };
  }

  /** The URL of the tarball with digest `expected` (else the version the spec picks), from a fresh read of the index. */
  private async locate(t: HttpTransport, p: HelmSpec, expected: string, auth: string | undefined, signal: AbortSignal): Promise<URL> {
    const index = indexUrl(p.repo);
    const read = await this.readIndex(t, p, auth, {}, signal);
    if (read === 'not-modified') throw sourceError('index.yaml answered 304 to a request that was not conditional', { ...notReadable(index), stage: 'fetch' });
    const entry = read.versions.find((v) => v.digest !== undefined && digestHex(v.digest) === expected) ?? chosen(p, read.versions, index);
    return chartUrl(p.repo, entry.urls[0]!, describe(p.chart, entry.version));
  }

  /** Downloads a chart the index gives no digest for (into the store when there is one) and returns its sha256. */
  private async hashChart(t: HttpTransport, p: HelmSpec, url: URL, credentials: Credentials | undefined, signal: AbortSignal): Promise<string> {
    const auth = chartAuthorization(p.repo, url, credentials, 'resolve');
    const subject = redactUrl(url.toString());
    const res = await requestBytes(t, 'GET', url, auth, {}, signal, 'resolve');
    if (res.status !== 200) throw await statusError(res, url, 'resolve', withoutCredentialsHint(p.repo, url, credentials));
    const write = async (dir: string, space?: SpaceAllowance): Promise<string> =>
      tarballKey(await unpackHashed(res, dir, { subject, signal, stage: 'resolve', limits: this.options.unpackLimits, space }));
    const store = this.options.store;
    const key = store ? (await store.putComputed(write, tarballOrigin(url, auth))).key : await inScratch(write);
    return key.slice('sha256:'.length);
  }
}

/** `chart greeter 1.3.0`, for messages */
function describe(chart: string, version: string | undefined): string {
  return `chart ${chart}${version ? ` ${version}` : ''}`;
}

/** The entry the spec's version picks; a transient error naming the chart, the range and the newest versions when none. */
function chosen(p: HelmSpec, versions: readonly ChartVersion[], index: URL): ChartVersion {
  const entry = selectVersion(versions, p.version);
  if (entry) return entry;
  const newest = newestVersions(versions, NEWEST_SHOWN);
  const wanted = p.version === undefined ? 'a release (no version given: *)' : `version ${JSON.stringify(p.version)}`;
  const listed = newest.length === 0 ? 'the index lists no usable version of it' : `newest in the index: ${newest.join(', ')} (${versions.length} versions)`;
  // a matching version may be published yet: retried
  throw sourceError(`chart ${JSON.stringify(p.chart)} has no ${wanted}; ${listed}`, {
    stage: 'resolve',
    code: SourceCode.NoMatchingVersion,
    subject: redactUrl(index.toString()),
    terminal: false,
  });
}

/** The entry's digest as hex; undefined when it has none; a terminal error when it is not a sha256. */
function entryDigest(p: HelmSpec, entry: ChartVersion, index: URL): string | undefined {
  if (entry.digest === undefined) return undefined;
  const hex = digestHex(entry.digest);
  if (hex === undefined) {
    throw sourceError(`${describe(p.chart, entry.version)}: the index gives a digest that is not a sha256 (64 hex digits, optionally prefixed sha256:)`, {
      stage: 'resolve',
      code: SourceCode.InvalidIndex,
      subject: redactUrl(index.toString()),
      terminal: true,
    });
  }
  return hex;
}

/**
 * The Authorization for the chart tarball: the repository's credentials only when the tarball
 * has the repository URL's scheme, host and port (and the Secret is bound to that host).
 */
function chartAuthorization(repo: URL, url: URL, credentials: Credentials | undefined, stage: 'resolve' | 'fetch'): string | undefined {
  if (url.origin !== repo.origin) return undefined;
  return authorization(credentialsForUrl(credentials, url, stage));
}

/** said with an http error from a chart on another host, when the repository has credentials */
function withoutCredentialsHint(repo: URL, url: URL, credentials: Credentials | undefined): string {
  return credentials && url.origin !== repo.origin
    ? ` (requested without credentials: the repository's auth Secret is sent only to ${repo.origin}, and the index places this chart on ${url.origin})`
    : '';
}

function notReadable(index: URL): { stage: 'resolve'; code: SourceCode; subject: string; terminal: boolean } {
  return { stage: 'resolve', code: SourceCode.ProtocolError, subject: redactUrl(index.toString()), terminal: false };
}

/** The spec's parts; a terminal spec error for what the CRD would refuse as well. */
function parseSpec(spec: SourceSpec): HelmSpec {
  const helm = spec.helm;
  const fail = (message: string, code: SourceCode, subject?: string): HoistError => sourceError(message, { stage: 'spec', code, subject, terminal: true });
  if (spec.kind !== 'helm' || !helm?.repoURL || !helm.chart) throw fail('helm source needs helm.repoURL and helm.chart', SourceCode.InvalidSource);
  let repo: URL;
  try {
    repo = new URL(helm.repoURL);
  } catch {
    throw fail('helm.repoURL is not a valid URL', SourceCode.InvalidUrl, redactUrl(helm.repoURL));
  }
  const subject = redactUrl(helm.repoURL);
  if (repo.protocol === 'oci:')
    throw fail('an oci:// chart repository is read by a source of kind image (image.ref, image.semver)', SourceCode.UnsupportedUrl, subject);
  if (repo.protocol !== 'https:' && repo.protocol !== 'http:')
    throw fail(`helm.repoURL must be http or https, not ${repo.protocol}`, SourceCode.InvalidUrl, subject);
  if (repo.username !== '' || repo.password !== '')
    throw fail('helm.repoURL must not contain credentials; use auth.secretRef', SourceCode.CredentialsInUrl, subject);
  if (!/^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(helm.chart))
    throw fail(`helm.chart ${JSON.stringify(helm.chart)} is not a chart name`, SourceCode.InvalidSpec, subject);
  const problem = versionProblem(helm.version);
  if (problem) throw fail(`helm.version ${problem}`, SourceCode.InvalidRef, subject);
  let pin: string | undefined;
  if (helm.sha256 !== undefined && helm.sha256 !== '') {
    pin = helm.sha256.toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(pin)) throw fail('helm.sha256 must be 64 hex digits', SourceCode.InvalidDigest, subject);
  }
  return { repo, chart: helm.chart, version: helm.version, pin };
}
