/**
 * A rate-limited work queue of string keys with client-go's guarantees:
 * - a key added several times before it is picked up is processed once (dirty set);
 * - a key is never handed to two workers at once: re-added while processing, it is queued again
 *   only after done();
 * - addAfter() delays; addRateLimited() delays by the rate limiter (per-item backoff and an
 *   overall token bucket); forget() resets the backoff after a success.
 * shutDown() stops handing out work; shutDownWithDrain() also waits for in-flight items.
 *
 * Keys carry a priority (as controller-runtime's priority queue): a higher one is handed out
 * first, equal ones in the order they were added; a key added again with a higher priority than
 * it is queued with moves up. A controller uses it to let follow-ups of work already under way (a
 * health change of objects it applied) go before fresh work, so each item finishes soon after
 * its own inputs are ready instead of after everything queued before them. Follow-ups can delay
 * fresh work for as long as they keep coming, never run it twice or lose it.
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

/** the priority of an ordinary add */
export const DEFAULT_PRIORITY = 0;

export class WorkQueue {
  readonly name: string;
  /** priority → keys in the order added; a key may linger in a lower bucket after moving up (skipped) */
  private readonly buckets = new Map<number, string[]>();
  /** priorities present in buckets, highest first */
  private priorities: number[] = [];
  /** queued key → the priority it is queued with */
  private readonly queued = new Map<string, number>();
  /** keys that need processing (queued, or re-added while processing) */
  private readonly dirty = new Set<string>();
  /** key → performance.now() when processing started */
  private readonly processing = new Map<string, number>();
  /** key → when it was first queued, for the queue-duration metric */
  private readonly queuedAt = new Map<string, number>();
  private readonly waiting = new Map<string, { readyAt: number; timer: ClockTimer }>();
  /** keys re-added while processing with a priority above the default: queued with it after done() */
  private readonly rerun = new Map<string, number>();
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
    return this.queued.size;
  }

  /** true while a worker holds the key (between get() and done()) */
  isProcessing(key: string): boolean {
    return this.processing.has(key);
  }

  get shuttingDown(): boolean {
    return this.shutdown;
  }

  /** keys being processed right now */
  get inFlight(): number {
    return this.processing.size;
  }

  /** queues the key; `priority` orders it before keys of lower priority (default DEFAULT_PRIORITY) */
  add(key: string, priority = DEFAULT_PRIORITY): void {
    if (this.shutdown) return;
    this.metrics.adds.inc({ name: this.name });
    if (this.dirty.has(key)) {
      // queued already: a higher priority moves it up; being processed: it is queued with the higher one after done()
      const at = this.queued.get(key);
      if (at !== undefined && priority > at) this.enqueue(key, priority);
      else if (at === undefined && priority > (this.rerun.get(key) ?? DEFAULT_PRIORITY)) this.rerun.set(key, priority);
      return;
    }
    this.dirty.add(key);
    if (!this.queuedAt.has(key)) this.queuedAt.set(key, performance.now());
    // picked up again by done() once the current worker finishes
    if (this.processing.has(key)) {
      if (priority !== DEFAULT_PRIORITY) this.rerun.set(key, priority);
      return;
    }
    const getter = this.getters.shift();
    if (getter) this.handOut(key, getter);
    else this.enqueue(key, priority);
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
    const key = this.dequeue();
    if (key !== undefined) return Promise.resolve(this.take(key));
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** marks the key finished; if it was re-added meanwhile it is queued again now */
  done(key: string): void {
    const started = this.processing.get(key);
    if (started === undefined) return;
    this.processing.delete(key);
    this.metrics.workDuration.observe({ name: this.name }, (performance.now() - started) / 1000);
    const priority = this.rerun.get(key) ?? DEFAULT_PRIORITY;
    this.rerun.delete(key);
    if (this.dirty.has(key) && !this.shutdown) {
      const getter = this.getters.shift();
      if (getter) this.handOut(key, getter);
      else this.enqueue(key, priority);
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
    this.buckets.clear();
    this.priorities = [];
    this.queued.clear();
    this.rerun.clear();
    this.metrics.depth.set({ name: this.name }, 0);
    for (const g of this.getters.splice(0)) g(undefined);
  }

  /** shutDown(), then resolves once every key handed out has been marked done */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** puts the key in its priority's bucket (a key queued lower stays behind there and is skipped) */
  private enqueue(key: string, priority: number): void {
    this.queued.set(key, priority);
    let bucket = this.buckets.get(priority);
    if (!bucket) {
      this.buckets.set(priority, (bucket = []));
      this.priorities = [...this.buckets.keys()].sort((a, b) => b - a);
    }
    bucket.push(key);
    this.metrics.depth.set({ name: this.name }, this.queued.size);
  }

  /** the first key of the highest priority, or undefined when none is queued */
  private dequeue(): string | undefined {
    for (const p of this.priorities) {
      const bucket = this.buckets.get(p)!;
      while (bucket.length) {
        const key = bucket.shift()!;
        // moved up since: its entry in this bucket is stale
        if (this.queued.get(key) !== p) continue;
        this.queued.delete(key);
        if (bucket.length === 0) this.dropBucket(p);
        this.metrics.depth.set({ name: this.name }, this.queued.size);
        return key;
      }
      this.dropBucket(p);
    }
    return undefined;
  }

  private dropBucket(priority: number): void {
    this.buckets.delete(priority);
    this.priorities = this.priorities.filter((p) => p !== priority);
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
