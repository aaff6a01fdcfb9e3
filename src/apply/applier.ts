/**
 * The server-side applier (DESIGN §2 Apply, §4) at the level of a revision's steps, over the
 * phase level (phase-engine.ts, one step's objects) and the object level (object-engine.ts, one
 * object), after boxcutter's machinery: one field manager per lineage; the steps of phases.ts in
 * order (objects of the bundle's own CRD kinds once those CRDs are Established and served); after
 * each step a gate may stop the apply until what it applied is ready (the reconciler's, for a new
 * revision). What it decides before any write — preparation, driftIgnore, collision verdicts,
 * whose fields it takes over — is plan.ts's (the plan `hoist diff` previews too), so a refused
 * takeover changes nothing. In a bundle without CRDs or Namespaces an object the synced watches do
 * not know is created without that read (one request per new object instead of two). Objects
 * whose desired state and live fingerprint are as after the last apply are not sent at all
 * (applied-records.ts). The revision level — hooks, this apply, prune, one result — is
 * revision-engine.ts's.
 */
import type { Logger } from 'pino';
import { describeObject, type KubeClient, type KubeObject } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';
import { CancelledError, throwIfCancelled } from '../util/errors.ts';
import { AppliedRecords } from './applied-records.ts';
import { waitEstablished, waitServed } from './crd-established.ts';
import { crdUpgradeProblems, describeCrdRefusal } from './crd-safety.ts';
import { UnsafeCrdChangeError } from './errors.ts';
import { DEFAULT_OVERRIDE_MANAGERS } from './field-managers.ts';
import { InstallNamespaces } from './install-namespace.ts';
import type { LiveIndex, LiveMeta } from './live-index.ts';
import { ObjectEngine, type Created, type EnsureNamespace } from './object-engine.ts';
import { isCRD, objectId } from './object-id.ts';
import { PhaseEngine, type PhaseApplier, type PhaseCall } from './phase-engine.ts';
import {
  ANNOTATION_RECREATE,
  decideObjects,
  fieldManagerFor,
  mayPresume,
  planApply,
  prepareObjects,
  refuseConflicts,
  type ApplyPlan,
  type ApplyTarget,
  type PlanEnv,
  type Planned,
  type Prepared,
} from './plan.ts';
import type { ApplyReport, ObjectResult, StepGate } from './result.ts';
import { KEPT_MANAGER } from './retention.ts';

export { ANNOTATION_RECREATE, fieldManagerFor, type ApplyTarget };

export interface ApplierOptions {
  log: Logger;
  /** concurrent requests in the parallel phase (default 8) */
  concurrency?: number;
  /** how long to wait for CRDs to become Established (default 60s) */
  crdEstablishTimeoutMs?: number;
  live?: LiveIndex;
  /** field managers whose fields every apply takes over, so hand edits are reverted (default DEFAULT_OVERRIDE_MANAGERS) */
  overrideManagers?: readonly string[];
  /** the clock bounded waits are measured on (default the wall clock) */
  now?: () => Date;
}

/** one apply call as its steps share it */
interface StepsCall extends PhaseCall {
  plan: ApplyPlan;
  bySource: Map<KubeObject, Planned>;
  deferred: Set<KubeObject>;
  results: ObjectResult[];
  applied: KubeObject[];
  /** the CRDs applied so far are Established and their kinds served */
  established: Promise<void>;
}

export class Applier {
  private readonly log: Logger;
  private readonly concurrency: number;
  private readonly crdTimeoutMs: number;
  private readonly live: LiveIndex | undefined;
  private readonly records: AppliedRecords;
  private readonly installNamespaces: InstallNamespaces;
  private readonly phases: PhaseApplier;
  /**
   * BDs whose presumed creates met an existing object or a refusal: undoing those writes makes
   * watch events that reconcile the BD again, so until it applies cleanly it reads first instead
   */
  private readonly readFirst = new Set<string>();

  constructor(
    private readonly client: KubeClient,
    opts: ApplierOptions,
  ) {
    this.log = opts.log;
    this.concurrency = opts.concurrency ?? 8;
    this.crdTimeoutMs = opts.crdEstablishTimeoutMs ?? 60_000;
    this.live = opts.live;
    this.installNamespaces = new InstallNamespaces(opts.log);
    // and the fields of an object Hoist kept (retention.ts): the lineage taking it back takes them
    this.records = new AppliedRecords(new Set([...(opts.overrideManagers ?? DEFAULT_OVERRIDE_MANAGERS), KEPT_MANAGER]), opts.live);
    const now = opts.now ?? (() => new Date());
    const objects = new ObjectEngine({
      client,
      log: opts.log,
      records: this.records,
      installNamespaces: this.installNamespaces,
      live: opts.live,
      concurrency: this.concurrency,
      now,
    });
    this.phases = new PhaseEngine(objects, this.concurrency);
  }

  /**
   * The install namespace exists (created when missing, as an apply would) before anything else
   * of the revision is written: Helm hooks run before the revision's objects, as with
   * `helm install --create-namespace`.
   */
  async ensureInstallNamespace(target: ApplyTarget, objects: readonly KubeObject[], signal?: AbortSignal): Promise<void> {
    if (!target.installNamespace || this.installNamespaces.known(target.installNamespace)) return;
    await this.installNamespaces.ensure(this.actor(target), target.installNamespace, objects, signal).catch((e: unknown) => {
      throwIfCancelled(signal, `creating install namespace ${target.installNamespace}`, { stage: 'apply' });
      throw e;
    });
  }

  /**
   * The uid of the object this process last wrote as `obj` for BD `bdName`, when it wrote one:
   * prune and uninstall delete only that object (an object replaced since is someone else's).
   */
  writtenUid(bdName: string, obj: KubeObject): string | undefined {
    return this.records.writtenUid(bdName, obj);
  }

  /** forget what was applied for a BD (deleted, or its objects were re-rendered elsewhere) */
  forget(bdName: string): void {
    this.records.forget(bdName);
    this.readFirst.delete(bdName);
  }

  /**
   * Applies every object. Throws a HoistError (stage apply): ConflictingOwner before any write
   * when an object may not be taken over; UnsafeCRDUpgrade before any write when a changed CRD
   * would break existing resources (crd-safety.ts); ApplyFailed naming every object that failed.
   * When `signal` fires, every request in flight is aborted, no further one is sent, waits end,
   * and a CancelledError is thrown: what was written is what a later apply finds (it reads
   * first, since a create may have landed unseen) and finishes.
   */
  async apply(target: ApplyTarget, objects: readonly KubeObject[], opts: { gate?: StepGate; signal?: AbortSignal } = {}): Promise<ApplyReport> {
    try {
      throwIfCancelled(opts.signal, `applying revision ${target.revision}`, { stage: 'apply' });
      return await this.applySteps(target, objects, opts);
    } catch (e) {
      if (!opts.signal?.aborted) throw e;
      this.readFirst.add(target.name);
      throw e instanceof CancelledError ? e : new CancelledError(`applying revision ${target.revision}`, { stage: 'apply', cause: e });
    }
  }

  private async applySteps(target: ApplyTarget, objects: readonly KubeObject[], opts: { gate?: StepGate; signal?: AbortSignal }): Promise<ApplyReport> {
    const call = await this.begin(target, objects, opts.signal);
    const { steps, skippedOptional } = call.plan;
    const live = steps.filter((st) => st.items.some((o) => !skippedOptional.includes(describeObject(o))));
    for (const [i, step] of live.entries()) {
      const { batch, results } = await this.applyStep(call, step.items);
      // the last step's readiness is the rollout's to observe; a gate decides whether the next step may go
      if (!opts.gate || i === live.length - 1) continue;
      if (batch.some((p) => isCRD(p.obj))) await call.established;
      throwIfCancelled(opts.signal, `applying revision ${target.revision}`, { stage: 'apply' });
      const verdict = await opts.gate({ name: step.name, objects: batch.map((p) => p.obj), results, next: live[i + 1]!.name });
      if (!verdict.ready) {
        this.readFirst.delete(target.name);
        const pending = { step: live[i + 1]!.name, after: step.name, waiting: verdict.waiting, ...(verdict.failed ? { failed: true } : {}) };
        return { results: call.results, skippedOptional, pending };
      }
    }
    // installed means usable: the CRDs serve their kinds
    await call.established;
    this.readFirst.delete(target.name);
    const appliedDigest = this.records.digestOf(target.name, call.applied.map(objectId));
    return { results: call.results, skippedOptional, ...(appliedDigest ? { appliedDigest } : {}) };
  }

  /** plans (collision checks) everything already resolvable before any write, and readies the install namespace */
  private async begin(target: ApplyTarget, objects: readonly KubeObject[], signal: AbortSignal | undefined): Promise<StepsCall> {
    // Without CRDs or Namespaces in the bundle, objects no watch knows are created without reading
    // them first: every create of the call can still be undone if one collides.
    const presume = mayPresume(objects) && !this.readFirst.has(target.name);
    const plan = await planApply(this.planEnv(target), target, objects, { presume, signal });
    const { planned, deferred } = plan;
    refuseConflicts(planned);
    if (deferred.length === 0) this.records.adopt(target, planned);
    if (target.crdSafety === 'Enforce')
      await this.refuseUnsafeCRDs(
        target,
        planned.filter((p) => isCRD(p.obj)),
        signal,
      );
    const ensureNs = this.namespaceEnsurer(target, objects, signal);
    // the install namespace is read once per process (created when missing); a write that finds it
    // gone since then creates it again (object-engine.ts)
    const needsWrite = planned.some((p) => !this.records.unchanged(target.name, p)) || deferred.length > 0;
    if (needsWrite && target.installNamespace && !this.installNamespaces.known(target.installNamespace)) await ensureNs();
    const created: Created[] = [];
    return {
      target,
      manager: fieldManagerFor(target.lineage),
      ensureNs,
      signal,
      created,
      // read, not the watch: it may have seen the apply that was just handed back
      redecide: async (existing) => {
        const decided = await decideObjects(this.planEnv(target), target, existing, { read: true, signal });
        refuseConflicts(decided);
        return decided;
      },
      readFirst: () => this.readFirst.add(target.name),
      plan,
      bySource: new Map(planned.map((p) => [p.src, p])),
      deferred: new Set(deferred),
      results: [],
      applied: [],
      established: Promise.resolve(),
    };
  }

  /** one step through the phase level; its CRDs, once written, are waited for before the kinds they serve */
  private async applyStep(call: StepsCall, items: readonly KubeObject[]): Promise<{ batch: Planned[]; results: ObjectResult[] }> {
    const { target, signal } = call;
    let batch = items.flatMap((o) => {
      const p = call.bySource.get(o);
      return p ? [p] : [];
    });
    const waiting = items.filter((o) => call.deferred.has(o));
    if (waiting.length > 0) {
      // objects of the bundle's own CRD kinds: once those CRDs are Established and served
      await call.established;
      await waitServed(this.client, waiting, this.crdTimeoutMs, signal);
      const resolved = await prepareObjects(this.client, target, waiting, new Set(), call.plan.skippedOptional);
      const more = await decideObjects(this.planEnv(target), target, resolved.ready, { signal });
      refuseConflicts(more);
      batch = [...batch, ...more];
    }
    const results = await this.phases.apply(call, batch);
    call.results.push(...results);
    call.applied.push(...batch.map((p) => p.obj));
    const crds = batch.filter((p) => isCRD(p.obj));
    if (crds.length > 0 && results.some((r) => crds.some((c) => c.id === r.id) && r.action !== 'unchanged')) {
      const names = crds.map((c) => c.obj.metadata.name);
      call.established = waitEstablished(this.actor(target), names, this.crdTimeoutMs, signal).then(() => this.client.discovery.invalidate());
      // keep a rejection observed until it is awaited
      call.established.catch(() => {});
    }
    return { batch, results };
  }

  /** the planner's view: the watches' summaries, trusted unless the object needs its managedFields */
  private planEnv(target: ApplyTarget): PlanEnv {
    const live = this.live;
    if (!live) return { client: this.client, concurrency: this.concurrency };
    // hand-edited objects are read (their managedFields are needed to take the edits over), and
    // objects with ignored fields Hoist may still own (a new rule, a restart); only they
    const trusted = (p: Prepared, known: LiveMeta) =>
      !this.records.handEdited(known, this.records.get(target.name, p.id), p.obj.metadata) && !this.records.mayOwnIgnored(target.name, p);
    return { client: this.client, concurrency: this.concurrency, index: { live, trusted } };
  }

  private actor(target: ApplyTarget): KubeClient {
    return target.actor ?? this.client;
  }

  /** per apply call, at most once: the install namespace is read, and created (unlabelled, never deleted) when missing */
  private namespaceEnsurer(target: ApplyTarget, objects: readonly KubeObject[], signal: AbortSignal | undefined): EnsureNamespace {
    let once: Promise<boolean> | undefined;
    return () => (once ??= this.installNamespaces.ensure(this.actor(target), target.installNamespace, objects, signal));
  }

  /**
   * Compares every CRD this apply would change with the one installed (read unless the plan
   * already did; one GET per changed CRD, none when nothing changed) and refuses the whole apply
   * when any change would break existing custom resources. Terminal: the same content stays unsafe.
   */
  private async refuseUnsafeCRDs(target: ApplyTarget, planned: readonly Planned[], signal: AbortSignal | undefined): Promise<void> {
    const changed = planned.filter((p) => isCRD(p.obj) && p.decision.action !== 'create' && !this.records.unchanged(target.name, p));
    const problems = (
      await mapLimit(changed, this.concurrency, async (p) => {
        const live = p.live ?? (await this.actor(target).get(p.obj, p.obj.metadata.name, undefined, { signal }));
        return live ? crdUpgradeProblems(live, p.obj) : [];
      })
    ).flat();
    if (problems.length === 0) return;
    throw new UnsafeCrdChangeError(problems, describeCrdRefusal(problems));
  }
}
