/**
 * Apply: the rendered revision goes to the cluster. A new revision is stored first (so a crash
 * can always roll back), then applied with server-side apply; objects that left the bundle are
 * pruned only after it applied completely. Re-applying the active revision corrects drift and
 * says what it changed back. Sets Installed; failures go to recover.ts.
 */
import { isCRD } from '../../apply/object-id.ts';
import { replacedRevisions, revisionNumberFor } from '../../apply/plan.ts';
import { countChanged, type ObjectResult } from '../../apply/result.ts';
import { revisionSpec } from '../../sources/pin.ts';
import type { ActiveRevision, Transition } from '../../../api/v1alpha2/types.ts';
import type { ApplyReport, StepGate } from '../../apply/result.ts';
import { asHoistError, CancelledError, HoistError, FailureReason } from '../../util/errors.ts';
import { clip } from '../conditions.ts';
import { recordApplied, recordPruned, recordRevisionBytes } from '../metrics.ts';
import { keptRevisions, recordRevision, trimHistory } from '../revision-history.ts';
import type { Rendered } from '../revision-objects.ts';
import { applyTarget, inventory, watchObjects, type StepContext } from './context.ts';
import { pruneLeftOvers } from './prune.ts';
import { dependenciesReady } from './dependencies.ts';
import { decideRevision } from './decide.ts';
import { assess, firstFive, observeHealth } from './health.ts';
import { deadlineOf, endTransition, runHooks, transitionOf } from './transition.ts';
import { driftNotCorrected, failedBeforeApply, failedRevision } from './recover.ts';
import type { ReconcileState } from './state.ts';
import { ReconcileCode } from '../errors.ts';

/** how long health waits for the watches to deliver the apply's writes (usually milliseconds) */
const OBSERVE_WRITES_MS = 2000;

/** applies the rendered revision; false when the pipeline stops here (held back, failed) */
export async function applyRevision(ctx: StepContext, s: ReconcileState, rendered: Rendered): Promise<boolean> {
  // taken from the memo whatever happens next (held back, waiting for dependencies): a compressed
  // copy is not kept beside the objects; a later apply compresses again
  const prepacked = rendered.packed;
  rendered.packed = undefined;
  const { d } = ctx;
  const { status, spec } = s;
  const active = status.activeRevision;
  const decision = decideRevision({
    generation: s.generation,
    contentDigest: rendered.contentDigest,
    active,
    attempted: status.attemptedRevision,
    retry: s.request !== undefined,
  });
  if (decision.kind === 'held-back' && active) {
    await keepActive(ctx, s, active);
    s.note = `revision ${status.attemptedRevision?.number} held back after rollback`;
    return false;
  }
  const isNew = decision.kind === 'new';
  // spec.dependsOn holds a new revision before anything of it is stored or applied; one already
  // on its way in (a phase waiting, hooks run) is not held back half-way
  const underWay = status.transition?.contentDigest === rendered.contentDigest;
  if (isNew && !underWay && !dependenciesReady(ctx, s)) {
    if (active) await keepActive(ctx, s, active);
    else await observeHealth(ctx, s);
    return false;
  }
  // the spec asks for the active content again (e.g. rolled back by spec): nothing is failing
  if (!isNew) status.attemptedRevision = undefined;
  const number = isNew || !active ? await revisionNumber(ctx, s, rendered).catch((e: unknown) => storeFailed(s, undefined, e)) : active.number;
  // a new revision stored by an earlier reconcile (a phase waiting for the ones before it, a
  // restart) is neither compressed nor stored again: it passed the size cap when it was stored
  const store = isNew && !d.revisions.isStored(s.name, { number, contentDigest: rendered.contentDigest });
  // the size cap is checked before the revision is taken or anything is written: a revision over
  // it is refused like content that fails to process, and the installed revision stays as it is
  const packed = store
    ? (prepacked ?? (await d.revisions.pack([...rendered.objects, ...rendered.hooks], rendered.contentDigest).catch((e: unknown) => e as Error)))
    : undefined;
  if (packed instanceof Error) {
    await failedBeforeApply(ctx, s, packed);
    return false;
  }
  s.revision = { number, isNew };
  // CRD upgrade safety guards new revisions; re-applying an installed one (drift, rollback) is not an upgrade
  const target = { ...applyTarget(ctx, s.bd, spec, number), ...(isNew ? { crdSafety: spec.upgrade.crdSafety } : {}) };
  // independent: the revision is stored (before anything is applied) while the watches sync
  await s.time(
    'store+watch',
    Promise.all([
      store
        ? d.revisions
            .save(
              s.name,
              { number, contentDigest: rendered.contentDigest, inputs: rendered.inputs, spec: revisionSpec(spec, status.resolvedSources) },
              packed ?? [...rendered.objects, ...rendered.hooks],
            )
            .then(
              (bytes) => recordRevisionBytes(d.metrics, s.name, bytes),
              (e: unknown) => storeFailed(s, number, e),
            )
        : undefined,
      watchObjects(ctx, rendered.objects, s.signal),
    ]),
  );
  if (isNew) ctx.objects.rememberLoaded(s.name, number, rendered);

  // a new revision is a transition: its pre hooks, then its phases, each once the ones before are ready
  const rev = { number, contentDigest: rendered.contentDigest };
  const action = active ? 'upgrade' : 'install';
  let t = isNew && (rendered.hooks.length > 0 || status.transition?.revision === number) ? transitionOf(s, rev, action) : undefined;
  if (t && rendered.hooks.length > 0) {
    await d.applier.ensureInstallNamespace(target, rendered.objects, s.signal).catch((e: unknown) => hooksBroke(s, number, e));
    const failed = await runHooks(ctx, s, t, t.action === 'install' ? 'pre-install' : 'pre-upgrade', rendered.hooks).catch((e: unknown) =>
      hooksBroke(s, number, e),
    );
    if (failed) {
      await failedRevision(ctx, s, failed, rev, rendered.objects);
      return false;
    }
  }

  try {
    const report = await s.time('apply', d.applier.apply(target, rendered.objects, { ...(isNew ? { gate: phaseGate(ctx, s) } : {}), signal: s.signal }));
    if (report.pending) {
      t ??= transitionOf(s, rev, action);
      return await waitForPhase(ctx, s, t, report.pending, rendered);
    }
    s.results = report.results;
    s.appliedDigest = report.appliedDigest;
    recordApplied(d.metrics, report.results);
    status.skippedOptional = report.skippedOptional.length ? report.skippedOptional : undefined;
    await watchObjects(ctx, rendered.objects, s.signal);
    const writes = report.results.flatMap((r) => (r.written ? [{ id: r.id, ...r.written }] : []));
    if (writes.length) await s.time('observe', d.managed.observedWrites(writes, OBSERVE_WRITES_MS, s.name));
  } catch (e) {
    // stopped (shutdown, leadership lost), not failed: whoever reconciles next applies it again
    if (e instanceof CancelledError) throw e;
    const err = asHoistError(e, { stage: 'apply', code: ReconcileCode.ApplyFailed, terminal: false });
    // re-applying the installed revision (drift, resume, restart) failing is drift not corrected, not a failed upgrade
    if (isNew) await failedRevision(ctx, s, err, { number, contentDigest: rendered.contentDigest }, rendered.objects);
    else await driftNotCorrected(ctx, s, err, rendered.objects);
    return false;
  }
  s.changed = countChanged(s.results);
  if (isNew) await promote(ctx, s, rendered, number, t);
  else {
    driftCorrectedEvent(ctx, s, s.results);
    await dropAbandoned(ctx, s, rendered);
  }

  const previous = status.activeRevision?.number === number ? status.activeRevision : undefined;
  status.activeRevision = {
    number,
    contentDigest: rendered.contentDigest,
    objects: rendered.objects.length,
    ...(previous?.appliedAt ? { appliedAt: previous.appliedAt } : {}),
    ...(previous?.healthyAt ? { healthyAt: previous.healthyAt } : {}),
    ...(s.appliedDigest ? { appliedDigest: s.appliedDigest } : {}),
    inventory: inventory(ctx, s.bd, number, rendered.objects),
  };
  s.set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${number}: ${rendered.objects.length} objects` });
  return true;
}

/**
 * The rendered revision is not applied (held back after a rollback, or waiting for its
 * dependencies): the installed one is kept as it is — its drift corrected, its health observed.
 */
async function keepActive(ctx: StepContext, s: ReconcileState, active: ActiveRevision): Promise<void> {
  const objects = await ctx.objects.of(s.name, active);
  const report = await ctx.d.applier.apply(applyTarget(ctx, s.bd, s.spec, active.number), objects, { signal: s.signal });
  s.changed = countChanged(report.results);
  driftCorrectedEvent(ctx, s, report.results);
  await observeHealth(ctx, s, objects);
}

/** a new revision applied completely: prune what left the bundle, make it the active revision */
async function promote(ctx: StepContext, s: ReconcileState, rendered: Rendered, number: number, t: Transition | undefined): Promise<void> {
  const { d } = ctx;
  const { status, spec } = s;
  // the active revision's objects, and what a revision abandoned half-way through its phases (the spec moved on) had applied
  const previous = (await Promise.all(replacedRevisions(status, number).map((r) => ctx.objects.of(s.name, r).catch(() => [])))).flat();
  const pruned = await s.time('prune', pruneLeftOvers(ctx, s, previous, rendered.objects, number)).catch((e: unknown) => {
    if (e instanceof CancelledError) throw e;
    // the new revision is applied; what failed is removing what left the bundle: say so, retry
    const err = asHoistError(e, { stage: 'apply', reason: FailureReason.PruneFailed, code: ReconcileCode.DeleteFailed, terminal: false });
    s.set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${number}: ${rendered.objects.length} objects` });
    s.set({
      type: 'Progressing',
      status: 'True',
      reason: 'Retrying',
      message: `revision ${number} applied; removing objects that left the bundle failed: ${err.describe()}; retrying with backoff`,
    });
    throw err;
  });
  s.changed += countChanged(pruned);
  recordPruned(d.metrics, pruned);
  const applied = s.results ?? [];
  s.facts.changes = {
    created: applied.filter((r) => r.action === 'created').length,
    configured: applied.filter((r) => r.action === 'configured').length,
    pruned: countChanged(pruned),
  };
  // progressDeadline counts from the start of the transition (its hooks and phases), not from its last phase
  status.activeRevision = {
    number,
    contentDigest: rendered.contentDigest,
    objects: rendered.objects.length,
    appliedAt: t?.startedAt ?? s.now().toISOString(),
    inventory: inventory(ctx, s.bd, number, rendered.objects),
  };
  status.attemptedRevision = undefined;
  // with hooks, the transition stays until its post hooks ran (rollout.ts)
  if (t && rendered.hooks.length > 0) {
    t.phase = undefined;
    t.waiting = undefined;
    status.transition = t;
  } else status.transition = undefined;
  status.revisions = trimHistory(
    recordRevision(status.revisions, { number, contentDigest: rendered.contentDigest, phase: 'Active' }),
    spec.revisionHistoryLimit,
  );
  await s.time('history', d.revisions.prune(s.name, keptRevisions(status)));
  d.events.event(
    s.bd,
    'Normal',
    'Installed',
    `revision ${number} (${rendered.contentDigest}) installed: ${summarize(s.results ?? [])}${pruned.length ? `, pruned ${countChanged(pruned)}` : ''}${keptCount(pruned)}`,
  );
  s.set({ type: 'Progressing', status: 'True', reason: 'RollingOut', message: `revision ${number} applied, waiting for it to become healthy` });
}

/**
 * Numbering or storing a new revision (before anything of it is applied) failed, e.g. the API
 * server is restarting: nothing was applied and the installed revision is untouched; retried
 * with backoff. Named as the apply stage's, not left to the reconciler's catch-all.
 */
function storeFailed(s: ReconcileState, number: number | undefined, e: unknown): never {
  const what = number === undefined ? 'the new revision could not be numbered' : `revision ${number} could not be stored`;
  const err = asHoistError(e, {
    stage: 'apply',
    code: ReconcileCode.RevisionStore,
    subject: number === undefined ? 'revision store' : `revision ${number}`,
    terminal: false,
  });
  s.set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `${what} before its apply: ${err.describe()}; retrying with backoff` });
  throw err;
}

/** a stored revision with this content keeps its number (restart, roll back by spec): the rule `hoist diff` numbers by */
async function revisionNumber(ctx: StepContext, s: ReconcileState, rendered: Rendered): Promise<number> {
  if (rendered.stored) return rendered.stored.number;
  return revisionNumberFor(rendered.contentDigest, await ctx.d.revisions.list(s.name), s.status);
}

/** drift correction on an unchanged revision: name what was changed back (e.g. after unpause) */
function driftCorrectedEvent(ctx: StepContext, s: ReconcileState, results: readonly ObjectResult[]): void {
  const reverted = results.filter((r) => r.action === 'configured' || r.action === 'created');
  if (reverted.length === 0) return;
  s.facts.driftReverted = reverted.map((r) => r.subject);
  // the fields hand edits (kubectl edit/set/patch...) had set, so the person on call sees the hotfix go
  const what = (r: ObjectResult) => (r.action === 'created' ? 're-created' : r.reverted?.length ? `reverted (${r.reverted.join(', ')})` : 'reverted');
  ctx.d.events.event(
    s.bd,
    'Normal',
    'DriftCorrected',
    `changed back to revision ${s.bd.status?.activeRevision?.number}: ${reverted.map((r) => `${r.subject} ${what(r)}`).join(', ')}`,
  );
}

/** ", kept N" for the objects a retention policy kept (the Kept Event names them) */
function keptCount(pruned: readonly ObjectResult[]): string {
  const n = pruned.filter((r) => r.action === 'kept').length;
  return n > 0 ? `, kept ${n}` : '';
}

function summarize(results: readonly ObjectResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) counts.set(r.action, (counts.get(r.action) ?? 0) + 1);
  return [...counts].map(([a, n]) => `${n} ${a}`).join(', ');
}

/**
 * The spec went back to the installed content while a new revision was still being applied phase
 * by phase: what that revision had applied and the installed one does not have is pruned.
 */
async function dropAbandoned(ctx: StepContext, s: ReconcileState, rendered: Rendered): Promise<void> {
  const t = s.status.transition;
  if (!t || t.revision === s.status.activeRevision?.number) return;
  const abandoned = await ctx.objects.of(s.name, { number: t.revision, contentDigest: t.contentDigest }).catch(() => []);
  const pruned = await pruneLeftOvers(ctx, s, abandoned, rendered.objects, s.status.activeRevision?.number ?? t.revision);
  s.changed += countChanged(pruned);
  endTransition(s, 'Failed');
}

/**
 * The gate between the phases of a new revision: once a step's writes are in the watch caches,
 * the next step may go when every object of this one is ready (the health rules of Healthy).
 * CRDs are waited for by the applier (Established and served). PersistentVolumeClaims are not waited for: one of a WaitForFirstConsumer class binds only
 * once a pod of a later phase uses it.
 */
function phaseGate(ctx: StepContext, s: ReconcileState): StepGate {
  return async ({ objects, results }) => {
    const writes = results.flatMap((r) => (r.written ? [{ id: r.id, ...r.written }] : []));
    if (writes.length) await s.time('observe', ctx.d.managed.observedWrites(writes, OBSERVE_WRITES_MS, s.name));
    // CRDs: the applier itself waited until they are Established (their watch may lag behind)
    const { failed, waiting } = assess(
      ctx,
      s,
      objects.filter((o) => o.kind !== 'PersistentVolumeClaim' && !isCRD(o)),
    );
    if (failed.length) return { ready: false, waiting: firstFive(failed), failed: true };
    return waiting.length === 0 ? { ready: true } : { ready: false, waiting: firstFive(waiting) };
  };
}

/** a phase waits for the ones before it: say so, and fail the revision once one of them failed or progressDeadline has passed */
async function waitForPhase(
  ctx: StepContext,
  s: ReconcileState,
  t: Transition,
  pending: NonNullable<ApplyReport['pending']>,
  rendered: Rendered,
): Promise<false> {
  const { status, spec } = s;
  t.phase = pending.step;
  t.waiting = clip(`${pending.after}: ${pending.waiting}`, 4000);
  const left = deadlineOf(s, t) - s.now().getTime();
  const what = `revision ${t.revision}: phase ${pending.step} is applied once ${pending.after} is ready`;
  // an object that failed will not become ready: the revision fails now, not at the deadline
  if (pending.failed || left <= 0) {
    const message = pending.failed
      ? `${what}, and it failed: ${pending.waiting}`
      : `${what}, and it was not within progressDeadline ${spec.upgrade.progressDeadline}: ${pending.waiting}`;
    const err = new HoistError(message, {
      stage: 'observe',
      code: pending.failed ? ReconcileCode.ObjectFailed : ReconcileCode.ProgressDeadline,
      subject: `revision ${t.revision}`,
      terminal: true,
    });
    await failedRevision(ctx, s, err, { number: t.revision, contentDigest: t.contentDigest }, rendered.objects);
    return false;
  }
  const active = status.activeRevision;
  if (active)
    s.set({
      type: 'Installed',
      status: 'True',
      reason: 'Installed',
      message: `revision ${active.number}: ${active.objects ?? 0} objects (revision ${t.revision} being applied, phase by phase)`,
    });
  else s.set({ type: 'Installed', status: 'False', reason: 'Pending', message: `${what}` });
  s.set({ type: 'Progressing', status: 'True', reason: 'RollingOut', message: `${what}: ${pending.waiting}` });
  await observeHealth(ctx, s);
  s.result = { requeueAfter: left };
  s.note = `phase ${pending.step} waits for ${pending.after}`;
  return false;
}

/** creating, watching or deleting a hook failed for want of an answer: retried with backoff, nothing installed was touched */
function hooksBroke(s: ReconcileState, number: number, e: unknown): never {
  if (e instanceof CancelledError) throw e;
  const err = asHoistError(e, { stage: 'apply', code: ReconcileCode.HookFailed, subject: `revision ${number} hooks`, terminal: false });
  s.set({
    type: 'Progressing',
    status: 'True',
    reason: 'Retrying',
    message: `revision ${number}: running its hooks failed: ${err.describe()}; retrying with backoff`,
  });
  throw err;
}
