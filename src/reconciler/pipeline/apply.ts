/**
 * Apply: the rendered revision goes to the cluster. A new revision is stored first (so a crash
 * can always roll back), then handed to the revision engine (src/apply/revision-engine.ts) once:
 * its pre hooks, its phases with the gate of phases.ts between them, the prune of what left the
 * bundle after it applied completely; this step reads the one result back and says what it
 * means. Re-applying the active revision corrects drift and says what it changed back. Sets
 * Installed; failures go to recover.ts, a phase waiting to phase-wait.ts.
 */
import { replacedRevisions, revisionNumberFor } from '../../apply/plan.ts';
import { countChanged, type ApplyReport, type ObjectResult } from '../../apply/result.ts';
import type { RevisionResult } from '../../apply/revision-engine.ts';
import { revisionSpec } from '../../sources/pin.ts';
import type { ActiveRevision, Transition } from '../../../api/v1alpha2/types.ts';
import { asHoistError, FailureReason } from '../../util/errors.ts';
import { recordApplied, recordPruned, recordRevisionBytes } from '../metrics.ts';
import { keptRevisions, recordRevision, trimHistory } from '../../revisions/revision-history.ts';
import type { Rendered } from '../../revisions/revision-objects.ts';
import { setInstalledRevision, setRetryingWithBackoff, setRollingOut } from '../status.ts';
import { applyTarget, inventory, revisionEngine, watchObjects, type StepContext } from './context.ts';
import { pruneLeftOvers } from './prune.ts';
import { dependenciesReady } from './dependencies.ts';
import { decideRevision } from './decide.ts';
import { observeHealth } from './health.ts';
import { OBSERVE_WRITES_MS, phaseGate, waitForPhase } from './phase-wait.ts';
import { endTransition, runHooks, transitionOf } from './transition.ts';
import { driftNotCorrected, failedBeforeApply, failedRevision } from './recover.ts';
import type { ReconcileState } from './state.ts';
import { ReconcileCode } from '../errors.ts';

/** applies the rendered revision; false when the pipeline stops here (held back, failed) */
export async function applyRevision(ctx: StepContext, s: ReconcileState, rendered: Rendered): Promise<boolean> {
  // taken from the memo whatever happens next (held back, waiting for dependencies): a compressed
  // copy is not kept beside the objects; a later apply compresses again
  const prepacked = rendered.packed;
  rendered.packed = undefined;
  const { status } = s;
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
  const number = await storeRevision(ctx, s, rendered, isNew, prepacked);
  if (number === undefined) return false;
  s.revision = { number, isNew };
  return isNew ? applyNew(ctx, s, rendered, number) : reapplyActive(ctx, s, rendered, number);
}

/**
 * Numbers the revision and stores a new one (before anything is applied) while the watches of
 * its kinds sync; undefined when it is over the size cap (reported as content that fails to
 * process: the installed revision stays as it is).
 */
async function storeRevision(
  ctx: StepContext,
  s: ReconcileState,
  rendered: Rendered,
  isNew: boolean,
  prepacked: Rendered['packed'],
): Promise<number | undefined> {
  const { d } = ctx;
  const { status, spec } = s;
  const active = status.activeRevision;
  const number = isNew || !active ? await revisionNumber(ctx, s, rendered).catch((e: unknown) => storeFailed(s, undefined, e)) : active.number;
  // a new revision stored by an earlier reconcile (a phase waiting for the ones before it, a
  // restart) is neither compressed nor stored again: it passed the size cap when it was stored
  const store = isNew && !d.revisions.isStored(s.name, { number, contentDigest: rendered.contentDigest });
  const all = [...rendered.objects, ...rendered.hooks];
  const packed = store ? (prepacked ?? (await d.revisions.pack(all, rendered.contentDigest).catch((e: unknown) => e as Error))) : undefined;
  if (packed instanceof Error) {
    await failedBeforeApply(ctx, s, packed);
    return undefined;
  }
  const meta = { number, contentDigest: rendered.contentDigest, inputs: rendered.inputs, spec: revisionSpec(spec, status.resolvedSources) };
  const saving = store
    ? d.revisions.save(s.name, meta, packed ?? all).then(
        (bytes) => recordRevisionBytes(d.metrics, s.name, bytes),
        (e: unknown) => storeFailed(s, number, e),
      )
    : undefined;
  // independent: the revision is stored (before anything is applied) while the watches sync
  await s.time('store+watch', Promise.all([saving, watchObjects(ctx, rendered.objects, s.signal)]));
  if (isNew) ctx.objects.rememberLoaded(s.name, number, rendered);
  return number;
}

/** a new revision is a transition: its pre hooks, then its phases, each once the ones before are ready, then the prune */
async function applyNew(ctx: StepContext, s: ReconcileState, rendered: Rendered, number: number): Promise<boolean> {
  const { status, spec } = s;
  const rev = { number, contentDigest: rendered.contentDigest };
  const action = status.activeRevision ? 'upgrade' : 'install';
  let t = rendered.hooks.length > 0 || status.transition?.revision === number ? transitionOf(s, rev, action) : undefined;
  const pre = t && t.action === 'install' ? 'pre-install' : 'pre-upgrade';
  const under = t;
  const result = await revisionEngine(ctx).run({
    // CRD upgrade safety guards new revisions; re-applying an installed one (drift, rollback) is not an upgrade
    target: { ...applyTarget(ctx, s.bd, spec, number), crdSafety: spec.upgrade.crdSafety },
    objects: rendered.objects,
    signal: s.signal,
    time: s.time,
    ...(under && rendered.hooks.length > 0 ? { hooks: { inNamespace: true, run: () => runHooks(ctx, s, under, pre, rendered.hooks) } } : {}),
    gate: phaseGate(ctx, s),
    settle: (report) => settle(ctx, s, rendered, report),
    prune: () => pruneReplaced(ctx, s, rendered, number),
  });
  switch (result.kind) {
    case 'hook-failed':
      await failedRevision(ctx, s, result.error, rev, rendered.objects);
      return false;
    case 'pending':
      t ??= transitionOf(s, rev, action);
      return waitForPhase(ctx, s, t, result.pending, rendered);
    case 'failed':
      await newFailed(ctx, s, result, rendered, number);
      return false;
  }
  s.changed = countChanged(s.results ?? []);
  await promote(ctx, s, rendered, number, t, result.pruned);
  recordActive(ctx, s, rendered, number);
  return true;
}

/** what a stage's failure means for a new revision: hooks and prune retried with backoff, an apply failure recover.ts's */
async function newFailed(
  ctx: StepContext,
  s: ReconcileState,
  result: Extract<RevisionResult, { kind: 'failed' }>,
  rendered: Rendered,
  number: number,
): Promise<void> {
  if (result.stage === 'hooks') {
    // creating, watching or deleting a hook failed for want of an answer: nothing installed was touched
    const err = asHoistError(result.error, { stage: 'apply', code: ReconcileCode.HookFailed, subject: `revision ${number} hooks`, terminal: false });
    setRetryingWithBackoff(s, `revision ${number}: running its hooks failed: ${err.describe()}`);
    throw err;
  }
  if (result.stage === 'prune') {
    s.changed = countChanged(s.results ?? []);
    // the new revision is applied; what failed is removing what left the bundle: say so, retry
    const err = asHoistError(result.error, { stage: 'apply', reason: FailureReason.PruneFailed, code: ReconcileCode.DeleteFailed, terminal: false });
    setInstalledRevision(s, number, rendered.objects.length);
    setRetryingWithBackoff(s, `revision ${number} applied; removing objects that left the bundle failed: ${err.describe()}`);
    throw err;
  }
  const err = asHoistError(result.error, { stage: 'apply', code: ReconcileCode.ApplyFailed, terminal: false });
  await failedRevision(ctx, s, err, { number, contentDigest: rendered.contentDigest }, rendered.objects);
}

/** the installed revision again (drift, resume, restart): what a revision abandoned half-way had applied is pruned */
async function reapplyActive(ctx: StepContext, s: ReconcileState, rendered: Rendered, number: number): Promise<boolean> {
  const t = s.status.transition;
  const abandoned = t && t.revision !== s.status.activeRevision?.number ? t : undefined;
  const result = await revisionEngine(ctx).run({
    target: applyTarget(ctx, s.bd, s.spec, number),
    objects: rendered.objects,
    signal: s.signal,
    time: s.time,
    settle: (report) => settle(ctx, s, rendered, report),
    ...(abandoned ? { prune: () => pruneAbandoned(ctx, s, rendered, abandoned) } : {}),
  });
  if (result.kind === 'failed' && result.stage === 'apply') {
    // re-applying the installed revision failing is drift not corrected, not a failed upgrade
    const err = asHoistError(result.error, { stage: 'apply', code: ReconcileCode.ApplyFailed, terminal: false });
    await driftNotCorrected(ctx, s, err, rendered.objects);
    return false;
  }
  s.changed = countChanged(s.results ?? []);
  driftCorrectedEvent(ctx, s, s.results ?? []);
  if (result.kind === 'failed') throw result.error;
  if (result.kind === 'applied') s.changed += countChanged(result.pruned);
  if (abandoned) endTransition(s, 'Failed');
  recordActive(ctx, s, rendered, number);
  return true;
}

/** once every step is written: what was applied goes into the state, and the watches are given the writes to see */
async function settle(ctx: StepContext, s: ReconcileState, rendered: Rendered, report: ApplyReport): Promise<void> {
  s.results = report.results;
  s.appliedDigest = report.appliedDigest;
  recordApplied(ctx.d.metrics, report.results);
  s.status.skippedOptional = report.skippedOptional.length ? report.skippedOptional : undefined;
  await watchObjects(ctx, rendered.objects, s.signal);
  const writes = report.results.flatMap((r) => (r.written ? [{ id: r.id, ...r.written }] : []));
  if (writes.length) await s.time('observe', ctx.d.managed.observedWrites(writes, OBSERVE_WRITES_MS, s.name));
}

/** the revision applied is the active one: its entry, inventory and Installed */
function recordActive(ctx: StepContext, s: ReconcileState, rendered: Rendered, number: number): void {
  const { status } = s;
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
  setInstalledRevision(s, number, rendered.objects.length);
}

/**
 * The rendered revision is not applied (held back after a rollback, or waiting for its
 * dependencies): the installed one is kept as it is — its drift corrected, its health observed.
 */
async function keepActive(ctx: StepContext, s: ReconcileState, active: ActiveRevision): Promise<void> {
  const objects = await ctx.objects.of(s.name, active);
  const result = await revisionEngine(ctx).run({ target: applyTarget(ctx, s.bd, s.spec, active.number), objects, signal: s.signal });
  if (result.kind === 'failed') throw result.error;
  const results = result.kind === 'applied' ? result.report.results : [];
  s.changed = countChanged(results);
  driftCorrectedEvent(ctx, s, results);
  await observeHealth(ctx, s, objects);
}

/** a new revision's prune: the active revision's objects, and what a revision abandoned half-way (the spec moved on) had applied, that it lacks */
async function pruneReplaced(ctx: StepContext, s: ReconcileState, rendered: Rendered, number: number): Promise<ObjectResult[]> {
  const previous = (await Promise.all(replacedRevisions(s.status, number).map((r) => ctx.objects.of(s.name, r).catch(() => [])))).flat();
  return s.time('prune', pruneLeftOvers(ctx, s, previous, rendered.objects, number));
}

/**
 * The spec went back to the installed content while a new revision was still being applied phase
 * by phase: what that revision had applied and the installed one does not have is pruned.
 */
async function pruneAbandoned(ctx: StepContext, s: ReconcileState, rendered: Rendered, t: Transition): Promise<ObjectResult[]> {
  const abandoned = await ctx.objects.of(s.name, { number: t.revision, contentDigest: t.contentDigest }).catch(() => []);
  return pruneLeftOvers(ctx, s, abandoned, rendered.objects, s.status.activeRevision?.number ?? t.revision);
}

/** a new revision applied completely and pruned: make it the active revision */
async function promote(
  ctx: StepContext,
  s: ReconcileState,
  rendered: Rendered,
  number: number,
  t: Transition | undefined,
  pruned: ObjectResult[],
): Promise<void> {
  const { d } = ctx;
  const { status, spec } = s;
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
  const summary = `${summarize(applied)}${pruned.length ? `, pruned ${countChanged(pruned)}` : ''}${keptCount(pruned)}`;
  d.events.event(s.bd, 'Normal', 'Installed', `revision ${number} (${rendered.contentDigest}) installed: ${summary}`);
  setRollingOut(s, `revision ${number} applied, waiting for it to become healthy`);
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
  setRetryingWithBackoff(s, `${what} before its apply: ${err.describe()}`);
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
