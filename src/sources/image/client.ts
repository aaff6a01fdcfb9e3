/**
 * One file (over 400 lines) because RegistryClient is one stateful object: its manifest, blob,
 * token and retry paths share the token and manifest caches and the transport; the verified blob
 * stream is in blob-stream.ts.
 *
 * An OCI distribution client over undici, written for Hoist because no maintained npm client
 * verifies digests.
 *
 * Guarantees:
 * - every manifest and blob is verified against its digest over the raw bytes as they stream;
 *   `Docker-Content-Digest` is only ever compared, never trusted on its own;
 * - memory stays bounded: manifests are capped at 4 MiB, blobs are streamed chunk by chunk;
 * - credentials go only to the registry they were issued for and to the token realm that registry
 *   names (the distribution token protocol); redirects, https-only credentials, proxy, CA and the
 *   deadline are the shared transport's rules (../transport/transport.ts): a redirect to another origin
 *   (blob storage) is followed without `Authorization`, an https → http redirect is refused;
 * - TLS is always verified (system roots plus an optional custom CA); plain HTTP, with
 *   credentials, is spoken only to hosts listed in `insecureHosts` (loopback test registries,
 *   in-cluster registries): listing a registry there is the operator's explicit choice;
 * - 429 and 5xx responses and connection failures are retried a bounded number of times, honouring
 *   `Retry-After` (../transport/backoff.ts); a body is never retried once it started streaming;
 * - Bearer tokens are cached per (realm, service, scope, credential) until shortly before they
 *   expire and refreshed once on a 401; errors never contain credentials or tokens.
 */
import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { systemClock, type Clock } from '../../util/clock.ts';
import { HoistError, redactUrl } from '../../util/errors.ts';
import { classifyStatus, isRetryable, retryCannotHelp } from '../../util/http-status.ts';
import { sleep } from '../../util/sleep.ts';
import { backoffDelay, parseRetryAfter, type RetryOptions } from '../transport/backoff.ts';
import type { HostCAs } from '../transport/ca-dir.ts';
import { basicAuth, HttpTransport, readCapped } from '../transport/transport.ts';
import { parseChallenges, pickChallenge, type AuthChallenge } from './challenge.ts';
import { credentialIdentity, type RegistryCredential } from './docker-config.ts';
import { BlobStream } from './blob-stream.ts';
import { atStage, errorText, imageError, type ImageStage } from './errors.ts';
import { MANIFEST_ACCEPT, parseManifest, type Descriptor, type ParsedManifest } from './manifest.ts';
import { formatReference, manifestReference, type ImageReference } from './reference.ts';
import { SourceCode } from '../errors.ts';

export interface RegistryClientOptions {
  /**
   * Extra trusted CA certificates (PEM), added to the system roots. TLS verification itself can
   * never be turned off.
   */
  ca?: string | readonly string[];
  /**
   * `host[:port]` of registries (and token realms) spoken to over plain HTTP. Meant for loopback
   * test registries and in-cluster registries without TLS; empty by default.
   */
  insecureHosts?: readonly string[];
  /** extra CA certificates per registry `host[:port]` (`--ca-dir`), trusted for that host only */
  hostCAs?: HostCAs;
  retry?: RetryOptions;
  userAgent?: string;
  /** use this dispatcher instead of the transport's own proxy-aware agent (tests, shared pools) */
  dispatcher?: Dispatcher;
  /** the time of retry waits, Retry-After and token expiry (default: the system clock) */
  clock?: Clock;
}

/** Per-operation inputs: whose credentials, which pipeline stage errors belong to, cancellation. */
export interface OperationContext {
  credential?: RegistryCredential | undefined;
  stage: ImageStage;
  signal?: AbortSignal | undefined;
}

export interface ManifestHead {
  digest: string;
  mediaType: string;
  size: number;
}

export interface FetchedManifest extends ManifestHead {
  /** the exact bytes the digest covers */
  bytes: Buffer;
  manifest: ParsedManifest;
}

export type Scope = 'pull' | 'pull,push';

export interface RegistryRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** a path below the registry root (`/v2/…`) or an absolute URL the registry handed out (upload locations) */
  path: string;
  headers?: Record<string, string>;
  /** called once per attempt so that retries resend the whole body */
  body?: () => Dispatcher.DispatchOptions['body'];
  scope: Scope;
}

export interface RegistryResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
  /** the URL that answered (after redirects), for resolving relative Location headers */
  url: string;
}

const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
const MAX_TOKEN_RESPONSE_BYTES = 1024 * 1024;
const TOKEN_EXPIRY_MARGIN_MS = 10_000;
const DEFAULT_TOKEN_TTL_S = 60;
const MANIFEST_CACHE_ENTRIES = 64;
const MANIFEST_CACHE_MAX_BYTES = 64 * 1024;

interface CachedToken {
  token: string;
  expiresAt: number;
}

export class RegistryClient {
  private readonly transport: HttpTransport;
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly clock: Clock;
  /** last challenge seen per registry host: lets later requests authenticate up front */
  private readonly challenges = new Map<string, AuthChallenge>();
  private readonly tokens = new Map<string, CachedToken>();
  private readonly inflightTokens = new Map<string, Promise<string>>();
  /** small verified manifests by (credential, repository, digest); digest-addressed, so never stale */
  private readonly manifestCache = new Map<string, { bytes: Buffer; mediaType: string }>();

  constructor(options: RegistryClientOptions = {}) {
    this.attempts = Math.max(1, options.retry?.attempts ?? 4);
    this.baseDelayMs = options.retry?.baseDelayMs ?? 250;
    this.maxDelayMs = options.retry?.maxDelayMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
    const ca = options.ca === undefined ? undefined : typeof options.ca === 'string' ? [options.ca] : [...options.ca];
    this.transport = new HttpTransport({
      ...(ca ? { ca } : {}),
      ...(options.insecureHosts ? { insecureHosts: options.insecureHosts } : {}),
      ...(options.hostCAs ? { hostCAs: options.hostCAs } : {}),
      ...(options.userAgent ? { userAgent: options.userAgent } : {}),
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
  }

  /** Closes the client's connections (not an injected dispatcher's). */
  async close(): Promise<void> {
    await this.transport.close();
  }

  /** `http` for hosts listed in insecureHosts, else `https`. */
  schemeFor(host: string): 'http' | 'https' {
    return this.transport.isInsecure(host) ? 'http' : 'https';
  }

  /**
   * GET /v2/: checks the registry speaks the distribution API and records its auth challenge.
   * Returns the challenge, or undefined when the registry needs no authentication.
   */
  async ping(ref: ImageReference, ctx: OperationContext): Promise<AuthChallenge | undefined> {
    const subject = formatReference(ref);
    const url = `${this.schemeFor(ref.apiHost)}://${ref.apiHost}/v2/`;
    const res = await this.withRetry(() => this.exchange(url, 'GET', {}, undefined, undefined, ctx), ctx, subject);
    await res.body.dump();
    const answer = classifyStatus(res.statusCode);
    if (answer === 'unauthorized') {
      const c = pickChallenge(parseChallenges(res.headers['www-authenticate']));
      if (c) this.challenges.set(ref.apiHost, c);
      return c;
    }
    if (answer === 'ok') return undefined;
    throw imageError(ctx.stage, SourceCode.HttpStatus, `registry ping answered ${res.statusCode}; is this an OCI registry?`, subject, false);
  }

  /**
   * The cheapest resolution: HEAD on the manifest. Falls back to GET (and hashes the body) when the
   * registry omits Docker-Content-Digest. For a digest reference the digest is the reference's.
   */
  async headManifest(ref: ImageReference, ctx: OperationContext): Promise<ManifestHead> {
    const subject = formatReference(ref);
    const res = await this.request(ref, { method: 'HEAD', path: this.manifestPath(ref), headers: { accept: MANIFEST_ACCEPT }, scope: 'pull' }, ctx);
    await res.body.dump();
    this.check(res, ref, ctx, 'manifest');
    const header = single(res.headers['docker-content-digest']);
    const mediaType = (single(res.headers['content-type']) ?? '').split(';')[0]!.trim();
    const size = Number(single(res.headers['content-length']) ?? '-1');
    if (ref.digest) {
      if (header && header !== ref.digest && sameAlgorithm(header, ref.digest)) {
        throw imageError(ctx.stage, SourceCode.DigestMismatch, `registry reports digest ${header} for a manifest requested by ${ref.digest}`, subject, true);
      }
      return { digest: ref.digest, mediaType, size };
    }
    if (header && /^sha256:[a-f0-9]{64}$/.test(header)) return { digest: header, mediaType, size };
    const full = await this.getManifest(ref, ctx);
    return { digest: full.digest, mediaType: full.mediaType, size: full.size };
  }

  /**
   * GET the manifest (or index), verified: against the reference's digest when pinned, else the
   * computed sha256 becomes the digest (and must agree with Docker-Content-Digest when sent).
   */
  async getManifest(ref: ImageReference, ctx: OperationContext): Promise<FetchedManifest> {
    const subject = formatReference(ref);
    const cacheKey = ref.digest ? `${credentialIdentity(ctx.credential)}|${ref.registry}/${ref.repository}@${ref.digest}` : undefined;
    const cached = cacheKey ? this.manifestCache.get(cacheKey) : undefined;
    if (cached && ref.digest) {
      return {
        digest: ref.digest,
        mediaType: cached.mediaType,
        size: cached.bytes.length,
        bytes: cached.bytes,
        manifest: parseManifest(cached.bytes, cached.mediaType, subject),
      };
    }
    const res = await this.request(ref, { method: 'GET', path: this.manifestPath(ref), headers: { accept: MANIFEST_ACCEPT }, scope: 'pull' }, ctx);
    if (res.statusCode < 200 || res.statusCode >= 300) await res.body.dump();
    this.check(res, ref, ctx, 'manifest');
    const declared = Number(single(res.headers['content-length']) ?? '0');
    if (declared > MAX_MANIFEST_BYTES) {
      res.body.destroy();
      throw imageError(ctx.stage, SourceCode.ManifestTooLarge, `manifest is ${declared} bytes, more than the ${MAX_MANIFEST_BYTES} allowed`, subject, true);
    }
    const algorithm = ref.digest?.startsWith('sha512:') ? 'sha512' : 'sha256';
    const hash = createHash(algorithm);
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        total += chunk.length;
        if (total > MAX_MANIFEST_BYTES) {
          res.body.destroy();
          throw imageError(ctx.stage, SourceCode.ManifestTooLarge, `manifest is larger than the ${MAX_MANIFEST_BYTES} bytes allowed`, subject, true);
        }
        hash.update(chunk);
        chunks.push(chunk);
      }
    } catch (e) {
      if (e instanceof HoistError) throw e;
      throw imageError(ctx.stage, SourceCode.Network, `reading the manifest failed: ${errorText(e)}`, subject, false, e);
    }
    const bytes = Buffer.concat(chunks, total);
    const computed = `${algorithm}:${hash.digest('hex')}`;
    const expected = ref.digest ?? single(res.headers['docker-content-digest']);
    if (expected && sameAlgorithm(expected, computed) && expected !== computed) {
      throw imageError(ctx.stage, SourceCode.DigestMismatch, `manifest digest mismatch: expected ${expected}, got ${computed}`, subject, true);
    }
    const contentType = (single(res.headers['content-type']) ?? '').split(';')[0]!.trim();
    let manifest: ParsedManifest;
    try {
      manifest = parseManifest(bytes, contentType, subject);
    } catch (e) {
      throw e instanceof HoistError ? atStage(e, ctx.stage) : e;
    }
    const digest = ref.digest ?? computed;
    if (bytes.length <= MANIFEST_CACHE_MAX_BYTES) {
      const key = `${credentialIdentity(ctx.credential)}|${ref.registry}/${ref.repository}@${digest}`;
      this.manifestCache.delete(key);
      this.manifestCache.set(key, { bytes, mediaType: manifest.mediaType });
      while (this.manifestCache.size > MANIFEST_CACHE_ENTRIES) this.manifestCache.delete(this.manifestCache.keys().next().value as string);
    }
    return { digest, mediaType: manifest.mediaType, size: bytes.length, bytes, manifest };
  }

  /**
   * Opens a blob as a verifying byte stream. Iterating yields the raw bytes; the iterator throws a
   * terminal HoistError when the bytes exceed the descriptor's size or do not match its digest, and
   * a transient one when the stream ends short. See BlobStream for use with consumers that may stop
   * reading early.
   */
  async openBlob(ref: ImageReference, desc: Descriptor, ctx: OperationContext): Promise<BlobStream> {
    const subject = formatReference(ref);
    const res = await this.request(ref, { method: 'GET', path: `/v2/${ref.repository}/blobs/${desc.digest}`, scope: 'pull' }, ctx);
    if (res.statusCode < 200 || res.statusCode >= 300) await res.body.dump();
    this.check(res, ref, ctx, `blob ${desc.digest}`);
    return new BlobStream(res.body, desc, subject, ctx.stage);
  }

  /**
   * One authenticated request to the registry of `ref`, with retries and redirects. Answers 401 by
   * obtaining credentials for the challenge (token or Basic) and retrying once; a 401 after that is
   * returned to the caller (see `check`). The caller must consume or dump the body.
   */
  async request(ref: ImageReference, req: RegistryRequest, ctx: OperationContext): Promise<RegistryResponse> {
    const subject = formatReference(ref);
    const base = `${this.schemeFor(ref.apiHost)}://${ref.apiHost}`;
    const url = /^https?:\/\//.test(req.path) ? req.path : `${base}${req.path}`;
    const scope = `repository:${ref.repository}:${req.scope}`;
    let authorization = await this.authorizationFor(ref, scope, ctx, false);
    for (let round = 0; ; round++) {
      const res = await this.withRetry(() => this.exchange(url, req.method, req.headers ?? {}, authorization, req.body, ctx, base), ctx, subject);
      if (classifyStatus(res.statusCode) !== SourceCode.Unauthorized || round > 0) return res;
      await res.body.dump();
      let challenge = pickChallenge(parseChallenges(res.headers['www-authenticate']));
      // HEAD responses may omit the header on some registries: ask /v2/ for it
      if (!challenge) challenge = await this.ping(ref, ctx);
      if (!challenge) return res;
      this.challenges.set(ref.apiHost, challenge);
      const next = await this.authorizationFor(ref, scope, ctx, true);
      if (next === undefined) {
        throw imageError(
          ctx.stage,
          SourceCode.CredentialsRequired,
          'registry requires authentication and no credentials match this image (auth.secretRef)',
          subject,
          true,
        );
      }
      authorization = next;
    }
  }

  /** Maps an unsuccessful manifest/blob response to a HoistError; returns on 2xx. */
  check(res: RegistryResponse, ref: ImageReference, ctx: OperationContext, what: string): void {
    const subject = formatReference(ref);
    const s = res.statusCode;
    const answer = classifyStatus(s);
    if (answer === 'ok') return;
    if (answer === 'unauthorized') {
      throw ctx.credential
        ? imageError(ctx.stage, SourceCode.Unauthorized, `registry rejected the credentials (401) for ${what}`, subject, true)
        : imageError(ctx.stage, SourceCode.CredentialsRequired, `registry requires authentication (401) for ${what}; no credentials were given`, subject, true);
    }
    if (answer === 'forbidden') throw imageError(ctx.stage, SourceCode.Forbidden, `access denied (403) to ${what}`, subject, true);
    if (answer === 'not-found') {
      // a tag or image may be pushed later: retrying with backoff can help
      const name = what === 'manifest' ? `manifest ${manifestReference(ref)}` : what;
      throw imageError(ctx.stage, SourceCode.NotFound, `${name} not found (404)`, subject, false);
    }
    if (answer === 'throttled') throw imageError(ctx.stage, SourceCode.RateLimited, `registry rate limit (429) for ${what}`, subject, false);
    throw imageError(ctx.stage, SourceCode.HttpStatus, `registry answered ${s} for ${what}`, subject, retryCannotHelp(s));
  }

  private manifestPath(ref: ImageReference): string {
    return `/v2/${ref.repository}/manifests/${manifestReference(ref)}`;
  }

  /**
   * The Authorization header for `scope`, or undefined when none is known to be needed. With
   * `fresh`, a cached token is discarded first (the registry just refused it).
   */
  private async authorizationFor(ref: ImageReference, scope: string, ctx: OperationContext, fresh: boolean): Promise<string | undefined> {
    const challenge = this.challenges.get(ref.apiHost);
    const cred = ctx.credential;
    if (!challenge) return undefined;
    if (challenge.scheme === 'basic') {
      if (!cred?.username || cred.password === undefined) return undefined;
      return basicAuth(cred.username, cred.password);
    }
    if (cred?.registryToken) return `Bearer ${cred.registryToken}`;
    const realm = challenge.params.realm ?? '';
    const service = challenge.params.service ?? '';
    const key = `${realm}|${service}|${scope}|${credentialIdentity(cred)}`;
    if (fresh) this.tokens.delete(key);
    const hit = this.tokens.get(key);
    if (hit && hit.expiresAt > this.clock.now()) return `Bearer ${hit.token}`;
    // concurrent requests for one scope share a single token request
    let p = this.inflightTokens.get(key);
    if (!p) {
      p = this.fetchToken(ref, realm, service, scope, ctx).finally(() => this.inflightTokens.delete(key));
      this.inflightTokens.set(key, p);
    }
    const t = await p;
    return `Bearer ${t}`;
  }

  private async fetchToken(ref: ImageReference, realm: string, service: string, scope: string, ctx: OperationContext): Promise<string> {
    const subject = formatReference(ref);
    let realmUrl: URL;
    try {
      realmUrl = new URL(realm);
    } catch {
      throw imageError(ctx.stage, SourceCode.Token, `registry advertised an invalid token realm`, subject, true);
    }
    if (realmUrl.protocol !== 'https:' && !(realmUrl.protocol === 'http:' && this.transport.isInsecure(realmUrl.host))) {
      throw imageError(ctx.stage, SourceCode.Token, `token realm ${redactUrl(realm)} is not https (add its host to insecureHosts to allow it)`, subject, true);
    }
    const cred = ctx.credential;
    const headers: Record<string, string> = { accept: 'application/json' };
    let method: 'GET' | 'POST' = 'GET';
    let body: string | undefined;
    let basic: string | undefined;
    if (cred?.identityToken) {
      // OAuth2 refresh-token grant, as docker does with an identity token
      method = 'POST';
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: cred.identityToken, service, scope, client_id: 'hoist' }).toString();
    } else {
      if (service) realmUrl.searchParams.set('service', service);
      realmUrl.searchParams.set('scope', scope);
      if (cred?.username && cred.password !== undefined) basic = basicAuth(cred.username, cred.password);
    }
    const url = realmUrl.toString();
    const res = await this.withRetry(
      () => this.exchange(url, method, headers, basic, body === undefined ? undefined : () => body, ctx, realmUrl.origin),
      ctx,
      subject,
    );
    const answer = classifyStatus(res.statusCode);
    if (answer === 'unauthorized' || answer === 'forbidden') {
      await res.body.dump();
      throw cred
        ? imageError(ctx.stage, SourceCode.Unauthorized, `token service rejected the credentials (${res.statusCode})`, subject, true)
        : imageError(ctx.stage, SourceCode.CredentialsRequired, `token service requires credentials (${res.statusCode}); none were given`, subject, true);
    }
    if (answer !== 'ok') {
      await res.body.dump();
      throw imageError(ctx.stage, SourceCode.Token, `token service answered ${res.statusCode}`, subject, retryCannotHelp(res.statusCode));
    }
    let parsed: { token?: unknown; access_token?: unknown; expires_in?: unknown };
    const raw = await readCapped(
      { status: res.statusCode, headers: res.headers, body: res.body, url: new URL(url) },
      MAX_TOKEN_RESPONSE_BYTES,
      'token response',
      ctx.stage,
      subject,
      ctx.signal,
    );
    try {
      parsed = JSON.parse(raw.toString('utf8')) as typeof parsed;
    } catch (e) {
      throw imageError(ctx.stage, SourceCode.Token, 'token service answered with invalid JSON', subject, false, e);
    }
    const token = typeof parsed.token === 'string' ? parsed.token : typeof parsed.access_token === 'string' ? parsed.access_token : '';
    if (token === '') throw imageError(ctx.stage, SourceCode.Token, 'token service answered without a token', subject, false);
    const ttl = typeof parsed.expires_in === 'number' && parsed.expires_in > 0 ? parsed.expires_in : DEFAULT_TOKEN_TTL_S;
    this.tokens.set(`${realm}|${service}|${scope}|${credentialIdentity(cred)}`, { token, expiresAt: this.clock.now() + ttl * 1000 - TOKEN_EXPIRY_MARGIN_MS });
    return token;
  }

  /**
   * One HTTP exchange through the shared transport: `authorization` goes only to `authOrigin`
   * (the registry, or the token realm), redirects follow the transport's rules; requests with a
   * body (uploads) are not redirected.
   */
  private async exchange(
    startUrl: string,
    method: RegistryRequest['method'],
    headers: Record<string, string>,
    authorization: string | undefined,
    body: RegistryRequest['body'],
    ctx: OperationContext,
    authOrigin?: string,
  ): Promise<RegistryResponse> {
    const res = await this.transport.send({
      method,
      url: startUrl,
      headers,
      ...(body ? { body } : {}),
      authorization,
      credentialOrigin: authOrigin ?? new URL(startUrl).origin,
      signal: ctx.signal,
      stage: ctx.stage,
      subject: redactUrl(startUrl),
      followRedirects: method === 'GET' || method === 'HEAD' || method === 'DELETE',
    });
    return { statusCode: res.status, headers: res.headers, body: res.body, url: res.url.toString() };
  }

  /**
   * Retries 429, 5xx and connection failures with exponential backoff (or the server's
   * Retry-After), at most `attempts` times in all. The last response is returned as is.
   */
  private async withRetry(fn: () => Promise<RegistryResponse>, ctx: OperationContext, subject: string): Promise<RegistryResponse> {
    for (let attempt = 1; ; attempt++) {
      let res: RegistryResponse;
      try {
        res = await fn();
      } catch (e) {
        if (ctx.signal?.aborted) throw ctx.signal.reason;
        // only connection failures are retried; refusals of the transport's rules are final
        const network = e instanceof HoistError && e.code === SourceCode.Network;
        if (!network) throw e;
        if (attempt >= this.attempts) throw imageError(ctx.stage, SourceCode.Network, `registry ${e.message}`, subject, false);
        await sleep(backoffDelay(attempt, this.baseDelayMs, this.maxDelayMs), ctx.signal, this.clock);
        ctx.signal?.throwIfAborted();
        continue;
      }
      if (!isRetryable(res.statusCode) || attempt >= this.attempts) return res;
      const after = parseRetryAfter(single(res.headers['retry-after']), this.clock.now());
      await res.body.dump();
      if (after !== undefined && after > this.maxDelayMs) {
        throw imageError(
          ctx.stage,
          classifyStatus(res.statusCode) === 'throttled' ? SourceCode.RateLimited : SourceCode.HttpStatus,
          `registry answered ${res.statusCode} and asked to retry after ${Math.ceil(after / 1000)}s`,
          subject,
          false,
        );
      }
      await sleep(after ?? backoffDelay(attempt, this.baseDelayMs, this.maxDelayMs), ctx.signal, this.clock);
      ctx.signal?.throwIfAborted();
    }
  }
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function sameAlgorithm(a: string, b: string): boolean {
  return a.split(':')[0] === b.split(':')[0];
}
