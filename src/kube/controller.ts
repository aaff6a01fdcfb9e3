/**
 * A controller: N workers pull keys from a WorkQueue and call reconcile(key). The outcome decides
 * what happens to the key, with controller-runtime's semantics:
 * - resolves with requeueAfter > 0 → backoff forgotten, key re-added after that delay;
 * - resolves with requeue: true → re-added through the rate limiter;
 * - resolves otherwise → backoff forgotten (success);
 * - throws a terminal error (TerminalError, or a HoistError with terminal=true) → not retried;
 * - throws anything else → re-added through the rate limiter (per-key exponential backoff).
 * The same key is never reconciled by two workers at once (the queue guarantees it).
 */
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { systemClock, type Clock, type ClockTimer } from '../util/clock.ts';
import { isHoistError } from '../util/errors.ts';
import { controllerRuntimeMetrics, type ControllerMetrics } from './metrics.ts';
import { WorkQueue } from './workqueue.ts';
import type { RateLimiter } from './rate-limiter.ts';

export interface ReconcileResult {
  /** reconcile again after this many ms (e.g. a poll interval, a progress deadline) */
  requeueAfter?: number;
  /** reconcile again soon, with rate-limited backoff */
  requeue?: boolean;
}

/**
 * Reconciles one key. May be called again for the same key at any time after it settles, so it
 * must be idempotent. The signal fires when the controller stops and the drain deadline passed,
 * or when leadership is lost: in-flight work should stop writing.
 */
export type ReconcileFunc = (key: string, signal: AbortSignal) => Promise<ReconcileResult | void>;

/** An error retrying cannot fix (bad spec, bad bundle): the key is not requeued. */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export function isTerminal(e: unknown): boolean {
  return e instanceof TerminalError || (isHoistError(e) && e.terminal);
}

export type ReconcileOutcome = 'success' | 'requeue' | 'requeue_after' | 'error';

export interface ControllerOptions {
  /** the `controller` label of metrics and the queue's `name` */
  name: string;
  reconcile: ReconcileFunc;
  /** concurrent reconciles (default 1) */
  workers?: number;
  rateLimiter?: RateLimiter;
  /** where controller_runtime_* and workqueue_* metrics go; a private registry when omitted */
  registry?: Registry;
  logger?: Logger;
  /** the time requeue delays, backoff and the stop deadline run on (default: the system clock) */
  clock?: Clock;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  private readonly reconcileFn: ReconcileFunc;
  private readonly workers: number;
  private readonly metrics: ControllerMetrics;
  private readonly logger: Logger | undefined;
  private readonly clock: Clock;
  private readonly abort = new AbortController();
  private running: Promise<void>[] = [];
  private active = 0;

  constructor(opts: ControllerOptions) {
    this.name = opts.name;
    this.reconcileFn = opts.reconcile;
    this.workers = Math.max(1, opts.workers ?? 1);
    this.logger = opts.logger?.child({ controller: opts.name });
    const registry = opts.registry ?? new Registry();
    this.clock = opts.clock ?? systemClock;
    this.queue = new WorkQueue({ name: opts.name, registry, clock: this.clock, ...(opts.rateLimiter ? { rateLimiter: opts.rateLimiter } : {}) });
    this.metrics = controllerRuntimeMetrics(registry);
    this.metrics.maxConcurrentReconciles.set({ controller: this.name }, this.workers);
    this.metrics.activeWorkers.set({ controller: this.name }, 0);
    for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const) {
      this.metrics.reconcileTotal.inc({ controller: this.name, result }, 0);
    }
    this.metrics.reconcileErrors.inc({ controller: this.name }, 0);
    this.metrics.terminalReconcileErrors.inc({ controller: this.name }, 0);
  }

  /** queue a key for reconciliation (deduplicated with any pending add); a higher priority goes first (WorkQueue) */
  enqueue(key: string, priority?: number): void {
    this.queue.add(key, priority);
  }

  /** fires once the controller stopped and the drain deadline passed, or stop was forced */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get started(): boolean {
    return this.running.length > 0;
  }

  /** Starts the workers. The given signal (e.g. leadership) stops the controller when it fires. */
  start(signal?: AbortSignal): void {
    if (this.running.length) return;
    signal?.addEventListener('abort', () => void this.stop(0), { once: true });
    for (let i = 0; i < this.workers; i++) this.running.push(this.worker());
  }

  /**
   * Stops handing out keys and waits up to `deadlineMs` for in-flight reconciles to finish, then
   * aborts their signal. Resolves true if everything finished within the deadline.
   */
  async stop(deadlineMs = 30_000): Promise<boolean> {
    const drained = this.queue.shutDownWithDrain().then(() => true);
    let timer: ClockTimer | undefined;
    const deadline = new Promise<boolean>((resolve) => {
      timer = this.clock.setTimeout(() => resolve(false), deadlineMs);
    });
    const clean = await Promise.race([drained, deadline]);
    this.clock.clearTimeout(timer);
    this.abort.abort(new Error(`controller ${this.name} stopped`));
    if (!clean) this.logger?.warn({ inFlight: this.queue.inFlight }, 'reconciles still running after the shutdown deadline');
    await Promise.allSettled(this.running);
    return clean;
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      await this.process(key);
    }
  }

  private async process(key: string): Promise<void> {
    const started = performance.now();
    this.metrics.activeWorkers.inc({ controller: this.name });
    let outcome: ReconcileOutcome;
    try {
      const res = await this.reconcileFn(key, this.abort.signal);
      if (res?.requeueAfter !== undefined && res.requeueAfter > 0) {
        this.queue.forget(key);
        this.queue.addAfter(key, res.requeueAfter);
        outcome = 'requeue_after';
      } else if (res?.requeue) {
        this.queue.addRateLimited(key);
        outcome = 'requeue';
      } else {
        this.queue.forget(key);
        outcome = 'success';
      }
    } catch (e) {
      outcome = 'error';
      this.metrics.reconcileErrors.inc({ controller: this.name });
      if (isTerminal(e)) {
        // retrying cannot help until the object changes, which re-queues it through the informer
        this.metrics.terminalReconcileErrors.inc({ controller: this.name });
        this.queue.forget(key);
        this.logger?.error({ key, err: e }, 'reconcile failed terminally');
      } else {
        this.queue.addRateLimited(key);
        this.logger?.warn({ key, err: e, retries: this.queue.numRequeues(key) }, 'reconcile failed, will retry');
      }
    } finally {
      this.queue.done(key);
      this.metrics.activeWorkers.dec({ controller: this.name });
    }
    this.metrics.reconcileTotal.inc({ controller: this.name, result: outcome });
    this.metrics.reconcileTime.observe({ controller: this.name }, (performance.now() - started) / 1000);
  }
}
