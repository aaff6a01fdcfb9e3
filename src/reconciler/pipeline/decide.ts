/**
 * The rollout decisions, as pure functions of status, spec, health and time (DESIGN §3). No I/O:
 * every rule here has a table test (test/unit/reconciler/decide.test.ts).
 */
import type { OnFailure } from '../../../api/v1alpha2/types.ts';
import type { ActiveRevision, AttemptedRevision } from '../../../api/v1alpha2/types.ts';

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
export function decideRevision(input: { generation: number; contentDigest: string; active: ActiveRevision | undefined; attempted: AttemptedRevision | undefined; retry?: boolean }): RevisionDecision {
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
  /** past progressDeadline and never healthy: roll back to the last good revision */
  | { kind: 'roll-back' }
  /** past progressDeadline and never healthy, with onFailure Hold or nothing to roll back to */
  | { kind: 'blocked'; because: 'hold' | 'nothing-to-roll-back-to' };

/** Progressing after a successful apply: done when healthy; past the deadline, roll back or block. */
export function decideRollout(r: RolloutInput): RolloutDecision {
  if (r.attempted?.rolledBackTo !== undefined && r.attempted.generation === r.generation) return { kind: 'rolled-back' };
  if (r.healthy) return { kind: 'succeeded', first: r.active.healthyAt === undefined };
  if (r.active.healthyAt !== undefined) return { kind: 'installed' };
  // from when the revision's objects were applied (kept in status, so a restart neither resets nor
  // shortens it); without appliedAt (never the case for revisions this version applied) from now
  const since = r.active.appliedAt ? Date.parse(r.active.appliedAt) : r.now;
  const left = since + r.progressDeadlineMs - r.now;
  if (left > 0) return { kind: 'rolling-out', checkAfterMs: left };
  if (r.onFailure === 'Rollback' && r.canRollBack) return { kind: 'roll-back' };
  return { kind: 'blocked', because: r.onFailure === 'Hold' ? 'hold' : 'nothing-to-roll-back-to' };
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
export function decideApplyFailure(r: { terminal: boolean; contentDigest: string; attempted: AttemptedRevision | undefined; progressDeadlineMs: number; now: number }): ApplyFailureDecision {
  if (r.terminal) return { kind: 'give-up' };
  const prior = r.attempted?.contentDigest === r.contentDigest && r.attempted.rolledBackTo === undefined ? r.attempted.failingSince : undefined;
  const since = prior ?? new Date(r.now).toISOString();
  return r.now - Date.parse(since) < r.progressDeadlineMs ? { kind: 'retry', since } : { kind: 'give-up' };
}
