/** Identity of a Kubernetes object across revisions: group/kind/namespace/name (version-free). */
import type { KubeObject } from '../kube/types.ts';
import { groupOf } from '../processors/manifest.ts';

export { groupOf };

/** "apps/Deployment/ns/name"; the API version is left out so a version bump is the same object */
export function objectId(obj: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>): string {
  // join makes one flat string; a template literal makes a rope holding its parts, and ids are
  // long-lived map keys (one per managed object in several caches)
  return [groupOf(obj.apiVersion), obj.kind, obj.metadata.namespace ?? '', obj.metadata.name].join('/');
}

export function isCRD(obj: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  return obj.kind === 'CustomResourceDefinition' && groupOf(obj.apiVersion) === 'apiextensions.k8s.io';
}

export function isNamespace(obj: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  return obj.kind === 'Namespace' && obj.apiVersion === 'v1';
}

/** drops the fields the server owns, which a create or apply must not carry (in place) */
export function dropServerFields(obj: KubeObject): void {
  delete obj.metadata.resourceVersion;
  delete obj.metadata.uid;
  delete obj.metadata.creationTimestamp;
  delete obj.metadata.managedFields;
  delete obj.status;
}
