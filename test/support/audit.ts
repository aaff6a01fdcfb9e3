/**
 * Reads the test control plane's audit log (inject('auditLog')): the completed requests of one
 * controller, found by its unique User-Agent, or of every client (`auditEvents`), in the order the
 * API server completed them (blocking audit mode writes each event before responding).
 */
import { open, stat } from 'node:fs/promises';
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

async function readAudit(
  path: string,
  from: number,
  keepLine: (line: string) => boolean,
  keep: (e: AuditEvent) => boolean,
  to?: number,
): Promise<AuditEvent[]> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    // from one byte before `from`: an offset taken while a line was being written falls mid-line;
    // that line belongs to the slice ending at the offset (which reads on to the line's end)
    const start = Math.max(0, from - 1);
    const buf = Buffer.alloc(size - start);
    await fh.read(buf, 0, buf.length, start);
    const lineEnd = (at: number): number => {
      const nl = buf.indexOf(0x0a, at);
      return nl < 0 ? buf.length : nl + 1;
    };
    const begin = from > 0 ? lineEnd(0) : 0;
    const end = to === undefined ? buf.length : lineEnd(Math.max(0, to - 1 - start));
    const text = buf.subarray(begin, Math.max(begin, end)).toString('utf8');
    const complete = text.slice(0, text.lastIndexOf('\n') + 1);
    return complete
      .split('\n')
      .filter((l) => l && keepLine(l))
      .map((l) => JSON.parse(l) as AuditEvent)
      .filter((e) => e.stage === 'ResponseComplete' && keep(e));
  } finally {
    await fh.close();
  }
}
