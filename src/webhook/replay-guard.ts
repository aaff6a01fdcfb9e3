/**
 * Remembers delivery ids for a window and refuses a repeat within it. Bounded: at most `max` ids
 * are kept; when full, the oldest are forgotten first (a flood cannot grow memory, only shorten
 * how long ids are remembered). Ids are only recorded after a signature was verified, so an
 * unauthenticated sender cannot fill it.
 */
export class ReplayGuard {
  /** id → when it was first seen (ms); Map keeps insertion order, oldest first */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly max = 10_000,
  ) {}

  /** true the first time `id` is seen within the window (and records it); false for a repeat */
  firstSeen(id: string, nowMs: number): boolean {
    this.expire(nowMs);
    const at = this.seen.get(id);
    if (at !== undefined) return false;
    this.seen.set(id, nowMs);
    while (this.seen.size > this.max) this.seen.delete(this.seen.keys().next().value as string);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }

  private expire(nowMs: number): void {
    for (const [id, at] of this.seen) {
      if (at + this.windowMs > nowMs) break;
      this.seen.delete(id);
    }
  }
}
