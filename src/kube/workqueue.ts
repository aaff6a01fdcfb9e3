/**
 * A rate-limited work queue of string keys with client-go's guarantees:
 * - a key added several times before it is picked up is processed once (dirty set);
 * - a key is never handed to two workers at once: re-added while processing, it is queued again
 *   only after done();
 * - addAfter() delays; addRateLimited() delays by the rate limiter (per-item backoff and an
 *   overall token bucket); forget() resets the backoff after a success.
 * shutDown() stops handing out work; shutDownWithDrain() also waits for in-flight items.
 */
import { Registry } from 'prom-client';
import { systemClock, type Clock, type ClockTimer } from '../util/clock.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter.ts';
import { registerInFlight, workQueueMetrics, type WorkQueueMetrics } from './metrics.ts';

export interface WorkQueueOptions {
  /** the `name` label of the workqueue_* metrics */
  name?: string;
  rateLimiter?: RateLimiter;
  /** where the workqueue_* metrics go; a private registry when omitted */
  registry?: Registry;
  /** the time addAfter() waits on (default: the system clock); metrics measure real time */
  clock?: Clock;
}

export class WorkQueue {
  readonly name: string;
  private readonly queue: string[] = [];
  /** keys that need processing (queued, or re-added while processing) */
  private readonly dirty = new Set<string>();
  /** key → performance.now() when processing started */
  private readonly processing = new Map<string, number>();
  /** key → when it was first queued, for the queue-duration metric */
  private readonly queuedAt = new Map<string, number>();
  private readonly waiting = new Map<string, { readyAt: number; timer: ClockTimer }>();
  private readonly getters: ((key: string | undefined) => void)[] = [];
  private drainWaiters: (() => void)[] = [];
  private shutdown = false;
  private readonly rateLimiter: RateLimiter;
  private readonly metrics: WorkQueueMetrics;
  private readonly clock: Clock;

  constructor(opts: WorkQueueOptions = {}) {
    this.name = opts.name ?? 'default';
    this.clock = opts.clock ?? systemClock;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter(this.clock);
    const registry = opts.registry ?? new Registry();
    this.metrics = workQueueMetrics(registry);
    registerInFlight(registry, this.name, { inFlightStarts: () => this.processing.values() });
    // present from the start, so dashboards show 0 rather than no data
    this.metrics.depth.set({ name: this.name }, 0);
    this.metrics.adds.inc({ name: this.name }, 0);
    this.metrics.retries.inc({ name: this.name }, 0);
  }

  /** queued keys not yet handed out */
  get length(): number {
    return this.queue.length;
  }

  get shuttingDown(): boolean {
    return this.shutdown;
  }

  /** keys being processed right now */
  get inFlight(): number {
    return this.processing.size;
  }

  add(key: string): void {
    if (this.shutdown) return;
    this.metrics.adds.inc({ name: this.name });
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (!this.queuedAt.has(key)) this.queuedAt.set(key, performance.now());
    // picked up again by done() once the current worker finishes
    if (this.processing.has(key)) return;
    const getter = this.getters.shift();
    if (getter) this.handOut(key, getter);
    else {
      this.queue.push(key);
      this.metrics.depth.set({ name: this.name }, this.queue.length);
    }
  }

  /** adds the key after `ms`; a key already waiting keeps the earlier of the two times */
  addAfter(key: string, ms: number): void {
    if (this.shutdown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const readyAt = this.clock.now() + ms;
    const existing = this.waiting.get(key);
    if (existing && existing.readyAt <= readyAt) return;
    if (existing) this.clock.clearTimeout(existing.timer);
    const timer = this.clock.setTimeout(() => {
      this.waiting.delete(key);
      this.add(key);
    }, ms);
    // a pending retry must not keep the process alive on its own
    timer.unref();
    this.waiting.set(key, { readyAt, timer });
  }

  /** adds the key after the rate limiter's delay: per-item backoff and overall rate */
  addRateLimited(key: string): void {
    if (this.shutdown) return;
    this.metrics.retries.inc({ name: this.name });
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /** the key succeeded: its next failure starts from the base delay again */
  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  /** failures recorded for the key since the last forget */
  numRequeues(key: string): number {
    return this.rateLimiter.retries(key);
  }

  /**
   * Waits for the next key; the caller must call done(key) when finished with it. Resolves
   * undefined once the queue is shut down: no more work is handed out after that.
   */
  get(): Promise<string | undefined> {
    if (this.shutdown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) {
      this.metrics.depth.set({ name: this.name }, this.queue.length);
      return Promise.resolve(this.take(key));
    }
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** marks the key finished; if it was re-added meanwhile it is queued again now */
  done(key: string): void {
    const started = this.processing.get(key);
    if (started === undefined) return;
    this.processing.delete(key);
    this.metrics.workDuration.observe({ name: this.name }, (performance.now() - started) / 1000);
    if (this.dirty.has(key) && !this.shutdown) {
      const getter = this.getters.shift();
      if (getter) this.handOut(key, getter);
      else {
        this.queue.push(key);
        this.metrics.depth.set({ name: this.name }, this.queue.length);
      }
    }
    if (this.processing.size === 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** Stops handing out work and accepting adds; keys queued but not started are dropped. */
  shutDown(): void {
    if (this.shutdown) return;
    this.shutdown = true;
    for (const { timer } of this.waiting.values()) this.clock.clearTimeout(timer);
    this.waiting.clear();
    this.queue.length = 0;
    this.metrics.depth.set({ name: this.name }, 0);
    for (const g of this.getters.splice(0)) g(undefined);
  }

  /** shutDown(), then resolves once every key handed out has been marked done */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private handOut(key: string, getter: (key: string) => void): void {
    getter(this.take(key));
  }

  private take(key: string): string {
    this.dirty.delete(key);
    const now = performance.now();
    this.processing.set(key, now);
    const queued = this.queuedAt.get(key);
    this.queuedAt.delete(key);
    if (queued !== undefined) this.metrics.queueDuration.observe({ name: this.name }, (now - queued) / 1000);
    return key;
  }
}
