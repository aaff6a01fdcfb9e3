/**
 * What a failure does. Before apply (resolve, fetch, process) nothing installed is touched and
 * only the stage's conditions say why. After an apply failure, or a new revision that missed its
 * progressDeadline, `onFailure` decides: Rollback re-applies the last good revision from its
 * stored objects; Hold keeps retrying with backoff; with nothing to roll back to, a terminal
 * failure blocks until the spec changes. The decisions are decide.ts's (pure, table-tested);
 * this module carries them out: conditions, events, the rollback's writes, throw or requeue.
 */
import { countChanged } from '../../apply/result.ts';
import type { KubeObject } from '../../kube/types.ts';
import { asHoistError, CancelledError, HoistError } from '../../util/errors.ts';
import { keptRevisions, lastGoodRevision, recordRevision, trimHistory } from '../revision-history.ts';
import { applyTarget, inventory, type StepContext } from './context.ts';
import { decideBeforeApply, decideRevisionFailure } from './decide.ts';
import { observeHealth } from './health.ts';
import { pruneLeftOvers } from './prune.ts';
import { endTransition, runHooks, transitionOf } from './transition.ts';
import type { ReconcileState } from './state.ts';
import { ReconcileCode } from '../errors.ts';

/** Resolve, fetch and process failures touch nothing installed (DESIGN §3). Throws when transient. */
export async function failedBeforeApply(ctx: StepContext, s: ReconcileState, e: unknown): Promise<void> {
  const err = asHoistError(e, { stage: 'fetch', code: ReconcileCode.Unknown, terminal: false });
  noteFailure(s, err);
  const decision = decideBeforeApply(err);
  reportBeforeApply(s, err, decision, {
    installedNote: `a newer spec failed to ${err.stage}`,
    blockedUntil: `the spec${decision.unblockedBy === 'spec-or-reference' ? ' or a Secret or ConfigMap it references' : ''}`,
  });
  if (decision.condition === 'Resolved') s.set({ type: 'Unpacked', status: 'Unknown', reason: 'Pending', message: 'waiting for sources to resolve' });
  await observeHealth(ctx, s);
  if (decision.retry) throw err;
  s.note = `${err.stage} failed`;
}

/**
 * The conditions of a failure before anything of a new revision was applied: the failing stage's
 * condition, Installed as the installed revision stands (`installedNote` says why it is still the
 * one), and Progressing Retrying or Blocked (`blockedUntil` names what unblocks it).
 */
export function reportBeforeApply(
  s: ReconcileState,
  err: HoistError,
  decision: ReturnType<typeof decideBeforeApply>,
  opts: { installedNote: string; blockedUntil: string },
): void {
  const message = err.describe();
  s.set({ type: decision.condition, status: 'False', reason: decision.reason, message });
  const active = s.status.activeRevision;
  if (active)
    s.set({
      type: 'Installed',
      status: 'True',
      reason: 'Installed',
      message: `revision ${active.number}: ${active.objects ?? 0} objects (${opts.installedNote})`,
    });
  else s.set({ type: 'Installed', status: 'False', reason: 'Pending', message: `nothing installed: ${err.stage} failed` });
  s.set(
    decision.retry
      ? { type: 'Progressing', status: 'True', reason: 'Retrying', message: `${message}; retrying with backoff` }
      : { type: 'Progressing', status: 'False', reason: 'Blocked', message: `${message}; retried when ${opts.blockedUntil} changes` },
  );
}

/**
 * Revision `failed` could not be applied (or did not become healthy in time): roll back, hold or
 * block, as decideRevisionFailure (decide.ts) says. Throws to have the controller retry with backoff.
 */
export async function failedRevision(
  ctx: StepContext,
  s: ReconcileState,
  err: HoistError,
  failed: { number: number; contentDigest: string },
  failedObjects: readonly KubeObject[],
): Promise<void> {
  const { spec, status } = s;
  const active = status.activeRevision;
  const decision = decideRevisionFailure({
    failure: err,
    onFailure: spec.upgrade.onFailure,
    lastGood: lastGoodRevision(status, failed.contentDigest),
    active: active !== undefined,
    contentDigest: failed.contentDigest,
    attempted: status.attemptedRevision,
    progressDeadlineMs: spec.progressDeadlineMs,
    now: s.now().getTime(),
  });
  const { reason } = decision;
  const message = err.describe();
  noteFailure(s, err);
  status.attemptedRevision = { number: failed.number, contentDigest: failed.contentDigest, reason, generation: s.generation };
  if (decision.kind === 'retry-upgrade') {
    status.attemptedRevision.failingSince = decision.since;
    s.set({
      type: 'Installed',
      status: 'True',
      reason: 'Installed',
      message: `revision ${active?.number}: ${active?.objects ?? 0} objects (revision ${failed.number} not applied completely, retrying)`,
    });
    s.set({
      type: 'Progressing',
      status: 'True',
      reason: 'Retrying',
      message: `revision ${failed.number}: ${message}; retrying with backoff, rolled back to revision ${decision.to.number} if still failing ${spec.upgrade.progressDeadline} after ${decision.since}`,
    });
    await observeHealth(ctx, s);
    s.note = 'transient apply failure, retrying';
    throw err;
  }
  if (decision.kind === 'roll-back') {
    const lastGood = decision.to;
    endTransition(s, 'Failed');
    const objects = await ctx.objects.of(s.name, lastGood);
    // the revision rolled back to runs its rollback hooks, as helm rollback does
    const hooks = await ctx.objects.hooksOf(s.name, lastGood);
    const back = hooks.length > 0 ? transitionOf(s, lastGood, 'rollback') : undefined;
    const preFailed = back ? await runHooks(ctx, s, back, 'pre-rollback', hooks) : undefined;
    if (preFailed) ctx.d.log.warn({ bd: s.name, err: preFailed.message }, 'pre-rollback hook failed; rolling back anyway');
    try {
      const report = await ctx.d.applier.apply(applyTarget(ctx, s.bd, spec, lastGood.number), objects, { signal: s.signal });
      const pruned = !decision.prune ? [] : await pruneLeftOvers(ctx, s, failedObjects, objects, lastGood.number);
      s.changed = countChanged(report.results) + countChanged(pruned);
    } catch (e) {
      if (e instanceof CancelledError) throw e;
      const rb = asHoistError(e, { stage: 'apply', code: ReconcileCode.RollbackFailed, terminal: false });
      s.set({
        type: 'Installed',
        status: 'False',
        reason: 'ApplyFailed',
        message: `${message}; rollback to revision ${lastGood.number} failed too: ${rb.describe()}`,
      });
      s.set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `rolling back to revision ${lastGood.number}` });
      throw rb;
    }
    status.attemptedRevision.rolledBackTo = lastGood.number;
    status.activeRevision = {
      number: lastGood.number,
      contentDigest: lastGood.contentDigest,
      objects: objects.length,
      appliedAt: s.now().toISOString(),
      inventory: inventory(ctx, s.bd, lastGood.number, objects),
    };
    status.revisions = trimHistory(
      recordRevision(recordRevision(status.revisions, { ...failed, phase: 'Failed' }), {
        number: lastGood.number,
        contentDigest: lastGood.contentDigest,
        objects: objects.length,
        phase: 'Active',
      }),
      spec.revisionHistoryLimit,
    );
    await pruneHistory(ctx, s);
    if (back) {
      const postFailed = await runHooks(ctx, s, back, 'post-rollback', hooks);
      if (postFailed) ctx.d.log.warn({ bd: s.name, err: postFailed.message }, 'post-rollback hook failed');
      endTransition(s, 'Active');
    }
    // refused before any write: the new revision installed nothing, say that rather than "rolled back"
    if (decision.refused) s.set({ type: 'Installed', status: 'False', reason, message: `${message}; revision ${lastGood.number} stays installed` });
    else
      s.set({
        type: 'Installed',
        status: 'True',
        reason: 'Installed',
        message: `revision ${lastGood.number}: ${objects.length} objects (revision ${failed.number} rolled back)`,
      });
    s.set({ type: 'Progressing', status: 'False', reason: 'RolledBack', message: `revision ${failed.number} rolled back to ${lastGood.number}: ${message}` });
    ctx.d.metrics?.rollbacks.inc({ reason: decision.metric });
    ctx.d.events.event(s.bd, 'Warning', 'RolledBack', `revision ${failed.number} rolled back to ${lastGood.number}: ${message}`);
    await observeHealth(ctx, s, objects);
    s.note = 'rolled back';
    return;
  }
  // Hold retries the same transition: the hooks that succeeded in it do not run again
  if (decision.kind === 'block') endTransition(s, 'Failed');
  status.revisions = trimHistory(recordRevision(status.revisions, { ...failed, phase: 'Failed' }), spec.revisionHistoryLimit);
  await pruneHistory(ctx, s);
  s.set({ type: 'Installed', status: 'False', reason, message });
  ctx.d.events.event(s.bd, 'Warning', reason, message);
  await observeHealth(ctx, s);
  if (decision.kind === 'block') {
    s.set({ type: 'Progressing', status: 'False', reason: 'Blocked', message: `${message}; retried when the spec changes` });
    s.result = decision.requeueAfterMs !== undefined ? { requeueAfter: decision.requeueAfterMs } : {};
    s.note = 'blocked';
    return;
  }
  s.set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `${message}; retrying with backoff` });
  if (decision.by === 'backoff') throw err;
  // Hold retries a terminal refusal too, through the controller's rate-limited backoff
  s.note = 'held, retrying';
  s.result = { requeue: true };
}

/**
 * Re-applying the installed revision failed (a drift correction, the apply on resume or after a
 * restart): its objects may differ from it in fields Hoist owns until a retry lands. Status says
 * so rather than "installed" alone — Installed=True reason Drifted and Progressing=True Retrying,
 * both naming the objects and the API server's answer, so Done does not hold — and the controller
 * retries with backoff. The revision is neither marked failed nor rolled back: it is still the
 * one wanted and installed.
 */
export async function driftNotCorrected(ctx: StepContext, s: ReconcileState, err: HoistError, objects: readonly KubeObject[]): Promise<void> {
  const active = s.status.activeRevision;
  const number = active?.number ?? s.revision?.number;
  const message = err.describe();
  s.set({
    type: 'Installed',
    status: 'True',
    reason: 'Drifted',
    message: `revision ${number}: ${objects.length} objects, not all as installed: correcting drift failed: ${message}`,
  });
  s.set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `correcting drift from revision ${number}: ${message}; retrying with backoff` });
  ctx.d.events.event(s.bd, 'Warning', 'DriftNotCorrected', `revision ${number}: ${message}`);
  await observeHealth(ctx, s, objects);
  s.note = 'drift not corrected';
  // retried whatever the cause: the revision is still the one wanted
  s.result = { requeue: true };
}

/**
 * Failed revisions count against revisionHistoryLimit like successful ones: without this, each
 * spec edit that fails would leave its revision Secrets behind until some later revision
 * succeeded. A failure to delete is logged and left to the next revision's bookkeeping: the
 * failure being reported matters more.
 */
async function pruneHistory(ctx: StepContext, s: ReconcileState): Promise<void> {
  await s.time('history', ctx.d.revisions.prune(s.name, keptRevisions(s.status))).catch((e: unknown) => {
    ctx.d.log.warn({ bd: s.name, err: e instanceof Error ? e.message : String(e) }, 'pruning revision history failed; retried with the next revision');
  });
}

/** the failure as notifications name it: its stage, subject and code (the message is the condition's) */
function noteFailure(s: ReconcileState, err: HoistError): void {
  s.facts.failure = { stage: err.stage, subject: err.subject, code: err.code, message: err.describe() };
}
