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
 * Redirects, credentials (only to the repository's origin, only over https), proxy, CA and the
 * deadline are the shared transport's rules (../http/transport.ts).
 */
import { HoistError, redactUrl } from '../../util/errors.ts';
import { classifyStatus, retryCannotHelp } from '../../util/http-status.ts';
import { readCapped, reasonFor, type HttpTransport, type SourceStage } from '../http/transport.ts';
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
  /** the transport trusting the repository's CA */
  transport: HttpTransport;
  /** the operation's deadline */
  signal?: AbortSignal;
  stage: SourceStage;
  /** shown in errors: the repository URL without credentials plus the ref being resolved */
  subject: string;
  /** refuse advertisements larger than this (a hostile or broken server) */
  maxBytes?: number;
}

const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
const ADVERTISEMENT_TYPE = 'application/x-git-upload-pack-advertisement';

/** Joins the repository URL and the smart-HTTP discovery path the way git does. */
function infoRefsUrl(repository: string): string {
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

function fail(opts: AdvertisementOptions, message: string, code: string, terminal: boolean): HoistError {
  return new HoistError(message, { stage: opts.stage, reason: reasonFor(opts.stage), code, subject: opts.subject, terminal });
}

function statusError(status: number, opts: AdvertisementOptions, withAuth: boolean): HoistError {
  const answer = classifyStatus(status);
  if (answer === 'unauthorized' || answer === 'forbidden') {
    return fail(opts, withAuth ? `credentials rejected (http ${status})` : `repository requires credentials (http ${status}); set auth.secretRef`, 'auth-failed', true);
  }
  if (answer === 'not-found') return fail(opts, 'repository not found (http 404)', 'not-found', true);
  // 5xx, 429 and anything odd are the server's trouble; try again later.
  return fail(opts, `unexpected http ${status} from the repository`, 'http-status', retryCannotHelp(status));
}

/**
 * Fetches and parses the ref advertisement: one request per redirect hop (normally one), under
 * the shared transport's rules. Throws HoistError, or the signal's reason (the deadline).
 */
export async function fetchRefAdvertisement(repository: string, opts: AdvertisementOptions): Promise<RefAdvertisement> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const withAuth = opts.auth.header !== undefined;
  const res = await opts.transport.send({
    method: 'GET',
    url: infoRefsUrl(repository),
    headers: { accept: '*/*', pragma: 'no-cache' },
    authorization: opts.auth.header,
    credentialOrigin: new URL(repository).origin,
    signal: opts.signal,
    stage: opts.stage,
    subject: opts.subject,
  });
  if (res.status !== 200) {
    await res.body.dump().catch(() => undefined);
    throw statusError(res.status, opts, withAuth && res.url.origin === new URL(repository).origin);
  }
  const body = await readCapped(res, maxBytes, 'ref advertisement', opts.stage, opts.subject, opts.signal);
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith(ADVERTISEMENT_TYPE)) throw fail(opts, `server does not speak git smart http (content-type "${type}")`, 'not-smart-http', true);
  try {
    return { ...parseAdvertisement(body), finalUrl: redactUrl(res.url.toString()) };
  } catch (e) {
    throw fail(opts, `malformed ref advertisement: ${redactSecrets((e as Error).message, opts.auth.secrets)}`, 'protocol-error', false);
  }
}
