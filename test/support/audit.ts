/**
 * Reads the test control plane's audit log (inject('auditLog')): the completed requests of one
 * controller, found by its unique User-Agent.
 */
import { open, stat } from 'node:fs/promises';

export interface AuditEvent {
  stage: string;
  verb: string;
  userAgent?: string;
  requestURI: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
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
        .filter((l) => l.includes(this.userAgent))
        .map((l) => JSON.parse(l) as AuditEvent)
        .filter((e) => e.userAgent === this.userAgent && e.stage === 'ResponseComplete');
    } finally {
      await fh.close();
    }
  }
}

