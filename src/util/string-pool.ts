/**
 * Shares equal strings between long-lived cached objects. JSON.parse gives every string value a
 * copy of its own (V8 shares only property names and values of at most 10 characters), so 10,000
 * cached BundleDeployments held 10,000 copies of each condition message, namespace and finalizer,
 * and each BD its digests and timestamps three or four times over.
 *
 * Bounded: strings longer than `maxLength` are left alone, and the pool is emptied once it holds
 * `maxEntries` (objects interned before keep the copies they were given). Only for caches whose
 * strings may outlive their objects in the pool: never for Secret data.
 */
export class StringPool {
  private pool = new Map<string, string>();

  constructor(
    private readonly maxEntries = 50_000,
    private readonly maxLength = 128,
  ) {}

  /** the pool's copy of s (s itself the first time) */
  string(s: string): string {
    if (s.length > this.maxLength) return s;
    const known = this.pool.get(s);
    if (known !== undefined) return known;
    if (this.pool.size >= this.maxEntries) this.pool = new Map();
    this.pool.set(s, s);
    return s;
  }

  /**
   * Replaces, in place, the short strings of a freshly parsed JSON value (objects and arrays, at
   * most `maxDepth` deep) with the pool's copies; returns it. Only for a value no one else holds yet.
   */
  internAll<T>(value: T, maxDepth = 32): T {
    this.visit(value, maxDepth);
    return value;
  }

  private visit(value: unknown, depth: number): void {
    if (depth <= 0 || value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const v: unknown = value[i];
        if (typeof v === 'string') value[i] = this.string(v);
        else this.visit(v, depth - 1);
      }
      return;
    }
    const record = value as Record<string, unknown>;
    for (const k in record) {
      const v = record[k];
      if (typeof v === 'string') record[k] = this.string(v);
      else this.visit(v, depth - 1);
    }
  }
}
