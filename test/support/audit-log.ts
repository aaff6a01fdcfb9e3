/**
 * Reads the local API server's audit log (JSON lines, level Metadata) from a byte offset: the
 * completed requests of one client, picked by a substring every one of its lines holds (its
 * User-Agent or user name) and a predicate on the parsed event.
 */
import { open, stat } from 'node:fs/promises';

export interface AuditEvent {
  stage: string;
  verb: string;
  userAgent?: string;
  user?: { username?: string };
  requestURI: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
}

export class AuditReader {
  constructor(
    private readonly path: string,
    /** a substring of every line of interest: lines without it are not parsed */
    private readonly needle: string,
    private readonly accept: (e: AuditEvent) => boolean,
  ) {}

  async offset(): Promise<number> {
    return (await stat(this.path)).size;
  }

  /** events from `from` on; waits until no new event of ours arrived for 300 ms (blocking audit mode writes before responding, this is a margin) */
  async since(from: number): Promise<AuditEvent[]> {
    let last = -1;
    let events: AuditEvent[] = [];
    for (;;) {
      await new Promise((r) => setTimeout(r, 300));
      events = await this.read(from);
      if (events.length === last) return events;
      last = events.length;
    }
  }

  private async read(from: number): Promise<AuditEvent[]> {
    const fh = await open(this.path, 'r');
    try {
      const size = (await fh.stat()).size;
      const buf = Buffer.alloc(size - from);
      await fh.read(buf, 0, buf.length, from);
      const text = buf.toString('utf8');
      const complete = text.slice(0, text.lastIndexOf('\n') + 1);
      return complete
        .split('\n')
        .filter((l) => l.includes(this.needle))
        .map((l) => JSON.parse(l) as AuditEvent)
        .filter((e) => e.stage === 'ResponseComplete' && this.accept(e));
    } finally {
      await fh.close();
    }
  }
}

export const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
export const writesOf = (events: readonly AuditEvent[]): AuditEvent[] => events.filter((e) => WRITE_VERBS.has(e.verb));
