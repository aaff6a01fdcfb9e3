/**
 * `git ls-remote` without git: one GET of `<repo>/info/refs?service=git-upload-pack` (the smart
 * HTTP ref advertisement, protocol v0) parsed in-process. This is how `resolve` turns a branch or
 * tag into a commit without cloning, and how a poll re-checks a branch: exactly one request, no
 * process spawned.
 *
 * Protocol v0 is requested on purpose (no `Git-Protocol: version=2` header): a v0 advertisement
 * lists every ref with its peeled value in the response itself, where v2 would need a second
 * round trip (`ls-refs`).
 *
 * Credentials are attached only while the request stays on the repository's origin: a redirect to
 * another origin (host, port or scheme) is followed without the Authorization header (DESIGN §7).
 */
import { EnvHttpProxyAgent, request, type Dispatcher } from 'undici';
import { HoistError, redactUrl, type Stage } from '../../util/errors.ts';
import type { GitAuth } from './git-auth.ts';
import { redactSecrets } from './git-auth.ts';

/** A ref as advertised: its own object id and, for annotated tags, the commit it peels to. */
export interface AdvertisedRef {
  name: string;
  oid: string;
  /** set for annotated tags: the object the tag finally points at (`<tag>^{}`) */
  peeled?: string;
}

export interface RefAdvertisement {
  /** refs by full name, e.g. refs/heads/main, refs/tags/v1.0.0 */
  refs: Map<string, AdvertisedRef>;
  capabilities: string[];
  /** the URL that finally answered, after same-origin or cross-origin redirects */
  finalUrl: string;
}

export interface AdvertisementOptions {
  auth: GitAuth;
  /** whole-request budget (connect, headers and body) */
  timeoutMs: number;
  signal?: AbortSignal;
  stage: Stage;
  /** shown in errors: the repository URL without credentials plus the ref being resolved */
  subject: string;
  /** refuse advertisements larger than this (a hostile or broken server) */
  maxBytes?: number;
}

const MAX_REDIRECTS = 5;
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
const ADVERTISEMENT_TYPE = 'application/x-git-upload-pack-advertisement';

/** Joins the repository URL and the smart-HTTP discovery path the way git does. */
export function infoRefsUrl(repository: string): string {
  const base = repository.replace(/\/+$/, '');
  return `${base}/info/refs?service=git-upload-pack`;
}

/**
 * Splits a pkt-line stream into payloads; flush packets ("0000") come back as null. Throws on a
 * malformed length, which means the server is not speaking smart HTTP.
 */
export function parsePktLines(buf: Buffer): Array<Buffer | null> {
  const out: Array<Buffer | null> = [];
  let pos = 0;
  while (pos < buf.length) {
    if (pos + 4 > buf.length) throw new Error('truncated pkt-line length');
    const lenHex = buf.subarray(pos, pos + 4).toString('latin1');
    if (!/^[0-9a-f]{4}$/i.test(lenHex)) throw new Error('malformed pkt-line length');
    const len = Number.parseInt(lenHex, 16);
    if (len === 0) {
      out.push(null);
      pos += 4;
      continue;
    }
    if (len < 4 || pos + len > buf.length) throw new Error('malformed pkt-line length');
    out.push(buf.subarray(pos + 4, pos + len));
    pos += len;
  }
  return out;
}

/** Parses the body of a v0 `info/refs?service=git-upload-pack` response. */
export function parseAdvertisement(body: Buffer): { refs: Map<string, AdvertisedRef>; capabilities: string[] } {
  const lines = parsePktLines(body);
  let i = 0;
  // Smart HTTP prefixes the advertisement with "# service=git-upload-pack" and a flush.
  const first = lines[0];
  if (first && first.toString('latin1').startsWith('# service=')) {
    i = 1;
    while (i < lines.length && lines[i] !== null) i++;
    i++;
  }
  const refs = new Map<string, AdvertisedRef>();
  let capabilities: string[] = [];
  let firstRef = true;
  for (; i < lines.length; i++) {
    const line = lines[i];
    if (line === null || line === undefined) break;
    let text = line.toString('utf8');
    if (text.endsWith('\n')) text = text.slice(0, -1);
    if (firstRef) {
      const nul = text.indexOf('\0');
      if (nul >= 0) {
        capabilities = text.slice(nul + 1).split(' ').filter((c) => c.length > 0);
        text = text.slice(0, nul);
      }
      firstRef = false;
    }
    const space = text.indexOf(' ');
    if (space !== 40 && space !== 64) throw new Error('malformed ref line');
    const oid = text.slice(0, space).toLowerCase();
    const name = text.slice(space + 1);
    // An empty repository advertises "capabilities^{}" with the zero id and no refs.
    if (name === 'capabilities^{}') continue;
    if (name.endsWith('^{}')) {
      const base = refs.get(name.slice(0, -3));
      if (base) base.peeled = oid;
      continue;
    }
    refs.set(name, { name, oid });
  }
  return { refs, capabilities };
}

let sharedDispatcher: Dispatcher | undefined;
const caDispatchers = new Map<string, Dispatcher>();

/**
 * One connection pool per trust configuration. EnvHttpProxyAgent honours HTTP(S)_PROXY/NO_PROXY
 * like the git CLI does, so resolve and fetch take the same network path.
 */
function dispatcherFor(ca: string | undefined): Dispatcher {
  if (ca === undefined) {
    sharedDispatcher ??= new EnvHttpProxyAgent();
    return sharedDispatcher;
  }
  let d = caDispatchers.get(ca);
  if (!d) {
    d = new EnvHttpProxyAgent({ connect: { ca }, requestTls: { ca } });
    caDispatchers.set(ca, d);
  }
  return d;
}

function networkError(e: unknown, opts: AdvertisementOptions, timedOut: boolean): HoistError {
  const raw = e instanceof Error ? e.message : String(e);
  const cause = e instanceof Error && e.cause instanceof Error ? e.cause : undefined;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? (e as NodeJS.ErrnoException).code ?? '';
  if (timedOut) {
    return new HoistError(`ref advertisement timed out after ${opts.timeoutMs} ms`, {
      stage: opts.stage,
      reason: opts.stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed',
      code: 'timeout',
      subject: opts.subject,
      terminal: false,
    });
  }
  // Certificate problems are configuration (wrong CA, wrong host), not weather: retrying with
  // backoff cannot fix them, so they are terminal until the spec or the CA secret changes.
  const tls = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/i.test(`${code} ${cause?.message ?? ''}`);
  const detail = redactSecrets(cause?.message ?? raw, opts.auth.secrets);
  return new HoistError(tls ? `tls verification failed: ${detail}` : `cannot reach repository: ${detail}`, {
    stage: opts.stage,
    reason: opts.stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed',
    code: tls ? 'tls-verify-failed' : 'network',
    subject: opts.subject,
    terminal: tls,
  });
}

function statusError(status: number, opts: AdvertisementOptions, withAuth: boolean): HoistError {
  const reason = opts.stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed';
  if (status === 401 || status === 403) {
    const message = withAuth
      ? `credentials rejected (http ${status})`
      : `repository requires credentials (http ${status}); set auth.secretRef`;
    return new HoistError(message, { stage: opts.stage, reason, code: 'auth-failed', subject: opts.subject, terminal: true });
  }
  if (status === 404) {
    return new HoistError('repository not found (http 404)', {
      stage: opts.stage,
      reason,
      code: 'not-found',
      subject: opts.subject,
      terminal: true,
    });
  }
  // 5xx, 429 and anything odd are the server's trouble; try again later.
  return new HoistError(`unexpected http ${status} from the repository`, {
    stage: opts.stage,
    reason,
    code: 'http-status',
    subject: opts.subject,
    terminal: status >= 400 && status < 500 && status !== 408 && status !== 429,
  });
}

/**
 * Fetches and parses the ref advertisement. Makes exactly one request per redirect hop (normally
 * one). Never throws anything but HoistError.
 */
export async function fetchRefAdvertisement(repository: string, opts: AdvertisementOptions): Promise<RefAdvertisement> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  const origin = new URL(repository).origin;
  const dispatcher = dispatcherFor(opts.auth.ca);
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  let url = infoRefsUrl(repository);
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const sameOrigin = new URL(url).origin === origin;
    const headers: Record<string, string> = { 'user-agent': 'git/2.39-hoist', accept: '*/*', pragma: 'no-cache' };
    const withAuth = sameOrigin && opts.auth.header !== undefined;
    if (withAuth && opts.auth.header) headers.authorization = opts.auth.header;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, { method: 'GET', headers, signal, dispatcher });
    } catch (e) {
      if (opts.signal?.aborted) throw new HoistError('aborted', { stage: opts.stage, reason: 'Aborted', code: 'aborted', subject: opts.subject, terminal: false, cause: e });
      throw networkError(e, opts, timeout.aborted);
    }
    const status = res.statusCode;
    if (status >= 300 && status < 400 && status !== 304) {
      await res.body.dump();
      const location = res.headers.location;
      const loc = Array.isArray(location) ? location[0] : location;
      if (!loc) throw statusError(status, opts, withAuth);
      const next = new URL(loc, url);
      if (next.protocol !== 'https:' && next.protocol !== 'http:') throw statusError(status, opts, withAuth);
      url = next.toString();
      continue;
    }
    if (status !== 200) {
      await res.body.dump();
      throw statusError(status, opts, withAuth);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        const b = chunk as Buffer;
        size += b.length;
        if (size > maxBytes) {
          res.body.destroy();
          throw new HoistError(`ref advertisement larger than ${maxBytes} bytes`, {
            stage: opts.stage,
            reason: opts.stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed',
            code: 'too-large',
            subject: opts.subject,
            terminal: true,
          });
        }
        chunks.push(b);
      }
    } catch (e) {
      if (e instanceof HoistError) throw e;
      throw networkError(e, opts, timeout.aborted);
    }
    const type = String(res.headers['content-type'] ?? '');
    if (!type.startsWith(ADVERTISEMENT_TYPE)) {
      throw new HoistError(`server does not speak git smart http (content-type "${type}")`, {
        stage: opts.stage,
        reason: opts.stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed',
        code: 'not-smart-http',
        subject: opts.subject,
        terminal: true,
      });
    }
    try {
      const parsed = parseAdvertisement(Buffer.concat(chunks));
      return { ...parsed, finalUrl: redactUrl(url) };
    } catch (e) {
      throw new HoistError(`malformed ref advertisement: ${(e as Error).message}`, {
        stage: opts.stage,
        reason: opts.stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed',
        code: 'protocol-error',
        subject: opts.subject,
        terminal: false,
      });
    }
  }
  throw new HoistError(`more than ${MAX_REDIRECTS} redirects`, {
    stage: opts.stage,
    reason: opts.stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed',
    code: 'too-many-redirects',
    subject: opts.subject,
    terminal: true,
  });
}
