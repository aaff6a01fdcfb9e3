/**
 * Watches the Secrets BundleDeployments name in `spec.sources[].*.auth.secretRef` (DESIGN §1:
 * referenced Secrets are watched), so a rotated credential is noticed within seconds instead of at
 * the next spec change. Metadata only: no Secret data is listed, watched or cached here, and only
 * namespaces that hold a referenced Secret are watched. A change marks the Secret rotated for the
 * BundleDeployments that use it and re-queues them; the reconciler then re-resolves their floating
 * sources with the new credentials (an authenticated HEAD / ref check) and touches nothing pinned.
 *
 * Where the controller may not list Secrets (a namespace outside the chart's RBAC), that
 * namespace is not watched: the watch stops at the first Forbidden and says so once.
 *
 * The same watch, made for kind ConfigMap, follows the ConfigMaps git and http sources name in
 * `caConfigMapRef` (a rotated CA re-checks like a rotated credential).
 */
import type { Logger } from 'pino';
import { isForbidden } from '../../kube/api-error.ts';
import { Informer } from '../../kube/informer.ts';
import type { KubeClient, KubeObject, ListOptions, Reader, TypeRef, Watcher } from '../../kube/types.ts';

export type SecretRotated = (bd: string, secret: string) => void;

export class SecretWatch {
  /** namespace → informer of Secret metadata */
  private readonly informers = new Map<string, Informer>();
  /** BD → "namespace/name" of the Secrets it references */
  private readonly refs = new Map<string, ReadonlySet<string>>();
  /** BD → Secrets changed since its last resolve */
  private readonly rotated = new Map<string, Set<string>>();
  private readonly refused = new Set<string>();

  constructor(
    private readonly client: KubeClient,
    private readonly onRotated: SecretRotated,
    private readonly log: Logger,
    private readonly kind: 'Secret' | 'ConfigMap' = 'Secret',
  ) {}

  /** what a BD references now ("namespace/name"); called from its watch events */
  track(bd: string, secrets: readonly string[]): void {
    if (secrets.length === 0) {
      this.forget(bd);
      return;
    }
    this.refs.set(bd, new Set(secrets));
    for (const s of secrets) this.watchNamespace(s.slice(0, s.indexOf('/')));
  }

  forget(bd: string): void {
    this.refs.delete(bd);
    this.rotated.delete(bd);
  }

  /** the Secrets that changed since the BD's last resolve; clears them */
  takeRotated(bd: string): ReadonlySet<string> {
    const r = this.rotated.get(bd);
    this.rotated.delete(bd);
    return r ?? new Set();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.informers.clear();
  }

  private watchNamespace(namespace: string): void {
    if (this.informers.has(namespace) || this.refused.has(namespace)) return;
    const inf = new Informer({
      client: this.forbiddenStops(namespace),
      type: { apiVersion: 'v1', kind: this.kind },
      namespace,
      metadataOnly: true,
      // nothing but the identity is kept
      transform: (o: KubeObject) => ({
        apiVersion: 'v1',
        kind: this.kind,
        metadata: { name: o.metadata.name, namespace: o.metadata.namespace, resourceVersion: o.metadata.resourceVersion },
      }),
      logger: this.log,
    });
    inf.addHandler({
      onAdd: (o, initial) => {
        if (!initial) this.changed(o);
      },
      onUpdate: (a, b) => {
        if (a.metadata.resourceVersion !== b.metadata.resourceVersion) this.changed(b);
      },
      onDelete: (o) => this.changed(o),
    });
    this.informers.set(namespace, inf);
    inf.start();
  }

  /** the client the informer uses, which stops the namespace's watch on the first Forbidden */
  private forbiddenStops(namespace: string): Reader & Watcher {
    const stopOnForbidden = (e: unknown): never => {
      if (isForbidden(e) && !this.refused.has(namespace)) {
        this.refused.add(namespace);
        this.log.warn(
          { namespace, kind: this.kind },
          `may not list ${this.kind}s in this namespace: rotation there is noticed at the next spec change or poll`,
        );
        const inf = this.informers.get(namespace);
        this.informers.delete(namespace);
        void inf?.stop();
      }
      throw e;
    };
    const c = this.client;
    return {
      get: (type, name, ns) => c.get(type, name, ns),
      list: <T extends KubeObject>(type: TypeRef, opts?: ListOptions) => c.list<T>(type, opts).catch(stopOnForbidden),
      watch: (type, opts) => c.watch(type, opts),
    };
  }

  private changed(o: KubeObject): void {
    const key = `${o.metadata.namespace}/${o.metadata.name}`;
    for (const [bd, secrets] of this.refs) {
      if (!secrets.has(key)) continue;
      let r = this.rotated.get(bd);
      if (!r) this.rotated.set(bd, (r = new Set()));
      r.add(key);
      this.log.info({ bd, [this.kind === 'Secret' ? 'secret' : 'configMap']: key }, `referenced ${this.kind} changed`);
      this.onRotated(bd, key);
    }
  }
}
