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
 * removed, so no prune or uninstall of any BundleDeployment deletes it and no managed-object watch
 * reports it, and the fields Hoist's field manager owned are handed to the manager KEPT_MANAGER,
 * so the object's content stays owned (an apply by the lineage's manager that finds the object
 * shares those fields instead of becoming their only owner, which would let an empty apply of
 * that manager remove them, install-namespace.ts handBack). The lineage label stays, so the
 * lineage's next revision that holds the object takes it back (collision.ts) and its apply folds
 * KEPT_MANAGER's fields into its own (applier.ts), as Helm's next install of the release adopts
 * what it kept.
 */
import { ANNOTATION_PRUNE, ANNOTATION_REVISION, LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../kube/types.ts';
import { mergeFields, type ManagedFieldsEntry } from './field-managers.ts';

/**
 * The field manager of the fields of objects Hoist kept: no lineage's (those are `hoist-<lineage>`),
 * and every apply of Hoist takes its fields over (applier.ts), as it does the interactive managers'.
 */
export const KEPT_MANAGER = 'kept-by-hoist';

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
 * annotation removed, and the Apply entry of `manager` (the lineage's field manager) handed to
 * KEPT_MANAGER (an Update entry; merged with one it already has) — nothing else: the fields keep
 * their values and an owner. The patch sets `resourceVersion` to the one read, so the API server
 * refuses it (409) if the object changed since, or is another object of that name.
 */
export function releasePatch(live: KubeObject, manager: string): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [{ op: 'replace', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion }];
  if (live.metadata.labels?.[LABEL_OWNER_NAME] !== undefined) ops.push({ op: 'remove', path: pointer('metadata', 'labels', LABEL_OWNER_NAME) });
  if (live.metadata.annotations?.[ANNOTATION_REVISION] !== undefined) ops.push({ op: 'remove', path: pointer('metadata', 'annotations', ANNOTATION_REVISION) });
  const entries = (live.metadata.managedFields ?? []) as ManagedFieldsEntry[];
  const ours = (e: ManagedFieldsEntry) => e.manager === manager && e.operation === 'Apply' && !e.subresource;
  const mine = entries.find(ours);
  if (mine) {
    const kept = (e: ManagedFieldsEntry) => e.manager === KEPT_MANAGER && !e.subresource;
    const fields = entries.filter(kept).reduce((acc, e) => mergeFields(acc, e.fieldsV1 ?? {}), {} as Record<string, unknown>);
    const handed: ManagedFieldsEntry = { ...mine, manager: KEPT_MANAGER, operation: 'Update', fieldsV1: mergeFields(fields, mine.fieldsV1 ?? {}) };
    const rest = entries.filter((e) => !ours(e) && !kept(e));
    ops.push({ op: 'replace', path: '/metadata/managedFields', value: [handed, ...rest] });
  }
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
