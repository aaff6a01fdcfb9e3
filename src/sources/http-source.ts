/**
 * The `http` source: a tarball (tar, tar.gz, tar.zst) at a URL, optionally pinned by sha256.
 *
 * Identity is the sha256 of the bytes as served (what `curl -o f URL; sha256sum f` prints), and
 * the content-store key is `sha256:<hex>`.
 * - Pinned (`sha256` in the spec): resolve makes no network call; fetch downloads only when the
 *   store lacks the key, verifying the digest while streaming. A mismatch is terminal and nothing
 *   lands in the store.
 * - Unpinned: resolve downloads once, hashing while it unpacks straight into the store, so the
 *   fetch that follows finds the content and makes no request. ETag / Last-Modified go into
 *   status; a later resolve with `ctx.previous` re-checks with If-None-Match / If-Modified-Since
 *   and a 304 keeps the previous resolution.
 *
 * Network rules (redirects, https only for credentials, proxy, CA, deadline) are the shared
 * transport's (./transport/transport.ts), with the spec's own CA (caSecretRef / caConfigMapRef, read
 * by the reconciler into `ctx.ca`) added for this source's requests only; credentials are used only for the hosts their Secret names
 * (./credential-hosts.ts); a store hit proves access at the content's own location
 * (./cached-fetch.ts). Errors name the URL through `redactUrl`.
 */
import type { ResolvedSourceStatus, SourceSpec } from '../../api/v1alpha2/types.ts';
import type { ContentStore, SpaceAllowance } from '../cache/content-store.ts';
import { HoistError, redactUrl } from '../util/errors.ts';
import type { UnpackLimits } from '../util/unpack-tar.ts';
import { credentialsForUrl } from './credential-hosts.ts';
import { authorization, fetchTarball, inScratch, requestBytes, statusError, tarballDigest, tarballKey, tarballOrigin, unpackHashed } from './tarball.ts';
import { DEFAULT_FETCH_TIMEOUT_MS, withDeadline } from './transport/deadline.ts';
import { headerValue, HttpTransport, type TransportOptions } from './transport/transport.ts';
import type { Resolved, Source, SourceContext } from './source.ts';
import { SourceCode, sourceError } from './errors.ts';

export interface HttpSourceOptions extends TransportOptions {
  /**
   * The store resolve lands an unpinned download in, so that fetch finds it. Without one resolve
   * only hashes the body and fetch downloads again.
   */
  store?: ContentStore;
  /** overall deadline of one resolve or one fetch, however fast the bytes arrive; default 10 min */
  timeoutMs?: number;
  /** size and count limits of the unpacked tree; `maxArchiveBytes` caps the download */
  unpackLimits?: Partial<UnpackLimits>;
  /** share a transport instead of creating one from the options above */
  transport?: HttpTransport;
  now?: () => Date;
}

/** Content-store key of an http source's content. */
export const httpContentKey = tarballKey;

export class HttpSource implements Source {
  readonly kind = 'http' as const;
  private readonly options: HttpSourceOptions;
  private readonly transport: HttpTransport;
  private readonly ownsTransport: boolean;
  private readonly timeoutMs: number;

  constructor(options: HttpSourceOptions = {}) {
    this.options = options;
    this.transport = options.transport ?? new HttpTransport(options);
    this.ownsTransport = options.transport === undefined;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
  }

  /** Closes the transport's connections (when it is this source's own). */
  async close(): Promise<void> {
    if (this.ownsTransport) await this.transport.close();
  }

  /**
   * Pinned: no I/O. Unpinned: one GET (conditional when ctx.previous has validators), whose body
   * lands in the store when there is one.
   */
  async resolve(spec: SourceSpec, ctx: SourceContext): Promise<Resolved> {
    const { url, pin } = parseSpec(spec);
    const auth = authorization(credentialsForUrl(ctx.credentials, url, 'resolve'));
    if (pin) return { status: { kind: 'http', sha256: pin }, key: httpContentKey(pin), pinned: true };

    const prev = ctx.previous;
    // resolved once per spec generation: the recorded identity is reused without a request
    if (prev?.kind === 'http' && prev.sha256 && !ctx.recheck) return { status: { ...prev }, key: httpContentKey(prev.sha256), pinned: false };
    const conditional: Record<string, string> = {};
    if (prev?.kind === 'http' && prev.sha256) {
      if (prev.etag) conditional['if-none-match'] = prev.etag;
      if (prev.lastModified) conditional['if-modified-since'] = prev.lastModified;
    }
    const subject = redactUrl(url.toString());
    const t = this.transport.withCA(ctx.ca?.pem);
    return withDeadline(ctx.signal, this.timeoutMs, 'resolve', subject, async (signal) => {
      const res = await requestBytes(t, 'GET', url, auth, conditional, signal, 'resolve');
      if (res.status === 304 && prev?.sha256 && Object.keys(conditional).length > 0) {
        await res.body.dump();
        return { status: { ...prev }, key: httpContentKey(prev.sha256), pinned: false };
      }
      if (res.status !== 200) throw await statusError(res, url, 'resolve');
      const store = this.options.store;
      const write = async (dir: string, space?: SpaceAllowance): Promise<string> =>
        httpContentKey(await unpackHashed(res, dir, { subject, signal, stage: 'resolve', limits: this.options.unpackLimits, space }));
      const key = store ? (await store.putComputed(write, tarballOrigin(url, auth))).key : await inScratch(write);
      const status: ResolvedSourceStatus = {
        kind: 'http',
        sha256: key.slice('sha256:'.length),
        resolvedAt: (this.options.now?.() ?? new Date()).toISOString(),
      };
      const etag = headerValue(res.headers, 'etag');
      const lastModified = headerValue(res.headers, 'last-modified');
      if (etag) status.etag = etag;
      if (lastModified) status.lastModified = lastModified;
      return { status, key, pinned: false };
    });
  }

  /**
   * Idempotent. A store hit this URL and credential proved before makes no request; a hit
   * fetched at this URL with another credential costs one HEAD with the caller's own; a hit
   * fetched only at other URLs is downloaded again from this one and verified (see
   * cached-fetch.ts). A miss downloads once, verifying the digest while unpacking.
   */
  async fetch(spec: SourceSpec, resolved: Resolved, store: ContentStore, ctx: SourceContext): Promise<string> {
    const { url } = parseSpec(spec);
    const subject = redactUrl(url.toString());
    const expected = tarballDigest(resolved.key);
    if (!expected) {
      throw sourceError(`resolved key ${JSON.stringify(resolved.key)} is not a sha256 digest`, {
        stage: 'fetch',
        code: SourceCode.BadResolution,
        subject,
        terminal: true,
      });
    }
    const auth = authorization(credentialsForUrl(ctx.credentials, url, 'fetch'));
    const transport = this.transport.withCA(ctx.ca?.pem);
    return withDeadline(ctx.signal, this.timeoutMs, 'fetch', subject, (signal) =>
      fetchTarball({
        transport,
        url,
        auth,
        expected,
        store,
        ctx,
        signal,
        limits: this.options.unpackLimits,
        mismatch: (actual) =>
          sourceError(
            resolved.pinned
              ? `digest mismatch: spec pins sha256 ${expected}, server sent sha256 ${actual}`
              : `content changed since it was resolved: expected sha256 ${expected}, server sent sha256 ${actual}`,
            // a pin mismatch needs a spec change; an unpinned change needs a new resolve, which retrying triggers
            { stage: 'fetch', code: SourceCode.DigestMismatch, subject, terminal: resolved.pinned },
          ),
      }),
    );
  }
}

/** The spec's URL (userinfo is refused by the CRD and here) and its pin. */
function parseSpec(spec: SourceSpec): { url: URL; pin: string | undefined } {
  const http = spec.http;
  const fail = (message: string, code: SourceCode, subject?: string): HoistError => sourceError(message, { stage: 'spec', code, subject, terminal: true });
  if (spec.kind !== 'http' || !http?.url) throw fail('http source needs http.url', SourceCode.InvalidSource);
  let url: URL;
  try {
    url = new URL(http.url);
  } catch {
    throw fail('http.url is not a valid URL', SourceCode.InvalidUrl, redactUrl(http.url));
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw fail(`http.url must be http or https, not ${url.protocol}`, SourceCode.InvalidUrl, redactUrl(http.url));
  }
  if (url.username !== '' || url.password !== '') {
    // credentials in the URL would reach status and logs; they belong in a Secret
    throw fail('http.url must not contain credentials; use auth.secretRef', SourceCode.CredentialsInUrl, redactUrl(http.url));
  }
  let pin: string | undefined;
  if (http.sha256 !== undefined && http.sha256 !== '') {
    pin = http.sha256.toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(pin)) throw fail('http.sha256 must be 64 hex digits', SourceCode.InvalidDigest, redactUrl(http.url));
  }
  return { url, pin };
}
