/**
 * The one pino logger, created at start-up and passed down. Redaction (log-redaction.ts) covers
 * every place a credential could hide in a structured field, as a second line of defence: code
 * never logs secret values on purpose.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import { CENSOR, CENSORED_FIELDS, redactLogFields } from './log-redaction.ts';

/** what a stuck stdout may hold before lines are dropped (and then counted) */
export const MAX_PENDING_LOG_BYTES = 4 * 1024 * 1024;

export interface LoggerOptions {
  level?: string;
  name?: string;
  /**
   * Write stdout off the event loop (the long-running controller): a write never blocks a
   * reconcile, lines logged while one is in flight go out together, at most
   * MAX_PENDING_LOG_BYTES wait (beyond that lines are dropped and their count logged once stdout
   * drains), and what is pending is written synchronously at exit. Default: synchronous writes.
   */
  async?: boolean;
  /** where synchronous lines go instead of stdout (tests) */
  destination?: DestinationStream;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const options = {
    name: opts.name ?? 'hoist',
    level: opts.level ?? process.env.HOIST_LOG_LEVEL ?? 'info',
    // a line's fields (an error's own fields too: err is a field) ...
    formatters: { log: redactLogFields },
    // ... and a child logger's bindings, which pino hands to no formatter: its redactor, on the
    // top-level paths only (a wildcard path would run it on every field of every line)
    redact: { paths: [...CENSORED_FIELDS, 'headers.authorization'], censor: CENSOR },
    base: undefined,
  };
  if (!opts.async) return opts.destination ? pino(options, opts.destination) : pino(options);
  const dest = pino.destination({ dest: 1, sync: false, minLength: 0, maxLength: MAX_PENDING_LOG_BYTES });
  const logger = pino(options, dest);
  let dropped = 0;
  dest.on('drop', () => dropped++);
  // said once the stream has room again, so the gap in the log is explained where it is
  let telling = false;
  dest.on('write', () => {
    if (dropped === 0 || telling) return;
    telling = true;
    // after the stream has settled this write
    setImmediate(() => {
      telling = false;
      const lines = dropped;
      dropped = 0;
      logger.warn({ droppedLines: lines, maxPendingBytes: MAX_PENDING_LOG_BYTES }, 'log lines dropped: stdout was not read fast enough');
    });
  });
  return logger;
}
