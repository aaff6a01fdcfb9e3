/**
 * The one pino logger, created at start-up and passed down. Redaction covers every place a
 * credential could hide in a structured field, as a second line of defence: code never logs
 * secret values on purpose.
 */
import { pino, type Logger } from 'pino';

export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'password',
  '*.password',
  'token',
  '*.token',
  'credentials',
  '*.credentials',
  'data',
  '*.data',
  '.dockerconfigjson',
];

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
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const options = {
    name: opts.name ?? 'hoist',
    level: opts.level ?? process.env.HOIST_LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: undefined,
  };
  if (!opts.async) return pino(options);
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
