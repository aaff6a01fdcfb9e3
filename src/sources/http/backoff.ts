/**
 * The one retry schedule of the sources: exponential backoff with jitter, capped, honouring
 * `Retry-After` (the waits themselves: src/util/sleep.ts).
 */

export interface RetryOptions {
  /** total attempts, including the first (default 4) */
  attempts?: number;
  /** first backoff delay; doubles each attempt, with jitter (default 250 ms) */
  baseDelayMs?: number;
  /** longest wait accepted, from backoff or Retry-After; a longer Retry-After fails (default 30 s) */
  maxDelayMs?: number;
}

/** Delay before attempt `attempt + 1` (attempt counts from 1): half fixed, half random. */
export function backoffDelay(attempt: number, baseDelayMs: number, maxDelayMs: number): number {
  const exp = baseDelayMs * 2 ** (attempt - 1);
  return Math.min(maxDelayMs, exp / 2 + Math.random() * (exp / 2));
}

/** Retry-After as milliseconds from `now`: delta-seconds or an HTTP date; undefined when absent or invalid. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}
