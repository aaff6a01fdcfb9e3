/**
 * What the applier may know about live objects without asking the API server: a small summary
 * per managed object, fed by the observe stage's watches. Never full objects (DESIGN: keep
 * hashes and summaries, not managedFields).
 */
import type { ObjectMeta } from '../../api/v1alpha2/types.ts';
import { hashOf, sha256HexPrefix } from '../util/hash.ts';
import { managerNames, type ManagedFieldsEntry } from './field-managers.ts';

export interface LiveMeta {
  uid: string;
  resourceVersion: string;
  generation?: number;
  labels?: Record<string, string>;
  /** per annotation its annotationFingerprint, not the value: last-applied-configuration alone can be most of an object */
  annotationHashes: Record<string, string>;
  /** names of the object's field managers (not subresources'): who besides Hoist writes it, never their fields */
  managers?: string[];
}

export interface LiveIndex {
  /** summary of the live object with this id (objectId), undefined when not known */
  get(id: string): LiveMeta | undefined;
  /** true when the object's kind is watched and synced, so a miss means "no Hoist lineage owns such an object" */
  knows(id: string): boolean;
}

/**
 * Changes when the object's desired state may have been changed by someone else: generation for
 * kinds that have one (status updates don't bump it), else resourceVersion; plus labels and
 * annotations, which never bump generation. With `only` (the desired object's metadata), just
 * the labels and annotations it sets count: another controller adding its own annotation (e.g.
 * deployment.kubernetes.io/revision) changes nothing Hoist applies, so it must not cause a re-apply.
 */
export function liveFingerprint(m: LiveMeta, only?: { labels?: Record<string, string>; annotations?: Record<string, string> }): string {
  const spec = m.generation !== undefined ? `g${m.generation}` : `rv${m.resourceVersion}`;
  const labels = only ? pick(m.labels ?? {}, Object.keys(only.labels ?? {})) : (m.labels ?? {});
  const annotations = only ? pick(m.annotationHashes, Object.keys(only.annotations ?? {})) : m.annotationHashes;
  // one flat string (join), not a rope of its parts: the applied records keep one per object
  return [m.uid, spec, hashOf(labels), hashOf(annotations)].join('|');
}

/** liveFingerprint(a) === liveFingerprint(b), without hashing (every watch event of a managed object compares the two) */
export function sameLiveState(a: LiveMeta, b: LiveMeta): boolean {
  const spec = (m: LiveMeta) => (m.generation !== undefined ? `g${m.generation}` : `rv${m.resourceVersion}`);
  return a.uid === b.uid && spec(a) === spec(b) && sameStrings(a.labels ?? {}, b.labels ?? {}) && sameStrings(a.annotationHashes, b.annotationHashes);
}

/**
 * When a and b differ only in labels and annotations (same uid, same generation — or resourceVersion
 * for kinds without one), the keys that changed, added or were removed; otherwise undefined. Also
 * the field managers that b has and a had not.
 */
export function metadataChange(a: LiveMeta, b: LiveMeta): { labels: string[]; annotations: string[]; newManagers: string[] } | undefined {
  const spec = (m: LiveMeta) => (m.generation !== undefined ? `g${m.generation}` : `rv${m.resourceVersion}`);
  if (a.uid !== b.uid || spec(a) !== spec(b)) return undefined;
  const changed = (x: Record<string, string>, y: Record<string, string>) => [
    ...Object.keys(x).filter((k) => !Object.hasOwn(y, k) || x[k] !== y[k]),
    ...Object.keys(y).filter((k) => !Object.hasOwn(x, k)),
  ];
  const had = new Set(a.managers ?? []);
  return {
    labels: changed(a.labels ?? {}, b.labels ?? {}),
    annotations: changed(a.annotationHashes, b.annotationHashes),
    newManagers: (b.managers ?? []).filter((m) => !had.has(m)),
  };
}

function sameStrings(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/**
 * An annotation value as kept for comparison: a short one as it is (no hash to compute, and no
 * longer than its hash), a longer one as its sha256 prefix, so a large value is not held. Hex
 * digits never start with '=', so the two forms cannot be equal.
 */
export function annotationFingerprint(value: string): string {
  return value.length <= 16 ? `=${value}` : sha256HexPrefix(value, 8);
}

export function liveMetaOf(obj: { metadata: ObjectMeta & { managedFields?: unknown[] } }): LiveMeta {
  const { uid, resourceVersion, generation, labels, annotations, managedFields } = obj.metadata;
  const annotationHashes: Record<string, string> = {};
  for (const [k, v] of Object.entries(annotations ?? {})) annotationHashes[k] = annotationFingerprint(v);
  const managers = managerNames(managedFields as ManagedFieldsEntry[] | undefined);
  return { uid: uid ?? '', resourceVersion: resourceVersion ?? '', generation, labels, annotationHashes, ...(managers.length ? { managers } : {}) };
}

function pick(values: Record<string, string>, keys: readonly string[]): Record<string, string | null> {
  return Object.fromEntries(keys.map((k) => [k, values[k] ?? null]));
}
