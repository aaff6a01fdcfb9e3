/**
 * Retention policies: the objects Hoist leaves in place instead of deleting them, and how it lets
 * go of one. Pure.
 *
 * An object is kept — when it leaves the bundle (upgrade, rollback) and at uninstall — when it is
 * annotated `helm.sh/resource-policy: keep` (Helm's, pkg/kube/resource_policy.go; honoured for
 * every bundle format, since the annotation is on the object) or `core.rukpak.io/prune: disabled`
 * (Flux's `kustomize.toolkit.fluxcd.io/prune: disabled`, Argo CD's `Prune=false`). The value is
 * compared trimmed and lowercased, as Helm's uninstall compares it (pkg/action/resource_policy.go
 * filterManifestsToKeep), and read from the object as the revision stored it and from the live
 * object: either one saying keep keeps it. That keeps everything Helm keeps with the value
 * `keep`: Helm's upgrade and rollback read the live object and compare exactly (`keep`), its
 * uninstall reads the release's manifest. Where Helm differs from itself Hoist keeps: ` Keep ` is
 * kept at upgrade too. One difference the other way: Helm's uninstall also leaves an object whose
 * annotation has any other value (`""`, `delete`; helm/helm#12048, not listed as kept either),
 * while its upgrade deletes it; Hoist deletes it at both, as the documented policy says.
 *
 * A kept object is let go of (`releasePatch`): Hoist's owner label and revision annotation are
 * removed and its own field manager's entry dropped, so no prune or uninstall of any
 * BundleDeployment deletes it and no managed-object watch reports it; the lineage label stays, so
 * the lineage's next revision that holds it takes it back (collision.ts), as Helm's next install
 * of the release adopts what it kept.
 */
import { ANNOTATION_PRUNE, ANNOTATION_REVISION, LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../kube/types.ts';
import type { ManagedFieldsEntry } from './field-managers.ts';

/** Helm's resource policy annotation (helm.sh/helm pkg/kube/resource_policy.go ResourcePolicyAnno) */
export const ANNOTATION_HELM_RESOURCE_POLICY = 'helm.sh/resource-policy';

/** the annotation values that keep an object, after trimming and lowercasing */
const KEEPING: ReadonlyArray<readonly [annotation: string, value: string]> = [
  [ANNOTATION_HELM_RESOURCE_POLICY, 'keep'],
  [ANNOTATION_PRUNE, 'disabled'],
];

/**
 * The retention policy that keeps an object, as `annotation: value` (`helm.sh/resource-policy:
 * keep`), read from each copy given (the stored object, the live one); undefined when none does.
 */
export function retentionOf(...copies: ReadonlyArray<Pick<KubeObject, 'metadata'> | undefined>): string | undefined {
  for (const [annotation, value] of KEEPING) {
    for (const o of copies) {
      const v = o?.metadata.annotations?.[annotation];
      if (typeof v === 'string' && v.trim().toLowerCase() === value) return `${annotation}: ${value}`;
    }
  }
  return undefined;
}

export type JsonPatchOp = { op: 'replace' | 'test'; path: string; value: unknown } | { op: 'remove'; path: string };

const pointer = (...keys: string[]): string => keys.map((k) => `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/**
 * The JSON patch that lets go of `live` (read just before): Hoist's owner label and revision
 * annotation removed, the Apply entry of `manager` (the lineage's field manager) dropped from its
 * managedFields — nothing else: the fields keep their values (an empty apply by that manager
 * would remove the fields only Hoist owns, i.e. the object's content). The patch sets
 * `resourceVersion` to the one read, so the API server refuses it (409) if the object changed
 * since, or is another object of that name. The managedFields list becomes `[{}]` when nothing
 * else is left in it: an empty list would leave it as it is (the API server's rule).
 */
export function releasePatch(live: KubeObject, manager: string): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [{ op: 'replace', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion }];
  if (live.metadata.labels?.[LABEL_OWNER_NAME] !== undefined) ops.push({ op: 'remove', path: pointer('metadata', 'labels', LABEL_OWNER_NAME) });
  if (live.metadata.annotations?.[ANNOTATION_REVISION] !== undefined) ops.push({ op: 'remove', path: pointer('metadata', 'annotations', ANNOTATION_REVISION) });
  const entries = (live.metadata.managedFields ?? []) as ManagedFieldsEntry[];
  const rest = entries.filter((e) => !(e.manager === manager && e.operation === 'Apply' && !e.subresource));
  if (rest.length < entries.length) ops.push({ op: 'replace', path: '/metadata/managedFields', value: rest.length > 0 ? rest : [{}] });
  return ops;
}

/** `live` as releasePatch leaves it, but for managedFields (for `hoist diff`, which shows none) */
export function released(live: KubeObject): KubeObject {
  const out = structuredClone(live);
  const { labels, annotations } = out.metadata;
  if (labels) delete labels[LABEL_OWNER_NAME];
  if (annotations) delete annotations[ANNOTATION_REVISION];
  return out;
}
