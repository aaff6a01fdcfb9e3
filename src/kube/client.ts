/**
 * The KubeClient: typed verbs over raw REST (discovery, get, list, watch, apply, create, update,
 * patch, delete, updateStatus) on top of RestTransport. This is the only place that turns a
 * TypeRef into a URL. Objects returned are exactly what the API server sent (managedFields
 * included: the applier needs them); caches strip them, see informer.ts.
 */
import { KindNotServedError, TransportError } from './api-error.ts';
import { CachedDiscovery, type DiscoveryOptions } from './discovery.ts';
import { loadKubeConfig, type ClusterConfig } from './kube-config.ts';
import { RestTransport, type RawRequest, type TransportOptions } from './rest-transport.ts';
import type { RequestCounter, RequestHook } from './request-counter.ts';
import {
  objectKey,
  type ApplyOptions,
  type DeleteOptions,
  type KubeClient,
  type KubeObject,
  type ListOptions,
  type ListResult,
  type RequestOptions,
  type ResourceInfo,
  type TypeRef,
  type WatchEvent,
  type WatchOptions,
} from './types.ts';

// PartialObjectMetadata(List), with plain JSON as the fallback for servers that do not offer it
const METADATA_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

export { loadKubeConfig, type ClusterConfig };

export interface KubeClientOptions extends TransportOptions, DiscoveryOptions {
  /** page size used when list() is called without a limit (default 500) */
  listPageSize?: number;
}

/** A KubeClient that owns connections: count its requests, and close it when done. */
export interface RestKubeClient extends KubeClient {
  /** requests sent by this client and every client derived from it with impersonate() */
  readonly requests: RequestCounter;
  readonly discovery: CachedDiscovery;
  /** subscribe to finished requests; returns the unsubscribe function */
  onRequest(hook: RequestHook): () => void;
  impersonate(user: string): RestKubeClient;
  /** closes idle connections and aborts watches; on an impersonating client this is a no-op */
  close(): Promise<void>;
}

/**
 * Creates a client for one API server. Connections are bounded and kept alive; TLS is verified
 * against the configured CA unless the kubeconfig explicitly disables verification.
 */
export function createKubeClient(cfg: ClusterConfig, opts: KubeClientOptions = {}): RestKubeClient {
  const transport = new RestTransport(cfg, opts);
  const discovery = new CachedDiscovery((req) => transport.jsonOr404({ verb: 'discovery', method: 'GET', ...req }), opts);
  return new HttpKubeClient(transport, discovery, undefined, opts.listPageSize ?? 500, true);
}

class HttpKubeClient implements RestKubeClient {
  constructor(
    private readonly transport: RestTransport,
    readonly discovery: CachedDiscovery,
    private readonly user: string | undefined,
    private readonly pageSize: number,
    private readonly ownsTransport: boolean,
  ) {}

  get requests(): RequestCounter {
    return this.transport.counter;
  }

  onRequest(hook: RequestHook): () => void {
    return this.transport.counter.onRequest(hook);
  }

  impersonate(user: string): RestKubeClient {
    return new HttpKubeClient(this.transport, this.discovery, user, this.pageSize, false);
  }

  async close(): Promise<void> {
    if (this.ownsTransport) await this.transport.close();
  }

  async get<T extends KubeObject = KubeObject>(type: TypeRef, name: string, namespace?: string, opts: RequestOptions = {}): Promise<T | undefined> {
    const info = await this.resource(type);
    return this.transport.jsonOr404<T>(this.req('get', 'GET', objectPath(info, namespace, name), describe(type, name, namespace), opts.signal));
  }

  async list<T extends KubeObject = KubeObject>(type: TypeRef, opts: ListOptions = {}): Promise<ListResult<T>> {
    const info = await this.resource(type);
    const path = objectPath(info, opts.namespace);
    const subject = `${type.apiVersion} ${type.kind}${opts.namespace ? ` in ${opts.namespace}` : ''}`;
    const page = async (limit: number | undefined, cont: string | undefined): Promise<ListResult<T>> => {
      const body = await this.transport.json<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>({
        ...this.req('list', 'GET', path, subject, opts.signal),
        ...(opts.metadataOnly ? { accept: METADATA_LIST_ACCEPT } : {}),
        query: {
          labelSelector: opts.labelSelector,
          fieldSelector: opts.fieldSelector,
          limit,
          continue: cont,
          // a continue token carries its own snapshot; resourceVersion must not be sent with it
          resourceVersion: cont ? undefined : opts.resourceVersion,
        },
      });
      // items in a list response carry no apiVersion/kind; callers expect whole objects
      const items = (body.items ?? []).map((o) => ({ ...o, apiVersion: type.apiVersion, kind: type.kind }));
      const result: ListResult<T> = { items, resourceVersion: body.metadata?.resourceVersion ?? '' };
      if (body.metadata?.continue) result.continue = body.metadata.continue;
      return result;
    };
    // an explicit limit means the caller pages; otherwise page here so responses stay bounded
    if (opts.limit !== undefined) return page(opts.limit, opts.continue);
    let result = await page(this.pageSize, opts.continue);
    const items = [...result.items];
    while (result.continue) {
      result = await page(this.pageSize, result.continue);
      items.push(...result.items);
    }
    return { items, resourceVersion: result.resourceVersion };
  }

  async *watch<T extends KubeObject = KubeObject>(type: TypeRef, opts: WatchOptions): AsyncIterable<WatchEvent<T>> {
    const info = await this.resource(type);
    const subject = `${type.apiVersion} ${type.kind}${opts.namespace ? ` in ${opts.namespace}` : ''}`;
    const body = await this.transport.stream({
      ...this.req('watch', 'GET', objectPath(info, opts.namespace), subject, opts.signal),
      ...(opts.metadataOnly ? { accept: METADATA_ACCEPT } : {}),
      query: {
        watch: 1,
        resourceVersion: opts.resourceVersion,
        allowWatchBookmarks: opts.allowWatchBookmarks,
        timeoutSeconds: opts.timeoutSeconds,
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
      },
    });
    body.setEncoding('utf8');
    // the part of a line that the last chunk ended inside
    let rest = '';
    try {
      for await (const chunk of body as AsyncIterable<string>) {
        // lines are cut out of the chunk by index: joining the chunk to what came before would
        // copy it whole (a search flattens the joined string) for the sake of its first line
        let start = 0;
        let nl: number;
        while ((nl = chunk.indexOf('\n', start)) >= 0) {
          const piece = chunk.slice(start, nl);
          const line = rest ? rest + piece : piece;
          rest = '';
          start = nl + 1;
          if (line.trim()) yield JSON.parse(line) as WatchEvent<T>;
        }
        if (start < chunk.length) rest += chunk.slice(start);
      }
      if (rest.trim()) yield JSON.parse(rest) as WatchEvent<T>;
    } catch (e) {
      // the caller stopping the watch is the normal way for it to end
      if (opts.signal?.aborted) return;
      throw e instanceof SyntaxError || e instanceof TransportError ? e : new TransportError('watch', subject, e);
    } finally {
      body.destroy();
    }
  }

  async apply<T extends KubeObject = KubeObject>(obj: KubeObject, opts: ApplyOptions): Promise<T> {
    return (await this.applyCreating<T>(obj, opts)).object;
  }

  async applyCreating<T extends KubeObject = KubeObject>(obj: KubeObject, opts: ApplyOptions): Promise<{ object: T; created: boolean }> {
    const info = await this.resource(obj);
    const { name, namespace } = obj.metadata;
    // the API server refuses an apply configuration that carries managedFields
    const body = { ...obj, metadata: { ...obj.metadata, managedFields: undefined } };
    const res = await this.transport.jsonWithStatus<T>({
      ...this.req('apply', 'PATCH', objectPath(info, namespace, name), describe(obj, name, namespace), opts.signal),
      query: { fieldManager: opts.fieldManager, force: opts.force, dryRun: opts.dryRun ? 'All' : undefined },
      body: JSON.stringify(body),
      contentType: 'application/apply-patch+yaml',
    });
    return { object: res.body, created: res.statusCode === 201 };
  }

  async create<T extends KubeObject = KubeObject>(obj: KubeObject, opts: RequestOptions & { dryRun?: boolean } = {}): Promise<T> {
    const info = await this.resource(obj);
    const { name, namespace } = obj.metadata;
    if (info.namespaced && !namespace) throw new Error(`${describe(obj, name, namespace)}: namespace required for a namespaced kind`);
    return this.transport.json<T>({
      ...this.req('create', 'POST', objectPath(info, namespace), describe(obj, name, namespace), opts.signal),
      ...(opts.dryRun ? { query: { dryRun: 'All' } } : {}),
      body: obj,
    });
  }

  async update<T extends KubeObject = KubeObject>(obj: KubeObject, opts: RequestOptions = {}): Promise<T> {
    const info = await this.resource(obj);
    const { name, namespace } = obj.metadata;
    return this.transport.json<T>({ ...this.req('update', 'PUT', objectPath(info, namespace, name), describe(obj, name, namespace), opts.signal), body: obj });
  }

  async updateStatus<T extends KubeObject = KubeObject>(obj: KubeObject): Promise<T> {
    const info = await this.resource(obj);
    const { name, namespace } = obj.metadata;
    return this.transport.json<T>({
      ...this.req('updateStatus', 'PUT', `${objectPath(info, namespace, name)}/status`, `${describe(obj, name, namespace)} status`),
      body: obj,
    });
  }

  async patch<T extends KubeObject = KubeObject>(
    type: TypeRef,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    patchType: 'merge' | 'json',
    opts: RequestOptions & { fieldManager?: string } = {},
  ): Promise<T> {
    const info = await this.resource(type);
    return this.transport.json<T>({
      ...this.req('patch', 'PATCH', objectPath(info, namespace, name), describe(type, name, namespace), opts.signal),
      query: { fieldManager: opts.fieldManager },
      body: patch,
      contentType: patchType === 'merge' ? 'application/merge-patch+json' : 'application/json-patch+json',
    });
  }

  async delete(type: TypeRef, name: string, namespace: string | undefined, opts: DeleteOptions = {}): Promise<boolean> {
    const info = await this.resource(type);
    const preconditions: { uid?: string; resourceVersion?: string } = {};
    if (opts.uid) preconditions.uid = opts.uid;
    if (opts.resourceVersion) preconditions.resourceVersion = opts.resourceVersion;
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      ...(opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {}),
      ...(Object.keys(preconditions).length ? { preconditions } : {}),
    };
    const res = await this.transport.jsonOr404({
      ...this.req('delete', 'DELETE', objectPath(info, namespace, name), describe(type, name, namespace), opts.signal),
      body,
    });
    return res !== undefined;
  }

  private req(verb: RawRequest['verb'], method: RawRequest['method'], path: string, subject: string, signal?: AbortSignal): RawRequest {
    return { verb, method, path, subject, impersonate: this.user, ...(signal ? { signal } : {}) };
  }

  private async resource(type: TypeRef): Promise<ResourceInfo> {
    const info = await this.discovery.resourceFor(type);
    if (!info) throw new KindNotServedError(type.apiVersion, type.kind);
    return info;
  }
}

/** /api/v1/namespaces/ns/pods/name or /apis/apps/v1/deployments; namespace ignored when cluster-scoped */
function objectPath(info: ResourceInfo, namespace: string | undefined, name?: string): string {
  const base = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`;
  if (info.namespaced && name !== undefined && !namespace) {
    throw new Error(`${info.group ? `${info.group}/` : ''}${info.version} ${info.kind} ${name}: namespace required for a namespaced kind`);
  }
  const ns = info.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${info.resource}${name !== undefined ? `/${encodeURIComponent(name)}` : ''}`;
}

function describe(type: TypeRef, name: string | undefined, namespace: string | undefined): string {
  return `${type.apiVersion} ${type.kind} ${name === undefined ? '' : objectKey(namespace ? { name, namespace } : { name })}`.trim();
}
