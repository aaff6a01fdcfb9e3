/**
 * Token buckets for the webhook receiver: `rate` tokens per second up to `burst`. `KeyedBuckets`
 * keeps one per key (source IP) and forgets full, idle ones, so memory follows the active senders.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.last = nowMs;
  }

  /** takes one token if there is one */
  take(nowMs: number): boolean {
    this.refill(nowMs);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** refilled to the brim: the bucket is indistinguishable from a new one */
  full(nowMs: number): boolean {
    this.refill(nowMs);
    return this.tokens >= this.burst;
  }

  private refill(nowMs: number): void {
    const elapsed = Math.max(0, nowMs - this.last) / 1000;
    this.tokens = Math.min(this.burst, this.tokens + elapsed * this.rate);
    this.last = nowMs;
  }
}

export class KeyedBuckets {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    /** above this many keys, full buckets are dropped before a new one is made */
    private readonly maxKeys = 10_000,
  ) {}

  take(key: string, nowMs: number): boolean {
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.sweep(nowMs);
      // still full of busy senders: treat the newcomer as over its limit rather than grow
      if (this.buckets.size >= this.maxKeys) return false;
      this.buckets.set(key, (b = new TokenBucket(this.rate, this.burst, nowMs)));
    }
    return b.take(nowMs);
  }

  get size(): number {
    return this.buckets.size;
  }

  private sweep(nowMs: number): void {
    for (const [k, b] of this.buckets) if (b.full(nowMs)) this.buckets.delete(k);
  }
}
