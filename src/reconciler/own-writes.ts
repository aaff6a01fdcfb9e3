/**
 * The controller's own writes to BundleDeployments (finalizer, status), so that neither the
 * watch event of such a write nor a cache that has not caught up with it triggers work:
 * - the event of one of our writes needs no reconcile (the manager asks `updateEvent`): the
 *   reconcile that wrote it already saw everything. The event can arrive before the write's
 *   response (the API server sends both at once): while a write of the BD is in flight, an event
 *   of a version we do not know yet is decided once the write has returned;
 * - a cached BD still at a resourceVersion our write replaced is older than what we wrote:
 *   reconciling it would redo the work (a second revision save, event and conflicting status write).
 * Every other cause of a reconcile (a spec or metadata change by anyone else, a referenced Secret
 * or ConfigMap, a managed object, a dependency, a CRD, a webhook push, a requeue or a retry with
 * backoff) enqueues the BD on its own path and is not affected.
 */
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';

/** our own writes of one BD remembered for their events (a status write, the finalizer before it: a few) */
const REMEMBERED_WRITES = 4;

/** what the watch event of a changed BD calls for */
export type UpdateEventDecision =
  /** someone else changed it (or its spec changed): reconcile */
  | 'reconcile'
  /** the version one of our own writes produced: that reconcile already saw everything */
  | 'ignore'
  /** a version we do not know while our write of it is in flight: decide again once the write returned */
  | 'after-write';

/**
 * Pure: an update event of a BD. Our writes never change the generation (status and finalizer
 * only), so a new generation is always someone else's; a user's edit of labels or annotations
 * (e.g. core.rukpak.io/requested-at) is a version we did not write.
 */
export function decideUpdateEvent(e: {
  /** metadata.generation differs between the old and the new object */
  generationChanged: boolean;
  /** the new resourceVersion is one our own writes produced */
  ownVersion: boolean;
  /** a write of this BD by this controller is in flight */
  writing: boolean;
}): UpdateEventDecision {
  if (e.generationChanged) return 'reconcile';
  if (e.ownVersion) return 'ignore';
  return e.writing ? 'after-write' : 'reconcile';
}

export class OwnWrites {
  /** per BD: resourceVersions our own writes superseded */
  private readonly superseded = new Map<string, Set<string>>();
  /** per BD: the resourceVersions of our latest own writes, newest last */
  private readonly written = new Map<string, string[]>();
  /** per BD: writes in flight, and who waits for them to return */
  private readonly inFlight = new Map<string, { count: number; waiters: Array<() => void> }>();

  /** we wrote bd: `before` is now stale, `after` is ours */
  record(name: string, before: string | undefined, after: string | undefined): void {
    if (before) this.superseded.set(name, (this.superseded.get(name) ?? new Set<string>()).add(before));
    if (after) this.written.set(name, [...(this.written.get(name) ?? []), after].slice(-REMEMBERED_WRITES));
  }

  /**
   * Runs one write of BD `name` (at resourceVersion `before`) and records it; events that arrive
   * meanwhile wait for it (`updateEvent`). The record is made before the waiters are told.
   */
  async write<T extends { metadata: { resourceVersion?: string | undefined } }>(name: string, before: string | undefined, write: () => Promise<T>): Promise<T> {
    const flight = this.inFlight.get(name) ?? { count: 0, waiters: [] };
    this.inFlight.set(name, flight);
    flight.count++;
    try {
      const written = await write();
      this.record(name, before, written.metadata.resourceVersion);
      return written;
    } finally {
      if (--flight.count === 0) {
        this.inFlight.delete(name);
        for (const w of flight.waiters) w();
      }
    }
  }

  /**
   * Calls `enqueue` unless the event of `next` is our own write (decideUpdateEvent); an event of
   * a version we do not know while our write is in flight is decided when the write returns.
   */
  updateEvent(prev: BundleDeployment, next: BundleDeployment, enqueue: () => void): void {
    const name = next.metadata.name;
    const consider = (): void => {
      const decision = decideUpdateEvent({
        generationChanged: prev.metadata.generation !== next.metadata.generation,
        ownVersion: this.isOwn(name, next.metadata.resourceVersion),
        writing: this.inFlight.has(name),
      });
      if (decision === 'reconcile') enqueue();
      else if (decision === 'after-write') this.inFlight.get(name)!.waiters.push(consider);
    };
    consider();
  }

  /** true when the cache shows a version of bd that one of our writes already replaced */
  isStale(name: string, resourceVersion: string | undefined): boolean {
    return this.superseded.get(name)?.has(resourceVersion ?? '') ?? false;
  }

  /** the cache has caught up: older versions will not be seen again */
  caughtUp(name: string): void {
    this.superseded.delete(name);
  }

  /** true when this resourceVersion is one of our latest own writes (status or finalizer) of the BD */
  isOwn(name: string, resourceVersion: string | undefined): boolean {
    return resourceVersion !== undefined && (this.written.get(name)?.includes(resourceVersion) ?? false);
  }

  /** the BD is gone; writes still in flight settle their waiters as they return */
  forget(name: string): void {
    this.superseded.delete(name);
    this.written.delete(name);
  }
}
