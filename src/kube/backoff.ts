/** Capped exponential backoff with jitter (the informer's list/watch retries). */

export class Backoff {
  private failures = 0;

  constructor(
    private readonly initialMs = 800,
    private readonly maxMs = 30_000,
    /** fraction of the delay added at random, so many clients do not retry in lockstep */
    private readonly jitter = 0.2,
  ) {}

  /** the next delay; each call doubles the base until the cap */
  next(): number {
    const base = Math.min(this.initialMs * 2 ** this.failures, this.maxMs);
    this.failures++;
    return base * (1 + Math.random() * this.jitter);
  }

  reset(): void {
    this.failures = 0;
  }

  get attempts(): number {
    return this.failures;
  }
}
