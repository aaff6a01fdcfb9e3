/**
 * Lineage arbitration (DESIGN §4): of the unpaused, undeleted BundleDeployments sharing a lineage,
 * the newest applies (Deployment/ReplicaSet style: an Operator creates one per version).
 *
 * Who is a member: a BD with the lineage label `L` is a member of `L` — the tenancy policy lets a
 * user set that label only with `use` on `lineages.core.rukpak.io` `L`. A BD without the label is
 * the lineage named after itself, and a name needs no permission; so it counts as a member only
 * while no BD carries the label for that name. Once one does, the unlabelled namesake applies
 * nothing, freezes nobody and keeps no object of the lineage from being deleted (issue 23: a BD
 * named `L` used to join the labelled lineage `L` and, being newest, take its objects over).
 */
import { LABEL_LINEAGE, lineageOf, type BundleDeployment } from '../../api/v1alpha2/types.ts';

const labelled = (bd: BundleDeployment): boolean => bd.metadata.labels?.[LABEL_LINEAGE] !== undefined;

/**
 * The members of one lineage that may act in it, of `all` (the BDs whose lineageOf is that
 * lineage): the labelled ones when there are any, else the one unlabelled BD of that name. Pure.
 */
export function lineageMembers(all: readonly BundleDeployment[]): BundleDeployment[] {
  const withLabel = all.filter(labelled);
  return withLabel.length > 0 ? withLabel : [...all];
}

/**
 * Names of the BDs that carry the label of the lineage `bd` is named after, when `bd` itself has
 * no label: while there are any, `bd` is not a member of its lineage. Empty otherwise. Pure.
 */
export function labelledNamesakes(bd: BundleDeployment, all: readonly BundleDeployment[]): string[] {
  if (labelled(bd)) return [];
  return all
    .filter((o) => labelled(o) && o.metadata.name !== bd.metadata.name)
    .map((o) => o.metadata.name)
    .sort();
}

/** name of the BundleDeployment of `bd`'s lineage that may apply (`bd` itself being a member); pure */
export function lineageWinner(bd: BundleDeployment, all: readonly BundleDeployment[]): string {
  const lineage = lineageOf(bd);
  const contenders = lineageMembers(all.filter((o) => lineageOf(o) === lineage)).filter((o) => !o.spec.paused && !o.metadata.deletionTimestamp);
  if (!contenders.some((c) => c.metadata.name === bd.metadata.name)) contenders.push(bd);
  contenders.sort(
    (a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name),
  );
  return contenders[contenders.length - 1]!.metadata.name;
}
