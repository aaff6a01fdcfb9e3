/**
 * An in-memory KubeClient (src/kube/types.ts), as far as the reconciler's own calls go: objects
 * kept by type, namespace and name with a uid and a resourceVersion; get, list (equality label
 * selectors), merge patch, status updates with optimistic concurrency, deletes with a uid
 * precondition; discovery from a fixed table of kinds. It models none of Kubernetes' semantics
 * beyond that (no admission, defaulting, garbage collection, managed fields or server-side apply
 * merge): Kubernetes behaviour is tested against the real API server (test/e2e, test/integration).
 * A call the pipeline never makes throws, naming itself.
 */
import { objectId } from '../../../src/apply/object-id.ts';
import { ApiError } from '../../../src/kube/api-error.ts';
import {
  describeObject,
  type ApplyOptions,
  type DeleteOptions,
  type Discovery,
  type KubeClient,
  type KubeObject,
  type ListOptions,
  type ListResult,
  type ResourceInfo,
  type TypeRef,
  type WatchEvent,
} from '../../../src/kube/types.ts';

/** the kinds the fake serves: enough for bundles of plain objects and the BundleDeployment itself */
const SERVED: readonly ResourceInfo[] = [
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true },
  { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true },
  { group: '', version: 'v1', resource: 'services', kind: 'Service', namespaced: true },
  { group: '', version: 'v1', resource: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true },
  { group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false },
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true },
  { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true },
  { group: 'core.rukpak.io', version: 'v1alpha2', resource: 'bundledeployments', kind: 'BundleDeployment', namespaced: false },
];

function groupVersion(apiVersion: string): { group: string; version: string } {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  return { group: group!, version: version! };
}

function keyOf(type: TypeRef, name: string, namespace: string | undefined): string {
  return `${type.apiVersion}/${type.kind}/${namespace ?? ''}/${name}`;
}

/** RFC 7386 JSON merge patch */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function matchesSelector(obj: KubeObject, selector: string | undefined): boolean {
  if (!selector) return true;
  const labels = obj.metadata.labels ?? {};
  return selector.split(',').every((term) => {
    const m = /^([^=!]+)=([^=]*)$/.exec(term.trim());
    if (!m) throw new Error(`the fake kube client supports equality label selectors only, not ${JSON.stringify(term)}`);
    return labels[m[1]!] === m[2];
  });
}

export class FakeKube implements KubeClient {
  private readonly objects = new Map<string, KubeObject>();
  private version = 0;
  private uids = 0;
  /** every delete that removed an object, as "group/version Kind ns/name" */
  readonly deleted: string[] = [];
  /** the users `impersonate` was asked for */
  readonly impersonated = new Set<string>();

  readonly discovery: Discovery = {
    resourceFor: async (type) => {
      const { group, version } = groupVersion(type.apiVersion);
      return SERVED.find((r) => r.group === group && r.version === version && r.kind === type.kind);
    },
    invalidate: () => {},
    listable: async () => [...SERVED],
    apiVersions: async () => [...new Set(SERVED.map((r) => (r.group ? `${r.group}/${r.version}` : r.version)))],
    serverVersion: async () => 'v1.34.0',
  };

  /** the stored object, as stored (no copy): for fakes that share this store */
  peek(type: TypeRef, name: string, namespace?: string): KubeObject | undefined {
    return this.objects.get(keyOf(type, name, namespace));
  }

  /** the stored object of this objectId (src/apply/object-id.ts), as stored */
  byId(id: string): KubeObject | undefined {
    return [...this.objects.values()].find((o) => objectId(o) === id);
  }

  /** creates or replaces an object as is, with a fresh resourceVersion (and a uid when new) */
  put<T extends KubeObject>(obj: T): T {
    const key = keyOf(obj, obj.metadata.name, obj.metadata.namespace);
    const before = this.objects.get(key);
    const stored = structuredClone(obj);
    stored.metadata.uid = before?.metadata.uid ?? `uid-${++this.uids}`;
    stored.metadata.resourceVersion = String(++this.version);
    this.objects.set(key, stored);
    return structuredClone(stored);
  }

  async get<T extends KubeObject = KubeObject>(type: TypeRef, name: string, namespace?: string): Promise<T | undefined> {
    const obj = this.objects.get(keyOf(type, name, namespace));
    return obj ? (structuredClone(obj) as T) : undefined;
  }

  async list<T extends KubeObject = KubeObject>(type: TypeRef, opts: ListOptions = {}): Promise<ListResult<T>> {
    return { items: this.listNow<T>(type, opts), resourceVersion: String(this.version) };
  }

  /** list, synchronously (an informer cache answers so) */
  listNow<T extends KubeObject = KubeObject>(type: TypeRef, opts: ListOptions = {}): T[] {
    const items = [...this.objects.values()].filter(
      (o) =>
        o.apiVersion === type.apiVersion &&
        o.kind === type.kind &&
        (opts.namespace === undefined || o.metadata.namespace === opts.namespace) &&
        matchesSelector(o, opts.labelSelector),
    );
    return structuredClone(items) as T[];
  }

  async patch<T extends KubeObject = KubeObject>(
    type: TypeRef,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    patchType: 'merge' | 'json',
  ): Promise<T> {
    if (patchType !== 'merge') throw new Error('the fake kube client supports merge patches only');
    const live = this.objects.get(keyOf(type, name, namespace));
    if (!live) throw this.error(404, 'NotFound', 'patch', type, name, namespace);
    const wanted = (patch as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (wanted !== undefined && wanted !== live.metadata.resourceVersion) throw this.error(409, 'Conflict', 'patch', type, name, namespace);
    return this.put(mergePatch(live, patch) as T);
  }

  async updateStatus<T extends KubeObject = KubeObject>(obj: KubeObject): Promise<T> {
    const live = this.objects.get(keyOf(obj, obj.metadata.name, obj.metadata.namespace));
    if (!live) throw this.error(404, 'NotFound', 'update status of', obj, obj.metadata.name, obj.metadata.namespace);
    if (obj.metadata.resourceVersion !== live.metadata.resourceVersion)
      throw this.error(409, 'Conflict', 'update status of', obj, obj.metadata.name, obj.metadata.namespace);
    return this.put({ ...live, status: obj['status'] } as unknown as T);
  }

  async delete(type: TypeRef, name: string, namespace: string | undefined, opts: DeleteOptions = {}): Promise<boolean> {
    const key = keyOf(type, name, namespace);
    const live = this.objects.get(key);
    if (!live) return false;
    if (opts.uid !== undefined && opts.uid !== live.metadata.uid) throw this.error(409, 'Conflict', 'delete', type, name, namespace);
    this.objects.delete(key);
    this.deleted.push(describeObject(live));
    return true;
  }

  impersonate(user: string): KubeClient {
    this.impersonated.add(user);
    return this;
  }

  async apply<T extends KubeObject = KubeObject>(obj: KubeObject, _opts: ApplyOptions): Promise<T> {
    return this.unsupported('apply', obj);
  }

  async applyCreating<T extends KubeObject = KubeObject>(obj: KubeObject, _opts: ApplyOptions): Promise<{ object: T; created: boolean }> {
    return this.unsupported('applyCreating', obj);
  }

  async create<T extends KubeObject = KubeObject>(obj: KubeObject): Promise<T> {
    return this.unsupported('create', obj);
  }

  async update<T extends KubeObject = KubeObject>(obj: KubeObject): Promise<T> {
    return this.unsupported('update', obj);
  }

  /** the reconciler itself watches nothing (its watches are FakeManagedObjects) */
  watch<T extends KubeObject = KubeObject>(type: TypeRef): AsyncIterable<WatchEvent<T>> {
    return this.unsupported('watch', { apiVersion: type.apiVersion, kind: type.kind, metadata: { name: '' } });
  }

  /** writes go through FakeApplier (the applier is a port of its own); these are no call the pipeline makes */
  private unsupported(verb: string, obj: KubeObject): never {
    throw new Error(`the fake kube client does not ${verb} (${describeObject(obj)}): the reconciler writes objects through its applier`);
  }

  private error(statusCode: number, reason: string, verb: string, type: TypeRef, name: string, namespace: string | undefined): ApiError {
    const subject = describeObject({ apiVersion: type.apiVersion, kind: type.kind, metadata: { name, ...(namespace ? { namespace } : {}) } });
    return new ApiError({
      statusCode,
      verb,
      subject,
      status: { kind: 'Status', status: 'Failure', reason, code: statusCode, message: `${subject}: ${reason}` },
    });
  }
}
