/** A timer for time-dependent code under test that fires when the test says so, never by the clock. */
import type { StartTimer } from '../../src/reconciler/reconcile-budget.ts';

export interface ManualTimer {
  start: StartTimer;
  /** fires every timer armed now (and forgets them) */
  fire(): void;
  /** how many timers are armed */
  armed(): number;
}

export function manualTimer(): ManualTimer {
  const pending = new Set<() => void>();
  return {
    start: (fire) => {
      pending.add(fire);
      return () => void pending.delete(fire);
    },
    fire: () => {
      for (const f of [...pending]) {
        pending.delete(f);
        f();
      }
    },
    armed: () => pending.size,
  };
}
