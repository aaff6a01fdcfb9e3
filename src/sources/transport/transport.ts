/**
 * The one HTTP client of the sources (http tarballs, OCI registries, git ref advertisements).
 * Each source keeps only its protocol; the network rules live here, once:
 *
 * - **Proxy**: `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` from the environment (undici's
 *   EnvHttpProxyAgent), the same variables the git CLI reads.
 * - **TLS**: always verified; an optional CA bundle is added to Node's roots, never substituted;
 *   per-host CAs (`--ca-dir`, ./ca-dir.ts) are added for their host only; a source's own CA
 *   (caSecretRef / caConfigMapRef) is added by `withCA`, for that source's requests only.
 * - **Credentials**: an Authorization value is sent only to its origin (scheme, host and port of
 *   the URL it was meant for) and only over https — plain http only to hosts explicitly listed
 *   as insecure (test and in-cluster registries). A request that would break either rule fails.
 * - **Redirects**: followed by hand, at most `maxRedirects` hops; a hop to another origin drops
 *   Authorization; https → http is refused (unless the target host is listed as insecure);
 *   only http(s) targets; requests with a body are never redirected.
 * - **Deadline**: every request takes the operation's signal (see deadline.ts); an aborted
 *   request or body stream rejects with the signal's reason.
 * - **Byte caps**: `readCapped` stops a body at a limit.
 *
 * Errors are HoistErrors naming the URL through `redactUrl`; undici errors are never attached,
 * so nothing that held request headers reaches a log.
 */
import { rootCertificates } from 'node:tls';
import type { Dispatcher } from 'undici';
import { EnvHttpProxyAgent } from '../../util/undici.ts';
import { HoistError, redactUrl, type Stage } from '../../util/errors.ts';
import { caForUrl, type HostCAs } from './ca-dir.ts';
import { SourceCode, sourceError } from '../errors.ts';

export type SourceStage = Extract<Stage, 'resolve' | 'fetch'>;

export interface TransportOptions {
  /** extra CA certificates (PEM), trusted in addition to Node's built-in roots */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>;
  /**
   * `host[:port]` spoken to over plain http even with credentials, and allowed as the target of an
   * https → http redirect (registries configured as insecure). Empty by default.
   */
  insecureHosts?: readonly string[];
  /** extra CA certificates per `host[:port]` (see ca-dir.ts), trusted for that host only */
  hostCAs?: HostCAs;
  /** default 5 */
  maxRedirects?: number;
  /** default 30 s */
  connectTimeoutMs?: number;
  userAgent?: string;
  /** replaces the built-in proxy-aware agent (tests, shared pools); `ca` and `hostCAs` then belong to it */
  dispatcher?: Dispatcher;
}

export interface SendRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: URL | string;
  headers?: Record<string, string>;
  /** called once, for the first hop; requests with a body are never redirected */
  body?: () => Dispatcher.DispatchOptions['body'];
  /** the Authorization value; sent only to `credentialOrigin` and only over https */
  authorization?: string | undefined;
  /** origin the credential belongs to (default: the request URL's origin) */
  credentialOrigin?: string | undefined;
  signal?: AbortSignal | undefined;
  stage: SourceStage;
  /** what errors name (no userinfo, no query): default the redacted URL */
  subject?: string;
  /** default true for GET and HEAD */
  followRedirects?: boolean;
}

export interface SendResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
  /** the URL that answered, after redirects */
  url: URL;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** distinct per-source CA bundles kept open at once */
const MAX_WITH_CA = 32;

/** `Basic base64(user:password)`, the one place it is built */
export function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/** One header value (the first when repeated). */
export function headerValue(headers: SendResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export class HttpTransport {
  readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly insecure: ReadonlySet<string>;
  private readonly maxRedirects: number;
  readonly userAgent: string;
  private readonly hostCAs: HostCAs | undefined;
  private readonly baseCA: Array<string | Buffer>;
  private readonly connectTimeoutMs: number;
  /** one agent per host with its own CA (built on first use) */
  private readonly hostDispatchers = new Map<string, Dispatcher>();
  private readonly options: TransportOptions;
  /** `withCA` transports by PEM, oldest first */
  private readonly withCAs = new Map<string, HttpTransport>();

  constructor(options: TransportOptions = {}) {
    this.options = options;
    this.insecure = new Set((options.insecureHosts ?? []).map((h) => h.toLowerCase()));
    this.maxRedirects = options.maxRedirects ?? 5;
    this.userAgent = options.userAgent ?? 'hoist';
    this.hostCAs = options.hostCAs;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
    this.baseCA = options.ca === undefined ? [] : Array.isArray(options.ca) ? [...(options.ca as Array<string | Buffer>)] : [options.ca as string | Buffer];
    if (options.dispatcher) {
      this.dispatcher = options.dispatcher;
      this.ownsDispatcher = false;
    } else {
      this.dispatcher = this.agent(this.baseCA);
      this.ownsDispatcher = true;
    }
  }

  private agent(extra: Array<string | Buffer>): Dispatcher {
    const tls = extra.length > 0 ? { ca: [...rootCertificates, ...extra] } : {};
    return new EnvHttpProxyAgent({
      connect: { timeout: this.connectTimeoutMs, rejectUnauthorized: true, ...tls },
      requestTls: { rejectUnauthorized: true, ...tls },
    });
  }

  /** The agent for `url`: the host's own (its CA from `hostCAs` added) or the shared one. */
  private dispatcherFor(url: URL): Dispatcher {
    if (!this.ownsDispatcher) return this.dispatcher;
    const ca = caForUrl(this.hostCAs, url);
    if (ca === undefined) return this.dispatcher;
    let d = this.hostDispatchers.get(ca);
    if (!d) {
      d = this.agent([...this.baseCA, ca]);
      this.hostDispatchers.set(ca, d);
    }
    return d;
  }

  /**
   * This transport with `pem` trusted as well (a source's caSecretRef / caConfigMapRef): the same
   * rules, proxy, insecure hosts and `--ca-dir`, its own connection pool. One per bundle, kept for
   * reuse; the least recently created beyond `MAX_WITH_CA` (rotated CAs) is closed. It always has
   * the built-in agent: an injected dispatcher cannot be given a CA.
   */
  withCA(pem: string | undefined): HttpTransport {
    if (pem === undefined) return this;
    let t = this.withCAs.get(pem);
    if (!t) {
      const { dispatcher: _injected, ...options } = this.options;
      t = new HttpTransport({ ...options, ca: [...this.baseCA, pem] });
      this.withCAs.set(pem, t);
      for (const [old, o] of this.withCAs) {
        if (this.withCAs.size <= MAX_WITH_CA) break;
        this.withCAs.delete(old);
        void o.close();
      }
    }
    return t;
  }

  /** Closes the built-in agent's connections (not an injected dispatcher's) and the `withCA` ones. */
  async close(): Promise<void> {
    const derived = [...this.withCAs.values()];
    this.withCAs.clear();
    await Promise.all(derived.map((t) => t.close()));
    if (!this.ownsDispatcher) return;
    await Promise.all([this.dispatcher, ...this.hostDispatchers.values()].map((d) => d.close()));
  }

  /** true when `host` (host[:port]) was listed as insecure */
  isInsecure(host: string): boolean {
    return this.insecure.has(host.toLowerCase());
  }

  /**
   * One exchange, following redirects under the rules in the file comment. The caller consumes
   * or dumps the body.
   */
  async send(req: SendRequest): Promise<SendResponse> {
    const start = typeof req.url === 'string' ? new URL(req.url) : new URL(req.url.toString());
    const subject = req.subject ?? redactUrl(start.toString());
    const fail = (message: string, code: SourceCode, terminal: boolean): HoistError => sourceError(message, { stage: req.stage, code, subject, terminal });
    const credentialOrigin = req.credentialOrigin ?? start.origin;
    const follow = req.followRedirects ?? (req.method === 'GET' || req.method === 'HEAD');
    let current = start;
    for (let hop = 0; ; hop++) {
      if (current.protocol !== 'https:' && current.protocol !== 'http:') throw fail(`unsupported scheme ${current.protocol}`, SourceCode.BadUrl, true);
      const headers: Record<string, string> = { 'user-agent': this.userAgent };
      for (const [k, v] of Object.entries(req.headers ?? {})) if (k.toLowerCase() !== 'authorization') headers[k.toLowerCase()] = v;
      const withCredential = req.authorization !== undefined && current.origin === credentialOrigin;
      if (withCredential) {
        if (current.protocol !== 'https:' && !this.isInsecure(current.host)) {
          throw fail(`credentials are sent only over https, not to ${redactUrl(current.toString())}`, SourceCode.InsecureCredentials, true);
        }
        headers.authorization = req.authorization!;
      }
      let res: Dispatcher.ResponseData;
      try {
        res = await this.dispatcherFor(current).request({
          origin: current.origin,
          path: `${current.pathname}${current.search}`,
          method: req.method,
          headers,
          body: hop === 0 && req.body ? req.body() : undefined,
          signal: req.signal,
        });
      } catch (e) {
        throw networkError(e, req.stage, subject, req.signal);
      }
      const location = headerValue(res.headers, 'location');
      if (!follow || !REDIRECTS.has(res.statusCode) || location === undefined) {
        return { status: res.statusCode, headers: res.headers, body: res.body, url: current };
      }
      await res.body.dump().catch(() => undefined);
      if (hop >= this.maxRedirects) throw fail(`more than ${this.maxRedirects} redirects`, SourceCode.TooManyRedirects, true);
      let next: URL;
      try {
        next = new URL(location, current);
      } catch {
        throw fail('redirect to an invalid location', SourceCode.BadRedirect, true);
      }
      if (next.protocol !== 'https:' && next.protocol !== 'http:') throw fail(`refusing redirect to ${next.protocol}`, SourceCode.InsecureRedirect, true);
      if (current.protocol === 'https:' && next.protocol === 'http:' && !this.isInsecure(next.host)) {
        throw fail(`refusing redirect from https to http (${redactUrl(next.toString())})`, SourceCode.InsecureRedirect, true);
      }
      next.username = '';
      next.password = '';
      current = next;
    }
  }
}

/** what to do about an unknown authority, for every source's message (git's too) */
export const UNKNOWN_AUTHORITY_HINT = 'trust its CA with --ca-dir, or caSecretRef / caConfigMapRef on a git or http source';

const UNKNOWN_AUTHORITY = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

/**
 * A failure to talk to the server: transient. When the operation's signal fired (deadline or
 * cancellation) its reason is the error. Only code and message of the undici error are kept.
 */
export function networkError(e: unknown, stage: SourceStage, subject: string, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  if (e instanceof HoistError) return e;
  const cause = e instanceof Error && e.cause instanceof Error ? e.cause : undefined;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? (e as NodeJS.ErrnoException | undefined)?.code;
  const message = (cause?.message ?? (e instanceof Error ? e.message : String(e))).replace(/https?:\/\/[^\s'"]+/g, (u) => redactUrl(u));
  // certificate problems are configuration, not weather: retrying cannot fix them
  const tls = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(`${code ?? ''} ${message}`);
  // the server's chain ends at a CA nobody configured: say so, not Node's command-line hint
  const unknownAuthority = code !== undefined && UNKNOWN_AUTHORITY.has(code);
  const detail = unknownAuthority
    ? `certificate signed by unknown authority (${code}); ${UNKNOWN_AUTHORITY_HINT}`
    : `${code ? `${code}: ` : ''}${message.toLowerCase()}`;
  return sourceError(`${tls ? 'tls verification failed' : 'request failed'}: ${detail}`, {
    stage,
    code: tls ? SourceCode.TlsVerifyFailed : SourceCode.Network,
    subject,
    terminal: tls,
  });
}

/** Drops a body without reading it (and without an unhandled abort error). */
export function discard(body: SendResponse['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** Passes `body` through, failing with a terminal `too-large` once more than `maxBytes` arrived. */
async function* capped(body: AsyncIterable<Buffer>, maxBytes: number, what: string, stage: SourceStage, subject: string): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > maxBytes) {
      throw sourceError(`${what} is larger than the ${maxBytes} bytes allowed`, { stage, code: SourceCode.TooLarge, subject, terminal: true });
    }
    yield chunk;
  }
}

/** Reads a whole body into memory, at most `maxBytes`; read failures map through networkError. */
export async function readCapped(
  res: SendResponse,
  maxBytes: number,
  what: string,
  stage: SourceStage,
  subject: string,
  signal?: AbortSignal,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await consumeCapped(res, maxBytes, what, stage, subject, signal, (chunk) => {
    chunks.push(chunk);
  });
  return Buffer.concat(chunks);
}

/**
 * Hands a body to `onChunk` chunk by chunk (awaited: it may yield), at most `maxBytes` in all,
 * refusing a declared length over the cap before reading. What `onChunk` throws as a HoistError
 * passes through; read failures map through networkError; the body is discarded on any failure.
 */
export async function consumeCapped(
  res: SendResponse,
  maxBytes: number,
  what: string,
  stage: SourceStage,
  subject: string,
  signal: AbortSignal | undefined,
  onChunk: (chunk: Buffer) => void | Promise<void>,
): Promise<void> {
  const declared = Number(headerValue(res.headers, 'content-length') ?? '-1');
  if (declared > maxBytes) {
    discard(res.body);
    throw sourceError(`${what} is ${declared} bytes, more than the ${maxBytes} allowed`, { stage, code: SourceCode.TooLarge, subject, terminal: true });
  }
  try {
    for await (const chunk of capped(res.body as AsyncIterable<Buffer>, maxBytes, what, stage, subject)) await onChunk(chunk);
  } catch (e) {
    discard(res.body);
    throw networkError(e, stage, subject, signal);
  }
}
