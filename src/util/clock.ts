/**
 * Time as the code that decides by it sees it: the current time and one-shot timers behind one
 * interface, so tests run that code on a fake clock (test/support/fake-clock.ts) instead of
 * waiting and measuring. Durations that are only reported (metrics, log lines) are measurements,
 * not decisions, and stay on performance.now().
 */

/** what setTimeout returns, as far as callers may use it */
export interface ClockTimer {
  /** the timer alone does not keep the process alive */
  unref(): unknown;
}

export interface Clock {
  /** milliseconds since the epoch, as Date.now() */
  now(): number;
  /** calls fn once, ms from now */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** the process's own clock: Date.now() and the timers of Node's event loop */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};
