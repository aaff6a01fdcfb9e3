/**
 * The observe stage's eyes: one informer per kind Hoist manages, selecting objects by Hoist's
 * owner label, each cached as a small summary (metadata fingerprint and health verdict — never the
 * object). It answers the applier's "is this object still as I left it?" without a GET, computes
 * health, and tells the reconciler which BundleDeployment to re-queue when an object drifts or is
 * deleted.
 */
import type { Logger } from 'pino';
import { LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import { liveFingerprint, liveMetaOf, type LiveIndex, type LiveMeta } from '../apply/live-index.ts';
import { groupOf, objectId } from '../apply/object-id.ts';
import { readinessOf, type HealthVerdict } from '../health/readiness.ts';
import { Informer } from '../kube/informer.ts';
import type { KubeClient, KubeObject, TypeRef } from '../kube/types.ts';

/** what the cache keeps per object */
interface Summary extends KubeObject {
  live: LiveMeta;
  health: HealthVerdict;
}

export type OwnerEvent = (ownerName: string, why: string) => void;

export class ManagedObjects implements LiveIndex {
  /** group/kind → informer */
  private readonly informers = new Map<string, Informer<Summary>>();

  constructor(
    private readonly client: KubeClient,
    private readonly onChange: OwnerEvent,
    private readonly log: Logger,
  ) {}

  /** starts watching the kinds not watched yet and waits until their caches are synced */
  async watch(types: readonly TypeRef[], signal?: AbortSignal): Promise<void> {
    const started: Informer<Summary>[] = [];
    for (const t of types) {
      const gk = `${groupOf(t.apiVersion)}/${t.kind}`;
      if (this.informers.has(gk)) continue;
      const inf = new Informer<Summary>({
        client: this.client,
        type: { apiVersion: t.apiVersion, kind: t.kind },
        labelSelector: LABEL_OWNER_NAME,
        transform: summarize,
        logger: this.log,
      });
      inf.addHandler({
        onAdd: (o, initial) => {
          if (!initial) this.notify(o, 'created');
        },
        onUpdate: (a, b) => {
          if (liveFingerprint(a.live) !== liveFingerprint(b.live) || a.health.readiness !== b.health.readiness) this.notify(b, 'changed');
          // handed over (or taken): the previous owner must learn that it no longer owns the object
          if (a.live.labels?.[LABEL_OWNER_NAME] !== b.live.labels?.[LABEL_OWNER_NAME]) this.notify(a, 'handed over');
        },
        onDelete: (o) => this.notify(o, 'deleted'),
      });
      this.informers.set(gk, inf);
      inf.start();
      started.push(inf);
    }
    await Promise.all(started.map((i) => i.waitForSync(signal)));
  }

  get(id: string): LiveMeta | undefined {
    return this.summary(id)?.live;
  }

  /** health of one object; undefined when not observed (not created yet, or not watched) */
  health(id: string): HealthVerdict | undefined {
    return this.summary(id)?.health;
  }

  /** true when the object's kind is watched and synced, so a miss means "does not exist" */
  knows(id: string): boolean {
    const [group, kind] = id.split('/');
    return this.informers.get(`${group}/${kind}`)?.hasSynced() ?? false;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.informers.clear();
  }

  private summary(id: string): Summary | undefined {
    const [group, kind, namespace, ...rest] = id.split('/');
    const inf = this.informers.get(`${group}/${kind}`);
    return inf?.getByName(rest.join('/'), namespace || undefined);
  }

  private notify(o: Summary, why: string): void {
    const owner = o.live.labels?.[LABEL_OWNER_NAME];
    if (owner) this.onChange(owner, `${objectId(o)} ${why}`);
  }
}

function summarize(obj: KubeObject): Summary {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace },
    live: liveMetaOf(obj),
    health: readinessOf(obj),
  };
}
