/**
 * `status.activeRevision.inventory`: the active revision's objects as Flux's `.status.inventory`
 * names them (id `<namespace>_<name>_<group>_<kind>`, v the API version), sorted by id, so that
 * `kubectl get bd -o yaml` answers "what does this own" without reading revision Secrets. Bounded:
 * status is written whole on every change and read by every watcher, so a revision with more
 * objects than MAX_INVENTORY_ENTRIES (or MAX_INVENTORY_BYTES of entries) lists the first ones,
 * says `truncated` with the total, and names the revision Secrets that hold every object. Pure.
 */
import type { Inventory, InventoryEntry } from '../../api/v1alpha2/types.ts';
import { LABEL_REVISION, LABEL_REVISION_OF } from './revision-store.ts';
import { groupOf } from '../apply/object-id.ts';
import type { KubeObject } from '../kube/types.ts';

export const MAX_INVENTORY_ENTRIES = 1000;
/** of entries as JSON: with the rest of status well below etcd's 1.5 MiB request limit */
export const MAX_INVENTORY_BYTES = 64 * 1024;

export function inventoryEntry(obj: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>): InventoryEntry {
  return { id: `${obj.metadata.namespace ?? ''}_${obj.metadata.name}_${groupOf(obj.apiVersion)}_${obj.kind}`, v: obj.apiVersion };
}

/** the selector of revision `revision`'s Secrets, in the controller's namespace */
export function revisionSecretsOf(namespace: string, bd: string, revision: number): NonNullable<Inventory['revisionSecrets']> {
  return { namespace, labelSelector: `${LABEL_REVISION_OF}=${bd},${LABEL_REVISION}=${revision}` };
}

export function inventoryOf(
  objects: readonly Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>[],
  revisionSecrets: NonNullable<Inventory['revisionSecrets']>,
  limits: { entries: number; bytes: number } = { entries: MAX_INVENTORY_ENTRIES, bytes: MAX_INVENTORY_BYTES },
): Inventory {
  const all = objects.map(inventoryEntry).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const entries: InventoryEntry[] = [];
  let bytes = 2;
  for (const e of all) {
    bytes += JSON.stringify(e).length + 1;
    if (entries.length >= limits.entries || bytes > limits.bytes) break;
    entries.push(e);
  }
  return entries.length === all.length ? { entries } : { entries, truncated: true, total: all.length, revisionSecrets };
}
