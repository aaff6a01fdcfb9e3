/**
 * The HTTP layer under the client: undici pools with TLS verified against the kubeconfig CA, client
 * certificates, bearer tokens, impersonation headers and request counting. Two pools, because a
 * watch holds its HTTP/1.1 connection for minutes: short requests get their own bounded,
 * keep-alive pool so that many watches can never starve them.
 */
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { Pool } from '../util/undici.ts';
import { ApiError, TransportError, type Status } from './api-error.ts';
import type { ClusterConfig } from './kube-config.ts';
import { RequestCounter, type RequestVerb } from './request-counter.ts';

export interface TransportOptions {
  /** max concurrent connections for ordinary requests (default 32) */
  maxConnections?: number;
  /** max concurrent watch connections (default 256) */
  maxWatches?: number;
  /** time to wait for response headers on ordinary requests (default 60s) */
  requestTimeoutMs?: number;
  userAgent?: string;
  /** share counts between clients, e.g. between a client and its impersonating children */
  counter?: RequestCounter;
  /** time to establish a connection, TLS included (default 10s, undici's) */
  connectTimeoutMs?: number;
  /** the name lookup of every connection (remote clusters: target-guard.ts guardedLookup) */
  lookup?: (hostname: string, options: object, callback: (err: NodeJS.ErrnoException | null, address: string | object[], family?: number) => void) => void;
}

export interface RawRequest {
  verb: RequestVerb;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** path below the server's base path, starting with / */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  /** names the target in error messages */
  subject: string;
  impersonate?: string | undefined;
  signal?: AbortSignal | undefined;
}

const TOKEN_FILE_TTL_MS = 60_000;

export class RestTransport {
  readonly counter: RequestCounter;
  private readonly pool: Pool;
  private readonly watchPool: Pool;
  private readonly basePath: string;
  private readonly requestTimeoutMs: number;
  private readonly userAgent: string;
  private tokenCache: { token: string; readAt: number } | undefined;

  constructor(
    private readonly cfg: ClusterConfig,
    opts: TransportOptions = {},
  ) {
    const url = new URL(cfg.server);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.counter = opts.counter ?? new RequestCounter();
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 60_000;
    this.userAgent = opts.userAgent ?? 'hoist';
    const connect = {
      ...(cfg.ca ? { ca: cfg.ca } : {}),
      ...(cfg.cert ? { cert: cfg.cert } : {}),
      ...(cfg.key ? { key: cfg.key } : {}),
      ...(cfg.tlsServerName ? { servername: cfg.tlsServerName } : {}),
      rejectUnauthorized: !cfg.insecureSkipTLSVerify,
      ...(opts.connectTimeoutMs !== undefined ? { timeout: opts.connectTimeoutMs } : {}),
      ...(opts.lookup ? { lookup: opts.lookup } : {}),
    };
    // HTTP/1.1 only: each watch gets its own connection, so a dead connection takes down one
    // watch, not every stream multiplexed on it, and connection bounds stay explicit.
    this.pool = new Pool(url.origin, {
      connections: opts.maxConnections ?? 32,
      allowH2: false,
      connect,
      keepAliveTimeout: 30_000,
      headersTimeout: this.requestTimeoutMs,
      bodyTimeout: this.requestTimeoutMs,
    });
    this.watchPool = new Pool(url.origin, {
      connections: opts.maxWatches ?? 256,
      allowH2: false,
      connect,
      headersTimeout: this.requestTimeoutMs,
      // a watch may be legitimately silent; the informer's watchdog decides when it is dead
      bodyTimeout: 0,
    });
  }

  /** Sends a request and reads the whole body; throws ApiError for non-2xx (404 included). */
  async json<T>(req: RawRequest): Promise<T> {
    return (await this.jsonWithStatus<T>(req)).body;
  }

  /** Like json(), with the status code: 201 Created tells a create from an update (server-side apply) */
  async jsonWithStatus<T>(req: RawRequest): Promise<{ body: T; statusCode: number }> {
    const { statusCode, text } = await this.send(req);
    return { body: parseJson<T>(text, req, statusCode), statusCode };
  }

  /** Like json() but resolves undefined for 404, for get and delete. */
  async jsonOr404<T>(req: RawRequest): Promise<T | undefined> {
    try {
      return await this.json<T>(req);
    } catch (e) {
      if (e instanceof ApiError && e.statusCode === 404) return undefined;
      throw e;
    }
  }

  /** Opens a streaming response (watch); the caller must consume or destroy the body. */
  async stream(req: RawRequest): Promise<Readable> {
    const started = performance.now();
    this.counter.started(req.verb);
    let statusCode: number | undefined;
    try {
      const res = await this.watchPool.request({
        method: req.method,
        path: this.fullPath(req),
        headers: this.headers(req),
        signal: req.signal,
      });
      statusCode = res.statusCode;
      if (statusCode >= 300) {
        const text = await res.body.text();
        throw apiError(req, statusCode, text);
      }
      return res.body;
    } catch (e) {
      throw wrapTransport(e, req);
    } finally {
      this.report(req, statusCode, started);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.watchPool.destroy()]);
  }

  private async send(req: RawRequest): Promise<{ statusCode: number; text: string }> {
    const started = performance.now();
    this.counter.started(req.verb);
    let statusCode: number | undefined;
    try {
      const res = await this.pool.request({
        method: req.method,
        path: this.fullPath(req),
        headers: this.headers(req),
        body: req.body === undefined ? null : typeof req.body === 'string' ? req.body : JSON.stringify(req.body),
        signal: req.signal,
      });
      statusCode = res.statusCode;
      const text = await res.body.text();
      if (statusCode >= 300) throw apiError(req, statusCode, text);
      return { statusCode, text };
    } catch (e) {
      throw wrapTransport(e, req);
    } finally {
      this.report(req, statusCode, started);
    }
  }

  private report(req: RawRequest, statusCode: number | undefined, started: number): void {
    this.counter.finished({
      verb: req.verb,
      method: req.method,
      path: req.path,
      statusCode,
      durationMs: performance.now() - started,
      impersonate: req.impersonate,
      ...(statusCode === undefined && req.signal?.aborted ? { aborted: true } : {}),
    });
  }

  private fullPath(req: RawRequest): string {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined && v !== '') qs.set(k, String(v));
    const q = qs.toString();
    return `${this.basePath}${req.path}${q ? `?${q}` : ''}`;
  }

  private headers(req: RawRequest): Record<string, string> {
    const h: Record<string, string> = {
      accept: req.accept ?? 'application/json',
      'user-agent': this.userAgent,
    };
    if (req.body !== undefined) h['content-type'] = req.contentType ?? 'application/json';
    const token = this.bearerToken();
    if (token) h.authorization = `Bearer ${token}`;
    else if (this.cfg.username !== undefined && this.cfg.password !== undefined) {
      h.authorization = `Basic ${Buffer.from(`${this.cfg.username}:${this.cfg.password}`).toString('base64')}`;
    }
    if (req.impersonate) h['impersonate-user'] = req.impersonate;
    return h;
  }

  /** projected service-account tokens rotate; re-read the file at most once a minute like client-go */
  private bearerToken(): string | undefined {
    if (this.cfg.token) return this.cfg.token;
    if (!this.cfg.tokenFile) return undefined;
    const now = Date.now();
    if (!this.tokenCache || now - this.tokenCache.readAt > TOKEN_FILE_TTL_MS) {
      this.tokenCache = { token: readFileSync(this.cfg.tokenFile, 'utf8').trim(), readAt: now };
    }
    return this.tokenCache.token;
  }
}

function apiError(req: RawRequest, statusCode: number, text: string): ApiError {
  let status: Status | undefined;
  try {
    const parsed = JSON.parse(text) as Status;
    if (parsed && parsed.kind === 'Status') status = parsed;
  } catch {
    // not JSON: keep the raw text as the message
  }
  return new ApiError({ statusCode, verb: req.verb, subject: req.subject, status, body: text });
}

function wrapTransport(e: unknown, req: RawRequest): unknown {
  if (e instanceof ApiError) return e;
  // an abort the caller asked for is not a transport failure; let it propagate as is
  if (req.signal?.aborted) return e;
  return new TransportError(req.verb, req.subject, e);
}

function parseJson<T>(text: string, req: RawRequest, statusCode: number): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError({ statusCode, verb: req.verb, subject: req.subject, status: undefined, body: `response is not json: ${text.slice(0, 200)}` });
  }
}
