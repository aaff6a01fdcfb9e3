/**
 * A clock a test moves by hand (src/util/clock.ts): now() stands still until advance(), which
 * fires the timers due by then in time order, each at its own time, and lets the promise
 * callbacks a timer starts run before the next one fires. Time-dependent logic is tested on it:
 * what happens at which time, never how long the machine took.
 */
import type { Clock, ClockTimer } from '../../src/util/clock.ts';

class FakeTimer implements ClockTimer {
  constructor(readonly id: number) {}
  unref(): this {
    return this;
  }
}

/** lets every promise callback queued so far (and those they queue) run */
export function settle(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = Date.parse('2025-01-01T00:00:00Z')) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return new FakeTimer(id);
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (timer instanceof FakeTimer) this.timers.delete(timer.id);
  }

  /** timers set and not yet fired or cleared */
  get pending(): number {
    return this.timers.size;
  }

  /** ms from now until the earliest timer is due; undefined when none is set */
  nextDue(): number | undefined {
    const at = this.earliest()?.at;
    return at === undefined ? undefined : at - this.t;
  }

  /** moves time forward by ms, firing every timer due by then (settling after each) */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    await settle();
    for (let next = this.earliest(); next && next.at <= end; next = this.earliest()) {
      this.timers.delete(next.id);
      this.t = next.at;
      next.fn();
      await settle();
    }
    this.t = end;
    await settle();
  }

  /** moves time to the earliest timer and fires it (and any due at the same time); false when none is set */
  async fireNext(): Promise<boolean> {
    const due = this.nextDue();
    if (due === undefined) return false;
    await this.advance(due);
    return true;
  }

  private earliest(): { id: number; at: number; fn: () => void } | undefined {
    let best: { id: number; at: number; fn: () => void } | undefined;
    // Map iteration is in insertion (= id) order: the first of equal times wins, as in Node
    for (const [id, timer] of this.timers) if (!best || timer.at < best.at) best = { id, ...timer };
    return best;
  }
}
