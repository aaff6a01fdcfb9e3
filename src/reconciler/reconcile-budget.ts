/**
 * The time budget of one reconcile (`hoist run --reconcile-timeout`): one BundleDeployment cannot
 * hold a worker longer. When it runs out, the reconcile's abort signal fires with a transient
 * HoistError (code `reconcile-timeout`) naming the budget, so every step that listens — resolves,
 * fetches and renders (their sources' deadlines take the reason over), Helm hook waits, watch
 * syncs — stops, and the reconciler stops at the next step boundary. An apply under way is not cut
 * short between its writes (each request has its own timeout): the budget never leaves a revision
 * half-applied by itself. The error is transient: the controller retries with backoff.
 *
 * The timer runs on an injected Clock (tests fire it on a fake clock instead of waiting).
 */
import { systemClock, type Clock } from '../util/clock.ts';
import { formatDuration } from '../util/duration.ts';
import type { HoistError, Stage } from '../util/errors.ts';
import { ReconcileCode, reconcileError } from './errors.ts';

/** the default budget of one reconcile */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 5 * 60_000;

export class ReconcileBudget {
  private readonly ctl = new AbortController();
  private readonly cancel: () => void;
  private readonly onParent: () => void;
  /** the step under way, named in the error when the budget runs out */
  stage: Stage = 'resolve';
  /** the error the budget ran out with; undefined while it has not */
  exceeded: HoistError | undefined;

  constructor(
    readonly ms: number,
    clock: Clock = systemClock,
    private readonly parent?: AbortSignal,
  ) {
    this.onParent = () => this.ctl.abort(parent?.reason);
    if (parent?.aborted) this.onParent();
    parent?.addEventListener('abort', this.onParent, { once: true });
    const timer = clock.setTimeout(() => {
      if (this.ctl.signal.aborted) return;
      this.exceeded = budgetError(ms, this.stage);
      this.ctl.abort(this.exceeded);
    }, ms);
    timer.unref();
    this.cancel = () => clock.clearTimeout(timer);
  }

  /** fires when the budget runs out or the parent (controller stop, lost leadership) fires */
  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  /** the reconcile is over: clears the timer */
  dispose(): void {
    this.cancel();
    this.parent?.removeEventListener('abort', this.onParent);
  }
}

/** the transient error of a reconcile stopped at its budget, during `stage` */
export function budgetError(ms: number, stage: Stage): HoistError {
  return reconcileError(
    `reconcile stopped: it ran longer than its time budget of ${formatDuration(ms)} (hoist run --reconcile-timeout)`,
    ReconcileCode.ReconcileTimeout,
    { stage, subject: 'reconcile', terminal: false },
  );
}
