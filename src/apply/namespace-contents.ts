/**
 * Is a Namespace ours to delete? Deleting a namespace deletes everything in it, so Hoist deletes
 * one it installed only when it holds nothing this BundleDeployment does not own (DESIGN §7).
 *
 * How: one list per namespaced, listable resource that discovery reports (each group once, in its
 * preferred version), selecting objects whose owner label is not this BundleDeployment's. A label
 * selector keeps the responses small; a full list per kind is the only way to be sure, since any
 * kind (a CRD's included) can hold someone's data. Not counted as foreign: objects being deleted,
 * dependents whose owners are namespaced (they go with their owner, which is listed itself),
 * Events, metrics, and what the control plane creates in every namespace (ServiceAccount
 * `default`, ConfigMap `kube-root-ca.crt`). Costs one request per kind, only when a namespace is
 * about to be deleted.
 */
import { LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import { isForbidden, isKindNotServed, isNotFound } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject, type ResourceInfo } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';

/** records and derived data, never anyone's content */
const IGNORED_GROUPS = new Set(['events.k8s.io', 'metrics.k8s.io']);
/** created by the control plane in every namespace */
const PER_NAMESPACE = new Set(['ServiceAccount/default', 'ConfigMap/kube-root-ca.crt']);

export type NamespaceVerdict =
  | { ours: true }
  /** `why` names foreign objects, or the lists the actor may not make */
  | { ours: false; why: string };

export async function namespaceVerdict(
  client: KubeClient,
  namespace: string,
  owner: { name: string },
  concurrency = 8,
  signal?: AbortSignal,
): Promise<NamespaceVerdict> {
  const resources = (await client.discovery.listable()).filter((r) => r.namespaced && !IGNORED_GROUPS.has(r.group) && !(r.group === '' && r.kind === 'Event'));
  const foreign: string[] = [];
  const refused: string[] = [];
  await mapLimit(resources, concurrency, async (r) => {
    try {
      const list = await client.list(typeOf(r), { namespace, labelSelector: `${LABEL_OWNER_NAME}!=${owner.name}`, signal });
      for (const o of list.items) if (await isForeign(client, o)) foreign.push(describeObject(o));
    } catch (e) {
      // the kind went away meanwhile: nothing of it is left
      if (isNotFound(e) || isKindNotServed(e)) return;
      if (isForbidden(e)) refused.push(r.group ? `${r.resource}.${r.group}` : r.resource);
      else throw e;
    }
  });
  if (foreign.length > 0) {
    foreign.sort();
    return {
      ours: false,
      why: `it holds objects this BundleDeployment does not own: ${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ` (+${foreign.length - 5} more)` : ''}`,
    };
  }
  if (refused.length > 0) {
    refused.sort();
    return {
      ours: false,
      why: `its contents cannot be checked: list is forbidden for ${refused.slice(0, 5).join(', ')}${refused.length > 5 ? ` (+${refused.length - 5} more)` : ''}`,
    };
  }
  return { ours: true };
}

async function isForeign(client: KubeClient, o: KubeObject): Promise<boolean> {
  if (o.metadata.deletionTimestamp) return false;
  if (o.apiVersion === 'v1' && PER_NAMESPACE.has(`${o.kind}/${o.metadata.name}`)) return false;
  const owners = (o.metadata.ownerReferences ?? []) as Array<{ apiVersion: string; kind: string }>;
  if (owners.length === 0) return true;
  // a dependent of a cluster-scoped owner is not listed through its owner here: count it
  for (const ref of owners) {
    const info = await client.discovery.resourceFor(ref, { refreshOnMiss: false });
    if (info && !info.namespaced) return true;
  }
  return false;
}

function typeOf(r: ResourceInfo): { apiVersion: string; kind: string } {
  return { apiVersion: r.group ? `${r.group}/${r.version}` : r.version, kind: r.kind };
}
