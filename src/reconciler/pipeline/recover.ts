/**
 * What a failure does. Before apply (resolve, fetch, process) nothing installed is touched and
 * only the stage's conditions say why. After an apply failure, or a new revision that missed its
 * progressDeadline, `onFailure` decides: Rollback re-applies the last good revision from its
 * stored objects; Hold keeps retrying with backoff; with nothing to roll back to, a terminal
 * failure blocks until the spec changes.
 */
import { lineageOf } from '../../../api/v1alpha2/types.ts';
import { deleteOwned, staleObjects } from '../../apply/prune.ts';
import { countChanged } from '../../apply/result.ts';
import type { KubeObject } from '../../kube/types.ts';
import { asHoistError, HoistError } from '../../util/errors.ts';
import { keptRevisions, lastGoodRevision, recordRevision, trimHistory } from '../revision-history.ts';
import { actor, applyTarget, writtenUid, type StepContext } from './context.ts';
import { decideApplyFailure } from './decide.ts';
import { observeHealth } from './health.ts';
import { endTransition, runHooks, transitionOf } from './transition.ts';
import type { ReconcileState } from './state.ts';

/** Resolve, fetch and process failures touch nothing installed (DESIGN §3). Throws when transient. */
export async function failedBeforeApply(ctx: StepContext, s: ReconcileState, e: unknown): Promise<void> {
  const err = asHoistError(e, { stage: 'fetch', code: 'unknown', terminal: false });
  const message = err.describe();
  const stage = err.stage;
  if (stage === 'resolve' || stage === 'spec') {
    s.set({ type: 'Resolved', status: 'False', reason: err.reason === 'VerificationFailed' ? 'VerificationFailed' : 'ResolveFailed', message });
    s.set({ type: 'Unpacked', status: 'Unknown', reason: 'Pending', message: 'waiting for sources to resolve' });
  } else {
    s.set({ type: 'Unpacked', status: 'False', reason: stage === 'process' ? 'ProcessFailed' : 'FetchFailed', message });
  }
  const active = s.status.activeRevision;
  if (active) s.set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${active.number}: ${active.objects ?? 0} objects (a newer spec failed to ${stage})` });
  else s.set({ type: 'Installed', status: 'False', reason: 'Pending', message: `nothing installed: ${stage} failed` });
  s.set(
    err.terminal
      ? { type: 'Progressing', status: 'False', reason: 'Blocked', message: `${message}; retried when the spec${stage === 'resolve' ? ' or a Secret or ConfigMap it references' : ''} changes` }
      : { type: 'Progressing', status: 'True', reason: 'Retrying', message: `${message}; retrying with backoff` },
  );
  await observeHealth(ctx, s);
  if (!err.terminal) throw err;
  s.note = `${err.stage} failed`;
}

/**
 * Revision `failed` could not be applied (or did not become healthy in time): roll back, hold or
 * block, per spec.upgrade.onFailure. Throws to have the controller retry with backoff.
 */
export async function failedRevision(ctx: StepContext, s: ReconcileState, err: HoistError, failed: { number: number; contentDigest: string }, failedObjects: readonly KubeObject[]): Promise<void> {
  const { spec, status } = s;
  // refused before any write: the installed revision is untouched
  const reason = err.reason === 'ConflictingOwner' || err.reason === 'UnsafeCRDUpgrade' ? err.reason : 'ApplyFailed';
  // the acting account may not read an object of the new revision: refused before any write,
  // and pruning the new revision's objects would only be refused the same way
  const forbidden = err.code === 'forbidden';
  const message = err.describe();
  const previousAttempt = status.attemptedRevision;
  status.attemptedRevision = { number: failed.number, contentDigest: failed.contentDigest, reason, generation: s.generation };
  const lastGood = lastGoodRevision(status, failed.contentDigest);
  const active = status.activeRevision;
  // a refusal for missing rights (forbidden) is not transient here: nothing of the revision was
  // written, and Rollback keeps the installed one as before (Hold retries it)
  if (spec.upgrade.onFailure === 'Rollback' && lastGood && active && !forbidden && err.code !== 'progress-deadline') {
    const attempt = decideApplyFailure({ terminal: err.terminal, contentDigest: failed.contentDigest, attempted: previousAttempt, progressDeadlineMs: spec.progressDeadlineMs, now: s.now().getTime() });
    if (attempt.kind === 'retry') {
      status.attemptedRevision.failingSince = attempt.since;
      s.set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${active.number}: ${active.objects ?? 0} objects (revision ${failed.number} not applied completely, retrying)` });
      s.set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `revision ${failed.number}: ${message}; retrying with backoff, rolled back to revision ${lastGood.number} if still failing ${spec.upgrade.progressDeadline} after ${attempt.since}` });
      await observeHealth(ctx, s);
      s.note = 'transient apply failure, retrying';
      throw err;
    }
  }
  if (spec.upgrade.onFailure === 'Rollback' && lastGood) {
    endTransition(s, 'Failed');
    const objects = await ctx.objects.of(s.name, lastGood);
    // the revision rolled back to runs its rollback hooks, as helm rollback does
    const hooks = await ctx.objects.hooksOf(s.name, lastGood);
    const back = hooks.length > 0 ? transitionOf(s, lastGood, 'rollback') : undefined;
    const preFailed = back ? await runHooks(ctx, s, back, 'pre-rollback', hooks) : undefined;
    if (preFailed) ctx.d.log.warn({ bd: s.name, err: preFailed.message }, 'pre-rollback hook failed; rolling back anyway');
    try {
      const report = await ctx.d.applier.apply(applyTarget(ctx, s.bd, spec, lastGood.number), objects);
      const pruned = forbidden
        ? []
        : await deleteOwned(actor(ctx, s.bd), { name: s.name, lineage: lineageOf(s.bd) }, staleObjects(failedObjects, objects), { keepCRDs: !spec.deleteCRDsOnUninstall, log: ctx.d.log, retained: objects, writtenUid: writtenUid(ctx, s.bd) });
      s.changed = countChanged(report.results) + countChanged(pruned);
    } catch (e) {
      const rb = asHoistError(e, { stage: 'apply', code: 'rollback-failed', terminal: false });
      s.set({ type: 'Installed', status: 'False', reason: 'ApplyFailed', message: `${message}; rollback to revision ${lastGood.number} failed too: ${rb.describe()}` });
      s.set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `rolling back to revision ${lastGood.number}` });
      throw rb;
    }
    status.attemptedRevision.rolledBackTo = lastGood.number;
    status.activeRevision = { number: lastGood.number, contentDigest: lastGood.contentDigest, objects: objects.length, appliedAt: s.now().toISOString() };
    status.revisions = trimHistory(recordRevision(recordRevision(status.revisions, { ...failed, phase: 'Failed' }), { number: lastGood.number, contentDigest: lastGood.contentDigest, objects: objects.length, phase: 'Active' }), spec.revisionHistoryLimit);
    await pruneHistory(ctx, s);
    if (back) {
      const postFailed = await runHooks(ctx, s, back, 'post-rollback', hooks);
      if (postFailed) ctx.d.log.warn({ bd: s.name, err: postFailed.message }, 'post-rollback hook failed');
      endTransition(s, 'Active');
    }
    // refused before any write: the new revision installed nothing, say that rather than "rolled back"
    if (reason !== 'ApplyFailed' || forbidden) s.set({ type: 'Installed', status: 'False', reason, message: `${message}; revision ${lastGood.number} stays installed` });
    else s.set({ type: 'Installed', status: 'True', reason: 'Installed', message: `revision ${lastGood.number}: ${objects.length} objects (revision ${failed.number} rolled back)` });
    s.set({ type: 'Progressing', status: 'False', reason: 'RolledBack', message: `revision ${failed.number} rolled back to ${lastGood.number}: ${message}` });
    ctx.d.metrics?.rollbacks.inc({ reason: err.code === 'progress-deadline' ? 'ProgressDeadline' : reason });
    ctx.d.events.event(s.bd, 'Warning', 'RolledBack', `revision ${failed.number} rolled back to ${lastGood.number}: ${message}`);
    await observeHealth(ctx, s, objects);
    s.note = 'rolled back';
    return;
  }
  // Hold retries the same transition: the hooks that succeeded in it do not run again
  if (spec.upgrade.onFailure !== 'Hold' && err.terminal) endTransition(s, 'Failed');
  status.revisions = trimHistory(recordRevision(status.revisions, { ...failed, phase: 'Failed' }), spec.revisionHistoryLimit);
  await pruneHistory(ctx, s);
  s.set({ type: 'Installed', status: 'False', reason, message });
  ctx.d.events.event(s.bd, 'Warning', reason, message);
  await observeHealth(ctx, s);
  // Hold retries even what looks terminal (a refused object may be accepted once a CRD or
  // webhook appears); otherwise only transient errors are retried
  if (err.terminal && spec.upgrade.onFailure !== 'Hold') {
    s.set({ type: 'Progressing', status: 'False', reason: 'Blocked', message: `${message}; retried when the spec changes` });
    // conflicts clear when someone removes the other object: look again now and then
    s.result = reason === 'ConflictingOwner' ? { requeueAfter: 60_000 } : {};
    s.note = 'blocked';
    return;
  }
  s.set({ type: 'Progressing', status: 'True', reason: 'Retrying', message: `${message}; retrying with backoff` });
  if (!err.terminal) throw err;
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
  s.set({ type: 'Installed', status: 'True', reason: 'Drifted', message: `revision ${number}: ${objects.length} objects, not all as installed: correcting drift failed: ${message}` });
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
