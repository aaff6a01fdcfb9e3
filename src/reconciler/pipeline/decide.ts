/**
 * The rollout and failure decisions, as pure functions of status, spec, health, the failure's
 * facts and time (DESIGN §3); pipeline/rollout.ts and pipeline/recover.ts carry them out. No I/O:
 * every rule here has a table test (test/unit/reconciler/decide.test.ts).
 */
import type { OnFailure } from '../../../api/v1alpha2/types.ts';
import type { ActiveRevision, AttemptedRevision, RevisionRef } from '../../../api/v1alpha2/types.ts';
import { ReconcileCode } from '../errors.ts';
import { ApplyCode } from '../../apply/errors.ts';
import { FailureReason, type Stage } from '../../util/errors.ts';

export type RevisionDecision =
  /** the rendered content is a new revision: store, apply, prune, then roll out */
  | { kind: 'new' }
  /** the rendered content is the active revision: re-apply it (drift correction) */
  | { kind: 'same' }
  /** the rendered content failed under this generation and was rolled back: keep the active one */
  | { kind: 'held-back' };

/**
 * What to do with freshly rendered content. A revision that was rolled back under this
 * generation is not tried again until the spec changes (a new generation), or once more when a
 * reconcile is requested (`retry`: a new core.rukpak.io/requested-at value).
 */
export function decideRevision(input: {
  generation: number;
  contentDigest: string;
  active: ActiveRevision | undefined;
  attempted: AttemptedRevision | undefined;
  retry?: boolean;
}): RevisionDecision {
  const { active, attempted } = input;
  if (active?.contentDigest === input.contentDigest) return { kind: 'same' };
  const rolledBack = attempted?.rolledBackTo !== undefined && attempted.generation === input.generation && attempted.contentDigest === input.contentDigest;
  if (rolledBack && active && !input.retry) return { kind: 'held-back' };
  return { kind: 'new' };
}

export interface RolloutInput {
  generation: number;
  /** every object of the active revision is ready now */
  healthy: boolean;
  /** an object of it failed (it will not become ready by waiting): what Healthy says of it */
  failed?: string | undefined;
  active: ActiveRevision;
  attempted: AttemptedRevision | undefined;
  onFailure: OnFailure;
  progressDeadlineMs: number;
  /** a revision to roll back to exists */
  canRollBack: boolean;
  now: number;
}

export type RolloutDecision =
  /** this generation's new revision was rolled back: that stays reported until the spec changes */
  | { kind: 'rolled-back' }
  /** healthy now; `first` when it had not been healthy since it was applied (record healthyAt) */
  | { kind: 'succeeded'; first: boolean }
  /** healthy once since it was applied: done, whatever Healthy says now */
  | { kind: 'installed' }
  /** applied, not healthy yet, within the deadline: look again after `checkAfterMs` at the latest */
  | { kind: 'rolling-out'; checkAfterMs: number }
  /** never healthy, and an object failed (`failed`) or progressDeadline passed (`deadline`): roll back to the last good revision */
  | { kind: 'roll-back'; why: 'failed' | 'deadline' }
  /** the same, with onFailure Hold or nothing to roll back to */
  | { kind: 'blocked'; why: 'failed' | 'deadline'; because: 'hold' | 'nothing-to-roll-back-to' };

/** Progressing after a successful apply: done when healthy; once an object failed or past the deadline, roll back or block. */
export function decideRollout(r: RolloutInput): RolloutDecision {
  if (r.attempted?.rolledBackTo !== undefined && r.attempted.generation === r.generation) return { kind: 'rolled-back' };
  if (r.healthy) return { kind: 'succeeded', first: r.active.healthyAt === undefined };
  if (r.active.healthyAt !== undefined) return { kind: 'installed' };
  // from when the revision's objects were applied (kept in status, so a restart neither resets nor
  // shortens it); without appliedAt (never the case for revisions this version applied) from now
  const since = r.active.appliedAt ? Date.parse(r.active.appliedAt) : r.now;
  const left = since + r.progressDeadlineMs - r.now;
  // a Failed verdict is acted on at once: waiting out the deadline would not make it ready
  if (left > 0 && !r.failed) return { kind: 'rolling-out', checkAfterMs: left };
  const why = r.failed ? 'failed' : 'deadline';
  if (r.onFailure === 'Rollback' && r.canRollBack) return { kind: 'roll-back', why };
  return { kind: 'blocked', why, because: r.onFailure === 'Hold' ? 'hold' : 'nothing-to-roll-back-to' };
}

export type ApplyFailureDecision =
  /** transient, within progressDeadline of the first such failure: retry with backoff */
  | { kind: 'retry'; since: string }
  /** terminal, or transient for longer than progressDeadline: onFailure decides (roll back, hold) */
  | { kind: 'give-up' };

/**
 * A new revision's apply failed. A transient failure (the API server restarting, a webhook
 * briefly unreachable) is no reason to give up on the revision: it is retried until
 * progressDeadline after the first one (kept in status, so restarts do not reset it).
 */
export function decideApplyFailure(r: {
  terminal: boolean;
  contentDigest: string;
  attempted: AttemptedRevision | undefined;
  progressDeadlineMs: number;
  now: number;
}): ApplyFailureDecision {
  if (r.terminal) return { kind: 'give-up' };
  const prior = r.attempted?.contentDigest === r.contentDigest && r.attempted.rolledBackTo === undefined ? r.attempted.failingSince : undefined;
  const since = prior ?? new Date(r.now).toISOString();
  return r.now - Date.parse(since) < r.progressDeadlineMs ? { kind: 'retry', since } : { kind: 'give-up' };
}

/** what the failure decisions read of an error: its stage, reason, code and whether it is terminal, never its message */
export interface FailureFacts {
  stage: Stage;
  reason: string;
  code: string;
  terminal: boolean;
}

export interface BeforeApplyDecision {
  /** the condition that says why (Unpacked waits as Pending behind a failed resolve) */
  condition: 'Resolved' | 'Unpacked';
  reason: 'ResolveFailed' | 'VerificationFailed' | 'FetchFailed' | 'ProcessFailed';
  /** transient: retried with backoff; terminal: blocked until something changes */
  retry: boolean;
  /** what a block waits for: the spec, or also a Secret or ConfigMap it references (a resolve) */
  unblockedBy: 'spec' | 'spec-or-reference';
}

/** A resolve, fetch or process failure (DESIGN §3): which condition says so, and retry or block. */
export function decideBeforeApply(f: Pick<FailureFacts, 'stage' | 'reason' | 'terminal'>): BeforeApplyDecision {
  const resolving = f.stage === 'resolve' || f.stage === 'spec';
  return {
    condition: resolving ? 'Resolved' : 'Unpacked',
    reason: resolving ? (f.reason === 'VerificationFailed' ? 'VerificationFailed' : 'ResolveFailed') : f.stage === 'process' ? 'ProcessFailed' : 'FetchFailed',
    retry: !f.terminal,
    unblockedBy: f.stage === 'resolve' ? 'spec-or-reference' : 'spec',
  };
}

/** the Installed reason a failed revision is reported under: refusals before any write are named */
export type RevisionFailureReason = 'ApplyFailed' | 'ConflictingOwner' | 'UnsafeCRDUpgrade';

export interface RevisionFailureInput {
  failure: Pick<FailureFacts, 'code' | 'terminal'>;
  onFailure: OnFailure;
  /** the revision a rollback goes back to (revision-history.ts lastGoodRevision), if any */
  lastGood: RevisionRef | undefined;
  /** a revision is installed (status.activeRevision) */
  active: boolean;
  /** the failed revision's content */
  contentDigest: string;
  /** status.attemptedRevision as it was before this failure */
  attempted: AttemptedRevision | undefined;
  progressDeadlineMs: number;
  now: number;
}

export type RevisionFailureDecision =
  /** transient, within progressDeadline of its first failure, under Rollback with a revision to go back to: keep the installed one, retry with backoff (rolled back to `to` once past it) */
  | { kind: 'retry-upgrade'; reason: RevisionFailureReason; since: string; to: RevisionRef }
  /**
   * Rollback: re-apply `to`; prune the failed revision's objects unless the acting account was
   * refused (nothing written, and the prune would be refused the same way); `refused`: the failed
   * revision wrote nothing (a refusal before any write), so status says "stays installed", not "rolled back"
   */
  | { kind: 'roll-back'; reason: RevisionFailureReason; to: RevisionRef; prune: boolean; refused: boolean; metric: RevisionFailureReason | 'ProgressDeadline' }
  /** terminal, not Hold, nothing to roll back to: wait for a spec change; a conflicting owner is looked at again after requeueAfterMs */
  | { kind: 'block'; reason: RevisionFailureReason; requeueAfterMs?: number }
  /** retry: a transient failure through the controller's backoff (throw), a terminal one under Hold by a rate-limited requeue */
  | { kind: 'retry'; reason: RevisionFailureReason; by: 'backoff' | 'requeue' };

/** how long a revision blocked on a conflicting owner waits before looking again (someone may remove the other object) */
export const CONFLICT_RECHECK_MS = 60_000;

/**
 * A new revision failed to apply (or missed its progressDeadline, code progress-deadline): roll
 * back, retry, hold or block, per spec.upgrade.onFailure (DESIGN §3). A refusal for missing rights
 * (code forbidden) is not retried as transient under Rollback: nothing of the revision was written,
 * and Rollback keeps the installed one as before (Hold retries it).
 */
export function decideRevisionFailure(r: RevisionFailureInput): RevisionFailureDecision {
  const { code, terminal } = r.failure;
  const reason: RevisionFailureReason =
    code === ApplyCode.ConflictingOwner ? FailureReason.ConflictingOwner : code === ApplyCode.UnsafeCrdUpgrade ? FailureReason.UnsafeCRDUpgrade : 'ApplyFailed';
  const forbidden = code === ApplyCode.Forbidden;
  const deadline = code === ReconcileCode.ProgressDeadline;
  if (r.onFailure === 'Rollback' && r.lastGood) {
    if (r.active && !forbidden && !deadline) {
      const attempt = decideApplyFailure({
        terminal,
        contentDigest: r.contentDigest,
        attempted: r.attempted,
        progressDeadlineMs: r.progressDeadlineMs,
        now: r.now,
      });
      if (attempt.kind === 'retry') return { kind: 'retry-upgrade', reason, since: attempt.since, to: r.lastGood };
    }
    return {
      kind: 'roll-back',
      reason,
      to: r.lastGood,
      prune: !forbidden,
      refused: reason !== 'ApplyFailed' || forbidden,
      metric: deadline ? 'ProgressDeadline' : reason,
    };
  }
  // Hold retries even what looks terminal (a refused object may be accepted once a CRD or webhook appears)
  if (terminal && r.onFailure !== 'Hold')
    return reason === 'ConflictingOwner' ? { kind: 'block', reason, requeueAfterMs: CONFLICT_RECHECK_MS } : { kind: 'block', reason };
  return { kind: 'retry', reason, by: terminal ? 'requeue' : 'backoff' };
}
