/**
 * What the controller says about objects it kept instead of deleting them (src/apply/retention.ts:
 * `helm.sh/resource-policy: keep`, `core.rukpak.io/prune: disabled`, deletionPolicy Orphan):
 * `status.keptObjects` (the objects a prune kept, until a revision holds them again) and the
 * words of the `Kept` / `Orphaned` Events. Pure.
 */
import type { KeptObject } from '../../api/v1alpha2/types.ts';
import { objectId } from '../apply/object-id.ts';
import type { ObjectResult } from '../apply/result.ts';
import type { KubeObject } from '../kube/types.ts';
import { inventoryEntry } from '../revisions/inventory.ts';

/** the CRD's maxItems: the newest entries stay */
export const MAX_KEPT_OBJECTS = 100;
/** how many objects an Event names before "(+N more)" */
const NAMED = 10;

/**
 * `status.keptObjects` after revision `revision` pruned `stale` with `results`: the objects kept
 * now are added (newest last), and entries of objects `current` holds again are dropped (the
 * lineage takes them back); undefined when none is left.
 */
export function keptObjectsAfter(
  previous: readonly KeptObject[] | undefined,
  results: readonly ObjectResult[],
  stale: readonly KubeObject[],
  current: readonly KubeObject[],
  revision: number,
): KeptObject[] | undefined {
  const byId = new Map(stale.map((o) => [objectId(o), o]));
  const added = results.flatMap((r): KeptObject[] => {
    const o = r.action === 'kept' ? byId.get(r.id) : undefined;
    return o ? [{ ...inventoryEntry(o), policy: r.policy ?? '', revision }] : [];
  });
  const gone = new Set([...current.map((o) => inventoryEntry(o).id), ...added.map((e) => e.id)]);
  const list = [...(previous ?? []).filter((e) => !gone.has(e.id)), ...added].slice(-MAX_KEPT_OBJECTS);
  return list.length > 0 ? list : undefined;
}

/** the kept results, each as "subject (policy)", the first ten, or undefined when none was kept */
export function describeKept(results: readonly ObjectResult[]): { count: number; names: string } | undefined {
  const kept = results.filter((r) => r.action === 'kept');
  if (kept.length === 0) return undefined;
  const names = kept
    .slice(0, NAMED)
    .map((r) => `${r.subject} (${r.policy ?? 'kept'})`)
    .join(', ');
  return { count: kept.length, names: kept.length > NAMED ? `${names} (+${kept.length - NAMED} more)` : names };
}
