/**
 * The `http` source: a tarball (tar, tar.gz, tar.zst) at a URL, optionally pinned by sha256.
 *
 * Identity is the sha256 of the bytes as served (what `curl -o f URL; sha256sum f` prints), and
 * the content-store key is `sha256:<hex>`.
 * - Pinned (`sha256` in the spec): resolve makes no network call; fetch downloads only when the
 *   store lacks the key, verifying the digest while streaming. A mismatch is terminal and nothing
 *   lands in the store.
 * - Unpinned: resolve downloads once, hashing while it unpacks straight into the store (when the
 *   store supports `putComputed`), so the fetch that follows finds the content and makes no
 *   request. ETag / Last-Modified go into status; a later resolve with `ctx.previous` re-checks
 *   with If-None-Match / If-Modified-Since and a 304 keeps the previous resolution.
 *
 * Security (DESIGN §7): credentials go only to the URL's origin — redirects are followed by hand
 * and Authorization is dropped when one leaves the origin (host, port or scheme). TLS is verified;
 * extra CAs are added to, not substituted for, Node's roots. Errors name the URL through
 * `redactUrl` and never carry credentials or the underlying request objects.
 */
import { createHash } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { rootCertificates } from 'node:tls';
import { cp, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request, type Dispatcher } from 'undici';
import type { ResolvedSourceStatus, SourceSpec } from '../../api/v1alpha2/types.ts';
import type { ContentStore } from '../cache/content-store.ts';
import { HoistError, redactUrl, type Stage } from '../util/errors.ts';
import { unpackTar, type UnpackLimits } from '../util/unpack-tar.ts';
import type { Credentials, Resolved, Source, SourceContext } from './source.ts';

export interface HttpSourceOptions {
  /**
   * The store resolve may land an unpinned download in, so that fetch finds it. Without one (or
   * with a store lacking `putComputed`) resolve only hashes the body and fetch downloads again.
   */
  store?: ContentStore;
  /** extra CA certificates (PEM), trusted in addition to Node's built-in roots */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>;
  /** default 30 s */
  connectTimeoutMs?: number;
  /** time to the response headers; default 60 s */
  headersTimeoutMs?: number;
  /** longest pause between two body chunks; default 60 s */
  bodyTimeoutMs?: number;
  /** default 5 */
  maxRedirects?: number;
  unpackLimits?: Partial<UnpackLimits>;
  /** replaces the built-in agent (proxies, tests); `ca` and timeouts then belong to it */
  dispatcher?: Dispatcher;
  userAgent?: string;
  now?: () => Date;
}

/** Content-store key of an http source's content. */
export function httpContentKey(sha256Hex: string): string {
  return `sha256:${sha256Hex}`;
}

const STAGED_TTL_MS = 10 * 60_000;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// 4xx answers that say "later", not "never"
const TRANSIENT_4XX = new Set([408, 425, 429]);

interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
  /** URL the answer came from, after redirects (no userinfo) */
  url: URL;
}

export class HttpSource implements Source {
  readonly kind = 'http' as const;
  private readonly options: HttpSourceOptions;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  /**
   * Cache hits that some caller has proven access to, as hash(url, authorization, key). A hit
   * for content that needs credentials is served only after the caller's own authenticated
   * request succeeded once (DESIGN §2: a cache hit never skips authorization).
   */
  private readonly proven = new Set<string>();
  /** keys whose content was downloaded with credentials: other callers must prove access too */
  private readonly privateKeys = new Set<string>();

  /** unpinned content resolved without a store, waiting for fetch to adopt it (key → dir) */
  private readonly staged = new Map<string, { dir: string; at: number }>();

  constructor(options: HttpSourceOptions = {}) {
    this.options = options;
    if (options.dispatcher) {
      this.dispatcher = options.dispatcher;
      this.ownsDispatcher = false;
    } else {
      const extra = options.ca === undefined ? [] : Array.isArray(options.ca) ? options.ca : [options.ca];
      this.dispatcher = new Agent({
        connect: {
          timeout: options.connectTimeoutMs ?? 30_000,
          rejectUnauthorized: true,
          ...(extra.length > 0 ? { ca: [...rootCertificates, ...(extra as Array<string | Buffer>)] } : {}),
        },
        headersTimeout: options.headersTimeoutMs ?? 60_000,
        bodyTimeout: options.bodyTimeoutMs ?? 60_000,
      });
      this.ownsDispatcher = true;
    }
  }

  /** Closes the built-in agent's connections and drops staged content. */
  async close(): Promise<void> {
    for (const { dir } of this.staged.values()) await rm(dir, { recursive: true, force: true });
    this.staged.clear();
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  // staged content that no fetch claimed (the reconciler failed or moved on) is dropped after a while
  private sweepStaged(): void {
    const cutoff = Date.now() - STAGED_TTL_MS;
    for (const [key, { dir, at }] of this.staged) {
      if (at >= cutoff) continue;
      this.staged.delete(key);
      void rm(dir, { recursive: true, force: true });
    }
  }

  /** Moves staged content for `key` into the store; undefined when nothing is staged. */
  private async adoptStaged(key: string, store: ContentStore): Promise<string | undefined> {
    const staged = this.staged.get(key);
    if (!staged) return undefined;
    this.staged.delete(key);
    try {
      return await store.put(key, (tmp) => moveTree(staged.dir, tmp));
    } finally {
      await rm(staged.dir, { recursive: true, force: true });
    }
  }

  /**
   * Pinned: no I/O. Unpinned: one GET (conditional when ctx.previous has validators), whose body
   * lands in the store when possible.
   */
  async resolve(spec: SourceSpec, ctx: SourceContext): Promise<Resolved> {
    const { url, pin, userinfo } = parseSpec(spec);
    if (pin) return { status: { kind: 'http', sha256: pin }, key: httpContentKey(pin), pinned: true };

    const prev = ctx.previous;
    // resolved once per spec generation: the recorded identity is reused without a request
    if (prev?.kind === 'http' && prev.sha256 && !ctx.recheck) return { status: { ...prev }, key: httpContentKey(prev.sha256), pinned: false };
    const conditional: Record<string, string> = {};
    if (prev?.kind === 'http' && prev.sha256) {
      if (prev.etag) conditional['if-none-match'] = prev.etag;
      if (prev.lastModified) conditional['if-modified-since'] = prev.lastModified;
    }
    const auth = authorization(ctx.credentials, userinfo);
    const res = await this.send('GET', url, auth, conditional, ctx.signal, 'resolve');
    if (res.status === 304 && prev?.sha256 && Object.keys(conditional).length > 0) {
      await res.body.dump();
      return { status: { ...prev }, key: httpContentKey(prev.sha256), pinned: false };
    }
    if (res.status !== 200) throw await statusError(res, url, 'resolve');

    const subject = redactUrl(url.toString());
    let sha256: string;
    const store = this.options.store;
    if (store) {
      const put = await putStaged(store, async (tmp) => httpContentKey(await this.unpackBody(res, tmp, subject, ctx.signal)));
      sha256 = put.key.slice('sha256:'.length);
    } else {
      // no store yet: unpack into a private staging dir that fetch adopts instead of downloading again
      this.sweepStaged();
      const staging = await mkdtemp(join(tmpdir(), 'hoist-http-'));
      try {
        sha256 = await this.unpackBody(res, staging, subject, ctx.signal);
      } catch (e) {
        await rm(staging, { recursive: true, force: true });
        throw e;
      }
      const old = this.staged.get(httpContentKey(sha256));
      if (old) await rm(old.dir, { recursive: true, force: true });
      this.staged.set(httpContentKey(sha256), { dir: staging, at: Date.now() });
    }
    const key = httpContentKey(sha256);
    this.remember(url, auth, key);

    const status: ResolvedSourceStatus = { kind: 'http', sha256, resolvedAt: (this.options.now?.() ?? new Date()).toISOString() };
    const etag = header(res, 'etag');
    const lastModified = header(res, 'last-modified');
    if (etag) status.etag = etag;
    if (lastModified) status.lastModified = lastModified;
    return { status, key, pinned: false };
  }

  /**
   * Idempotent. A store hit makes no request — unless the content needs credentials and this
   * caller has not proven access yet, then one HEAD. A miss downloads once (concurrent fetches of
   * one key share the download through the store), verifying the digest while unpacking.
   */
  async fetch(spec: SourceSpec, resolved: Resolved, store: ContentStore, ctx: SourceContext): Promise<string> {
    const { url, userinfo } = parseSpec(spec);
    const expected = resolved.key.startsWith('sha256:') ? resolved.key.slice('sha256:'.length) : undefined;
    if (!expected || !/^[0-9a-f]{64}$/.test(expected)) {
      throw new HoistError(`resolved key ${JSON.stringify(resolved.key)} is not a sha256 digest`, {
        stage: 'fetch', reason: 'FetchFailed', code: 'bad-resolution', subject: redactUrl(url.toString()), terminal: true,
      });
    }
    const auth = authorization(ctx.credentials, userinfo);
    const hit = await store.open(resolved.key);
    if (hit !== undefined) {
      await this.proveAccess(url, auth, resolved.key, ctx.signal);
      return hit;
    }
    // resolved moments ago without a store; private content only for a caller who proved access
    const mayAdopt = !this.privateKeys.has(resolved.key) || this.proven.has(proofId(url, auth, resolved.key));
    const adopted = mayAdopt ? await this.adoptStaged(resolved.key, store) : undefined;
    if (adopted !== undefined) return adopted;

    const subject = redactUrl(url.toString());
    const dir = await store.put(resolved.key, async (tmp) => {
      const res = await this.send('GET', url, auth, {}, ctx.signal, 'fetch');
      if (res.status !== 200) throw await statusError(res, url, 'fetch');
      const actual = await this.unpackBody(res, tmp, subject, ctx.signal);
      if (actual !== expected) {
        throw new HoistError(
          resolved.pinned
            ? `digest mismatch: spec pins sha256 ${expected}, server sent sha256 ${actual}`
            : `content changed since it was resolved: expected sha256 ${expected}, server sent sha256 ${actual}`,
          // a pin mismatch needs a spec change; an unpinned change needs a new resolve, which retrying triggers
          { stage: 'fetch', reason: 'FetchFailed', code: 'digest-mismatch', subject, terminal: resolved.pinned },
        );
      }
    });
    this.remember(url, auth, resolved.key);
    return dir;
  }

  private remember(url: URL, auth: string | undefined, key: string): void {
    if (auth === undefined) return;
    this.privateKeys.add(key);
    this.proven.add(proofId(url, auth, key));
  }

  private async proveAccess(url: URL, auth: string | undefined, key: string, signal: AbortSignal | undefined): Promise<void> {
    if (auth === undefined && !this.privateKeys.has(key)) return; // public content, nothing to prove
    const id = proofId(url, auth, key);
    if (this.proven.has(id)) return;
    let res = await this.send('HEAD', url, auth, {}, signal, 'fetch');
    if (res.status === 405 || res.status === 501) {
      // a server without HEAD: a GET whose body we abandon proves the same
      await res.body.dump();
      res = await this.send('GET', url, auth, {}, signal, 'fetch');
    }
    if (res.status < 200 || res.status > 299) throw await statusError(res, url, 'fetch');
    await res.body.dump();
    this.proven.add(id);
  }

  /** Streams the body through sha256 into the unpacker; returns the hex digest of the bytes served. */
  private async unpackBody(res: Response, dir: string, subject: string, signal: AbortSignal | undefined): Promise<string> {
    const hash = createHash('sha256');
    const tapped = async function* (): AsyncGenerator<Buffer> {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        hash.update(chunk);
        yield chunk;
      }
    };
    try {
      await unpackTar(tapped(), dir, { limits: this.options.unpackLimits, subject, signal });
    } catch (e) {
      throw bodyError(e, res.url, signal);
    }
    return hash.digest('hex');
  }

  /** One request, following redirects by hand so credentials never leave the original origin. */
  private async send(
    method: 'GET' | 'HEAD',
    url: URL,
    auth: string | undefined,
    extra: Record<string, string>,
    signal: AbortSignal | undefined,
    stage: Stage,
  ): Promise<Response> {
    const origin = url.origin;
    let current = url;
    const max = this.options.maxRedirects ?? 5;
    for (let hop = 0; ; hop++) {
      const headers: Record<string, string> = {
        'user-agent': this.options.userAgent ?? 'hoist',
        accept: '*/*',
        // the pin is over the bytes as stored; a transfer encoding would change what we hash
        'accept-encoding': 'identity',
        ...extra,
      };
      if (auth !== undefined && current.origin === origin) headers.authorization = auth;
      let res: Dispatcher.ResponseData;
      try {
        res = await request(current, { method, headers, dispatcher: this.dispatcher, signal });
      } catch (e) {
        throw networkError(e, current, stage, signal);
      }
      const location = res.headers.location;
      if (REDIRECTS.has(res.statusCode) && typeof location === 'string') {
        await res.body.dump();
        let next: URL;
        try {
          next = new URL(location, current);
        } catch {
          throw new HoistError(`redirect to an invalid location`, { stage, reason: failedReason(stage), code: 'bad-redirect', subject: redactUrl(current.toString()), terminal: true });
        }
        if (next.protocol !== 'https:' && next.protocol !== 'http:') {
          throw new HoistError(`redirect to unsupported scheme ${next.protocol}`, { stage, reason: failedReason(stage), code: 'bad-redirect', subject: redactUrl(current.toString()), terminal: true });
        }
        if (hop >= max) {
          throw new HoistError(`more than ${max} redirects`, { stage, reason: failedReason(stage), code: 'too-many-redirects', subject: redactUrl(url.toString()), terminal: true });
        }
        next.username = '';
        next.password = '';
        current = next;
        continue;
      }
      return { status: res.statusCode, headers: res.headers, body: res.body, url: current };
    }
  }
}

interface Userinfo {
  username: string;
  password: string;
}

/** The spec's URL without userinfo (kept apart: it is a credential), and its pin. */
function parseSpec(spec: SourceSpec): { url: URL; pin: string | undefined; userinfo: Userinfo | undefined } {
  const http = spec.http;
  const fail = (message: string, code: string, subject?: string): HoistError =>
    new HoistError(message, { stage: 'spec', reason: 'InvalidSpec', code, subject, terminal: true });
  if (spec.kind !== 'http' || !http?.url) throw fail('http source needs http.url', 'invalid-source');
  let url: URL;
  try {
    url = new URL(http.url);
  } catch {
    throw fail('http.url is not a valid URL', 'invalid-url', redactUrl(http.url));
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw fail(`http.url must be http or https, not ${url.protocol}`, 'invalid-url', redactUrl(http.url));
  }
  let pin: string | undefined;
  if (http.sha256 !== undefined && http.sha256 !== '') {
    pin = http.sha256.toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(pin)) throw fail('http.sha256 must be 64 hex digits', 'invalid-digest', redactUrl(http.url));
  }
  const userinfo = url.username !== '' ? { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) } : undefined;
  url.username = '';
  url.password = '';
  return { url, pin, userinfo };
}

/**
 * The Authorization header for a request: the referenced secret's `token` (Bearer) or
 * `username`/`password` (Basic), else userinfo written into the URL itself.
 */
function authorization(creds: Credentials | undefined, fromUrl: Userinfo | undefined): string | undefined {
  const d = creds?.data;
  if (d?.token) return `Bearer ${d.token.trim()}`;
  if (d?.username !== undefined && d.username !== '') return basic(d.username, d.password ?? '');
  if (fromUrl) return basic(fromUrl.username, fromUrl.password);
  return undefined;
}

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

function proofId(url: URL, auth: string | undefined, key: string): string {
  // hashed, so no credential is kept in memory in the clear longer than the request needs
  return createHash('sha256').update(`${url.toString()}\0${auth ?? ''}\0${key}`).digest('hex');
}

/** Moves the children of `from` into `to` (rename; copy when they sit on another filesystem). */
async function moveTree(from: string, to: string): Promise<void> {
  for (const name of await readdir(from)) {
    try {
      await rename(join(from, name), join(to, name));
    } catch (e) {
      if (!(typeof e === 'object' && e !== null && 'code' in e && e.code === 'EXDEV')) throw e;
      await cp(join(from, name), join(to, name), { recursive: true, verbatimSymlinks: true });
    }
  }
}

function header(res: Response, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function failedReason(stage: Stage): string {
  return stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed';
}

async function statusError(res: Response, requested: URL, stage: Stage): Promise<HoistError> {
  await res.body.dump().catch(() => undefined);
  const s = res.status;
  const code = s === 401 ? 'unauthorized' : s === 403 ? 'forbidden' : s === 404 ? 'not-found' : 'http-status';
  const text = (STATUS_CODES[s] ?? 'unknown status').toLowerCase();
  const redirected = res.url.toString() !== requested.toString() ? ` (after redirect to ${redactUrl(res.url.toString())})` : '';
  return new HoistError(`http ${s} ${text}${redirected}`, {
    stage,
    reason: failedReason(stage),
    code,
    subject: redactUrl(requested.toString()),
    terminal: s >= 400 && s < 500 && !TRANSIENT_4XX.has(s),
  });
}

/**
 * A failure to talk to the server: transient. Only the error's code and message are kept — the
 * undici error itself is not attached, so nothing that held request headers reaches a log.
 */
function networkError(e: unknown, url: URL, stage: Stage, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  const code = typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
  const message = e instanceof Error ? e.message : String(e);
  return new HoistError(`request failed: ${code ? `${code}: ` : ''}${message.toLowerCase()}`, {
    stage, reason: failedReason(stage), code: 'network', subject: redactUrl(url.toString()), terminal: false,
  });
}

/** An unpack refusal stays as it is; anything else from the body stream is a network failure. */
function bodyError(e: unknown, url: URL, signal: AbortSignal | undefined): unknown {
  if (e instanceof HoistError) return e;
  return networkError(e, url, 'fetch', signal);
}

/**
 * For stores without `putComputed`: stage into a private temp dir, then copy into the store.
 * Exported for sources that need the same fallback (git, image); prefer `putComputed`.
 */
export async function putStaged(
  store: ContentStore,
  write: (dir: string) => Promise<string>,
): Promise<{ key: string; dir: string }> {
  if (store.putComputed) return store.putComputed(write);
  const staging = await mkdtemp(join(tmpdir(), 'hoist-stage-'));
  try {
    const key = await write(staging);
    const dir = await store.put(key, (tmp) => cp(staging, tmp, { recursive: true, verbatimSymlinks: true }));
    return { key, dir };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
