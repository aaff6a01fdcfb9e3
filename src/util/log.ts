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

export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  return pino({
    name: opts.name ?? 'hoist',
    level: opts.level ?? process.env.HOIST_LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: undefined,
  });
}
