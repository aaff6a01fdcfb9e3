/**
 * Waiting in tests: the one sleep (src/util/sleep.ts) and the one poll for an outcome. Tests wait
 * for what should happen, with generous bounds, and never assert how long it took.
 */
import { sleep } from '../../src/util/sleep.ts';

export { sleep };

/**
 * Polls `check` every `everyMs` until it yields a value other than undefined or false, and
 * returns that value; throws naming `what` once `timeoutMs` has passed without one.
 */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await sleep(everyMs);
  }
}
