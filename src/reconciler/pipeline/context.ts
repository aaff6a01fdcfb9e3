/**
 * What every step of a reconcile shares: the stage implementations (deps), the per-BD memory that
 * outlives one reconcile (rendered and loaded revision objects), and the small helpers that name
 * who acts for a BD and where its objects are. Steps receive it with the per-reconcile state.
 */
import type { Clock } from '../../util/clock.ts';
import type { Semaphore } from '../../util/concurrency.ts';
import type { Logger } from 'pino';
import type { DefaultedSpec } from '../../../api/v1alpha2/defaults.ts';
import type { BundleDeployment, Inventory } from '../../../api/v1alpha2/types.ts';
import type { Applier } from '../../apply/applier.ts';
import { applyTargetOf, type ApplyTarget } from '../../apply/plan.ts';
import type { HookRunner } from '../../apply/hooks.ts';
import { RevisionEngine, type RevisionRunner } from '../../apply/revision-engine.ts';
import type { RevisionStore } from '../../revisions/revision-store.ts';
import type { ContentStore } from '../../cache/content-store.ts';
import type { KubeClient, KubeObject, TypeRef } from '../../kube/types.ts';
import type { Processor } from '../../processors/processor.ts';
import type { Source } from '../../sources/source.ts';
import type { EventRecorder } from '../events.ts';
import type { Identities } from '../identity.ts';
import type { ManagedObjects } from '../routing/managed-objects.ts';
import { inventoryOf, revisionSecretsOf } from '../../revisions/inventory.ts';
import type { HoistMetrics } from '../metrics.ts';
import type { RevisionObjects } from '../../revisions/revision-objects.ts';
import type { PushNotices } from '../routing/push-notices.ts';
import type { SecretWatch } from '../routing/secret-watch.ts';
import type { Targets } from '../targets.ts';
import type { TransitionRecord } from '../../notify/transitions.ts';

/*
 * What the pipeline asks of each stage implementation: the smallest part of each class the steps
 * call, so the reconciler runs as well over in-memory fakes (test/support/fakes/) as over the
 * real ones manager.ts wires.
 */
/** the SSA applier (src/apply/applier.ts) */
export type PipelineApplier = Pick<Applier, 'apply' | 'ensureInstallNamespace' | 'writtenUid' | 'forget'>;
/** the Helm hook runner (src/apply/hooks.ts) */
export type PipelineHooks = Pick<HookRunner, 'run'>;
/** the revision Secrets (src/revisions/revision-store.ts) */
export type PipelineRevisions = Pick<RevisionStore, 'pack' | 'save' | 'isStored' | 'list' | 'findByInputs' | 'load' | 'prune'>;
/** the managed-object watches: health, health-check verdicts, observed writes (managed-objects.ts) */
export type PipelineManaged = Pick<ManagedObjects, 'watch' | 'setProbes' | 'settled' | 'probeError' | 'health' | 'checkVerdicts' | 'observedWrites'>;
/** who acts for a BD (identity.ts) */
export type PipelineIdentities = Pick<Identities, 'for' | 'defaultServiceAccount'>;

/** the clusters BDs install into (targets.ts) */
export type PipelineTargets = Pick<Targets, 'for' | 'current' | 'local' | 'release'>;

export interface ReconcilerDeps {
  /** the controller's client on the management cluster (BDs, their status, revisions, Secrets) */
  client: KubeClient;
  /** the client of the cluster this reconcile installs into (set per reconcile for a remote BD; default client) */
  cluster?: KubeClient;
  /** spec.kubeConfig: where each BD installs (optional: tests and the fakes install locally) */
  targets?: PipelineTargets;
  log: Logger;
  /** where revision Secrets and (without serviceAccount) source credentials live */
  controllerNamespace: string;
  store: ContentStore;
  sourceFor(kind: string): Source;
  processorFor(format: string): Processor;
  applier: PipelineApplier;
  /** runs Helm hooks (src/apply/hooks.ts) */
  hooks: PipelineHooks;
  /** bounds fetch + render (memory, disk, CPU) below the number of workers, which mostly wait on the API server */
  renders: Semaphore;
  /** bounds source resolves that may make requests (every BD's, each source apart); never held with `renders` */
  resolves: Semaphore;
  /** who acts for each BD: its ServiceAccount (impersonated) or the controller */
  identities: PipelineIdentities;
  revisions: PipelineRevisions;
  managed: PipelineManaged;
  events: EventRecorder;
  /** the informer cache of BundleDeployments */
  getBundleDeployment(name: string): BundleDeployment | undefined;
  listBundleDeployments(): BundleDeployment[];
  /** the cached BundleDeployments of one lineage (an index: no scan of every BD per reconcile) */
  lineageMembers(lineage: string): BundleDeployment[];
  /** the time budget of one reconcile in ms (hoist run --reconcile-timeout; default 5 min) */
  reconcileTimeoutMs?: number;
  /** the clock of the reconcile budget's timer (default: clock); tests fire the budget alone */
  budgetClock?: Clock;
  /** the time of status timestamps, progressDeadline and health-check timing (default: the system clock) */
  clock?: Clock;
  /** the cached BundleDeployments whose spec.dependsOn names `name` (an index) */
  dependentsOf(name: string): BundleDeployment[];
  /** Hoist's own metrics (optional: tests and `hoist render` run without) */
  metrics?: HoistMetrics;
  /** which referenced Secrets changed since a BD's last resolve */
  secrets?: Pick<SecretWatch, 'takeRotated'>;
  /** whether a verified webhook push named a BD's repository and branch since its last resolve */
  pushes?: Pick<PushNotices, 'takePushed'>;
  /** takes the transitions of each written status (src/notify; never blocks the reconcile) */
  notices?: NoticeSink;
}

/** where the reconciler hands transition records (src/notify/dispatcher.ts): must return at once */
export interface NoticeSink {
  record(records: readonly TransitionRecord[]): void;
  forget(bd: string): void;
}

export interface StepContext {
  readonly d: ReconcilerDeps;
  readonly objects: RevisionObjects;
  /** per BD: rotated Secrets/ConfigMaps whose re-check has not succeeded yet (a failed one is retried, not forgotten) */
  readonly pendingRotations: Map<string, ReadonlySet<string>>;
  /** per BD with spec.decryption: the strings kept out of its status, Events and log lines (redaction.ts) */
  readonly redactions: Map<string, readonly string[]>;
}

/** the client acting for bd: its ServiceAccount (impersonated) or the controller */
export function actor(ctx: StepContext, bd: BundleDeployment): KubeClient {
  return ctx.d.identities.for(bd).client;
}

/** the client of the cluster the BD installs into: its discovery, its pods (the kubeconfig's identity for a remote BD) */
export function clusterClient(ctx: StepContext): KubeClient {
  return ctx.d.cluster ?? ctx.d.client;
}

/** prune's and uninstall's check that an object is the one this process wrote for bd (by uid) */
export function writtenUid(ctx: StepContext, bd: BundleDeployment): (obj: KubeObject) => string | undefined {
  return (obj) => ctx.d.applier.writtenUid(bd.metadata.name, obj);
}

/**
 * The revision engine over this reconcile's applier (the target cluster's): the pipeline hands it
 * each revision it applies — a new one, the installed one again, a rollback — and reads one result.
 */
export function revisionEngine(ctx: StepContext): RevisionRunner {
  return new RevisionEngine(ctx.d.applier);
}

/** status.activeRevision.inventory of revision `revision` of bd (the inventory names its revision Secrets when it is truncated) */
export function inventory(ctx: StepContext, bd: BundleDeployment, revision: number, objects: readonly KubeObject[]): Inventory {
  return inventoryOf(objects, revisionSecretsOf(ctx.d.controllerNamespace, bd.metadata.name, revision));
}

/** what the applier needs to apply revision `revision` of bd (the target `hoist diff` plans with too) */
export function applyTarget(ctx: StepContext, bd: BundleDeployment, spec: DefaultedSpec, revision: number): ApplyTarget {
  return applyTargetOf(bd, spec, revision, actor(ctx, bd));
}

/** the kinds among objects that the API server serves (skipped optional objects' kinds are not) */
export async function servedTypes(ctx: StepContext, objects: readonly KubeObject[]): Promise<TypeRef[]> {
  const seen = new Map<string, TypeRef>();
  for (const o of objects) {
    const k = `${o.apiVersion}/${o.kind}`;
    // no discovery refresh for unserved kinds (skipped optional objects) on every reconcile: the
    // applier and the CRD watch refresh discovery when a kind can have appeared
    if (!seen.has(k) && (await clusterClient(ctx).discovery.resourceFor(o, { refreshOnMiss: false }))) seen.set(k, { apiVersion: o.apiVersion, kind: o.kind });
  }
  return [...seen.values()];
}

/** starts (or keeps) the managed-object watches for the kinds of objects */
export async function watchObjects(ctx: StepContext, objects: readonly KubeObject[], signal?: AbortSignal): Promise<void> {
  await ctx.d.managed.watch(await servedTypes(ctx, objects), signal);
}
