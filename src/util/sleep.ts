import { systemClock, type Clock } from './clock.ts';

/**
 * Resolves after `ms` on `clock`, or as soon as the signal fires (without throwing: a caller that
 * must not go on after an abort checks `signal.aborted`, or `signal.throwIfAborted()` for the reason).
 */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = systemClock): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = clock.setTimeout(done, ms);
    function done(): void {
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
