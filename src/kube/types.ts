/**
 * Plain data shapes and the small role interfaces through which the rest of Hoist talks to the
 * API server. src/kube is the only code that speaks HTTP to the API server; everything above
 * depends on these interfaces, never on the transport.
 */
import type { ObjectMeta } from '../../api/v1alpha2/types.ts';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta & { managedFields?: unknown[]; ownerReferences?: unknown[] };
  [field: string]: unknown;
}

/** What discovery says about one kind. */
export interface ResourceInfo {
  group: string;
  version: string;
  /** plural resource name, e.g. deployments */
  resource: string;
  kind: string;
  namespaced: boolean;
  /** the verbs discovery lists for the resource (list, watch, …), when it says */
  verbs?: string[];
}

/** what every request may carry: a signal that aborts it (the connection is closed, the promise rejects) */
export interface RequestOptions {
  signal?: AbortSignal | undefined;
}

export interface ListOptions extends RequestOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** metadata only (PartialObjectMetadata): no spec, data or status cross the wire */
  metadataOnly?: boolean;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

export interface ListResult<T = KubeObject> {
  items: T[];
  resourceVersion: string;
  continue?: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
export interface WatchEvent<T = KubeObject> {
  type: WatchEventType;
  object: T;
}

export interface WatchOptions extends ListOptions {
  resourceVersion: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
}

export interface ApplyOptions extends RequestOptions {
  fieldManager: string;
  force?: boolean;
  dryRun?: boolean;
}

export interface DeleteOptions extends RequestOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  /** only delete if the live object still has this uid */
  uid?: string;
  /** only delete if the live object still has this resourceVersion */
  resourceVersion?: string;
}

/** A reference to a kind served by the API server. */
export interface TypeRef {
  apiVersion: string;
  kind: string;
}

export interface Discovery {
  /**
   * undefined when the API server does not serve this kind; refreshes discovery once on a miss
   * unless `refreshOnMiss: false` (hot paths that ask about the same unserved kinds again and again)
   */
  resourceFor(type: TypeRef, opts?: { refreshOnMiss?: boolean }): Promise<ResourceInfo | undefined>;
  /** forget cached discovery, e.g. after a CRD became Established */
  invalidate(): void;
  /** every listable resource, once per group (its preferred version) */
  listable(): Promise<ResourceInfo[]>;
  /** "group/version" strings served, for Helm's .Capabilities */
  apiVersions(): Promise<string[]>;
  /** the API server's version (GET /version gitVersion, e.g. "v1.34.4"), for Helm's .Capabilities.KubeVersion */
  serverVersion(): Promise<string>;
}

export interface Reader {
  get<T extends KubeObject = KubeObject>(type: TypeRef, name: string, namespace?: string, opts?: RequestOptions): Promise<T | undefined>;
  list<T extends KubeObject = KubeObject>(type: TypeRef, opts?: ListOptions): Promise<ListResult<T>>;
}

export interface Watcher {
  watch<T extends KubeObject = KubeObject>(type: TypeRef, opts: WatchOptions): AsyncIterable<WatchEvent<T>>;
}

export interface Writer {
  /** server-side apply (application/apply-patch+yaml) */
  apply<T extends KubeObject = KubeObject>(obj: KubeObject, opts: ApplyOptions): Promise<T>;
  /** server-side apply that also says whether it created the object (201) or changed an existing one */
  applyCreating<T extends KubeObject = KubeObject>(obj: KubeObject, opts: ApplyOptions): Promise<{ object: T; created: boolean }>;
  create<T extends KubeObject = KubeObject>(obj: KubeObject, opts?: RequestOptions & { dryRun?: boolean }): Promise<T>;
  update<T extends KubeObject = KubeObject>(obj: KubeObject, opts?: RequestOptions): Promise<T>;
  /** merge patch (application/merge-patch+json) or JSON patch */
  patch<T extends KubeObject = KubeObject>(
    type: TypeRef,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    patchType: 'merge' | 'json',
    opts?: RequestOptions & { fieldManager?: string },
  ): Promise<T>;
  /** resolves false when the object was already gone */
  delete(type: TypeRef, name: string, namespace: string | undefined, opts?: DeleteOptions): Promise<boolean>;
}

export interface StatusWriter {
  /** PUT to the status subresource (optimistic concurrency via metadata.resourceVersion) */
  updateStatus<T extends KubeObject = KubeObject>(obj: KubeObject): Promise<T>;
}

export interface KubeClient extends Reader, Watcher, Writer, StatusWriter {
  readonly discovery: Discovery;
  /** a client that acts as the given user (Impersonate-User), e.g. system:serviceaccount:ns:name */
  impersonate(user: string): KubeClient;
}

/** "group/version Kind ns/name", the way objects are named in messages (defined in src/util). */
export { describeObject } from '../util/describe-object.ts';

/** Key used across caches and queues: "namespace/name" or "name". */
export function objectKey(meta: { name: string; namespace?: string }): string {
  // one flat string (join), not a rope: the informers' stores keep a key per object
  return meta.namespace ? [meta.namespace, meta.name].join('/') : meta.name;
}
