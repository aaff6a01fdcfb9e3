/**
 * The real BundleDeploymentReconciler wired to the fakes of this folder instead of a cluster: a
 * FakeKube holding the BundleDeployments and the objects the FakeApplier writes, a
 * FakeRevisionStore, FakeManagedObjects, FakeHooks, FakeEvents, and a FakeSource + FakeProcessor
 * serving bundles a test publishes. Time is the world's FakeClock (test/support/fake-clock.ts): it
 * moves only when the test (or `reconcile`, by the status-write spacing) moves it. Everything the pipeline decides runs as in
 * production; what runs here instead of the cluster is listed in README.md.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import {
  API_VERSION,
  KIND,
  lineageOf,
  type BundleDeployment,
  type BundleDeploymentSpec,
  type Condition,
  type ConditionType,
} from '../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../src/cache/fs-content-store.ts';
import type { ReconcileResult } from '../../../src/kube/controller.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { BundleDeploymentReconciler } from '../../../src/reconciler/bundle-deployment-reconciler.ts';
import { getCondition } from '../../../src/reconciler/conditions.ts';
import type { Actor } from '../../../src/reconciler/identity.ts';
import type { PipelineIdentities } from '../../../src/reconciler/pipeline/context.ts';
import { MIN_STATUS_WRITE_INTERVAL_MS } from '../../../src/reconciler/status-writes.ts';
import { Semaphore } from '../../../src/util/concurrency.ts';
import { FakeClock } from '../fake-clock.ts';
import { FakeApplier } from './applier.ts';
import { FakeProcessor, FakeSource } from './bundles.ts';
import { FakeEvents } from './events.ts';
import { FakeHooks } from './hooks.ts';
import { FakeKube } from './kube.ts';
import { FakeManagedObjects } from './managed.ts';
import { FakeRevisionStore } from './revisions.ts';

/** the controller acts for every BD (no ServiceAccount): impersonation is identity.ts's own test */
class ControllerActs implements PipelineIdentities {
  readonly defaultServiceAccount = undefined;
  constructor(private readonly kube: FakeKube) {}
  for(): Actor {
    return { client: this.kube };
  }
}

/** what one reconcile came to: its result, or the error it threw (the controller retries with backoff) */
export type Outcome = { result: ReconcileResult; error?: undefined } | { result?: undefined; error: Error };

export class FakeWorld {
  readonly kube = new FakeKube();
  readonly applier = new FakeApplier(this.kube);
  readonly revisions = new FakeRevisionStore();
  readonly managed = new FakeManagedObjects(this.kube);
  readonly events = new FakeEvents();
  readonly source = new FakeSource();
  readonly processor = new FakeProcessor();
  readonly hooks: FakeHooks;
  readonly reconciler: BundleDeploymentReconciler;
  /** the time the reconciler sees: it moves only when the test (or `reconcile`) moves it */
  readonly clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));

  private constructor(private readonly dir: string) {
    this.hooks = new FakeHooks(() => new Date(this.clock.now()));
    const bds = (): BundleDeployment[] => this.kube.listNow<BundleDeployment & KubeObject>({ apiVersion: API_VERSION, kind: KIND });
    this.reconciler = new BundleDeploymentReconciler({
      client: this.kube,
      log: pino({ level: 'silent' }),
      controllerNamespace: 'hoist-system',
      store: new FsContentStore({ root: join(dir, 'content') }),
      sourceFor: () => this.source,
      processorFor: () => this.processor,
      dependentsOf: (name) => bds().filter((b) => b.spec.dependsOn?.some((d) => d.name === name)),
      applier: this.applier,
      hooks: this.hooks,
      renders: new Semaphore(2),
      resolves: new Semaphore(2),
      identities: new ControllerActs(this.kube),
      revisions: this.revisions,
      managed: this.managed,
      events: this.events,
      getBundleDeployment: (name) => bds().find((bd) => bd.metadata.name === name),
      listBundleDeployments: bds,
      lineageMembers: (lineage) => bds().filter((bd) => lineageOf(bd) === lineage),
      clock: this.clock,
    });
  }

  static async create(): Promise<FakeWorld> {
    return new FakeWorld(await mkdtemp(join(tmpdir(), 'hoist-fakes-')));
  }

  async dispose(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  async advance(ms: number): Promise<void> {
    await this.clock.advance(ms);
  }

  /** creates the BundleDeployment, or sets its spec (a new generation when the spec changed) */
  put(name: string, spec: BundleDeploymentSpec): BundleDeployment {
    const live = this.bd(name);
    const changed = !live || JSON.stringify(live.spec) !== JSON.stringify(spec);
    const generation = (live?.metadata.generation ?? 0) + (changed ? 1 : 0);
    return this.kube.put({ ...(live ?? { apiVersion: API_VERSION, kind: KIND }), metadata: { ...live?.metadata, name, generation }, spec } as BundleDeployment &
      KubeObject);
  }

  /** the BundleDeployment as stored */
  bd(name: string): BundleDeployment | undefined {
    return this.kube.peek({ apiVersion: API_VERSION, kind: KIND }, name) as BundleDeployment | undefined;
  }

  condition(name: string, type: ConditionType): Condition | undefined {
    return getCondition(this.bd(name)?.status?.conditions, type);
  }

  /**
   * One reconcile, as a worker runs it, after MIN_STATUS_WRITE_INTERVAL_MS have passed (so its
   * status is written, not deferred by the write spacing).
   */
  async reconcile(name: string): Promise<Outcome> {
    await this.advance(MIN_STATUS_WRITE_INTERVAL_MS);
    try {
      return { result: await this.reconciler.reconcile(name) };
    } catch (e) {
      return { error: e as Error };
    }
  }
}
