/**
 * Rate limiters for the workqueue, modelled on client-go's: how long an item should wait before
 * it is retried. The default combines per-item exponential backoff (a failing key backs off
 * alone) with an overall token bucket (many failing keys together cannot flood the API server).
 */
import { systemClock, type Clock } from '../util/clock.ts';

export interface RateLimiter {
  /** delay in ms before the item may be processed again; records one more failure */
  when(item: string): number;
  /** the item succeeded: reset its failure history */
  forget(item: string): void;
  /** failures recorded for the item since the last forget */
  retries(item: string): number;
}

/** base * 2^failures, capped: 5ms, 10ms, 20ms, … up to 1000s, like client-go's default. */
export class ItemExponentialRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly baseMs = 5,
    private readonly maxMs = 1_000_000,
  ) {}

  when(item: string): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    // 2^n overflows to Infinity long before it matters; the cap keeps it finite
    return Math.min(this.baseMs * 2 ** n, this.maxMs);
  }

  forget(item: string): void {
    this.failures.delete(item);
  }

  retries(item: string): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * An overall token bucket: `qps` tokens per second, at most `burst` saved up. Each when() reserves
 * a token; when none is left the delay is the time until the reserved one is refilled.
 */
export class TokenBucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps = 10,
    private readonly burst = 100,
    private readonly clock: Clock = systemClock,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  when(_item: string): number {
    const t = this.clock.now();
    // a wall clock set back refills nothing rather than draining the bucket
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(_item: string): void {
    // the bucket is shared by all items; nothing is kept per item
  }

  retries(_item: string): number {
    return 0;
  }
}

/** The longest delay any of the limiters asks for. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }

  when(item: string): number {
    return Math.max(0, ...this.limiters.map((l) => l.when(item)));
  }

  forget(item: string): void {
    for (const l of this.limiters) l.forget(item);
  }

  retries(item: string): number {
    return Math.max(0, ...this.limiters.map((l) => l.retries(item)));
  }
}

/** client-go's DefaultControllerRateLimiter: 5ms..1000s per item, 10 qps / 100 burst overall. */
export function defaultControllerRateLimiter(clock: Clock = systemClock): RateLimiter {
  return new MaxOfRateLimiter(new ItemExponentialRateLimiter(5, 1_000_000), new TokenBucketRateLimiter(10, 100, clock));
}
