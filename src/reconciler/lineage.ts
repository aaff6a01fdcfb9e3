/**
 * Lineage arbitration (DESIGN §4): of the unpaused, undeleted BundleDeployments sharing a lineage,
 * the newest applies (Deployment/ReplicaSet style: an Operator creates one per version).
 */
import { lineageOf, type BundleDeployment } from '../../api/v1alpha2/types.ts';

/** name of the BundleDeployment of `bd`'s lineage that may apply; pure */
export function lineageWinner(bd: BundleDeployment, all: readonly BundleDeployment[]): string {
  const lineage = lineageOf(bd);
  const contenders = all.filter((o) => lineageOf(o) === lineage && !o.spec.paused && !o.metadata.deletionTimestamp);
  if (!contenders.some((c) => c.metadata.name === bd.metadata.name)) contenders.push(bd);
  contenders.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name));
  return contenders[contenders.length - 1]!.metadata.name;
}
