/**
 * Collision protection (DESIGN §4): may this BundleDeployment take over an object that already
 * exists? Pure: decides from the live object's labels alone. An object carrying this lineage's
 * label but no owner (one the lineage kept, retention.ts) is the lineage's to take back.
 */
import { LABEL_LINEAGE, LABEL_OWNER_NAME, type CollisionProtection } from '../../api/v1alpha2/types.ts';

export type TakeOver =
  /** the object does not exist yet */
  | { action: 'create' }
  /**
   * ours already (this BD, or another BD of our lineage handing it over); `reclaim`: an object of
   * our lineage without an owner, kept by a retention policy or deletionPolicy Orphan
   * (retention.ts), taken back
   */
  | { action: 'update'; handover: boolean; reclaim?: true }
  /** pre-existing, unowned object adopted under IfNotOwned / None */
  | { action: 'adopt' }
  /** another lineage's object taken under None */
  | { action: 'steal'; owner: string }
  | { action: 'refuse'; owner: string; why: string };

export interface Claimant {
  name: string;
  lineage: string;
  protection: CollisionProtection;
}

/**
 * `crd`: the object is a CustomResourceDefinition. Another lineage's CRD is never taken, not even
 * under None: its new owner's uninstall (deleteCRDsOnUninstall) would delete every custom
 * resource of its kinds, which the other lineage's users created.
 */
export function decideTakeOver(live: { labels?: Record<string, string> } | undefined, me: Claimant, opts: { crd?: boolean } = {}): TakeOver {
  if (!live) return { action: 'create' };
  const owner = live.labels?.[LABEL_OWNER_NAME];
  const lineage = live.labels?.[LABEL_LINEAGE];
  if (owner !== undefined && lineage === me.lineage) return { action: 'update', handover: owner !== me.name };
  // Kept by this lineage (retention.ts): taken back in place under every protection, as an update
  // (only hand edits folded) — an adoption would take over the fields controllers set meanwhile
  // (a bound PVC's spec.volumeName) and remove them
  if (owner === undefined && lineage !== undefined && lineage === me.lineage) return { action: 'update', handover: true, reclaim: true };
  if (owner === undefined) {
    if (me.protection === 'Prevent') {
      return {
        action: 'refuse',
        owner: 'none (created outside Hoist)',
        why: 'collisionProtection Prevent takes over only objects of the same lineage; use IfNotOwned to adopt it',
      };
    }
    return { action: 'adopt' };
  }
  const ownerDesc = `BundleDeployment ${owner} (lineage ${lineage ?? 'unknown'})`;
  if (me.protection === 'None' && opts.crd) {
    return {
      action: 'refuse',
      owner: ownerDesc,
      why: 'a CustomResourceDefinition of another lineage is never taken over, not even under collisionProtection None (its custom resources belong to that lineage)',
    };
  }
  if (me.protection === 'None') return { action: 'steal', owner: ownerDesc };
  return { action: 'refuse', owner: ownerDesc, why: `owned by another lineage; collisionProtection ${me.protection} refuses it` };
}
