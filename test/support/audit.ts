/**
 * Reads the test control plane's audit log (inject('auditLog')): the completed requests of one
 * controller, found by its unique User-Agent, or of every client (`auditEvents`), in the order the
 * API server completed them (blocking audit mode writes each event before responding).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { sleep } from './wait.ts';

export interface AuditEvent {
  stage: string;
  verb: string;
  userAgent?: string;
  requestURI: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  /** on a refusal, the API server's message (e.g. `failed calling webhook ...`) */
  responseStatus?: { code?: number; message?: string; reason?: string };
  /** RFC 3339 with microseconds */
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
  user?: { username?: string };
  /** set when the request impersonated someone */
  impersonatedUser?: { username?: string };
}

/** the controller's completed requests in the audit log, read from a byte offset */
export class AuditReader {
  constructor(
    private readonly path: string,
    private readonly userAgent: string,
  ) {}

  async offset(): Promise<number> {
    return (await stat(this.path)).size;
  }

  /** events from `from` on; waits until no new event of ours arrived for 300 ms (blocking audit mode writes before responding, this is a margin) */
  async since(from: number): Promise<AuditEvent[]> {
    let last = -1;
    let events: AuditEvent[] = [];
    for (;;) {
      await sleep(300);
      events = await this.read(from);
      if (events.length === last) return events;
      last = events.length;
    }
  }

  private read(from: number): Promise<AuditEvent[]> {
    return readAudit(
      this.path,
      from,
      (line) => line.includes(this.userAgent),
      (e) => e.userAgent === this.userAgent,
    );
  }
}

/** the log's current end: the offset of the next request's event */
export async function auditOffset(path: string): Promise<number> {
  return (await stat(path)).size;
}

/** every completed request between byte offsets `from` and `to` (default: the end) whose User-Agent passes `agent` (default: any client) */
export function auditEvents(path: string, from: number, agent: (userAgent: string) => boolean = () => true, to?: number): Promise<AuditEvent[]> {
  return readAudit(
    path,
    from,
    () => true,
    (e) => agent(e.userAgent ?? ''),
    to,
  );
}

/** "<resource>/<name>" of the object a request was about */
export function auditRef(e: AuditEvent): string {
  return `${e.objectRef?.resource}/${e.objectRef?.name}`;
}

/** one line per request, for assertion messages */
export function showAudit(events: readonly AuditEvent[]): string {
  return events.map((e) => `${e.verb} ${auditRef(e)} -> ${e.responseStatus?.code} (${e.userAgent})`).join('\n');
}

/** a create, by POST or by a server-side apply that found no object (201) */
export function isCreate(e: AuditEvent): boolean {
  return (e.verb === 'create' || e.verb === 'patch') && e.responseStatus?.code === 201 && !e.objectRef?.subresource;
}

/**
 * Streams the log from byte `from` to `to` (default: its size when opened), line by line, and
 * keeps the completed requests that pass `keepLine` (on the raw text, before parsing) and `keep`:
 * memory is that of the kept events, not of the log (a 10,000-BundleDeployment run writes
 * hundreds of MB of it).
 */
async function readAudit(
  path: string,
  from: number,
  keepLine: (line: string) => boolean,
  keep: (e: AuditEvent) => boolean,
  to?: number,
): Promise<AuditEvent[]> {
  const size = (await stat(path)).size;
  // the control plane starts the API server with rotation out of reach; a log shorter than an
  // offset taken in it was rotated, and counting from there would silently miss requests
  if (size < from) throw new Error(`${path} is ${size} bytes, shorter than the offset ${from} taken in it: rotated?`);
  // from one byte before `from`: an offset taken while a line was being written falls mid-line;
  // that line belongs to the slice ending at the offset (which reads on to the line's end), so
  // the first (partial, or empty) line is skipped; the slice ends with the line holding byte to-1
  const start = Math.max(0, from - 1);
  const out: AuditEvent[] = [];
  if (size <= start) return out;
  let skipFirst = from > 0;
  let lineStart = start;
  let rest: Buffer = Buffer.alloc(0);
  const take = (line: Buffer, at: number): boolean => {
    if (to !== undefined && at >= to) return false;
    if (skipFirst) skipFirst = false;
    else if (line.length) {
      const text = line.toString('utf8');
      if (keepLine(text)) {
        const e = JSON.parse(text) as AuditEvent;
        if (e.stage === 'ResponseComplete' && keep(e)) out.push(e);
      }
    }
    return true;
  };
  for await (const chunk of createReadStream(path, { start, end: size - 1 }) as AsyncIterable<Buffer>) {
    const buf = rest.length ? Buffer.concat([rest, chunk]) : chunk;
    let at = 0;
    for (let nl = buf.indexOf(0x0a, at); nl >= 0; nl = buf.indexOf(0x0a, at)) {
      if (!take(buf.subarray(at, nl), lineStart)) return out;
      lineStart += nl + 1 - at;
      at = nl + 1;
    }
    // a line still being written (no newline yet) is not an event yet
    rest = Buffer.from(buf.subarray(at));
  }
  return out;
}
