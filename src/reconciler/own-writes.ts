/**
 * The controller's own writes to BundleDeployments (finalizer, status), so that neither the
 * watch event of such a write nor a cache that has not caught up with it triggers work:
 * - the event of our latest write needs no reconcile (the manager's event filter asks `isOwn`);
 * - a cached BD still at a resourceVersion our write replaced is older than what we wrote:
 *   reconciling it would redo the work (a second revision save, event and conflicting status write).
 */
export class OwnWrites {
  /** per BD: resourceVersions our own writes superseded */
  private readonly superseded = new Map<string, Set<string>>();
  /** per BD: the resourceVersion of our latest own write */
  private readonly latest = new Map<string, string>();

  /** we wrote bd: `before` is now stale, `after` is ours */
  record(name: string, before: string | undefined, after: string | undefined): void {
    if (before) this.superseded.set(name, (this.superseded.get(name) ?? new Set<string>()).add(before));
    if (after) this.latest.set(name, after);
  }

  /** true when the cache shows a version of bd that one of our writes already replaced */
  isStale(name: string, resourceVersion: string | undefined): boolean {
    return this.superseded.get(name)?.has(resourceVersion ?? '') ?? false;
  }

  /** the cache has caught up: older versions will not be seen again */
  caughtUp(name: string): void {
    this.superseded.delete(name);
  }

  /** true when this resourceVersion is our own latest write (status or finalizer) of the BD */
  isOwn(name: string, resourceVersion: string | undefined): boolean {
    return resourceVersion !== undefined && this.latest.get(name) === resourceVersion;
  }

  forget(name: string): void {
    this.superseded.delete(name);
    this.latest.delete(name);
  }
}
