/**
 * The BundleDeployment reconciler: resolve → fetch → process → apply → observe (DESIGN §2–§5).
 * It wires the stages and owns the order and the status; it implements none of the stages.
 * Each reconcile is idempotent and may be interrupted at any point (crash, SIGKILL): revisions are
 * stored before they are applied, objects are applied with server-side apply, and status is
 * recomputed from what is stored and observed.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { withDefaults, parseDuration, type DefaultedSpec } from '../../api/v1alpha2/defaults.ts';
import {
  FINALIZER,
  lineageOf,
  pinnedBySpec,
  type BundleDeployment,
  type BundleDeploymentStatus,
  type Condition,
  type ResolvedSourceStatus,
} from '../../api/v1alpha2/types.ts';
import type { Applier, ApplyTarget } from '../apply/applier.ts';
import { assignNamespaces } from '../apply/namespaces.ts';
import { objectId } from '../apply/object-id.ts';
import { deleteOwned, staleObjects } from '../apply/prune.ts';
import { countChanged, type ObjectResult } from '../apply/result.ts';
import type { RevisionRecord, RevisionStore } from '../apply/revision-store.ts';
import type { ContentStore } from '../cache/content-store.ts';
import { isConflict, isNotFound } from '../kube/api-error.ts';
import type { ReconcileResult } from '../kube/controller.ts';
import type { KubeClient, KubeObject, TypeRef } from '../kube/types.ts';
import { contentDigest } from '../processors/content-digest.ts';
import type { Processor } from '../processors/processor.ts';
import { composeTree } from '../sources/compose-tree.ts';
import type { StoreOutcome } from '../sources/cached-fetch.ts';
import type { Resolved, Source, SourceContext } from '../sources/source.ts';
import { asHoistError, HoistError, type Stage } from '../util/errors.ts';
import { hashOf } from '../util/hash.ts';
import { getCondition, setCondition, type ConditionInput } from './conditions.ts';
import { lineageWinner } from './lineage.ts';
import { lastGoodRevision, recordRevision, trimHistory } from './revision-history.ts';
import { readCredentials, secretRefOf } from './credentials.ts';
import { readSourceCA, rotationKeysOf } from './source-ca.ts';
import type { Identities } from './identity.ts';
import type { EventRecorder } from './events.ts';
import type { ManagedObjects } from './managed-objects.ts';
import type { SecretWatch } from './secret-watch.ts';
import { recordApplied, recordPruned, recordRevisionBytes, recordStages, type HoistMetrics } from './metrics.ts';

export interface ReconcilerDeps {
  client: KubeClient;
  log: Logger;
  /** where revision Secrets and (without serviceAccount) source credentials live */
  controllerNamespace: string;
  store: ContentStore;
  sourceFor(kind: string): Source;
  processorFor(format: string): Processor;
  applier: Applier;
  /** who acts for each BD: its ServiceAccount (impersonated) or the controller */
  identities: Identities;
  revisions: RevisionStore;
  managed: ManagedObjects;
  events: EventRecorder;
  /** the informer cache of BundleDeployments */
  getBundleDeployment(name: string): BundleDeployment | undefined;
  listBundleDeployments(): BundleDeployment[];
  now?: () => Date;
  /** Hoist's own metrics (optional: tests and `hoist render` run without) */
  metrics?: HoistMetrics;
  /** which referenced Secrets changed since a BD's last resolve */
  secrets?: Pick<SecretWatch, 'takeRotated'>;
}

/** A rendered revision: the objects and where they came from. */
interface Rendered {
  inputs: string;
  contentDigest: string;
  objects: KubeObject[];
  /** set when reused from the revision store (no fetch, no render) */
  stored?: RevisionRecord;
}


export class BundleDeploymentReconciler {
  /** per BD: the last rendered inputs, so a warm reconcile neither fetches nor renders */
  private readonly rendered = new Map<string, Rendered>();
  /** rotated Secrets/ConfigMaps whose re-check has not succeeded yet: a failed one is retried, not forgotten */
  private readonly pendingRotations = new Map<string, ReadonlySet<string>>();
  /** per BD: objects of stored revisions already loaded */
  private readonly loaded = new Map<string, { number: number; objects: KubeObject[] }>();
  /**
   * per BD: resourceVersions our own writes (finalizer, status) superseded. A cached BD still at one
   * of them is older than what we wrote: reconciling it would redo the work (a second revision save,
   * event and conflicting status write). The watch event of our write re-queues the BD anyway.
   */
  private readonly superseded = new Map<string, Set<string>>();
  /** per BD: the resourceVersion of our latest own write, whose watch event needs no reconcile */
  private readonly ownWrites = new Map<string, string>();
  /** per BD: uid of a BundleDeployment whose finalizer we removed (the cache may still show it) */
  private readonly finalized = new Map<string, string>();
  /** per BD: the content-store keys its current resolution needs (for content-store gc) */
  private readonly contentKeys = new Map<string, readonly string[]>();
  /** BDs reconciled since start: gc waits until it has heard from every one */
  private readonly seen = new Set<string>();
  /** per BD, within one reconcile: when a health check's verdict changes by time alone */
  private readonly healthRecheck = new Map<string, number>();
  private readonly now: () => Date;

  constructor(private readonly d: ReconcilerDeps) {
    this.now = d.now ?? (() => new Date());
  }

  async reconcile(name: string, signal?: AbortSignal): Promise<ReconcileResult> {
    const bd = this.d.getBundleDeployment(name);
    if (!bd) {
      this.forget(name);
      this.finalized.delete(name);
      return {};
    }
    if (this.superseded.get(name)?.has(bd.metadata.resourceVersion ?? '')) {
      // whatever queued this is looked at again once the cache has caught up with our write
      this.d.log.debug({ bd: name, resourceVersion: bd.metadata.resourceVersion }, 'cache older than our own write: looking again shortly');
      return { requeueAfter: 250 };
    }
    this.superseded.delete(name);
    const started = Date.now();
    if (bd.metadata.deletionTimestamp) return this.finalize(bd);
    if (!bd.metadata.finalizers?.includes(FINALIZER)) await this.addFinalizer(bd);

    const gen = bd.metadata.generation ?? 0;
    const spec = withDefaults(bd.spec);
    const status: BundleDeploymentStatus = structuredClone(bd.status ?? {});
    status.observedGeneration = gen;
    const set = (c: ConditionInput): void => {
      status.conditions = setCondition(status.conditions ?? [], c, gen, this.now());
    };
    const outcome: Outcome = { result: {}, changed: 0, note: '', timings: {} };

    try {
      const winner = lineageWinner(bd, this.d.listBundleDeployments());
      if (winner !== bd.metadata.name) {
        const msg = `lineage ${lineageOf(bd)} is applied by BundleDeployment ${winner}; at most one unpaused BundleDeployment per lineage applies`;
        set({ type: 'Installed', status: 'False', reason: 'Conflict', message: msg });
        set({ type: 'Progressing', status: 'False', reason: 'Conflict', message: msg });
        set({ type: 'Paused', status: 'False', reason: 'Reconciling', message: 'not paused' });
        outcome.note = 'lineage conflict';
      } else if (spec.paused) {
        await this.observePaused(bd, status, set);
        outcome.note = 'paused';
      } else {
        set({ type: 'Paused', status: 'False', reason: 'Reconciling', message: 'not paused' });
        await this.run(bd, spec, status, set, outcome, signal);
      }
    } catch (e) {
      const err = asHoistError(e, { stage: 'observe', reason: 'ApplyFailed', code: 'internal', terminal: false });
      this.d.log.error({ bd: name, stage: err.stage, err: err.message }, 'reconcile failed');
      throw err;
    } finally {
      this.seen.add(name);
      // status is written even when a stage failed: the failure is what the user must see
      await this.writeStatus(bd, status).catch((e: unknown) => {
        if (isConflict(e)) outcome.result = { requeue: true };
        else throw e;
      });
    }
    // a health check's verdict can change by time alone (a tolerated failure runs out): look again then
    const recheckAt = this.healthRecheck.get(name);
    this.healthRecheck.delete(name);
    if (recheckAt !== undefined) {
      const after = Math.max(recheckAt - this.now().getTime(), 100);
      outcome.result = { ...outcome.result, requeueAfter: Math.min(outcome.result.requeueAfter ?? after, after) };
    }
    recordStages(this.d.metrics, outcome.timings);
    const installed = getCondition(status.conditions, 'Installed');
    this.d.log.info(
      {
        bd: name,
        durationMs: Date.now() - started,
        revision: status.activeRevision?.number,
        digest: status.activeRevision?.contentDigest,
        changed: outcome.changed,
        installed: installed ? `${installed.status}/${installed.reason}` : undefined,
        requeueAfterMs: outcome.result.requeueAfter,
        note: outcome.note || undefined,
        stagesMs: Object.keys(outcome.timings).length ? outcome.timings : undefined,
      },
      'reconciled',
    );
    return outcome.result;
  }

  /**
   * The content-store keys every BundleDeployment's current resolution needs, or undefined while
   * some BundleDeployment has not been reconciled since start (its needs are not known yet).
   * Content of stored revisions is not needed: rollbacks re-apply objects from the cluster.
   */
  contentInUse(): Set<string> | undefined {
    if (this.d.listBundleDeployments().some((bd) => !this.seen.has(bd.metadata.name))) return undefined;
    return new Set([...this.contentKeys.values()].flat());
  }

  forget(name: string): void {
    this.superseded.delete(name);
    this.ownWrites.delete(name);
    this.rendered.delete(name);
    this.pendingRotations.delete(name);
    this.loaded.delete(name);
    this.contentKeys.delete(name);
    this.seen.delete(name);
    this.d.applier.forget(name);
  }

  // ---- the pipeline --------------------------------------------------------------------------

  private async run(
    bd: BundleDeployment,
    spec: DefaultedSpec,
    status: BundleDeploymentStatus,
    set: (c: ConditionInput) => void,
    outcome: Outcome,
    signal?: AbortSignal,
  ): Promise<void> {
    const gen = bd.metadata.generation ?? 0;
    const active = status.activeRevision;
    const time = stopwatch(outcome.timings);
    let rendered: Rendered;
    try {
      // who acts for this BD; a default account without a namespace to live in stops here
      this.d.identities.for(bd);
      const resolved = await time('resolve', this.resolve(bd, spec, status, signal));
      this.contentKeys.set(bd.metadata.name, resolved.map((r) => r.key));
      status.resolvedSources = resolved.map((r) => r.status);
      set({ type: 'Resolved', status: 'True', reason: 'Resolved', message: describeResolved(resolved) });
      rendered = await this.render(bd, spec, resolved, time, signal);
      set({ type: 'Unpacked', status: 'True', reason: 'Unpacked', message: `${rendered.objects.length} objects, ${rendered.contentDigest}` });
      status.contentDigest = rendered.contentDigest;
    } catch (e) {
      // Resolve, fetch and process failures touch nothing installed (DESIGN §3).
      const err = asHoistError(e, { stage: 'fetch', reason: 'FetchFailed', code: 'unknown', terminal: false });
      this.failBeforeApply(err, status, set);
      await this.observeHealth(bd, status, set);
      if (!err.terminal) throw err;
      outcome.note = `${err.stage} failed`;
      return;
    }

    // The revision that failed under this generation is not retried until the spec changes.
    const attempted = status.attemptedRevision;
    const progressing = getCondition(status.conditions, 'Progressing');
    const heldBack =
      attempted?.contentDigest === rendered.contentDigest &&
      progressing?.reason === 'RolledBack' &&
      progressing.observedGeneration === gen &&
      active !== undefined &&
      active.contentDigest !== rendered.contentDigest;
    if (heldBack) {
      const objects = await this.objectsOf(bd, active);
      const report = await this.d.applier.apply(this.target(bd, spec, active.number), objects);
      outcome.changed = countChanged(report.results);
      this.revertedEvent(bd, report.results);
      await this.observeHealth(bd, status, set, objects);
      outcome.note = `revision ${attempted.number} held back after rollback`;
      return;
    }

    const isNew = active?.contentDigest !== rendered.contentDigest;
    // the spec asks for the active content again (e.g. rolled back by spec): nothing is failing
    if (!isNew) status.attemptedRevision = undefined;
    const number = isNew ? await this.revisionNumber(bd, status, rendered) : active.number;
    // CRD upgrade safety guards new revisions; re-applying an installed one (drift, rollback) is not an upgrade
    const target = isNew ? { ...this.target(bd, spec, number), crdSafety: spec.upgrade.crdSafety } : this.target(bd, spec, number);
    // independent: the revision is stored (before anything is applied) while the watches sync
    await time(
      'store+watch',
      Promise.all([
        isNew
          ? this.d.revisions.save(bd.metadata.name, { number, contentDigest: rendered.contentDigest, inputs: rendered.inputs }, rendered.objects).then((bytes) => recordRevisionBytes(this.d.metrics, bd.metadata.name, bytes))
          : undefined,
        this.servedTypes(rendered.objects).then((types) => this.d.managed.watch(types, signal)),
      ]),
    );
    if (isNew) this.loaded.set(bd.metadata.name, { number, objects: rendered.objects });

    let results: ObjectResult[];
    let appliedDigest: string | undefined;
    try {
      const report = await time('apply', this.d.applier.apply(target, rendered.objects));
      results = report.results;
      recordApplied(this.d.metrics, results);
      appliedDigest = report.appliedDigest;
      status.skippedOptional = report.skippedOptional.length ? report.skippedOptional : undefined;
      await this.d.managed.watch(await this.servedTypes(rendered.objects), signal);
    } catch (e) {
      const err = asHoistError(e, { stage: 'apply', reason: 'ApplyFailed', code: 'apply-failed', terminal: false });
      await this.applyFailed(bd, spec, status, set, err, { number, contentDigest: rendered.contentDigest }, rendered.objects, outcome);
      return;
    }
    outcome.changed = countChanged(results);
    if (!isNew) this.revertedEvent(bd, results);

    if (isNew) {
      // Objects that left the bundle go only now that the new revision applied completely.
      const previous = active ? await this.objectsOf(bd, active).catch(() => []) : [];
      const pruned = await time('prune', deleteOwned(this.actor(bd), { name: bd.metadata.name, lineage: lineageOf(bd) }, staleObjects(previous, rendered.objects), {
        keepCRDs: !spec.deleteCRDsOnUninstall,
        log: this.d.log,
        retained: rendered.objects,
      })).catch((e: unknown) => {
        // the new revision is applied; what failed is removing what left the bundle: say so, retry
        const err = asHoistError(e, { stage: 'apply', reason: 'PruneFailed', code: 'delete-failed', terminal: false });
        set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${number}: ${rendered.objects.length} objects` });
        set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `revision ${number} applied; removing objects that left the bundle failed: ${err.describe()}; retrying with backoff` });
        throw err;
      });
      outcome.changed += countChanged(pruned);
      recordPruned(this.d.metrics, pruned);
      status.activeRevision = { number, contentDigest: rendered.contentDigest, objects: rendered.objects.length, appliedAt: this.now().toISOString() };
      status.attemptedRevision = undefined;
      status.revisions = recordRevision(status.revisions, { number, contentDigest: rendered.contentDigest, phase: 'Active' });
      await time('history', this.pruneHistory(bd, spec, status));
      this.d.events.event(bd, 'Normal', 'Installed', `revision ${number} (${rendered.contentDigest}) installed: ${summarize(results)}${pruned.length ? `, pruned ${countChanged(pruned)}` : ''}`);
      set({ type: 'Progressing', status: 'True', reason: 'RollingOut', message: `revision ${number} applied, waiting for it to become healthy` });
    }
    const previous = status.activeRevision?.number === number ? status.activeRevision : undefined;
    const appliedAt = previous?.appliedAt;
    status.activeRevision = { number, contentDigest: rendered.contentDigest, objects: rendered.objects.length, ...(appliedAt ? { appliedAt } : {}), ...(appliedDigest ? { appliedDigest } : {}) };
    set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${number}: ${rendered.objects.length} objects` });
    const healthy = await this.observeHealth(bd, status, set, rendered.objects);
    outcome.result = await this.progress(bd, spec, status, set, healthy, outcome);
  }

  /** Progressing after a successful apply: done when healthy; roll back past the deadline. */
  private async progress(
    bd: BundleDeployment,
    spec: DefaultedSpec,
    status: BundleDeploymentStatus,
    set: (c: ConditionInput) => void,
    healthy: boolean,
    outcome: Outcome,
  ): Promise<ReconcileResult> {
    const prog = getCondition(status.conditions, 'Progressing');
    const poll = this.pollAfter(spec);
    const gen = bd.metadata.generation ?? 0;
    // a rollback or a missed deadline under this generation stays reported until the spec changes
    const settled = (prog?.reason === 'RolledBack' || prog?.reason === 'Blocked') && prog.observedGeneration === gen;
    if (prog?.reason === 'RolledBack' && settled) return poll;
    if (healthy) {
      set({ type: 'Progressing', status: 'False', reason: 'Succeeded', message: `revision ${status.activeRevision?.number} is installed and healthy` });
      return poll;
    }
    if (settled) return poll;
    if (prog?.reason !== 'RollingOut') {
      // installed earlier and healthy then: Healthy=False tells the story, the rollout is done
      set({ type: 'Progressing', status: 'False', reason: 'Succeeded', message: `revision ${status.activeRevision?.number} is installed` });
      return poll;
    }
    const deadlineMs = parseDuration(spec.upgrade?.progressDeadline ?? '10m', 'spec.upgrade.progressDeadline');
    // from when the revision's objects were applied (kept in status, so a restart neither resets nor
    // shortens it); statuses written before appliedAt existed fall back to the condition's transition
    const since = Date.parse(status.activeRevision?.appliedAt ?? prog.lastTransitionTime);
    const left = since + deadlineMs - this.now().getTime();
    if (left > 0) return { requeueAfter: Math.min(left, poll.requeueAfter ?? left) };
    const why = `revision ${status.activeRevision?.number} not healthy within progressDeadline ${spec.upgrade?.progressDeadline}: ${getCondition(status.conditions, 'Healthy')?.message ?? ''}`;
    const err = new HoistError(why, { stage: 'observe', reason: 'ApplyFailed', code: 'progress-deadline', subject: `revision ${status.activeRevision?.number}`, terminal: true });
    const current = status.activeRevision!;
    if (spec.upgrade?.onFailure !== 'Rollback' || !lastGoodRevision(status, current.contentDigest)) {
      set({ type: 'Progressing', status: 'False', reason: 'Blocked', message: `${why}; ${spec.upgrade?.onFailure === 'Hold' ? 'onFailure Hold keeps it' : 'no earlier revision to roll back to'}` });
      this.d.events.event(bd, 'Warning', 'ProgressDeadlineExceeded', why);
      return poll;
    }
    const objects = await this.objectsOf(bd, current);
    await this.applyFailed(bd, spec, status, set, err, current, objects, { ...outcome, result: {} });
    return poll;
  }

  /**
   * A new revision could not be applied (or did not become healthy). Rollback re-applies the
   * last good revision from its stored objects; Hold keeps retrying with backoff.
   */
  private async applyFailed(
    bd: BundleDeployment,
    spec: DefaultedSpec,
    status: BundleDeploymentStatus,
    set: (c: ConditionInput) => void,
    err: HoistError,
    failed: { number: number; contentDigest: string },
    failedObjects: KubeObject[],
    outcome: Outcome,
  ): Promise<void> {
    // refused before any write: the installed revision is untouched
    const reason = err.reason === 'ConflictingOwner' || err.reason === 'UnsafeCRDUpgrade' ? err.reason : 'ApplyFailed';
    // the acting account may not read an object of the new revision: refused before any write,
    // and pruning the new revision's objects would only be refused the same way
    const forbidden = err.code === 'forbidden';
    const message = err.describe();
    status.attemptedRevision = { number: failed.number, contentDigest: failed.contentDigest, reason };
    const lastGood = lastGoodRevision(status, failed.contentDigest);
    if (spec.upgrade?.onFailure === 'Rollback' && lastGood) {
      const objects = await this.objectsOf(bd, lastGood);
      try {
        const report = await this.d.applier.apply(this.target(bd, spec, lastGood.number), objects);
        const pruned = forbidden ? [] : await deleteOwned(this.actor(bd), { name: bd.metadata.name, lineage: lineageOf(bd) }, staleObjects(failedObjects, objects), { keepCRDs: !spec.deleteCRDsOnUninstall, log: this.d.log, retained: objects });
        outcome.changed = countChanged(report.results) + countChanged(pruned);
      } catch (e) {
        const rb = asHoistError(e, { stage: 'apply', reason: 'ApplyFailed', code: 'rollback-failed', terminal: false });
        set({ type: 'Installed', status: 'False', reason: 'ApplyFailed', message: `${message}; rollback to revision ${lastGood.number} failed too: ${rb.describe()}` });
        set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `rolling back to revision ${lastGood.number}` });
        throw rb;
      }
      status.activeRevision = { number: lastGood.number, contentDigest: lastGood.contentDigest, objects: objects.length, appliedAt: this.now().toISOString() };
      status.revisions = recordRevision(recordRevision(status.revisions, { ...failed, phase: 'Failed' }), { ...lastGood, phase: 'Active' });
      // refused before any write: the new revision installed nothing, say that rather than "rolled back"
      if (reason !== 'ApplyFailed' || forbidden) set({ type: 'Installed', status: 'False', reason, message: `${message}; revision ${lastGood.number} stays installed` });
      else set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${lastGood.number}: ${objects.length} objects (revision ${failed.number} rolled back)` });
      set({ type: 'Progressing', status: 'False', reason: 'RolledBack', message: `revision ${failed.number} rolled back to ${lastGood.number}: ${message}` });
      this.d.metrics?.rollbacks.inc({ reason: err.code === 'progress-deadline' ? 'ProgressDeadline' : reason });
      this.d.events.event(bd, 'Warning', 'RolledBack', `revision ${failed.number} rolled back to ${lastGood.number}: ${message}`);
      await this.observeHealth(bd, status, set, objects);
      outcome.note = 'rolled back';
      return;
    }
    status.revisions = recordRevision(status.revisions, { ...failed, phase: 'Failed' });
    set({ type: 'Installed', status: 'False', reason, message });
    this.d.events.event(bd, 'Warning', reason, message);
    await this.observeHealth(bd, status, set);
    if (err.terminal && spec.upgrade?.onFailure !== 'Hold') {
      set({ type: 'Progressing', status: 'False', reason: 'Blocked', message: `${message}; retried when the spec changes` });
      // conflicts clear when someone removes the other object: look again now and then
      outcome.result = reason === 'ConflictingOwner' ? { requeueAfter: 60_000 } : {};
      outcome.note = 'blocked';
      return;
    }
    set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `${message}; retrying with backoff` });
    // Hold retries even what looks terminal (a refused object may be accepted once a CRD or
    // webhook appears); the controller retries only non-terminal errors, with backoff
    if (err.terminal) throw new HoistError(err.message, { stage: err.stage, reason: err.reason, code: err.code, subject: err.subject, terminal: false, cause: err });
    throw err;
  }

  // ---- stages ----------------------------------------------------------------------------------

  /** turns every source into an immutable identity, reusing this generation's resolution */
  private async resolve(bd: BundleDeployment, spec: DefaultedSpec, status: BundleDeploymentStatus, signal?: AbortSignal): Promise<Resolved[]> {
    const gen = bd.metadata.generation ?? 0;
    const pollMs = spec.pollInterval ? parseDuration(spec.pollInterval, 'spec.pollInterval') : undefined;
    const rotated = new Set([...(this.pendingRotations.get(bd.metadata.name) ?? []), ...(this.d.secrets?.takeRotated(bd.metadata.name) ?? [])]);
    if (rotated.size > 0) this.pendingRotations.set(bd.metadata.name, rotated);
    const resolved = await Promise.all(
      spec.sources.map(async (src, i) => {
        const source = this.d.sourceFor(src.kind);
        const prev = status.resolvedSources?.[i];
        const previous = prev?.kind === src.kind && prev.generation === gen ? prev : undefined;
        const pollDue = !!pollMs && (!previous?.resolvedAt || Date.parse(previous.resolvedAt) + pollMs <= this.now().getTime());
        // a rotated Secret (or CA ConfigMap) re-checks a floating ref with the new credentials or CA; pinned content needs no request
        const refRotated = rotationKeysOf(bd, src, this.d.controllerNamespace, this.d.identities.defaultServiceAccount).some((k) => rotated.has(k));
        const recheck = !!previous && (pollDue || (refRotated && !pinnedBySpec(src)));
        // a recorded resolution is reused without a network call, so no credentials are read
        const credentials = !previous || recheck ? await readCredentials(this.d.client, this.d.controllerNamespace, bd, src, this.d.identities.defaultServiceAccount) : undefined;
        const ca = !previous || recheck ? await readSourceCA(this.d.client, this.d.controllerNamespace, bd, src, this.d.identities.defaultServiceAccount) : undefined;
        const r = await source.resolve(src, { previous, recheck, credentials, ...(ca ? { ca } : {}), ...(signal ? { signal } : {}) });
        if (recheck || !previous) r.status.resolvedAt = this.now().toISOString();
        else r.status.resolvedAt = previous.resolvedAt;
        r.status.generation = gen;
        return r;
      }),
    );
    this.pendingRotations.delete(bd.metadata.name);
    return resolved;
  }

  /** the objects for these resolved sources: remembered, stored, or fetched and rendered */
  private async render(bd: BundleDeployment, spec: DefaultedSpec, resolved: Resolved[], time: Stopwatch, signal?: AbortSignal): Promise<Rendered> {
    const inputs = hashOf({
      format: spec.format,
      config: spec.config ?? {},
      installNamespace: spec.installNamespace ?? '',
      name: bd.metadata.name,
      // the secret is part of the input: pointing a source at other credentials re-checks access
      sources: resolved.map((r, i) => ({ key: r.key, destination: spec.sources[i]?.destination ?? '', auth: secretOf(spec.sources[i]) })),
    });
    const memo = this.rendered.get(bd.metadata.name);
    if (memo?.inputs === inputs) return memo;

    const stored = await this.d.revisions.findByInputs(bd.metadata.name, inputs);
    if (stored) {
      const objects = await this.d.revisions.load(bd.metadata.name, stored);
      if (objects) {
        const r = { inputs, contentDigest: stored.contentDigest, objects, stored };
        this.rendered.set(bd.metadata.name, r);
        return r;
      }
    }

    const dirs = await time(
      'fetch',
      Promise.all(
        spec.sources.map(async (src, i) => {
          const source = this.d.sourceFor(src.kind);
          const r = resolved[i]!;
          // credentials also on a store hit: the source proves this BD's access before serving
          // content another BD fetched (DESIGN §2); without them it would ask anonymously
          let served: StoreOutcome | undefined;
          const ctx: SourceContext = {
            signal,
            credentials: await readCredentials(this.d.client, this.d.controllerNamespace, bd, src, this.d.identities.defaultServiceAccount),
            ca: await readSourceCA(this.d.client, this.d.controllerNamespace, bd, src, this.d.identities.defaultServiceAccount),
            onStore: (o) => (served = o),
          };
          const dir = await source.fetch(src, r, this.d.store, ctx);
          if (served) this.d.metrics?.fetches.inc({ kind: src.kind, result: served });
          if (served === 'downloaded' && this.d.metrics) this.d.metrics.fetchBytes.inc({ kind: src.kind }, await treeBytes(dir));
          return { dir, destination: src.destination };
        }),
      ),
    );
    const tree = await composeTree(dirs);
    try {
      const processor = this.d.processorFor(spec.format);
      // helm's .Capabilities and registry-v1's served-API check see this cluster, not a default
      const [apiVersions, kubeVersion] = spec.format === 'plain' ? [] : await Promise.all([this.d.client.discovery.apiVersions(), this.d.client.discovery.serverVersion()]);
      const out = await time(
        'process',
        processor.render(tree.root, spec.config, { name: bd.metadata.name, installNamespace: spec.installNamespace, apiVersions, kubeVersion }).catch((e: unknown) => {
          // a process failure names the processor (DESIGN §1: stage, subject and which processor)
          if (!(e instanceof HoistError) || e.stage !== 'process') throw e;
          const named = e.message.startsWith(`${spec.format} processor: `) ? e.message : `${spec.format} processor: ${e.message}`;
          throw new HoistError(named, { stage: e.stage, reason: e.reason, code: e.code, subject: e.subject, terminal: e.terminal, cause: e });
        }),
      );
      for (const w of out.warnings) this.d.log.warn({ bd: bd.metadata.name, format: spec.format }, w);
      // the digest is of the processor's output, as `hoist render` computes it
      const digest = contentDigest(out.objects);
      const objects = await assignNamespaces(out.objects, spec.installNamespace, this.d.client.discovery);
      const r = { inputs, contentDigest: digest, objects };
      this.rendered.set(bd.metadata.name, r);
      return r;
    } finally {
      await tree.dispose();
    }
  }

  private failBeforeApply(err: HoistError, status: BundleDeploymentStatus, set: (c: ConditionInput) => void): void {
    const message = err.describe();
    const stage: Stage = err.stage;
    if (stage === 'resolve' || stage === 'spec') {
      set({ type: 'Resolved', status: 'False', reason: 'ResolveFailed', message });
      set({ type: 'Unpacked', status: 'Unknown', reason: 'Pending', message: 'waiting for sources to resolve' });
    } else {
      set({ type: 'Unpacked', status: 'False', reason: stage === 'process' ? 'ProcessFailed' : 'FetchFailed', message });
    }
    const active = status.activeRevision;
    if (active) set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${active.number}: ${active.objects ?? 0} objects (a newer spec failed to ${stage})` });
    else set({ type: 'Installed', status: 'False', reason: 'Pending', message: `nothing installed: ${stage} failed` });
    set(
      err.terminal
        ? { type: 'Progressing', status: 'False', reason: 'Blocked', message: `${message}; retried when the spec changes` }
        : { type: 'Progressing', status: 'True', reason: 'Retrying', message: `${message}; retrying with backoff` },
    );
  }

  /**
   * Health of the active revision from the managed-object watches: built-in readiness and the
   * verdicts of `spec.healthChecks`, the worse of the two per object. True when all are ready.
   */
  private async observeHealth(bd: BundleDeployment, status: BundleDeploymentStatus, set: (c: ConditionInput) => void, objects?: KubeObject[]): Promise<boolean> {
    const active = status.activeRevision;
    if (!active) {
      set({ type: 'Healthy', status: 'Unknown', reason: 'Unknown', message: 'nothing installed' });
      return false;
    }
    const objs = objects ?? (await this.objectsOf(bd, active).catch(() => undefined));
    if (!objs) {
      set({ type: 'Healthy', status: 'Unknown', reason: 'Unknown', message: `revision ${active.number} objects not found in the revision store` });
      return false;
    }
    const name = bd.metadata.name;
    this.d.managed.setProbes(name, bd.spec.healthChecks);
    await this.d.managed.watch(await this.servedTypes(objs));
    await this.d.managed.settled();
    const probeError = this.d.managed.probeError(name);
    if (probeError) {
      set({ type: 'Healthy', status: 'False', reason: 'Unhealthy', message: probeError.message });
      return false;
    }
    const failed: string[] = [];
    const waiting: string[] = [];
    let recheckAt: number | undefined;
    const skipped = new Set(status.skippedOptional ?? []);
    for (const o of objs) {
      const ns = o.metadata.namespace;
      const id = objectId(o);
      const subject = `${o.kind} ${ns ? `${ns}/` : ''}${o.metadata.name}`;
      if ([...skipped].some((s) => s.endsWith(subject))) continue;
      const h = this.d.managed.health(id);
      if (!h) {
        waiting.push(`${subject}: not observed`);
        continue;
      }
      if (h.readiness === 'Failed') failed.push(`${subject}: ${h.message ?? 'failed'}`);
      else if (h.readiness === 'InProgress') waiting.push(`${subject}: ${h.message ?? 'in progress'}`);
      for (const v of this.d.managed.checkVerdicts(id)) {
        if (v.changesAt !== undefined) recheckAt = Math.min(recheckAt ?? v.changesAt, v.changesAt);
        if (v.readiness === 'Failed') failed.push(`${subject}: health check ${v.check}: ${v.message ?? 'failed'}`);
        else if (v.readiness === 'InProgress') waiting.push(`${subject}: health check ${v.check}: ${v.message ?? 'in progress'}`);
      }
    }
    if (recheckAt !== undefined) this.healthRecheck.set(name, recheckAt);
    const more = (list: string[]) => list.slice(0, 5).join('; ') + (list.length > 5 ? ` (+${list.length - 5} more)` : '');
    if (failed.length) set({ type: 'Healthy', status: 'False', reason: 'Unhealthy', message: `${failed.length} failing: ${more(failed)}` });
    else if (waiting.length) set({ type: 'Healthy', status: 'False', reason: 'Progressing', message: `${waiting.length} not ready: ${more(waiting)}` });
    else set({ type: 'Healthy', status: 'True', reason: 'Healthy', message: `${objs.length} objects ready` });
    return failed.length === 0 && waiting.length === 0;
  }

  private async observePaused(bd: BundleDeployment, status: BundleDeploymentStatus, set: (c: ConditionInput) => void): Promise<void> {
    set({ type: 'Paused', status: 'True', reason: 'Paused', message: 'spec.paused: no fetch, apply, prune or drift correction' });
    const prog = getCondition(status.conditions, 'Progressing');
    if (prog?.reason !== 'Paused') set({ type: 'Progressing', status: 'False', reason: 'Paused', message: 'paused' });
    await this.observeHealth(bd, status, set);
  }

  // ---- deletion ------------------------------------------------------------------------------

  private async finalize(bd: BundleDeployment): Promise<ReconcileResult> {
    if (!bd.metadata.finalizers?.includes(FINALIZER)) return {};
    const name = bd.metadata.name;
    // the cache can still show a BD whose finalizer we already removed: nothing left to do
    if (bd.metadata.uid && this.finalized.get(name) === bd.metadata.uid) return {};
    const spec = withDefaults(bd.spec);
    if (spec.paused) {
      this.d.log.info({ bd: name }, 'paused BundleDeployment deleted: its objects are orphaned');
    } else {
      const active = bd.status?.activeRevision;
      // Not knowing what is installed is never "nothing installed": a revision that cannot be
      // loaded (API error, Secret missing) keeps the finalizer and is retried with backoff.
      // Removing the finalizer by hand orphans the objects.
      const objects = active ? await this.objectsOf(bd, active).catch((e: unknown) => this.uninstallBlocked(bd, e)) : [];
      // what another member of the lineage installs is handed over, not deleted (DESIGN §4)
      const kept = await this.installedByLineage(bd);
      const doomed = objects.filter((o) => !kept.has(objectId(o)));
      const results = doomed.length === 0 ? [] : await Promise.resolve()
        .then(() => deleteOwned(this.actor(bd), { name, lineage: lineageOf(bd) }, doomed, { keepCRDs: !spec.deleteCRDsOnUninstall, log: this.d.log }))
        .catch((e: unknown) => this.uninstallBlocked(bd, e));
      this.d.log.info({ bd: name, deleted: countChanged(results), handedOver: objects.length - results.length }, 'uninstalled');
    }
    await this.d.revisions.prune(name);
    try {
      await this.d.client.patch(bd, name, undefined, [
        { op: 'test', path: '/metadata/finalizers', value: bd.metadata.finalizers },
        { op: 'replace', path: '/metadata/finalizers', value: bd.metadata.finalizers.filter((f) => f !== FINALIZER) },
      ], 'json');
    } catch (e) {
      // already gone: someone (or an earlier reconcile) finished the job
      if (!isNotFound(e)) throw e;
    }
    this.forget(name);
    if (bd.metadata.uid) this.finalized.set(name, bd.metadata.uid);
    return {};
  }

  /** uninstall cannot go on: say why (log, event) and throw, so the finalizer stays and the controller retries with backoff */
  private uninstallBlocked(bd: BundleDeployment, e: unknown): never {
    const err = asHoistError(e, { stage: 'apply', reason: 'PruneFailed', code: 'uninstall-failed', terminal: false });
    const message = `uninstall of revision ${bd.status?.activeRevision?.number ?? '?'} failed, the finalizer stays until it succeeds (removing ${FINALIZER} by hand orphans the objects): ${err.describe()}`;
    this.d.log.warn({ bd: bd.metadata.name, err: err.message }, 'uninstall failed');
    this.d.events.event(bd, 'Warning', 'UninstallFailed', message);
    throw new HoistError(message, { stage: err.stage, reason: err.reason, code: err.code, subject: err.subject, terminal: false, cause: err });
  }

  /** the client acting for bd: its ServiceAccount (impersonated) or the controller */
  private actor(bd: BundleDeployment): KubeClient {
    return this.d.identities.for(bd).client;
  }

  /** ids of the objects the other (undeleted) members of bd's lineage have installed */
  private async installedByLineage(bd: BundleDeployment): Promise<Set<string>> {
    const lineage = lineageOf(bd);
    const others = this.d.listBundleDeployments().filter((o) => o.metadata.name !== bd.metadata.name && lineageOf(o) === lineage && !o.metadata.deletionTimestamp);
    const ids = new Set<string>();
    for (const other of others) {
      const active = other.status?.activeRevision;
      if (!active) continue;
      const objects = await this.objectsOf(other, active).catch((e: unknown) => {
        this.d.log.warn({ bd: bd.metadata.name, other: other.metadata.name, err: e instanceof Error ? e.message : String(e) }, 'lineage member revision not readable');
        return [];
      });
      for (const o of objects) ids.add(objectId(o));
    }
    return ids;
  }

  private async addFinalizer(bd: BundleDeployment): Promise<void> {
    const finalizers = [...(bd.metadata.finalizers ?? []), FINALIZER];
    const updated = await this.d.client.patch(bd, bd.metadata.name, undefined, { metadata: { finalizers, resourceVersion: bd.metadata.resourceVersion } }, 'merge');
    this.supersede(bd.metadata.name, bd.metadata.resourceVersion);
    bd.metadata.finalizers = updated.metadata.finalizers;
    bd.metadata.resourceVersion = updated.metadata.resourceVersion;
    if (updated.metadata.resourceVersion) this.ownWrites.set(bd.metadata.name, updated.metadata.resourceVersion);
  }

  // ---- helpers -------------------------------------------------------------------------------

  private target(bd: BundleDeployment, spec: DefaultedSpec, revision: number): ApplyTarget {
    const recorded = bd.status?.activeRevision?.number === revision ? bd.status.activeRevision.appliedDigest : undefined;
    return { name: bd.metadata.name, lineage: lineageOf(bd), revision, protection: spec.collisionProtection ?? 'Prevent', installNamespace: spec.installNamespace, actor: this.actor(bd), ...(recorded ? { appliedDigest: recorded } : {}) };
  }

  /** a stored revision with this content keeps its number (restart, roll back by spec) */
  private async revisionNumber(bd: BundleDeployment, status: BundleDeploymentStatus, rendered: Rendered): Promise<number> {
    if (rendered.stored) return rendered.stored.number;
    const stored = await this.d.revisions.list(bd.metadata.name);
    const same = stored.find((r) => r.contentDigest === rendered.contentDigest);
    if (same) return same.number;
    const known = [...stored.map((r) => r.number), ...(status.revisions ?? []).map((r) => r.number), status.activeRevision?.number ?? 0, status.attemptedRevision?.number ?? 0];
    return Math.max(0, ...known) + 1;
  }

  private async objectsOf(bd: BundleDeployment, rev: { number: number; contentDigest: string }): Promise<KubeObject[]> {
    const memo = this.rendered.get(bd.metadata.name);
    if (memo?.contentDigest === rev.contentDigest) return memo.objects;
    const loaded = this.loaded.get(bd.metadata.name);
    if (loaded?.number === rev.number) return loaded.objects;
    const objects = await this.d.revisions.load(bd.metadata.name, rev);
    if (!objects) {
      throw new HoistError(`revision ${rev.number} (${rev.contentDigest}) is not in the revision store`, { stage: 'apply', reason: 'ApplyFailed', code: 'revision-missing', subject: `revision ${rev.number}`, terminal: false });
    }
    this.loaded.set(bd.metadata.name, { number: rev.number, objects });
    return objects;
  }

  /** keeps the active revision plus revisionHistoryLimit earlier ones, in status and store */
  private async pruneHistory(bd: BundleDeployment, spec: DefaultedSpec, status: BundleDeploymentStatus): Promise<void> {
    status.revisions = trimHistory(status.revisions, spec.revisionHistoryLimit ?? 3);
    await this.d.revisions.prune(bd.metadata.name, new Set(status.revisions.map((r) => r.number)));
  }

  private pollAfter(spec: DefaultedSpec): ReconcileResult {
    return spec.pollInterval ? { requeueAfter: parseDuration(spec.pollInterval, 'spec.pollInterval') } : {};
  }

  private async servedTypes(objects: readonly KubeObject[]): Promise<TypeRef[]> {
    const seen = new Map<string, TypeRef>();
    for (const o of objects) {
      const k = `${o.apiVersion}/${o.kind}`;
      // no discovery refresh for unserved kinds (skipped optional objects) on every reconcile: the
      // applier and the CRD watch refresh discovery when a kind can have appeared
      if (!seen.has(k) && (await this.d.client.discovery.resourceFor(o, { refreshOnMiss: false }))) seen.set(k, { apiVersion: o.apiVersion, kind: o.kind });
    }
    return [...seen.values()];
  }

  /** drift correction on an unchanged revision: name what was changed back (e.g. after unpause) */
  private revertedEvent(bd: BundleDeployment, results: readonly ObjectResult[]): void {
    const reverted = results.filter((r) => r.action === 'configured' || r.action === 'created');
    if (reverted.length === 0) return;
    // the fields hand edits (kubectl edit/set/patch...) had set, so the person on call sees the hotfix go
    const what = (r: ObjectResult) => (r.action === 'created' ? 're-created' : r.reverted?.length ? `reverted (${r.reverted.join(', ')})` : 'reverted');
    this.d.events.event(bd, 'Normal', 'DriftCorrected', `changed back to revision ${bd.status?.activeRevision?.number}: ${reverted.map((r) => `${r.subject} ${what(r)}`).join(', ')}`);
  }

  private async writeStatus(bd: BundleDeployment, status: BundleDeploymentStatus): Promise<void> {
    const clean = JSON.parse(JSON.stringify(status)) as BundleDeploymentStatus;
    if (hashOf(clean) === hashOf(bd.status ?? {})) return;
    const written = await this.d.client.updateStatus({ ...bd, status: clean });
    this.supersede(bd.metadata.name, bd.metadata.resourceVersion);
    if (written.metadata.resourceVersion) this.ownWrites.set(bd.metadata.name, written.metadata.resourceVersion);
  }

  /** true when this resourceVersion is our own latest write (status or finalizer) of the BD */
  isOwnWrite(name: string, resourceVersion: string | undefined): boolean {
    return resourceVersion !== undefined && this.ownWrites.get(name) === resourceVersion;
  }

  private supersede(name: string, resourceVersion: string | undefined): void {
    if (!resourceVersion) return;
    const set = this.superseded.get(name) ?? new Set<string>();
    this.superseded.set(name, set.add(resourceVersion));
  }
}

function secretOf(src: DefaultedSpec['sources'][number] | undefined): string | undefined {
  return src ? secretRefOf(src) : undefined;
}

interface Outcome {
  result: ReconcileResult;
  changed: number;
  note: string;
  /** milliseconds per stage, for the reconcile log line */
  timings: Record<string, number>;
}

/** times a stage's promise into `into[name]` */
type Stopwatch = <T>(name: string, p: Promise<T>) => Promise<T>;

/** total size of the regular files under a directory (fetch metrics, on a store miss only) */
async function treeBytes(dir: string): Promise<number> {
  let sum = 0;
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) sum += (await stat(join(e.parentPath, e.name))).size;
  }
  return sum;
}

function stopwatch(into: Record<string, number>): Stopwatch {
  return async <T>(name: string, p: Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await p;
    } finally {
      into[name] = Math.round(performance.now() - t0);
    }
  };
}

function describeResolved(resolved: readonly Resolved[]): string {
  return resolved.map((r) => `${r.status.kind} ${r.status.digest ?? r.status.commit ?? r.status.sha256 ?? r.key}`).join(', ');
}

function summarize(results: readonly ObjectResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) counts.set(r.action, (counts.get(r.action) ?? 0) + 1);
  return [...counts].map(([a, n]) => `${n} ${a}`).join(', ');
}

export type { Condition, ResolvedSourceStatus };
