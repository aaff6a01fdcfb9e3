/** At most `size` holders at once; the others wait, first come first served. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {}

  /** runs `fn` holding a slot; a wait for the slot ends, rejected with the signal's reason, when `signal` fires */
  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    if (this.active < this.size) this.active++;
    else await this.wait(signal);
    try {
      return await fn();
    } finally {
      // the slot passes straight to the next waiter, or is freed
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  private wait(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const granted = (): void => {
        signal?.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = (): void => {
        // not handed a slot yet: leave the queue (the slot goes to the next waiter)
        const i = this.waiting.indexOf(granted);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal!.reason);
      };
      this.waiting.push(granted);
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }
}

/** Runs `fn` over `items` with at most `limit` in flight; results keep the input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
