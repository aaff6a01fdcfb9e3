/**
 * The one sleep: resolves after `ms`, or as soon as `signal` fires — without throwing, so a loop
 * that stops on its signal just checks it, and work that must say why it stopped calls
 * `signal.throwIfAborted()` (or raises its own error) after it.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
