/**
 * What the applier may know about live objects without asking the API server: a small summary
 * per managed object, fed by the observe stage's watches. Never full objects (DESIGN: keep
 * hashes and summaries, not managedFields).
 */
export interface LiveMeta {
  uid: string;
  resourceVersion: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
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
  return `${m.uid}|${spec}|${JSON.stringify(m.labels ?? {})}|${JSON.stringify(m.annotations ?? {})}`;
}

export function liveMetaOf(obj: { metadata: LiveMeta & { generation?: number } }): LiveMeta {
  const { uid, resourceVersion, generation, labels, annotations } = obj.metadata;
  return { uid, resourceVersion, generation, labels, annotations };
}
