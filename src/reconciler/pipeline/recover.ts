/**
 * What a failure does. Before apply (resolve, fetch, process) nothing installed is touched and
 * only the stage's conditions say why. After an apply failure, or a new revision that missed its
 * progressDeadline, `onFailure` decides: Rollback re-applies the last good revision from its
 * stored objects; Hold keeps retrying with backoff; with nothing to roll back to, a terminal
 * failure blocks until the spec changes. The decisions are decide.ts's (pure, table-tested);
 * this module carries them out: conditions (status.ts), events, the rollback (handed to the
 * revision engine as a revision of its own), throw or requeue.
 */
import { countChanged } from '../../apply/result.ts';
import type { KubeObject } from '../../kube/types.ts';
import { asHoistError, type HoistError } from '../../util/errors.ts';
import { keptRevisions, lastGoodRevision, recordRevision, trimHistory } from '../../revisions/revision-history.ts';
import {
  setBlocked,
  setInstalledActive,
  setInstalledDrifted,
  setInstalledFailed,
  setInstalledPending,
  setInstalledRevision,
  setRetrying,
  setRetryingWithBackoff,
  setRolledBack,
  setStageFailed,
  setUnpackedPending,
} from '../status.ts';
import { applyTarget, inventory, revisionEngine, type StepContext } from './context.ts';
import { decideBeforeApply, decideRevisionFailure, type RevisionFailureDecision } from './decide.ts';
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
  if (decision.condition === 'Resolved') setUnpackedPending(s, 'waiting for sources to resolve');
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
  setStageFailed(s, decision.condition, decision.reason, message);
  const active = s.status.activeRevision;
  if (active) setInstalledActive(s, active, opts.installedNote);
  else setInstalledPending(s, `nothing installed: ${err.stage} failed`);
  if (decision.retry) setRetryingWithBackoff(s, message);
  else setBlocked(s, `${message}; retried when ${opts.blockedUntil} changes`);
}

/** a revision that failed and what it failed with, as failedRevision's parts share them */
interface Failure {
  err: HoistError;
  message: string;
  failed: { number: number; contentDigest: string };
  failedObjects: readonly KubeObject[];
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
  const decision = decideRevisionFailure({
    failure: err,
    onFailure: spec.upgrade.onFailure,
    lastGood: lastGoodRevision(status, failed.contentDigest),
    active: status.activeRevision !== undefined,
    contentDigest: failed.contentDigest,
    attempted: status.attemptedRevision,
    progressDeadlineMs: spec.progressDeadlineMs,
    now: s.now().getTime(),
  });
  noteFailure(s, err);
  status.attemptedRevision = { number: failed.number, contentDigest: failed.contentDigest, reason: decision.reason, generation: s.generation };
  const f: Failure = { err, message: err.describe(), failed, failedObjects };
  if (decision.kind === 'retry-upgrade') return retryUpgrade(ctx, s, f, decision);
  if (decision.kind === 'roll-back') return rollBack(ctx, s, f, decision);
  return holdOrBlock(ctx, s, f, decision);
}

type Decided<K extends RevisionFailureDecision['kind']> = Extract<RevisionFailureDecision, { kind: K }>;

/** a transient failure within progressDeadline: the installed revision stays, the new one is retried */
async function retryUpgrade(ctx: StepContext, s: ReconcileState, f: Failure, decision: Decided<'retry-upgrade'>): Promise<never> {
  const active = s.status.activeRevision;
  s.status.attemptedRevision!.failingSince = decision.since;
  setInstalledRevision(s, active?.number, active?.objects ?? 0, `revision ${f.failed.number} not applied completely, retrying`);
  setRetrying(
    s,
    `revision ${f.failed.number}: ${f.message}; retrying with backoff, rolled back to revision ${decision.to.number} if still failing ${s.spec.upgrade.progressDeadline} after ${decision.since}`,
  );
  await observeHealth(ctx, s);
  s.note = 'transient apply failure, retrying';
  throw f.err;
}

/** re-applies the last good revision through the revision engine (its rollback hooks, as helm rollback runs them) */
async function rollBack(ctx: StepContext, s: ReconcileState, f: Failure, decision: Decided<'roll-back'>): Promise<void> {
  const lastGood = decision.to;
  endTransition(s, 'Failed');
  const objects = await ctx.objects.of(s.name, lastGood);
  const hooks = await ctx.objects.hooksOf(s.name, lastGood);
  const back = hooks.length > 0 ? transitionOf(s, lastGood, 'rollback') : undefined;
  const preRollback = async () => {
    const preFailed = await runHooks(ctx, s, back!, 'pre-rollback', hooks);
    if (preFailed) ctx.d.log.warn({ bd: s.name, err: preFailed.message }, 'pre-rollback hook failed; rolling back anyway');
    return undefined;
  };
  const result = await revisionEngine(ctx).run({
    target: applyTarget(ctx, s.bd, s.spec, lastGood.number),
    objects,
    signal: s.signal,
    ...(back ? { hooks: { inNamespace: false, run: preRollback } } : {}),
    ...(decision.prune ? { prune: () => pruneLeftOvers(ctx, s, f.failedObjects, objects, lastGood.number) } : {}),
  });
  if (result.kind === 'failed') {
    // a hook that could not be run (no answer) is retried as it is; the rollback's writes failing is said so
    if (result.stage === 'hooks') throw result.error;
    const rb = asHoistError(result.error, { stage: 'apply', code: ReconcileCode.RollbackFailed, terminal: false });
    setInstalledFailed(s, 'ApplyFailed', `${f.message}; rollback to revision ${lastGood.number} failed too: ${rb.describe()}`);
    setRetrying(s, `rolling back to revision ${lastGood.number}`);
    throw rb;
  }
  if (result.kind === 'applied') s.changed = countChanged(result.report.results) + countChanged(result.pruned);
  await rolledBack(ctx, s, f, decision, objects);
  if (back) {
    const postFailed = await runHooks(ctx, s, back, 'post-rollback', hooks);
    if (postFailed) ctx.d.log.warn({ bd: s.name, err: postFailed.message }, 'post-rollback hook failed');
    endTransition(s, 'Active');
  }
  rolledBackConditions(ctx, s, f, decision, objects.length);
  await observeHealth(ctx, s, objects);
  s.note = 'rolled back';
}

/** the last good revision is the active one again: status and history say so */
async function rolledBack(ctx: StepContext, s: ReconcileState, f: Failure, decision: Decided<'roll-back'>, objects: readonly KubeObject[]): Promise<void> {
  const { status, spec } = s;
  const lastGood = decision.to;
  status.attemptedRevision!.rolledBackTo = lastGood.number;
  status.activeRevision = {
    number: lastGood.number,
    contentDigest: lastGood.contentDigest,
    objects: objects.length,
    appliedAt: s.now().toISOString(),
    inventory: inventory(ctx, s.bd, lastGood.number, objects),
  };
  const active = { number: lastGood.number, contentDigest: lastGood.contentDigest, objects: objects.length, phase: 'Active' as const };
  status.revisions = trimHistory(recordRevision(recordRevision(status.revisions, { ...f.failed, phase: 'Failed' }), active), spec.revisionHistoryLimit);
  await pruneHistory(ctx, s);
}

function rolledBackConditions(ctx: StepContext, s: ReconcileState, f: Failure, decision: Decided<'roll-back'>, objects: number): void {
  const lastGood = decision.to;
  // refused before any write: the new revision installed nothing, say that rather than "rolled back"
  if (decision.refused) setInstalledFailed(s, decision.reason, `${f.message}; revision ${lastGood.number} stays installed`);
  else setInstalledRevision(s, lastGood.number, objects, `revision ${f.failed.number} rolled back`);
  const message = `revision ${f.failed.number} rolled back to ${lastGood.number}: ${f.message}`;
  setRolledBack(s, message);
  ctx.d.metrics?.rollbacks.inc({ reason: decision.metric });
  ctx.d.events.event(s.bd, 'Warning', 'RolledBack', message);
}

/** nothing to roll back to, or onFailure Hold: the failure stands; blocked until the spec changes, or retried */
async function holdOrBlock(ctx: StepContext, s: ReconcileState, f: Failure, decision: Decided<'block' | 'retry'>): Promise<void> {
  const { status, spec } = s;
  const { reason } = decision;
  // Hold retries the same transition: the hooks that succeeded in it do not run again
  if (decision.kind === 'block') endTransition(s, 'Failed');
  status.revisions = trimHistory(recordRevision(status.revisions, { ...f.failed, phase: 'Failed' }), spec.revisionHistoryLimit);
  await pruneHistory(ctx, s);
  setInstalledFailed(s, reason, f.message);
  ctx.d.events.event(s.bd, 'Warning', reason, f.message);
  await observeHealth(ctx, s);
  if (decision.kind === 'block') {
    setBlocked(s, `${f.message}; retried when the spec changes`);
    s.result = decision.requeueAfterMs !== undefined ? { requeueAfter: decision.requeueAfterMs } : {};
    s.note = 'blocked';
    return;
  }
  setRetryingWithBackoff(s, f.message);
  if (decision.by === 'backoff') throw f.err;
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
  setInstalledDrifted(s, `revision ${number}: ${objects.length} objects, not all as installed: correcting drift failed: ${message}`);
  setRetryingWithBackoff(s, `correcting drift from revision ${number}: ${message}`);
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
