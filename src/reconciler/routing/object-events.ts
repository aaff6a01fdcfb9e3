/**
 * What an event on a managed object (managed-objects.ts) does to its owning BundleDeployment: the
 * predicate between a watch and the work queue, after controller-runtime's pkg/predicate. Pure;
 * the manager carries the verdict out.
 */
import type { MetadataChange } from './managed-objects.ts';

/**
 * The work-queue priority of a BD whose managed objects changed (health, drift, deletion): its
 * follow-up goes before first reconciles of BDs not looked at yet, so in a wave of installs each
 * BD is done soon after its objects are ready, not after every other BD's first reconcile.
 */
export const OBJECT_CHANGE_PRIORITY = 10;

export type ObjectEventRoute =
  /** a remote target's watch reported an object of a BD that now installs elsewhere */
  | 'other-target'
  /** its BD is not in this process's cache: another shard's, or gone */
  | 'not-ours'
  /** only labels or annotations neither the bundle nor Hoist sets, changed by a controller */
  | 'foreign-metadata'
  /** during the BD's reconcile: decided when it ends (afterReconcile) */
  | 'during-reconcile'
  /** re-queue the BD at OBJECT_CHANGE_PRIORITY */
  | 'requeue';

export interface ObjectEvent {
  owner: string;
  /** the object's version ("<id>@<resourceVersion>"), when the event carries one */
  version?: string | undefined;
  metadata?: MetadataChange | undefined;
}

/** what the verdict reads, each from the manager's caches */
export interface ObjectEventView {
  /** the target key the BD installs into now */
  targetOf(owner: string): string;
  /** the BD is in this process's BundleDeployment cache */
  known(owner: string): boolean;
  /** the BD's last apply would find the object unchanged after this metadata change (reconciler.ignoresMetadata) */
  ignoresMetadata(owner: string, metadata: MetadataChange): boolean;
  /** the BD's reconcile is running */
  processing(owner: string): boolean;
  /** field managers whose edits are taken over (interactive: kubectl and --override-manager) */
  overrideManagers: ReadonlySet<string>;
}

/** the route of one event reported by the watches of `target` (undefined: every cluster's) */
export function routeObjectEvent(target: string | undefined, event: ObjectEvent, view: ObjectEventView): ObjectEventRoute {
  if (target !== undefined && view.targetOf(event.owner) !== target) return 'other-target';
  // every shard watches every managed object
  if (!view.known(event.owner)) return 'not-ours';
  // not by hand (interactive managers' edits are taken over): the apply would find the object unchanged
  const m = event.metadata;
  if (m && !m.newManagers.some((n) => view.overrideManagers.has(n)) && view.ignoresMetadata(event.owner, m)) return 'foreign-metadata';
  if (event.version !== undefined && view.processing(event.owner)) return 'during-reconcile';
  return 'requeue';
}

/**
 * After a reconcile: of the object versions that arrived while it ran, those of its own writes
 * (which it waited to see before it read health) told it nothing new; any other (another
 * controller's status update, a hand edit) reconciles it again.
 */
export function changedByOthers(arrived: readonly string[] | undefined, ownWrites: ReadonlySet<string> | undefined): boolean {
  return arrived?.some((v) => !ownWrites?.has(v)) ?? false;
}
