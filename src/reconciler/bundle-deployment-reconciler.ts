/**
 * The BundleDeployment reconciler: resolve → fetch/render → apply → observe/roll out (DESIGN §2–§5).
 * It owns the order of the steps and the single status write; each step lives in pipeline/ and
 * sets the conditions of its own stage. Each reconcile is idempotent and may be interrupted at
 * any point (crash, SIGKILL): revisions are stored before they are applied, objects are applied
 * with server-side apply, and status is recomputed from what is stored and observed.
 */
import {
  ANNOTATION_ABANDON_TARGET,
  ANNOTATION_REQUESTED_AT,
  ANNOTATION_REVISION,
  LABEL_OWNER_NAME,
  FINALIZER,
  LABEL_LINEAGE,
  lineageOf,
  MAX_REQUEST_TOKEN_LENGTH,
  type BundleDeployment,
  type BundleDeploymentStatus,
} from '../../api/v1alpha2/types.ts';
import { placeUnplaced } from '../apply/namespaces.ts';
import type { KubeObject } from '../kube/types.ts';
import { isConflict } from '../kube/api-error.ts';
import type { ReconcileResult } from '../kube/controller.ts';
import { systemClock } from '../util/clock.ts';
import { asHoistError, CancelledError } from '../util/errors.ts';
import { ReconcileCode, reconcileError } from './errors.ts';
import { getCondition } from './conditions.ts';
import { setLineageConflict, setNotPaused, setPaused, setProgressingPaused, setRetryingWithBackoff, waitingForDependents } from './status.ts';
import { ContentInUse } from './content-use.ts';
import { labelledNamesakes, lineageWinner } from './lineage.ts';
import { recordStages } from './metrics.ts';
import { OwnWrites } from './own-writes.ts';
import { applyRevision } from './pipeline/apply.ts';
import type { ReconcilerDeps, StepContext } from './pipeline/context.ts';
import { dependentsRemaining, finalize } from './pipeline/finalize.ts';
import { observeHealth } from './pipeline/health.ts';
import { failedBeforeApply } from './pipeline/recover.ts';
import { renderRevision } from './pipeline/render.ts';
import { resolveSources } from './pipeline/resolve.ts';
import { rollOut } from './pipeline/rollout.ts';
import { newState, type ReconcileState } from './pipeline/state.ts';
import { RevisionObjects } from '../revisions/revision-objects.ts';
import { transitionsOf } from '../notify/transitions.ts';
import { decideStatusWrite } from './status-writes.ts';
import { redactConditions, redactingEvents } from './redaction.ts';
import { redact } from '../util/redact.ts';
import { abandonsTarget, enterTarget, reportUnreachable, withTarget } from './pipeline/target.ts';
import { RemoteTarget, unreachable, type Target } from './targets.ts';
import { DEFAULT_RECONCILE_TIMEOUT_MS, ReconcileBudget } from './reconcile-budget.ts';

export type { ReconcilerDeps } from './pipeline/context.ts';

/** a remote BD whose cluster's reconcile slots are all taken looks again this soon (no request meanwhile) */
const TARGET_BUSY_REQUEUE_MS = 1_000;

/** the labels and annotations every apply adds to each object (src/apply/plan.ts) */
const HOIST_METADATA = { labels: [LABEL_OWNER_NAME, LABEL_LINEAGE], annotations: [ANNOTATION_REVISION] };

export class BundleDeploymentReconciler {
  /** our own writes of BDs: their watch events and stale cache reads need no reconcile */
  readonly ownWrites = new OwnWrites();
  private readonly contentUse = new ContentInUse();
  /** per BD: uid of a BundleDeployment whose finalizer we removed (the cache may still show it) */
  private readonly finalized = new Map<string, string>();
  /** per BD: when this process last wrote its status (clock ms), for the write rate limit */
  private readonly statusWrites = new Map<string, number>();
  /** per BD: the over-long requested-at value already refused (one Event each) */
  private readonly refusedRequests = new Map<string, string>();
  /** per BD being deleted: since when its unreachable remote cluster blocks the uninstall (one Event per outage) */
  private readonly blockedUninstalls = new Map<string, number>();
  private readonly ctx: StepContext;
  private readonly now: () => Date;

  constructor(private readonly d: ReconcilerDeps) {
    const clock = d.clock ?? systemClock;
    this.now = () => new Date(clock.now());
    // a revision's installNamespace is one of its render inputs, so the BD's is the one it was rendered with
    // a remote BD's kinds are its cluster's: their scope is that cluster's discovery's
    const place = (name: string, objects: KubeObject[]) =>
      placeUnplaced(objects, d.getBundleDeployment(name)?.spec.installNamespace, (d.targets?.current(name).client ?? d.client).discovery);
    const redactions = new Map<string, readonly string[]>();
    // decrypted values never reach an Event (nor its log line) of the BD they were decrypted for
    const events = redactingEvents(d.events, (bd) => redactions.get(bd));
    this.ctx = { d: { ...d, events }, objects: new RevisionObjects(d.revisions, place), pendingRotations: new Map(), redactions };
  }

  async reconcile(name: string, signal?: AbortSignal): Promise<ReconcileResult> {
    const bd = this.d.getBundleDeployment(name);
    if (!bd) {
      this.forget(name);
      this.finalized.delete(name);
      return {};
    }
    if (this.ownWrites.isStale(name, bd.metadata.resourceVersion)) {
      // whatever queued this is looked at again once the cache has caught up with our write
      this.d.log.debug({ bd: name, resourceVersion: bd.metadata.resourceVersion }, 'cache older than our own write: looking again shortly');
      return { requeueAfter: 250 };
    }
    this.ownWrites.caughtUp(name);
    if (bd.metadata.deletionTimestamp) return this.delete(bd, signal);
    // the finalizer must be on before anything is created for the BD; resolve, fetch and render
    // create nothing in the cluster, so they run meanwhile (one API round trip less per install)
    const finalizing = bd.metadata.finalizers?.includes(FINALIZER) ? undefined : this.addFinalizer(bd);
    finalizing?.catch(() => {}); // awaited below

    // a remote cluster's reconciles are bounded (targets.ts): one that hangs holds a few workers, not all
    const remote = this.d.targets?.current(name);
    if (remote instanceof RemoteTarget && !remote.tryEnter()) return { requeueAfter: TARGET_BUSY_REQUEUE_MS };
    try {
      return await this.reconcileOn(bd, name, finalizing, signal);
    } finally {
      if (remote instanceof RemoteTarget) remote.leave();
    }
  }

  private async reconcileOn(
    bd: BundleDeployment,
    name: string,
    finalizing: Promise<void> | undefined,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileResult> {
    const started = Date.now();
    const budget = new ReconcileBudget(this.d.reconcileTimeoutMs ?? DEFAULT_RECONCILE_TIMEOUT_MS, this.d.budgetClock ?? this.d.clock ?? systemClock, signal);
    const s = newState(bd, this.now, budget.signal);
    s.request = this.requestOf(bd);
    let cancelled = false;
    const on: { target?: Target | undefined } = {};
    try {
      await this.pipeline(s, finalizing, budget, on).catch((e: unknown) => {
        // the target cluster stopped answering during the reconcile: that is what the status says
        if (!this.wentDown(s, on.target)) throw e;
      });
      this.wentDown(s, on.target);
      // handled: what it asked for was done, and this status says how it came out
      if (s.request !== undefined) s.status.lastHandledRequest = s.request;
    } catch (e) {
      // stopped at the budget: whatever a step threw while stopping, the budget is the cause
      if (budget.exceeded) {
        const err = budget.exceeded;
        setRetryingWithBackoff(s, err.describe());
        s.note = 'over the reconcile budget';
        this.d.log.warn({ bd: name, stage: err.stage, budgetMs: budget.ms }, 'reconcile stopped at its time budget');
        throw err;
      }
      if (e instanceof CancelledError) {
        // stopped (shutdown, leadership lost), not failed: nothing to report, whoever runs next goes on
        cancelled = true;
        this.d.log.info({ bd: name, err: e.message }, 'reconcile cancelled');
        throw e;
      }
      const err = asHoistError(e, { stage: 'observe', code: ReconcileCode.Internal, terminal: false });
      this.d.log.error({ bd: name, stage: err.stage, err: redact(err.message, this.ctx.redactions.get(name) ?? []) }, 'reconcile failed');
      throw err;
    } finally {
      budget.dispose();
      this.contentUse.reconciled(name);
      await finalizing;
      // status is written even when a step failed: the failure is what the user must see; a
      // cancelled reconcile writes nothing more (its signal says to stop writing)
      if (!cancelled)
        await s.time('status', this.writeStatus(bd, s)).catch((e: unknown) => {
          if (isConflict(e)) s.result = { requeue: true };
          else throw e;
        });
    }
    // a health check's verdict can change by time alone (a tolerated failure runs out): look again then
    if (s.recheckAt !== undefined) {
      const after = Math.max(s.recheckAt - this.now().getTime(), 100);
      s.result = { ...s.result, requeueAfter: Math.min(s.result.requeueAfter ?? after, after) };
    }
    this.logOutcome(s, Date.now() - started);
    return s.result;
  }

  /** true (and the status says so) when the reconcile's remote target is down */
  private wentDown(s: ReconcileState, target: Target | undefined): boolean {
    if (!(target instanceof RemoteTarget) || !target.down) return false;
    reportUnreachable(s, target);
    return true;
  }

  /** the steps, in order; each returns early by returning from here */
  private async pipeline(
    s: ReconcileState,
    finalizing: Promise<void> | undefined,
    budget: ReconcileBudget,
    on: { target?: Target | undefined },
  ): Promise<void> {
    // which cluster: the rest of the steps work on it (a remote BD's applier, watches, identities)
    const entered = await enterTarget(this.ctx, s);
    if (!entered) return;
    on.target = entered.target;
    const ctx = entered.ctx;
    const lineage = lineageOf(s.bd);
    const namesakes = labelledNamesakes(s.bd, this.d.lineageMembers(lineage));
    const winner = namesakes.length > 0 ? undefined : lineageWinner(s.bd, this.d.lineageMembers(lineage));
    if (winner !== s.name) {
      const msg =
        winner !== undefined
          ? `lineage ${lineage} is applied by BundleDeployment ${winner}; at most one unpaused BundleDeployment per lineage applies`
          : `lineage ${lineage} is joined through the label ${LABEL_LINEAGE}=${lineage} (BundleDeployment ${namesakes.join(', ')}): this BundleDeployment has no such label, so its name does not make it a member and it applies nothing; to join, set the label (the tenancy policy asks for use on lineages.core.rukpak.io ${lineage})`;
      setLineageConflict(s, msg);
      setNotPaused(s);
      s.note = 'lineage conflict';
      return;
    }
    if (s.spec.paused) {
      setPaused(s);
      if (getCondition(s.status.conditions, 'Progressing')?.reason !== 'Paused') setProgressingPaused(s);
      await observeHealth(ctx, s);
      s.note = 'paused';
      return;
    }
    setNotPaused(s);

    let rendered;
    try {
      budget.stage = 'resolve';
      const resolved = await resolveSources(ctx, s);
      this.contentUse.record(
        s.name,
        resolved.map((r) => r.key),
      );
      budget.stage = 'fetch';
      rendered = await renderRevision(ctx, s, resolved);
    } catch (e) {
      await failedBeforeApply(ctx, s, budget.exceeded ?? e);
      return;
    }
    await finalizing;
    // the last point where stopping leaves what is installed as it was
    if (budget.exceeded) return failedBeforeApply(ctx, s, budget.exceeded);
    budget.stage = 'apply';
    if (!(await applyRevision(ctx, s, rendered))) return;
    await rollOut(ctx, s, rendered.objects);
  }

  /**
   * The content-store keys every BundleDeployment's current resolution needs, or undefined while
   * some BundleDeployment has not been reconciled since start (its needs are not known yet).
   * Content of stored revisions is not needed: rollbacks re-apply objects from the cluster.
   */
  contentInUse(): Set<string> | undefined {
    return this.contentUse.inUse(this.d.listBundleDeployments().map((bd) => bd.metadata.name));
  }

  /**
   * True when a change of these label or annotation keys of one of the BD's objects is nothing a
   * reconcile would act on: neither the BD's revision nor Hoist sets any of them, so the apply
   * finds the object unchanged (drift is judged on the keys Hoist sets). False when the object is
   * not known from a render or load in this process, and when the BD has health checks of its own
   * (a CEL or JSONPath check may read any label or annotation, so the change may turn its verdict).
   */
  ignoresMetadata(name: string, id: string, keys: { labels: readonly string[]; annotations: readonly string[] }): boolean {
    if ((this.d.getBundleDeployment(name)?.spec.healthChecks?.length ?? 0) > 0) return false;
    return this.ctx.objects.setsNoneOf(name, id, keys, HOIST_METADATA);
  }

  /**
   * The watch event of a changed BD: `enqueue` unless it is the event of our own status or
   * finalizer write (own-writes.ts decideUpdateEvent), whose reconcile already saw everything.
   */
  updateEvent(prev: BundleDeployment, next: BundleDeployment, enqueue: () => void): void {
    this.ownWrites.updateEvent(prev, next, enqueue);
  }

  forget(name: string): void {
    this.ownWrites.forget(name);
    this.statusWrites.delete(name);
    this.refusedRequests.delete(name);
    this.blockedUninstalls.delete(name);
    this.ctx.objects.forget(name);
    this.ctx.pendingRotations.delete(name);
    this.ctx.redactions.delete(name);
    this.contentUse.forget(name);
    this.d.notices?.forget(name);
    this.d.applier.forget(name);
    this.d.targets?.release(name);
  }

  /**
   * A core.rukpak.io/requested-at value this BD has not handled yet, or undefined. One longer than
   * status.lastHandledRequest may hold could never be echoed: it is refused (once, with an Event).
   */
  private requestOf(bd: BundleDeployment): string | undefined {
    const token = bd.metadata.annotations?.[ANNOTATION_REQUESTED_AT];
    if (token === undefined || token === bd.status?.lastHandledRequest) return undefined;
    if (token.length <= MAX_REQUEST_TOKEN_LENGTH) return token;
    if (this.refusedRequests.get(bd.metadata.name) !== token) {
      this.refusedRequests.set(bd.metadata.name, token);
      this.d.events.event(
        bd,
        'Warning',
        'RequestRefused',
        `annotation ${ANNOTATION_REQUESTED_AT} is ${token.length} characters long, more than ${MAX_REQUEST_TOKEN_LENGTH}: ignored (a timestamp or a short random token will do)`,
      );
    }
    return undefined;
  }

  private async delete(bd: BundleDeployment, signal: AbortSignal | undefined): Promise<ReconcileResult> {
    const name = bd.metadata.name;
    // the cache can still show a BD whose finalizer we already removed: nothing left to do
    if (bd.metadata.uid && this.finalized.get(name) === bd.metadata.uid) return {};
    if (!bd.metadata.finalizers?.includes(FINALIZER)) return {};
    // uninstall order is the reverse of dependsOn: BDs depending on this one go first
    const dependents = dependentsRemaining(this.ctx, bd);
    if (dependents.length > 0) {
      await this.waitForDependents(bd, dependents);
      return {};
    }
    const on = await this.uninstallContext(bd, signal);
    // an unreachable remote cluster: looked at again at its next probe (one Event per outage), not in a tight backoff
    if (!('d' in on)) return on;
    await finalize(on, bd, signal);
    this.forget(name);
    if (bd.metadata.uid) this.finalized.set(name, bd.metadata.uid);
    return {};
  }

  /**
   * The context to uninstall bd in: its target cluster's. A remote one that cannot be reached (or
   * whose kubeconfig cannot be read) blocks the uninstall, retried with backoff, unless the BD
   * carries core.rukpak.io/abandon-target: "true" (finalize then leaves its objects there).
   */
  private async uninstallContext(bd: BundleDeployment, signal: AbortSignal | undefined): Promise<StepContext | ReconcileResult> {
    const targets = this.d.targets;
    // nothing installed (e.g. its kubeconfig was refused): nothing to uninstall there, no target needed
    const installed = bd.status?.activeRevision !== undefined || bd.status?.transition !== undefined;
    if (!targets || !bd.spec.kubeConfig || abandonsTarget(bd) || !installed) return this.ctx;
    const blocked = (why: string): never => {
      const message = `uninstall from the remote cluster cannot run: ${why}; the finalizer stays and it is retried. If that cluster is gone for good, annotate the BundleDeployment ${ANNOTATION_ABANDON_TARGET}=true to leave its objects there and let it go`;
      this.d.log.warn({ bd: bd.metadata.name, err: why }, 'uninstall blocked: target cluster');
      this.d.events.event(bd, 'Warning', 'UninstallFailed', message);
      throw reconcileError(message, ReconcileCode.UninstallFailed, { stage: 'apply', subject: `BundleDeployment ${bd.metadata.name}`, terminal: false });
    };
    const target = await targets
      .for(bd, signal)
      .catch((e: unknown) => blocked(asHoistError(e, { stage: 'resolve', code: ReconcileCode.Unknown, terminal: false }).describe()));
    if (target instanceof RemoteTarget && !(await target.reachable())) {
      const since = target.down?.since;
      if (since !== undefined && this.blockedUninstalls.get(bd.metadata.name) !== since) {
        this.blockedUninstalls.set(bd.metadata.name, since);
        const why = unreachable(target.cluster, target.down?.error ?? 'no response').message;
        this.d.log.warn({ bd: bd.metadata.name, err: why }, 'uninstall blocked: target cluster');
        this.d.events.event(
          bd,
          'Warning',
          'UninstallFailed',
          `uninstall from the remote cluster cannot run: ${why}; the finalizer stays and it is retried. If that cluster is gone for good, annotate the BundleDeployment ${ANNOTATION_ABANDON_TARGET}=true to leave its objects there and let it go`,
        );
      }
      return { requeueAfter: target.retryInMs() };
    }
    this.blockedUninstalls.delete(bd.metadata.name);
    return withTarget(this.ctx, target);
  }

  private async addFinalizer(bd: BundleDeployment): Promise<void> {
    const finalizers = [...(bd.metadata.finalizers ?? []), FINALIZER];
    const updated = await this.ownWrites.write(bd.metadata.name, bd.metadata.resourceVersion, () =>
      this.d.client.patch(bd, bd.metadata.name, undefined, { metadata: { finalizers, resourceVersion: bd.metadata.resourceVersion } }, 'merge'),
    );
    bd.metadata.finalizers = updated.metadata.finalizers;
    bd.metadata.resourceVersion = updated.metadata.resourceVersion;
  }

  /**
   * A deleted BD that others still depend on: says so in Progressing (and once as an Event) and
   * waits; the manager re-queues it when one of them is gone.
   */
  private async waitForDependents(bd: BundleDeployment, dependents: readonly string[]): Promise<void> {
    const name = bd.metadata.name;
    const message = `being deleted: uninstalled once the BundleDeployments that depend on it are gone: ${dependents.join(', ')}`;
    const before = getCondition(bd.status?.conditions, 'Progressing');
    this.d.log.info({ bd: name, dependents }, 'uninstall waits for dependents');
    if (before?.reason === 'WaitingForDependents' && before.message === message) return;
    const conditions = waitingForDependents(bd.status?.conditions ?? [], message, bd.metadata.generation ?? 0, this.now());
    if (before?.reason !== 'WaitingForDependents') this.d.events.event(bd, 'Normal', 'WaitingForDependents', message);
    await this.ownWrites.write(name, bd.metadata.resourceVersion, () => this.d.client.updateStatus({ ...bd, status: { ...bd.status, conditions } }));
  }

  /** writes the status the reconcile built, unless unchanged or deferred (status-writes.ts) */
  private async writeStatus(bd: BundleDeployment, s: ReconcileState): Promise<void> {
    const name = bd.metadata.name;
    const clean = JSON.parse(JSON.stringify(s.status)) as BundleDeploymentStatus;
    // no decrypted value in a condition, whoever's message quotes it (redaction.ts)
    const conditions = redactConditions(clean.conditions, this.ctx.redactions.get(name));
    if (conditions) clean.conditions = conditions;
    const decision = decideStatusWrite({ next: clean, current: bd.status, lastWriteAt: this.statusWrites.get(name), now: this.now().getTime() });
    if (decision.kind === 'unchanged') return;
    if (decision.kind === 'defer') {
      // the reconcile then computes the status afresh and writes what holds at that moment
      s.result = { ...s.result, requeueAfter: Math.min(s.result.requeueAfter ?? decision.afterMs, decision.afterMs) };
      s.note = s.note ? `${s.note}; status write deferred` : 'status write deferred';
      return;
    }
    this.statusWrites.set(name, this.now().getTime());
    await this.ownWrites.write(name, bd.metadata.resourceVersion, () => this.d.client.updateStatus({ ...bd, status: clean }));
    this.notify(bd, clean, s);
  }

  /** the transitions this written status made, to the notifications (off the reconcile path) */
  private notify(bd: BundleDeployment, written: BundleDeploymentStatus, s: ReconcileState): void {
    if (!this.d.notices) return;
    try {
      const meta = {
        name: bd.metadata.name,
        uid: bd.metadata.uid,
        labels: bd.metadata.labels,
        installNamespace: bd.spec.installNamespace,
        sources: bd.spec.sources,
      };
      this.d.notices.record(transitionsOf(meta, bd.status, written, s.facts, this.now()));
    } catch (e) {
      this.d.log.warn({ bd: bd.metadata.name, err: e instanceof Error ? e.message : String(e) }, 'transitions not recorded');
    }
  }

  /** one info line per reconcile outcome (STYLE: duration, revision, digest, changes, next requeue) */
  private logOutcome(s: ReconcileState, durationMs: number): void {
    recordStages(this.d.metrics, s.timings);
    const installed = getCondition(s.status.conditions, 'Installed');
    this.d.log.info(
      {
        bd: s.name,
        durationMs,
        revision: s.status.activeRevision?.number,
        digest: s.status.activeRevision?.contentDigest,
        changed: s.changed,
        installed: installed ? `${installed.status}/${installed.reason}` : undefined,
        requeueAfterMs: s.result.requeueAfter,
        note: s.note || undefined,
        stagesMs: Object.keys(s.timings).length ? s.timings : undefined,
      },
      'reconciled',
    );
  }
}
