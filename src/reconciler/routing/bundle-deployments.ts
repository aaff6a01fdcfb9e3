/**
 * Which other BundleDeployments an event on one BundleDeployment re-queues: one map function per
 * relation, after controller-runtime's handler.EnqueueRequestsFromMapFunc. The BD itself is not
 * among them: its add always queues it and its update is decided by its own writes
 * (own-writes.ts). Pure over the informer's indexes.
 */
import { lineageOf, type BundleDeployment } from '../../../api/v1alpha2/types.ts';

/** informer index: lineage → its members */
export const LINEAGE_INDEX = 'lineage';
/** informer index: BD name → the BDs whose spec.dependsOn names it */
export const DEPENDS_ON_INDEX = 'dependsOn';

/** what the relations are read from: the BundleDeployment informer's indexes, by name */
export interface BundleDeploymentIndexes {
  lineageMembers(lineage: string): readonly string[];
  dependentsOf(name: string): readonly string[];
}

/** the names spec.dependsOn lists (the DEPENDS_ON_INDEX values) */
export function dependencyNames(bd: BundleDeployment): string[] {
  return (bd.spec.dependsOn ?? []).map((d) => d.name);
}

/**
 * the other members of bd's lineage; not bd itself: every event queues it already (or it is
 * gone), and queuing it again while its reconcile runs would run that reconcile twice
 */
function lineageOthers(bd: BundleDeployment, ix: BundleDeploymentIndexes): readonly string[] {
  return ix.lineageMembers(lineageOf(bd)).filter((n) => n !== bd.metadata.name);
}

/** a new BD: a newer member of a lineage takes over (the older ones must learn they lost); a dependency that was missing appeared */
export function requeuedOnAdd(bd: BundleDeployment, ix: BundleDeploymentIndexes): string[] {
  return unique([...lineageOthers(bd, ix), ...ix.dependentsOf(bd.metadata.name)]);
}

/** a changed BD (a → b) */
export function requeuedOnUpdate(a: BundleDeployment, b: BundleDeployment, ix: BundleDeploymentIndexes): string[] {
  const out: string[] = [];
  // a lineage's other members may now win or lose arbitration
  const moved = lineageOf(a) !== lineageOf(b);
  if (moved) out.push(...lineageOthers(a, ix));
  if (moved || a.spec.paused !== b.spec.paused || a.metadata.deletionTimestamp !== b.metadata.deletionTimestamp) out.push(...lineageOthers(b, ix));
  // its dependents decide on its status and metadata (readyExpr reads any of it), also on our own writes of it
  if (a.metadata.resourceVersion !== b.metadata.resourceVersion) out.push(...ix.dependentsOf(b.metadata.name));
  // a dependency it no longer names may be waiting, being deleted, for it to go
  const still = new Set(dependencyNames(b));
  out.push(...dependencyNames(a).filter((d) => !still.has(d)));
  return unique(out);
}

/** a deleted BD: its lineage re-arbitrates; its dependencies may be waiting, being deleted, for it to go; its dependents now miss it */
export function requeuedOnDelete(bd: BundleDeployment, ix: BundleDeploymentIndexes): string[] {
  return unique([...lineageOthers(bd, ix), ...dependencyNames(bd), ...ix.dependentsOf(bd.metadata.name)]);
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}
