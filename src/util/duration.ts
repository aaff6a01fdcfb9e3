/** `ms` formatted for messages: "90s", "10m", "250ms" (the units flags and specs are written in). Pure. */
export function formatDuration(ms: number): string {
  if (ms > 0 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms > 0 && ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
