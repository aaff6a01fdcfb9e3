/**
 * Gives every namespaced object its namespace (the BundleDeployment's installNamespace when the
 * bundle leaves it out) and strips it from cluster-scoped ones, as kubectl does. Scope comes from
 * discovery, or from the bundle's own CRDs for kinds they define. Done once after processing, so
 * stored revisions, prune and health all name objects the same way; an object whose kind is not
 * served yet is placed when it is (placeUnplaced).
 */
import type { Discovery, KubeObject } from '../kube/types.ts';
import { groupOf, isCRD } from './object-id.ts';

export async function assignNamespaces(
  objects: readonly KubeObject[],
  installNamespace: string | undefined,
  discovery: Pick<Discovery, 'resourceFor'>,
): Promise<KubeObject[]> {
  const crdScope = new Map<string, boolean>();
  for (const crd of objects.filter(isCRD)) {
    const spec = crd.spec as { group?: string; names?: { kind?: string }; scope?: string } | undefined;
    if (spec?.group && spec.names?.kind) crdScope.set(`${spec.group}/${spec.names.kind}`, spec.scope !== 'Cluster');
  }
  return Promise.all(
    objects.map(async (o) => {
      const info = await discovery.resourceFor(o);
      const namespaced = info ? info.namespaced : crdScope.get(`${groupOf(o.apiVersion)}/${o.kind}`);
      if (namespaced === undefined) return o;
      if (namespaced) {
        if (o.metadata.namespace || !installNamespace) return o;
        return { ...o, metadata: { ...o.metadata, namespace: installNamespace } };
      }
      if (o.metadata.namespace === undefined) return o;
      const { namespace: _drop, ...metadata } = o.metadata;
      return { ...o, metadata };
    }),
  );
}

/**
 * Places, with the installNamespace, the objects that assignNamespaces had to leave as they were
 * because their kind was not served when the revision was rendered (an optional object, or one
 * whose CRD comes from elsewhere) and is served now. Without it the stored revision would name
 * such an object without its namespace for good: health would never observe it and prune and
 * uninstall would look for it in the wrong place. Reads discovery's cache only. Returns
 * `objects` itself when nothing changed; `settled` when every object's scope is known, so the
 * caller need not ask again for these objects.
 */
export async function placeUnplaced(
  objects: KubeObject[],
  installNamespace: string | undefined,
  discovery: Pick<Discovery, 'resourceFor'>,
): Promise<{ objects: KubeObject[]; settled: boolean }> {
  if (!installNamespace || objects.every((o) => o.metadata.namespace)) return { objects, settled: true };
  let changed = false;
  let settled = true;
  const out = await Promise.all(
    objects.map(async (o) => {
      if (o.metadata.namespace) return o;
      const info = await discovery.resourceFor(o, { refreshOnMiss: false });
      if (!info) settled = false;
      if (!info?.namespaced) return o;
      changed = true;
      return { ...o, metadata: { ...o.metadata, namespace: installNamespace } };
    }),
  );
  return { objects: changed ? out : objects, settled };
}
