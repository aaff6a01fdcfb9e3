/**
 * Wires the BundleDeployment controller: an informer on BundleDeployments, the managed-object
 * watches, the workqueue and workers, and the stage implementations. `start` returns once the
 * caches are synced and the workers run; `stop` drains in-flight reconciles.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { API_VERSION, KIND, lineageOf, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { Applier } from '../apply/applier.ts';
import { RevisionStore } from '../apply/revision-store.ts';
import type { ContentStore } from '../cache/content-store.ts';
import { Controller } from '../kube/controller.ts';
import { Informer } from '../kube/informer.ts';
import type { KubeClient, KubeObject } from '../kube/types.ts';
import type { Processor } from '../processors/processor.ts';
import type { Source } from '../sources/source.ts';
import { BundleDeploymentReconciler } from './bundle-deployment-reconciler.ts';
import { ApiEventRecorder } from './events.ts';
import { ManagedObjects } from './managed-objects.ts';

export interface ManagerOptions {
  client: KubeClient;
  log: Logger;
  controllerNamespace: string;
  store: ContentStore;
  sourceFor(kind: string): Source;
  processorFor(format: string): Processor;
  /** concurrent reconciles (default 4) */
  workers?: number;
  /** concurrent object applies within one reconcile (default 8) */
  applyConcurrency?: number;
  registry?: Registry;
  /** reconcile only BundleDeployments matching this label selector (sharding, tests) */
  selector?: string;
}

export class BundleDeploymentManager {
  readonly controller: Controller;
  readonly reconciler: BundleDeploymentReconciler;
  private readonly bds: Informer<BundleDeployment & KubeObject>;
  private readonly managed: ManagedObjects;

  constructor(private readonly opts: ManagerOptions) {
    const log = opts.log;
    this.bds = new Informer<BundleDeployment & KubeObject>({
      client: opts.client,
      type: { apiVersion: API_VERSION, kind: KIND },
      ...(opts.selector ? { labelSelector: opts.selector } : {}),
      logger: log,
    });
    this.managed = new ManagedObjects(opts.client, (owner, why) => {
      log.debug({ bd: owner, why }, 'managed object changed');
      this.controller.enqueue(owner);
    }, log);
    const applier = new Applier(opts.client, { log, live: this.managed, concurrency: opts.applyConcurrency ?? 8 });
    this.reconciler = new BundleDeploymentReconciler({
      client: opts.client,
      log,
      controllerNamespace: opts.controllerNamespace,
      store: opts.store,
      sourceFor: opts.sourceFor,
      processorFor: opts.processorFor,
      applier,
      revisions: new RevisionStore(opts.client, opts.controllerNamespace),
      managed: this.managed,
      events: new ApiEventRecorder(opts.client, log),
      getBundleDeployment: (name) => this.bds.getByName(name),
      listBundleDeployments: () => this.bds.list(),
    });
    this.controller = new Controller({
      name: 'bundledeployment',
      reconcile: (key, signal) => this.reconciler.reconcile(key, signal),
      workers: opts.workers ?? 4,
      logger: log,
      ...(opts.registry ? { registry: opts.registry } : {}),
    });
    this.bds.addHandler({
      onAdd: (bd) => {
        this.controller.enqueue(bd.metadata.name);
        // a newer member of a lineage takes over: the older ones must learn that they lost
        this.enqueueLineage(bd);
      },
      onUpdate: (a, b) => {
        this.controller.enqueue(b.metadata.name);
        // a lineage's other members may now win or lose arbitration
        const moved = lineageOf(a) !== lineageOf(b);
        if (moved) this.enqueueLineage(a);
        if (moved || a.spec.paused !== b.spec.paused || a.metadata.deletionTimestamp !== b.metadata.deletionTimestamp) this.enqueueLineage(b);
      },
      onDelete: (bd) => {
        this.reconciler.forget(bd.metadata.name);
        this.enqueueLineage(bd);
      },
    });
  }

  /** starts watches and workers; resolves when the BundleDeployment cache is synced */
  async start(signal?: AbortSignal): Promise<void> {
    this.bds.start();
    await this.bds.waitForSync(signal);
    this.controller.start(signal);
    this.opts.log.info({ bundleDeployments: this.bds.list().length }, 'controller started');
  }

  /** the BundleDeployment cache is synced (readiness) */
  hasSynced(): boolean {
    return this.bds.hasSynced();
  }

  async stop(deadlineMs = 30_000): Promise<void> {
    await this.controller.stop(deadlineMs);
    await this.bds.stop();
    await this.managed.stop();
  }

  private enqueueLineage(bd: BundleDeployment): void {
    const lineage = lineageOf(bd);
    for (const other of this.bds.list()) if (lineageOf(other) === lineage) this.controller.enqueue(other.metadata.name);
  }
}
