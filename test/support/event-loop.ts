/**
 * The event loop's longest stall while something runs: the longest time between two turns of a
 * 1 ms timer. Compare it with a reference measured in the same run, never with a fixed duration.
 */
export async function longestStall<T>(run: () => Promise<T>, onTurn?: () => void): Promise<{ value: T; longestMs: number }> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    onTurn?.();
  }, 1);
  try {
    const value = await run();
    // a stall at the very end is measured by the next turn
    await new Promise((resolve) => setTimeout(resolve, 20));
    return { value, longestMs: longest };
  } finally {
    clearInterval(timer);
  }
}
