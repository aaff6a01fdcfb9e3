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
 * deadline are the shared transport's rules (../transport/transport.ts).
 */
import { setImmediate } from 'node:timers/promises';
import { HoistError, redactUrl } from '../../util/errors.ts';
import { classifyStatus, retryCannotHelp } from '../../util/http-status.ts';
import { consumeCapped, type HttpTransport, type SourceStage } from '../transport/transport.ts';
import type { GitAuth } from './git-auth.ts';
import { redactSecrets } from './git-auth.ts';
import { SourceCode, sourceError } from '../errors.ts';

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
  /** the URL that finally answered, after same-origin or cross-origin redirects ("" over ssh) */
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
  /** refuse advertisements larger than this (a hostile or broken server); default 8 MiB */
  maxBytes?: number;
  /** the refs to keep; every other ref is parsed and dropped (default: keep none) */
  wants?: RefWants;
}

/** the advertisement cap: about 130 000 refs; a repository with more is refused (`too-large`) */
export const DEFAULT_MAX_ADVERTISEMENT_BYTES = 8 * 1024 * 1024;
/** parsed between two yields to the event loop */
const YIELD_EVERY_BYTES = 256 * 1024;
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
  const rest = splitPktLines(buf, (line) => out.push(line));
  if (rest.length > 0) throw new Error(rest.length < 4 ? 'truncated pkt-line length' : 'malformed pkt-line length');
  return out;
}

/** Hands every complete pkt-line of `buf` to `onLine` (null for a flush); returns the incomplete rest. */
function splitPktLines(buf: Buffer, onLine: (line: Buffer | null) => void): Buffer {
  let pos = 0;
  while (pos + 4 <= buf.length) {
    const lenHex = buf.subarray(pos, pos + 4).toString('latin1');
    if (!/^[0-9a-f]{4}$/i.test(lenHex)) throw new Error('malformed pkt-line length');
    const len = Number.parseInt(lenHex, 16);
    if (len === 0) {
      onLine(null);
      pos += 4;
      continue;
    }
    if (len < 4) throw new Error('malformed pkt-line length');
    if (pos + len > buf.length) break;
    onLine(buf.subarray(pos + 4, pos + len));
    pos += len;
  }
  return buf.subarray(pos);
}

/** Which refs to keep from an advertisement; everything else is parsed and dropped. */
export interface RefWants {
  /** full ref names (refs/heads/main); their peeled values are kept with them */
  names?: readonly string[];
  /** also keep every ref whose id, or peeled id, is this commit */
  commit?: string;
  /** also keep every ref whose name starts with this (refs/tags/ for a semver range) */
  prefix?: string;
}

/**
 * Parses a v0 `info/refs?service=git-upload-pack` body as it arrives, keeping only the refs
 * `wants` names (all refs when `wants` is undefined) and the capabilities. Memory: the kept refs
 * plus one partial pkt-line (≤ 64 KiB), whatever the advertisement's size.
 */
export class AdvertisementStream {
  readonly refs = new Map<string, AdvertisedRef>();
  capabilities: string[] = [];
  private rest: Buffer = Buffer.alloc(0);
  private state: 'start' | 'service' | 'refs' | 'done' = 'start';
  private firstRef = true;
  /** the last ref line, which a `^{}` line peels */
  private last: { name: string; oid: string } | undefined;
  private readonly names: ReadonlySet<string> | undefined;

  constructor(private readonly wants?: RefWants) {
    this.names = wants ? new Set(wants.names ?? []) : undefined;
  }

  /** Parses what `chunk` completes. Throws on malformed input. */
  push(chunk: Buffer): void {
    const buf = this.rest.length === 0 ? chunk : Buffer.concat([this.rest, chunk]);
    this.rest = splitPktLines(buf, (line) => this.line(line));
  }

  /** whether the advertisement's closing flush arrived */
  get complete(): boolean {
    return this.state === 'done';
  }

  /** The body ended: a partial pkt-line left over means it was cut short. */
  end(): void {
    if (this.rest.length > 0) throw new Error(this.rest.length < 4 ? 'truncated pkt-line length' : 'malformed pkt-line length');
  }

  private line(line: Buffer | null): void {
    if (this.state === 'start') {
      // Smart HTTP prefixes the advertisement with "# service=git-upload-pack" and a flush.
      if (line?.toString('latin1').startsWith('# service=')) {
        this.state = 'service';
        return;
      }
      this.state = 'refs';
    }
    if (this.state === 'service') {
      if (line === null) this.state = 'refs';
      return;
    }
    if (this.state === 'done') return;
    if (line === null) {
      this.state = 'done';
      return;
    }
    this.ref(line);
  }

  private ref(line: Buffer): void {
    let text = line.toString('utf8');
    if (text.endsWith('\n')) text = text.slice(0, -1);
    if (this.firstRef) {
      const nul = text.indexOf('\0');
      if (nul >= 0) {
        this.capabilities = text
          .slice(nul + 1)
          .split(' ')
          .filter((c) => c.length > 0);
        text = text.slice(0, nul);
      }
      this.firstRef = false;
    }
    const space = text.indexOf(' ');
    if (space !== 40 && space !== 64) throw new Error('malformed ref line');
    const oid = text.slice(0, space).toLowerCase();
    const name = text.slice(space + 1);
    // An empty repository advertises "capabilities^{}" with the zero id and no refs.
    if (name === 'capabilities^{}') return;
    if (name.endsWith('^{}')) {
      const baseName = name.slice(0, -3);
      const base = this.refs.get(baseName);
      if (base) base.peeled = oid;
      else if (this.wants?.commit === oid && this.last?.name === baseName) this.refs.set(baseName, { name: baseName, oid: this.last.oid, peeled: oid });
      return;
    }
    this.last = { name, oid };
    if (
      this.names === undefined ||
      this.names.has(name) ||
      this.wants?.commit === oid ||
      (this.wants?.prefix !== undefined && name.startsWith(this.wants.prefix))
    )
      this.refs.set(name, { name, oid });
  }
}

/** Parses the body of a v0 `info/refs?service=git-upload-pack` response held whole (tests). */
export function parseAdvertisement(body: Buffer): { refs: Map<string, AdvertisedRef>; capabilities: string[] } {
  const stream = new AdvertisementStream();
  stream.push(body);
  stream.end();
  return { refs: stream.refs, capabilities: stream.capabilities };
}

function fail(opts: AdvertisementOptions, message: string, code: SourceCode, terminal: boolean): HoistError {
  return sourceError(message, { stage: opts.stage, code, subject: opts.subject, terminal });
}

function statusError(status: number, opts: AdvertisementOptions, withAuth: boolean): HoistError {
  const answer = classifyStatus(status);
  if (answer === 'unauthorized' || answer === 'forbidden') {
    return fail(
      opts,
      withAuth ? `credentials rejected (http ${status})` : `repository requires credentials (http ${status}); set auth.secretRef`,
      SourceCode.AuthFailed,
      true,
    );
  }
  if (answer === 'not-found') return fail(opts, 'repository not found (http 404)', SourceCode.NotFound, true);
  // 5xx, 429 and anything odd are the server's trouble; try again later.
  return fail(opts, `unexpected http ${status} from the repository`, SourceCode.HttpStatus, retryCannotHelp(status));
}

/**
 * Fetches and parses the ref advertisement: one request per redirect hop (normally one), under
 * the shared transport's rules. Throws HoistError, or the signal's reason (the deadline).
 */
export async function fetchRefAdvertisement(repository: string, opts: AdvertisementOptions): Promise<RefAdvertisement> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_ADVERTISEMENT_BYTES;
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
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith(ADVERTISEMENT_TYPE)) {
    await res.body.dump().catch(() => undefined);
    throw fail(opts, `server does not speak git smart http (content-type "${type}")`, SourceCode.NotSmartHttp, true);
  }
  const stream = new AdvertisementStream(opts.wants ?? {});
  const malformed = (e: unknown): HoistError =>
    fail(opts, `malformed ref advertisement: ${redactSecrets((e as Error).message, opts.auth.secrets)}`, SourceCode.ProtocolError, false);
  let sinceYield = 0;
  await consumeCapped(res, maxBytes, 'ref advertisement', opts.stage, opts.subject, opts.signal, async (chunk) => {
    try {
      stream.push(chunk);
    } catch (e) {
      throw malformed(e);
    }
    // undici may hand over many buffered chunks without a macrotask in between: let others run
    sinceYield += chunk.length;
    if (sinceYield >= YIELD_EVERY_BYTES) {
      sinceYield = 0;
      await setImmediate();
    }
  });
  try {
    stream.end();
  } catch (e) {
    throw malformed(e);
  }
  return { refs: stream.refs, capabilities: stream.capabilities, finalUrl: redactUrl(res.url.toString()) };
}
