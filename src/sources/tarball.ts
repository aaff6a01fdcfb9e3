/**
 * Tarballs over http(s), as the http and helm sources download them: the bytes are hashed while
 * they stream into the unpacker (the sha256 is of the bytes as served, what `sha256sum` prints
 * and what a Helm index's `digest` is), landing in the content store through `fetchThroughStore`
 * (a store hit proves access at the tarball's own URL). Network rules are the transport's;
 * credentials arrive already bound to the URL's host (./credential-hosts.ts).
 *
 * Errors are HoistErrors naming the URL through `redactUrl`.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContentOrigin, ContentStore, SpaceAllowance } from '../cache/content-store.ts';
import { HoistError, redactUrl } from '../util/errors.ts';
import { classifyStatus, retryCannotHelp } from '../util/http-status.ts';
import { unpackTar, type UnpackLimits } from '../util/unpack-tar.ts';
import { fetchThroughStore } from './cached-fetch.ts';
import { basicAuth, discard, networkError, type HttpTransport, type SendResponse, type SourceStage } from './transport/transport.ts';
import type { Credentials, SourceContext } from './source.ts';
import { SourceCode, sourceError } from './errors.ts';

/** Content-store key of a tarball's content: the sha256 of its bytes. */
export function tarballKey(sha256Hex: string): string {
  return `sha256:${sha256Hex}`;
}

/** The hex digest of a `sha256:<hex>` key; undefined for any other key. */
export function tarballDigest(key: string): string | undefined {
  const hex = key.startsWith('sha256:') ? key.slice('sha256:'.length) : undefined;
  return hex !== undefined && /^[0-9a-f]{64}$/.test(hex) ? hex : undefined;
}

/** The Authorization header: the secret's `token` (Bearer) or `username`/`password` (Basic). */
export function authorization(creds: Credentials | undefined): string | undefined {
  const d = creds?.data;
  if (d?.token) return `Bearer ${d.token.trim()}`;
  if (d?.username !== undefined && d.username !== '') return basicAuth(d.username, d.password ?? '');
  return undefined;
}

/** where the content comes from: the full URL (a query may be a credential) and who asked */
export function tarballOrigin(url: URL, auth: string | undefined): ContentOrigin {
  return { location: url.toString(), credential: auth, display: redactUrl(url.toString()) };
}

/** One GET or HEAD of bytes as served (a tarball, an index), no transfer encoding. `t`: the source's transport, with the spec's own CA when it names one (`withCA`). */
export function requestBytes(
  t: HttpTransport,
  method: 'GET' | 'HEAD',
  url: URL,
  auth: string | undefined,
  extra: Record<string, string>,
  signal: AbortSignal,
  stage: SourceStage,
): Promise<SendResponse> {
  return t.send({
    method,
    url,
    // the pin is over the bytes as stored; a transfer encoding would change what we hash
    headers: { accept: '*/*', 'accept-encoding': 'identity', ...extra },
    authorization: auth,
    signal,
    stage,
  });
}

/** Streams the body through sha256 into the unpacker (charging `space` as it writes); returns the hex digest of the bytes served. */
export async function unpackHashed(
  res: SendResponse,
  dir: string,
  opts: { subject: string; signal: AbortSignal; stage: SourceStage; limits?: Partial<UnpackLimits> | undefined; space?: SpaceAllowance | undefined },
): Promise<string> {
  const hash = createHash('sha256');
  const tapped = async function* (): AsyncGenerator<Buffer> {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      hash.update(chunk);
      yield chunk;
    }
  };
  const { space } = opts;
  try {
    // maxArchiveBytes caps the download itself, before decompression
    await unpackTar(tapped(), dir, {
      limits: opts.limits,
      subject: opts.subject,
      signal: opts.signal,
      ...(space ? { charge: (n: number) => space.charge(n) } : {}),
    });
  } catch (e) {
    throw e instanceof HoistError ? e : networkError(e, opts.stage, opts.subject, opts.signal);
  }
  return hash.digest('hex');
}

/** runs `write` in a temp directory removed afterwards (resolve without a store only hashes) */
export async function inScratch<T>(write: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'hoist-http-'));
  try {
    return await write(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A non-2xx answer as a HoistError naming the requested URL (and where a redirect led). */
export async function statusError(res: SendResponse, requested: URL, stage: SourceStage, hint = ''): Promise<HoistError> {
  await res.body.dump().catch(() => undefined);
  const s = res.status;
  const answer = classifyStatus(s);
  const code = answer === 'unauthorized' || answer === 'forbidden' || answer === 'not-found' ? answer : SourceCode.HttpStatus;
  const text = (STATUS_CODES[s] ?? 'unknown status').toLowerCase();
  const redirected = res.url.toString() !== requested.toString() ? ` (after redirect to ${redactUrl(res.url.toString())})` : '';
  return sourceError(`http ${s} ${text}${redirected}${hint}`, {
    stage,
    code,
    subject: redactUrl(requested.toString()),
    terminal: retryCannotHelp(s),
  });
}

export interface TarballFetch {
  transport: HttpTransport;
  url: URL;
  auth: string | undefined;
  /** the hex sha256 the bytes must have */
  expected: string;
  store: ContentStore;
  ctx: Pick<SourceContext, 'onStore'>;
  signal: AbortSignal;
  limits?: Partial<UnpackLimits> | undefined;
  /** the error for bytes whose sha256 is `actual` */
  mismatch(actual: string): HoistError;
  /** appended to an http error's message (e.g. why no credentials were sent) */
  hint?: string;
}

/**
 * Idempotent. A store hit this URL and credential proved before makes no request; a hit
 * fetched at this URL with another credential costs one HEAD with the caller's own; a hit
 * fetched only at other URLs is downloaded again from this one and verified (see
 * cached-fetch.ts). A miss downloads once, verifying the digest while unpacking.
 */
export function fetchTarball(f: TarballFetch): Promise<string> {
  const subject = redactUrl(f.url.toString());
  return fetchThroughStore({
    store: f.store,
    key: tarballKey(f.expected),
    origin: tarballOrigin(f.url, f.auth),
    subject,
    ...(f.ctx.onStore ? { observe: f.ctx.onStore } : {}),
    download: async (tmp, space) => {
      const res = await requestBytes(f.transport, 'GET', f.url, f.auth, {}, f.signal, 'fetch');
      if (res.status !== 200) throw await statusError(res, f.url, 'fetch', f.hint);
      const actual = await unpackHashed(res, tmp, { subject, signal: f.signal, stage: 'fetch', limits: f.limits, space });
      if (actual !== f.expected) throw f.mismatch(actual);
    },
    prove: () => proveAccess(f),
  });
}

/** One HEAD (a GET whose body is abandoned when HEAD is not allowed) with the caller's credential. */
async function proveAccess(f: TarballFetch): Promise<void> {
  let res = await requestBytes(f.transport, 'HEAD', f.url, f.auth, {}, f.signal, 'fetch');
  if (res.status === 405 || res.status === 501) {
    await res.body.dump();
    res = await requestBytes(f.transport, 'GET', f.url, f.auth, {}, f.signal, 'fetch');
  }
  if (res.status < 200 || res.status > 299) throw await statusError(res, f.url, 'fetch', f.hint);
  discard(res.body);
}
