/**
 * The test controller's log lines, kept in memory so tests wait for what the controller did
 * (a watch event it saw, a reconcile it finished) instead of sleeping. Pino JSON lines, parsed.
 */
import { Writable } from 'node:stream';

export interface LogRecord {
  level: number;
  /** epoch ms when the line was written */
  time: number;
  msg: string;
  bd?: string;
  [key: string]: unknown;
}

/** what a reconcile's one info line says (src/reconciler: logOutcome) */
export interface ReconciledRecord extends LogRecord {
  durationMs: number;
  changed: number;
}

type Waiter = { test: () => boolean; resolve: () => void };

export class LogCapture {
  readonly records: LogRecord[] = [];
  private waiters: Waiter[] = [];

  /** a pino destination; lines at `echoLevel` (a pino level number) or above are also printed (HOIST_TEST_LOG) */
  stream(echoLevel = Infinity): Writable {
    return new Writable({
      write: (chunk: Buffer, _enc, done) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (!line) continue;
          const record = JSON.parse(line) as LogRecord;
          if (record.level >= echoLevel) process.stdout.write(`${line}\n`);
          this.records.push(record);
        }
        this.waiters = this.waiters.filter((w) => (w.test() ? (w.resolve(), false) : true));
        done();
      },
    });
  }

  /** a position in the log: `waitFor` and `since` look only at lines after it */
  mark(): number {
    return this.records.length;
  }

  since(mark: number): LogRecord[] {
    return this.records.slice(mark);
  }

  /** resolves as soon as `done(lines since mark)` holds, checked on every new line */
  async waitFor(mark: number, done: (lines: LogRecord[]) => boolean, what: string, timeoutMs = 30_000): Promise<LogRecord[]> {
    const test = (): boolean => done(this.since(mark));
    if (!test()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.waiters.push({ test, resolve })),
        new Promise<never>(
          (_, reject) =>
            (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for the controller: ${what}\n${this.tail(mark)}`)), timeoutMs)),
        ),
      ]).finally(() => clearTimeout(timer));
    }
    return this.since(mark);
  }

  private tail(mark: number): string {
    return this.since(mark)
      .slice(-15)
      .map((r) => `${r.msg} ${JSON.stringify({ ...r, level: undefined, time: undefined, msg: undefined, pid: undefined, hostname: undefined })}`)
      .join('\n');
  }
}

export function isReconciled(r: LogRecord, bd: string): r is ReconciledRecord {
  return r.msg === 'reconciled' && r.bd === bd;
}

/** Pure: the first reconcile of `bd` in `lines` that started at or after `at` (epoch ms), if any. */
export function reconciledSince(lines: readonly LogRecord[], bd: string, at: number): ReconciledRecord | undefined {
  return lines.find((r): r is ReconciledRecord => isReconciled(r, bd) && r.time - r.durationMs >= at);
}

/**
 * Pure: true when, in `lines`, the controller saw at least `changes` changes of objects `bd` manages
 * and a reconcile of `bd` that started after the last such change has finished changing nothing —
 * the fixed point after an edit (a reconcile that reverted something writes, sees its own write
 * as a change, and reconciles again).
 */
export function settledAfterChange(lines: readonly LogRecord[], bd: string, changes = 1): boolean {
  const seen = lines.filter((r) => r.msg === 'managed object changed' && r.bd === bd);
  if (seen.length < changes) return false;
  const lastChange = Math.max(...seen.map((r) => r.time));
  return lines.some((r) => isReconciled(r, bd) && r.time - r.durationMs >= lastChange && r.changed === 0);
}
