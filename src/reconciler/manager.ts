/**
 * Wires the BundleDeployment controller: an informer on BundleDeployments, the managed-object
 * watches, the workqueue and workers, and the stage implementations. `start` returns once the
 * caches are synced and the workers run; `stop` drains in-flight reconciles.
 */
import { StringPool } from '../util/string-pool.ts';
import type { Clock } from '../util/clock.ts';
import { Semaphore } from '../util/concurrency.ts';
import { DEFAULT_OVERRIDE_MANAGERS } from '../apply/field-managers.ts';
import type { Registry } from 'prom-client';
import { API_VERSION, KIND, lineageOf, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { Applier } from '../apply/applier.ts';
import { HookRunner } from '../apply/hooks.ts';
import { RevisionIndex } from '../revisions/revision-index.ts';
import { LABEL_REVISION_OF, REVISION_COMPONENT_SELECTOR, RevisionStore } from '../revisions/revision-store.ts';
import { Controller } from '../kube/controller.ts';
import { Informer } from '../kube/informer.ts';
import type { KubeObject } from '../kube/types.ts';
import { BundleDeploymentReconciler, type ReconcilerDeps } from './bundle-deployment-reconciler.ts';
import { CrdWatch } from './routing/crd-watch.ts';
import { ApiEventRecorder } from './events.ts';
import { Identities } from './identity.ts';
import { ManagedObjects, type OwnerEvent } from './routing/managed-objects.ts';
import { hoistMetrics, targetMetrics, type HoistMetrics } from './metrics.ts';
import { LOCAL_TARGET_KEY, Targets } from './targets.ts';
import { managementServer, type ManagementServer } from '../kube/target-guard.ts';
import type { HealthRules } from '../health/rules/rule-set.ts';
import { SecretWatch } from './routing/secret-watch.ts';
import { PushNotices } from './routing/push-notices.ts';
import { CONFIGMAP_KEY_PREFIX } from './inputs/source-ca.ts';
import {
  dependencyNames,
  DEPENDS_ON_INDEX,
  LINEAGE_INDEX,
  requeuedOnAdd,
  requeuedOnDelete,
  requeuedOnUpdate,
  type BundleDeploymentIndexes,
} from './routing/bundle-deployments.ts';
import { waitsForCrd } from './routing/crd-waiters.ts';
import { changedByOthers, OBJECT_CHANGE_PRIORITY, routeObjectEvent, type ObjectEventView } from './routing/object-events.ts';
import { referencedObjectsOf } from './routing/referenced-objects.ts';

export interface ManagerOptions extends Pick<ReconcilerDeps, 'client' | 'log' | 'controllerNamespace' | 'store' | 'sourceFor' | 'processorFor'> {
  /** concurrent reconciles (default 16): most of a reconcile is waiting on the API server */
  workers?: number;
  /** concurrent fetch + render, the part that holds content in memory and on disk (default 4); also the number of concurrent source resolves that make requests */
  maxConcurrentRenders?: number;
  /** concurrent object applies within one reconcile (default 8) */
  applyConcurrency?: number;
  registry?: Registry;
  /** reconcile only BundleDeployments matching this label selector (sharding, tests) */
  selector?: string;
  /** impersonated for BundleDeployments without spec.serviceAccount (hoist run --default-service-account) */
  defaultServiceAccount?: string;
  /** field managers every apply takes over besides the kubectl ones (hoist run --override-manager) */
  overrideManagers?: readonly string[];
  /** content-store garbage collection period (default 10 min); also runs shortly after a BD is deleted */
  gcIntervalMs?: number;
  /** the largest revision stored, compressed, in bytes (hoist run --max-revision-size; default 8 MiB) */
  maxRevisionBytes?: number;
  /** the time budget of one reconcile in ms (hoist run --reconcile-timeout; default 5 min) */
  reconcileTimeoutMs?: number;
  /** the clock of the reconcile budget's timer (default: clock); tests fire the budget alone */
  budgetClock?: Clock;
  /** the management cluster's API server URL: remote targets may not be it (spec.kubeConfig; default: none checked) */
  managementServer?: string;
  /** hoist run --allow-restricted-targets: remote servers may be the management API server or link-local/metadata addresses */
  allowRestrictedTargets?: boolean;
  /** concurrent reconciles per remote target cluster (default 4) */
  targetConcurrency?: number;
  /** User-Agent of remote clusters' clients too */
  userAgent?: string;
  /** the time of requeues, backoff, progressDeadline, hook deadlines and health-check timing (default: the system clock) */
  clock?: Clock;
  /** transition records of written statuses go here (src/notify) */
  notices?: ReconcilerDeps['notices'];
  /** the health rules in force, for the local and every remote target's watches (hoist run --health-rules ahead of the shipped library; default: the library) */
  healthRules?: HealthRules;
}

/** what one garbage collection did; `skipped` says why it removed nothing */
export interface ContentGcResult {
  removed: string[];
  evicted: string[];
  skipped?: string;
}

const DEFAULT_GC_INTERVAL_MS = 10 * 60_000;
const GC_AFTER_DELETE_MS = 1_000;

export class BundleDeploymentManager {
  readonly controller: Controller;
  readonly reconciler: BundleDeploymentReconciler;
  private readonly bds: Informer<BundleDeployment & KubeObject>;
  private readonly managed: ManagedObjects;
  /** the clusters BDs install into: local, or remote by spec.kubeConfig */
  readonly targets: Targets;
  /** re-queues BDs that skipped optional objects when a CRD becomes Established */
  private readonly crds: CrdWatch;
  private gcTimer: NodeJS.Timeout | undefined;
  private gcSoon: NodeJS.Timeout | undefined;
  private gcRunning: Promise<ContentGcResult> | undefined;
  private metrics: HoistMetrics | undefined;
  private readonly secrets: SecretWatch;
  /** BDs a verified webhook push named (hoist run --webhook-bind-address) */
  readonly pushes: PushNotices;
  /** the ConfigMaps of caConfigMapRef, watched the same way */
  private readonly configMaps: SecretWatch;
  /** which revision Secrets exist (metadata-only watch): no LIST per revision lookup */
  private readonly revisionIndex: RevisionIndex;
  /** per BD being reconciled: versions of its objects whose events arrived meanwhile (managed-objects.ts versionOf) */
  private readonly changedDuring = new Map<string, string[]>();
  /** field managers whose edits count as by hand (taken over by every apply) */
  private readonly overrideManagers: ReadonlySet<string>;

  constructor(private readonly opts: ManagerOptions) {
    const log = opts.log;
    this.overrideManagers = new Set([...DEFAULT_OVERRIDE_MANAGERS, ...(opts.overrideManagers ?? [])]);
    // one pool for the two caches that grow with the BDs: their copies share equal strings
    const strings = new StringPool();
    this.bds = new Informer<BundleDeployment & KubeObject>({
      client: opts.client,
      type: { apiVersion: API_VERSION, kind: KIND },
      ...(opts.selector ? { labelSelector: opts.selector } : {}),
      strings,
      logger: log,
    });
    this.bds.addIndex(LINEAGE_INDEX, (bd) => [lineageOf(bd)]);
    this.bds.addIndex(DEPENDS_ON_INDEX, dependencyNames);
    this.managed = new ManagedObjects(opts.client, this.objectEvents(), log, opts.clock, opts.healthRules, strings);
    this.secrets = new SecretWatch(
      opts.client,
      (bd, secret) => {
        // a rotated kubeconfig Secret: read again at the BD's next reconcile (a new client when it changed)
        this.targets.rotated(bd, secret);
        this.controller.enqueue(bd);
      },
      log,
    );
    this.pushes = new PushNotices(
      () => this.bds.list(),
      (bd) => this.controller.enqueue(bd),
    );
    this.configMaps = new SecretWatch(opts.client, (bd) => this.controller.enqueue(bd), log, 'ConfigMap');
    const applier = new Applier(opts.client, {
      log,
      live: this.managed,
      concurrency: opts.applyConcurrency ?? 8,
      overrideManagers: [...this.overrideManagers],
    });
    const identities = new Identities(opts.client, opts.defaultServiceAccount);
    this.targets = this.newTargets(applier, identities);
    if (opts.registry)
      targetMetrics(
        opts.registry,
        () => this.bds.list(),
        () => this.targets.remoteTargets().map((t) => ({ cluster: t.cluster, reachable: !t.down })),
      );
    this.revisionIndex = new RevisionIndex(opts.client, opts.controllerNamespace, LABEL_REVISION_OF, REVISION_COMPONENT_SELECTOR, log);
    this.reconciler = new BundleDeploymentReconciler(this.reconcilerDeps(applier, identities));
    this.controller = this.newController();
    this.crds = this.newCrdWatch();
    this.bds.addHandler({ onAdd: (bd) => this.onAdd(bd), onUpdate: (a, b) => this.onUpdate(a, b), onDelete: (bd) => this.onDelete(bd) });
  }

  private newController(): Controller {
    const opts = this.opts;
    return new Controller({
      name: 'bundledeployment',
      reconcile: async (key, signal) => {
        try {
          return await this.reconciler.reconcile(key, signal);
        } finally {
          this.afterReconcile(key);
        }
      },
      workers: opts.workers ?? 16,
      logger: opts.log,
      ...(opts.registry ? { registry: opts.registry } : {}),
      clock: opts.clock,
    });
  }

  /** the management cluster's CRDs wake its own BDs; each remote target's CrdWatch wakes its BDs (targets.ts) */
  private newCrdWatch(): CrdWatch {
    return new CrdWatch(
      this.opts.client,
      (crd) =>
        this.wakeCrdWaiters(
          crd,
          this.bds
            .list()
            .map((bd) => bd.metadata.name)
            .filter((name) => this.targets.current(name) === this.targets.local),
        ),
      this.opts.log,
    );
  }

  /** one handler for the watches of every cluster; a remote target's (`target`) reports only its own BDs' objects */
  private objectEvents(target?: string): OwnerEvent {
    const log = this.opts.log;
    const view: ObjectEventView = {
      targetOf: (owner) => this.targets.current(owner).key,
      known: (owner) => this.bds.getByName(owner) !== undefined,
      ignoresMetadata: (owner, metadata) => this.reconciler.ignoresMetadata(owner, metadata.id, metadata),
      processing: (owner) => this.controller.queue.isProcessing(owner),
      overrideManagers: this.overrideManagers,
    };
    return (owner, why, version, metadata) => {
      const route = routeObjectEvent(target, { owner, version, metadata }, view);
      if (route === 'foreign-metadata')
        log.debug({ bd: owner, why, labels: metadata?.labels, annotations: metadata?.annotations }, 'managed object changed: only metadata Hoist does not set');
      if (route !== 'requeue' && route !== 'during-reconcile') return;
      // logged whether decided now or when its reconcile ends (tests read it to see which BDs a shard looked at)
      log.debug({ bd: owner, why }, 'managed object changed');
      if (route === 'requeue') {
        this.controller.enqueue(owner, OBJECT_CHANGE_PRIORITY);
        return;
      }
      if (version === undefined) return; // 'during-reconcile' carries one; the check narrows the type
      const versions = this.changedDuring.get(owner);
      if (versions) versions.push(version);
      else this.changedDuring.set(owner, [version]);
    };
  }

  /** the clusters BDs install into: the local one (this applier, these watches) and remote ones by spec.kubeConfig */
  private newTargets(applier: Applier, identities: Identities): Targets {
    const opts = this.opts;
    let management: Promise<ManagementServer | undefined> | undefined;
    return new Targets({
      local: { key: LOCAL_TARGET_KEY, cluster: undefined, client: opts.client, identities, applier, managed: this.managed },
      management: identities,
      log: opts.log,
      onObjectEvent: (target) => this.objectEvents(target),
      requeue: (bds) => {
        for (const bd of bds) this.controller.enqueue(bd, OBJECT_CHANGE_PRIORITY);
      },
      onCrdEstablished: (users, crd, cluster) => this.wakeCrdWaiters(crd, users, cluster),
      managementServer: () =>
        (management ??= opts.managementServer ? managementServer(opts.managementServer).catch(() => undefined) : Promise.resolve(undefined)),
      ...(opts.allowRestrictedTargets ? { allowRestricted: true } : {}),
      ...(opts.targetConcurrency !== undefined ? { concurrency: opts.targetConcurrency } : {}),
      applyConcurrency: opts.applyConcurrency ?? 8,
      overrideManagers: [...this.overrideManagers],
      ...(opts.defaultServiceAccount ? { defaultServiceAccount: opts.defaultServiceAccount } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.userAgent ? { userAgent: opts.userAgent } : {}),
      ...(opts.healthRules ? { healthRules: opts.healthRules } : {}),
    });
  }

  /** the reconciler's stages, as this process wires them */
  private reconcilerDeps(applier: Applier, identities: Identities): ReconcilerDeps {
    const opts = this.opts;
    const log = opts.log;
    return {
      client: opts.client,
      targets: this.targets,
      log,
      controllerNamespace: opts.controllerNamespace,
      store: opts.store,
      sourceFor: opts.sourceFor,
      processorFor: opts.processorFor,
      applier,
      hooks: new HookRunner({ log, clock: opts.clock }),
      renders: new Semaphore(opts.maxConcurrentRenders ?? 4),
      // resolves get their own slots (as many): a resolve never waits behind a long render
      resolves: new Semaphore(opts.maxConcurrentRenders ?? 4),
      identities,
      revisions: new RevisionStore(opts.client, opts.controllerNamespace, this.revisionIndex, opts.maxRevisionBytes),
      managed: this.managed,
      events: new ApiEventRecorder(opts.client, log),
      getBundleDeployment: (name) => this.bds.getByName(name),
      listBundleDeployments: () => this.bds.list(),
      lineageMembers: (lineage) => this.bds.byIndex(LINEAGE_INDEX, lineage),
      ...(opts.reconcileTimeoutMs !== undefined ? { reconcileTimeoutMs: opts.reconcileTimeoutMs } : {}),
      ...(opts.budgetClock ? { budgetClock: opts.budgetClock } : {}),
      dependentsOf: (name) => this.bds.byIndex(DEPENDS_ON_INDEX, name),
      ...(opts.registry ? { metrics: (this.metrics = hoistMetrics(opts.registry, () => this.bds.list())) } : {}),
      pushes: this.pushes,
      ...(opts.notices ? { notices: opts.notices } : {}),
      clock: opts.clock,
      secrets: {
        takeRotated: (bd) => new Set([...this.secrets.takeRotated(bd), ...[...this.configMaps.takeRotated(bd)].map((k) => `${CONFIGMAP_KEY_PREFIX}${k}`)]),
      },
    };
  }

  /** the BundleDeployment informer's indexes, for the map functions of routing/bundle-deployments.ts */
  private readonly indexes: BundleDeploymentIndexes = {
    lineageMembers: (lineage) => this.bds.byIndex(LINEAGE_INDEX, lineage).map((bd) => bd.metadata.name),
    dependentsOf: (name) => this.bds.byIndex(DEPENDS_ON_INDEX, name).map((bd) => bd.metadata.name),
  };

  private onAdd(bd: BundleDeployment): void {
    // before the reconcile: its managed-object watches must evaluate the checks from the first event
    this.managed.setProbes(bd.metadata.name, bd.spec.healthChecks);
    this.trackSecrets(bd);
    this.controller.enqueue(bd.metadata.name);
    this.enqueueAll(requeuedOnAdd(bd, this.indexes));
  }

  private onUpdate(a: BundleDeployment, b: BundleDeployment): void {
    this.managed.setProbes(b.metadata.name, b.spec.healthChecks);
    this.trackSecrets(b);
    // not for the event of our own status or finalizer write: that reconcile already saw everything
    this.reconciler.updateEvent(a, b, () => this.controller.enqueue(b.metadata.name));
    this.enqueueAll(requeuedOnUpdate(a, b, this.indexes));
  }

  private onDelete(bd: BundleDeployment): void {
    this.reconciler.forget(bd.metadata.name);
    this.managed.forgetProbes(bd.metadata.name);
    this.secrets.forget(bd.metadata.name);
    this.pushes.forget(bd.metadata.name);
    this.configMaps.forget(bd.metadata.name);
    this.enqueueAll(requeuedOnDelete(bd, this.indexes));
    this.scheduleGc();
  }

  private enqueueAll(names: readonly string[]): void {
    for (const name of names) this.controller.enqueue(name);
  }

  /**
   * starts watches, then workers once every cache a reconcile reads is synced (as controller-runtime
   * waits for its sources): a reconcile before that would ask the API server instead (a LIST of
   * revision Secrets per lookup) or see a partial picture
   */
  async start(signal?: AbortSignal): Promise<void> {
    this.bds.start();
    this.crds.start();
    this.revisionIndex.start();
    await Promise.all([this.bds.waitForSync(signal), this.revisionIndex.waitForSync(signal)]);
    this.controller.start(signal);
    this.gcTimer = setInterval(() => void this.collectGarbage(), this.opts.gcIntervalMs ?? DEFAULT_GC_INTERVAL_MS);
    this.gcTimer.unref();
    this.opts.log.info({ bundleDeployments: this.bds.list().length }, 'controller started');
  }

  /** the caches reconciles read are synced (readiness) */
  hasSynced(): boolean {
    return this.bds.hasSynced() && this.revisionIndex.hasSynced();
  }

  /**
   * Removes content no BundleDeployment's current resolution needs, then enforces the store's
   * size budget (when the store has one). Does nothing until every BundleDeployment has been
   * reconciled since start: before that the controller does not know what is still needed.
   * Rendered revisions live in the cluster, so a rollback never needs collected content. Never
   * runs twice at once; safe to call any time.
   */
  collectGarbage(): Promise<ContentGcResult> {
    this.gcRunning ??= this.runGc().finally(() => {
      this.gcRunning = undefined;
    });
    return this.gcRunning;
  }

  private async runGc(): Promise<ContentGcResult> {
    const keep = this.reconciler.contentInUse();
    if (!keep) return { removed: [], evicted: [], skipped: 'not every BundleDeployment has been reconciled since start' };
    try {
      const removed = await this.opts.store.gc(keep);
      const evicted = (await this.opts.store.enforceBudget?.(keep)) ?? [];
      if (removed.length) this.metrics?.cacheEvictions.inc({ why: 'unused' }, removed.length);
      if (evicted.length) this.metrics?.cacheEvictions.inc({ why: 'budget' }, evicted.length);
      if (removed.length || evicted.length)
        this.opts.log.info({ removed: removed.length, evicted: evicted.length, kept: keep.size }, 'content store garbage collected');
      return { removed, evicted };
    } catch (e) {
      this.opts.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'content store garbage collection failed');
      return { removed: [], evicted: [], skipped: 'failed' };
    }
  }

  /** a deleted BD may have been the last user of some content: collect soon (debounced) */
  private scheduleGc(): void {
    if (this.gcSoon || !this.gcTimer) return;
    this.gcSoon = setTimeout(() => {
      this.gcSoon = undefined;
      void this.collectGarbage();
    }, GC_AFTER_DELETE_MS);
    this.gcSoon.unref();
  }

  async stop(deadlineMs = 30_000): Promise<void> {
    clearInterval(this.gcTimer);
    clearTimeout(this.gcSoon);
    this.gcTimer = undefined;
    this.gcSoon = undefined;
    await this.controller.stop(deadlineMs);
    await this.bds.stop();
    await this.crds.stop();
    await this.managed.stop();
    await this.secrets.stop();
    await this.configMaps.stop();
    await this.revisionIndex.stop();
    await this.targets.stop();
    await this.gcRunning;
  }

  /**
   * A CRD became Established on the cluster of `names` (the management cluster's own BDs, or a
   * remote target's, `cluster`): those that skipped optional objects or whose revision is retrying
   * or blocked (an unserved kind among the likely causes) look again now rather than at the end of
   * a backoff.
   */
  private wakeCrdWaiters(crd: string, names: readonly string[], cluster?: string): void {
    for (const name of names) {
      const bd = this.bds.getByName(name);
      if (!bd || !waitsForCrd(bd)) continue;
      this.opts.log.debug({ bd: name, crd, ...(cluster ? { target: cluster } : {}) }, 'CRD established: looking again');
      this.controller.enqueue(name);
    }
  }

  private trackSecrets(bd: BundleDeployment): void {
    const refs = referencedObjectsOf(bd, this.opts.controllerNamespace, this.opts.defaultServiceAccount);
    this.secrets.track(bd.metadata.name, refs.secrets);
    this.configMaps.track(bd.metadata.name, refs.configMaps);
  }

  /** object events that arrived while the BD was reconciled: again, before fresh work, unless all were its own writes */
  private afterReconcile(name: string): void {
    const arrived = this.changedDuring.get(name);
    this.changedDuring.delete(name);
    if (changedByOthers(arrived, this.managed.takeSeenWrites(name))) this.controller.enqueue(name, OBJECT_CHANGE_PRIORITY);
  }
}
