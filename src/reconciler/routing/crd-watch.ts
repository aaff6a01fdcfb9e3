/**
 * Optional objects wait for their API (DESIGN §2 Apply): this watches CustomResourceDefinitions
 * and, when one becomes Established, refreshes discovery and calls `onEstablished` so the manager
 * can re-queue the BundleDeployments that skipped optional objects or wait on a failed apply (an
 * unserved kind among the causes). The cache keeps only each
 * CRD's name and Established flag — CRDs can be hundreds of KiB each.
 */
import type { Logger } from 'pino';
import { Informer } from '../../kube/informer.ts';
import type { KubeClient, KubeObject } from '../../kube/types.ts';
import { sleep } from '../../util/sleep.ts';

interface CrdSummary extends KubeObject {
  established: boolean;
  /** "group/version" of the first served version and the kind, to ask discovery about */
  served: { apiVersion: string; kind: string } | undefined;
}

/** how long to wait for discovery to serve a kind after its CRD became Established */
const SERVED_TIMEOUT_MS = 15_000;

export class CrdWatch {
  private readonly informer: Informer<CrdSummary>;
  private stopped = false;

  constructor(client: KubeClient, onEstablished: (crd: string) => void, log: Logger) {
    this.informer = new Informer<CrdSummary>({
      client,
      type: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' },
      transform: (o) => ({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name }, established: isEstablished(o), served: servedType(o) }),
      logger: log,
    });
    // Established can precede discovery serving the kind by a moment: wait until it is served,
    // so the re-queued reconcile does not skip the object again
    const fire = async (crd: CrdSummary): Promise<void> => {
      const deadline = Date.now() + SERVED_TIMEOUT_MS;
      for (;;) {
        client.discovery.invalidate();
        const served = !crd.served || (await client.discovery.resourceFor(crd.served).catch(() => undefined));
        if (served || Date.now() > deadline || this.stopped) break;
        await sleep(200);
      }
      if (!this.stopped) onEstablished(crd.metadata.name);
    };
    this.informer.addHandler({
      onAdd: (crd, initial) => {
        if (!initial && crd.established) void fire(crd);
      },
      onUpdate: (a, b) => {
        if (!a.established && b.established) void fire(b);
      },
    });
  }

  start(): void {
    this.informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }
}

function isEstablished(o: KubeObject): boolean {
  const conds = (o.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions ?? [];
  return conds.some((c) => c.type === 'Established' && c.status === 'True');
}

function servedType(o: KubeObject): { apiVersion: string; kind: string } | undefined {
  const spec = o.spec as { group?: string; names?: { kind?: string }; versions?: Array<{ name: string; served?: boolean }> } | undefined;
  const version = spec?.versions?.find((v) => v.served !== false)?.name;
  return spec?.group && version && spec.names?.kind ? { apiVersion: `${spec.group}/${version}`, kind: spec.names.kind } : undefined;
}
