/**
 * What the applier may know about live objects without asking the API server: a small summary
 * per managed object, fed by the observe stage's watches. Never full objects (DESIGN: keep
 * hashes and summaries, not managedFields).
 */
import type { ObjectMeta } from '../../api/v1alpha2/types.ts';
import { hashOf } from '../util/hash.ts';

export interface LiveMeta {
  uid: string;
  resourceVersion: string;
  generation?: number;
  labels?: Record<string, string>;
  /** a hash, not the annotations: last-applied-configuration alone can be most of an object */
  annotationsHash: string;
}

export interface LiveIndex {
  /** summary of the live object with this id (objectId), undefined when not known */
  get(id: string): LiveMeta | undefined;
}

/**
 * Changes when the object's desired state may have been changed by someone else: generation for
 * kinds that have one (status updates don't bump it), else resourceVersion; plus labels and
 * annotations, which never bump generation.
 */
export function liveFingerprint(m: LiveMeta): string {
  const spec = m.generation !== undefined ? `g${m.generation}` : `rv${m.resourceVersion}`;
  return `${m.uid}|${spec}|${hashOf(m.labels ?? {})}|${m.annotationsHash}`;
}

export function liveMetaOf(obj: { metadata: ObjectMeta }): LiveMeta {
  const { uid, resourceVersion, generation, labels, annotations } = obj.metadata;
  return { uid: uid ?? '', resourceVersion: resourceVersion ?? '', generation, labels, annotationsHash: hashOf(annotations ?? {}) };
}
