/**
 * Which content-store keys each BundleDeployment's current resolution needs, for content-store
 * garbage collection. Until every BD has been reconciled since start, nobody knows what is
 * still needed, and `inUse` says so by returning undefined.
 */
export class ContentInUse {
  private readonly keys = new Map<string, readonly string[]>();
  /** BDs reconciled since start */
  private readonly seen = new Set<string>();

  /** bd's sources resolved to these keys */
  record(name: string, keys: readonly string[]): void {
    this.keys.set(name, keys);
  }

  /** bd was reconciled (whatever the outcome) */
  reconciled(name: string): void {
    this.seen.add(name);
  }

  /** the keys in use by the BDs named, or undefined while one of them has not been reconciled */
  inUse(names: readonly string[]): Set<string> | undefined {
    if (names.some((n) => !this.seen.has(n))) return undefined;
    return new Set([...this.keys.values()].flat());
  }

  forget(name: string): void {
    this.keys.delete(name);
    this.seen.delete(name);
  }
}
