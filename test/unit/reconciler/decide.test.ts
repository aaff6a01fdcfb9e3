import { describe, expect, it } from 'vitest';
import type { ActiveRevision, AttemptedRevision } from '../../../api/v1alpha2/types.ts';
import {
  CONFLICT_RECHECK_MS,
  decideApplyFailure,
  decideBeforeApply,
  decideRevision,
  decideRevisionFailure,
  decideRollout,
  type BeforeApplyDecision,
  type RevisionFailureDecision,
  type RevisionFailureInput,
  type RolloutInput,
} from '../../../src/reconciler/pipeline/decide.ts';

const active = (digest: string, extra: Partial<ActiveRevision> = {}): ActiveRevision => ({ number: 1, contentDigest: digest, ...extra });
const attempted = (digest: string, extra: Partial<AttemptedRevision> = {}): AttemptedRevision => ({
  number: 2,
  contentDigest: digest,
  reason: 'ApplyFailed',
  ...extra,
});

describe('decideRevision', () => {
  const cases: Array<[string, Parameters<typeof decideRevision>[0], string]> = [
    ['nothing installed: new', { generation: 1, contentDigest: 'b', active: undefined, attempted: undefined }, 'new'],
    ['the active content again: same', { generation: 1, contentDigest: 'a', active: active('a'), attempted: undefined }, 'same'],
    ['other content: new', { generation: 1, contentDigest: 'b', active: active('a'), attempted: undefined }, 'new'],
    [
      'rolled back under this generation: held back',
      { generation: 3, contentDigest: 'b', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }) },
      'held-back',
    ],
    [
      'rolled back under an older generation: new',
      { generation: 4, contentDigest: 'b', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }) },
      'new',
    ],
    [
      'failed without rollback (Hold, Blocked): tried again',
      { generation: 3, contentDigest: 'b', active: active('a'), attempted: attempted('b', { generation: 3 }) },
      'new',
    ],
    [
      'other content than the rolled-back one: new',
      { generation: 3, contentDigest: 'c', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }) },
      'new',
    ],
    [
      'the spec asks for the active content after a rollback: same',
      { generation: 3, contentDigest: 'a', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }) },
      'same',
    ],
    [
      'a status from before generation was recorded: tried again',
      { generation: 3, contentDigest: 'b', active: active('a'), attempted: attempted('b', { rolledBackTo: 1 }) },
      'new',
    ],
    [
      'rolled back under this generation, a reconcile requested: tried once more',
      { generation: 3, contentDigest: 'b', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }), retry: true },
      'new',
    ],
    [
      'a request with the active content: same',
      { generation: 3, contentDigest: 'a', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }), retry: true },
      'same',
    ],
  ];
  it.each(cases)('%s', (_name, input, kind) => {
    expect(decideRevision(input).kind).toBe(kind);
  });
});

describe('decideRollout', () => {
  const now = Date.parse('2026-11-23T12:00:00Z');
  const minute = 60_000;
  const base: RolloutInput = {
    generation: 5,
    healthy: false,
    active: active('a', { appliedAt: new Date(now - 2 * minute).toISOString() }),
    attempted: undefined,
    onFailure: 'Rollback',
    progressDeadlineMs: 10 * minute,
    canRollBack: true,
    now,
  };
  const cases: Array<[string, Partial<RolloutInput>, ReturnType<typeof decideRollout>]> = [
    ['healthy for the first time: succeeded, record healthyAt', { healthy: true }, { kind: 'succeeded', first: true }],
    [
      'healthy again: succeeded',
      { healthy: true, active: active('a', { appliedAt: new Date(now - 2 * minute).toISOString(), healthyAt: new Date(now - minute).toISOString() }) },
      { kind: 'succeeded', first: false },
    ],
    [
      'unhealthy after it was healthy once: installed, never rolled back',
      { active: active('a', { appliedAt: new Date(now - 60 * minute).toISOString(), healthyAt: new Date(now - 59 * minute).toISOString() }) },
      { kind: 'installed' },
    ],
    ['not healthy within the deadline: rolling out, check when it runs out', {}, { kind: 'rolling-out', checkAfterMs: 8 * minute }],
    [
      'past the deadline, Rollback with a good revision: roll back',
      { active: active('a', { appliedAt: new Date(now - 11 * minute).toISOString() }) },
      { kind: 'roll-back', why: 'deadline' },
    ],
    [
      'exactly at the deadline: roll back',
      { active: active('a', { appliedAt: new Date(now - 10 * minute).toISOString() }) },
      { kind: 'roll-back', why: 'deadline' },
    ],
    [
      'past the deadline, nothing to roll back to: blocked',
      { canRollBack: false, active: active('a', { appliedAt: new Date(now - 11 * minute).toISOString() }) },
      { kind: 'blocked', why: 'deadline', because: 'nothing-to-roll-back-to' },
    ],
    [
      'past the deadline, Hold: blocked',
      { onFailure: 'Hold', active: active('a', { appliedAt: new Date(now - 11 * minute).toISOString() }) },
      { kind: 'blocked', why: 'deadline', because: 'hold' },
    ],
    [
      'rolled back under this generation: stays reported, even when healthy',
      { healthy: true, attempted: attempted('b', { generation: 5, rolledBackTo: 1 }) },
      { kind: 'rolled-back' },
    ],
    [
      'rolled back under an older generation: judged afresh',
      { healthy: true, attempted: attempted('b', { generation: 4, rolledBackTo: 1 }) },
      { kind: 'succeeded', first: true },
    ],
    [
      'a failure without rollback does not count as rolled back',
      { attempted: attempted('b', { generation: 5 }) },
      { kind: 'rolling-out', checkAfterMs: 8 * minute },
    ],
    ['no appliedAt: the deadline counts from now', { active: active('a') }, { kind: 'rolling-out', checkAfterMs: 10 * minute }],
    ['an object failed within the deadline: roll back at once', { failed: '1 failing: Widget n/w: stalled' }, { kind: 'roll-back', why: 'failed' }],
    [
      'an object failed, nothing to roll back to: blocked at once',
      { failed: '1 failing', canRollBack: false },
      { kind: 'blocked', why: 'failed', because: 'nothing-to-roll-back-to' },
    ],
    ['an object failed under Hold: blocked at once', { failed: '1 failing', onFailure: 'Hold' }, { kind: 'blocked', why: 'failed', because: 'hold' }],
    [
      'an object failed after the revision was healthy once: installed, never rolled back',
      { failed: '1 failing', active: active('a', { appliedAt: new Date(now - 2 * minute).toISOString(), healthyAt: new Date(now - minute).toISOString() }) },
      { kind: 'installed' },
    ],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(decideRollout({ ...base, ...input })).toEqual(expected);
  });
});

describe('decideApplyFailure', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  const minute = 60_000;
  const ago = (m: number) => new Date(now - m * minute).toISOString();
  const base: Parameters<typeof decideApplyFailure>[0] = { terminal: false, contentDigest: 'b', attempted: undefined, progressDeadlineMs: 10 * minute, now };
  const cases: Array<[string, Partial<Parameters<typeof decideApplyFailure>[0]>, ReturnType<typeof decideApplyFailure>]> = [
    ['a terminal failure (the server refuses the content): give up at once', { terminal: true }, { kind: 'give-up' }],
    ['the first transient failure: retry, the deadline counts from now', {}, { kind: 'retry', since: ago(0) }],
    [
      'transient again within the deadline: retry, since the first failure',
      { attempted: attempted('b', { failingSince: ago(4) }) },
      { kind: 'retry', since: ago(4) },
    ],
    ['transient for longer than progressDeadline: give up (onFailure decides)', { attempted: attempted('b', { failingSince: ago(10) }) }, { kind: 'give-up' }],
    ['an earlier failure of other content does not count', { attempted: attempted('c', { failingSince: ago(30) }) }, { kind: 'retry', since: ago(0) }],
    [
      'the same content rolled back before (a new generation asks again): the deadline starts afresh',
      { attempted: attempted('b', { failingSince: ago(30), rolledBackTo: 1 }) },
      { kind: 'retry', since: ago(0) },
    ],
    ['a terminal failure after transient ones: give up', { terminal: true, attempted: attempted('b', { failingSince: ago(1) }) }, { kind: 'give-up' }],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(decideApplyFailure({ ...base, ...input })).toEqual(expected);
  });
});

describe('decideBeforeApply', () => {
  const cases: Array<[string, Parameters<typeof decideBeforeApply>[0], BeforeApplyDecision]> = [
    [
      'a transient resolve failure: Resolved says so, retried',
      { stage: 'resolve', reason: 'ResolveFailed', terminal: false },
      { condition: 'Resolved', reason: 'ResolveFailed', retry: true, unblockedBy: 'spec-or-reference' },
    ],
    [
      'a terminal resolve failure: blocked until the spec or a reference changes',
      { stage: 'resolve', reason: 'ResolveFailed', terminal: true },
      { condition: 'Resolved', reason: 'ResolveFailed', retry: false, unblockedBy: 'spec-or-reference' },
    ],
    [
      'a refused signature keeps its own reason',
      { stage: 'resolve', reason: 'VerificationFailed', terminal: true },
      { condition: 'Resolved', reason: 'VerificationFailed', retry: false, unblockedBy: 'spec-or-reference' },
    ],
    [
      'a malformed spec: Resolved, blocked until the spec changes',
      { stage: 'spec', reason: 'ResolveFailed', terminal: true },
      { condition: 'Resolved', reason: 'ResolveFailed', retry: false, unblockedBy: 'spec' },
    ],
    [
      'a transient fetch failure: Unpacked says so, retried',
      { stage: 'fetch', reason: 'FetchFailed', terminal: false },
      { condition: 'Unpacked', reason: 'FetchFailed', retry: true, unblockedBy: 'spec' },
    ],
    [
      'a terminal fetch failure: blocked',
      { stage: 'fetch', reason: 'FetchFailed', terminal: true },
      { condition: 'Unpacked', reason: 'FetchFailed', retry: false, unblockedBy: 'spec' },
    ],
    [
      'a terminal process failure: ProcessFailed, blocked',
      { stage: 'process', reason: 'ProcessFailed', terminal: true },
      { condition: 'Unpacked', reason: 'ProcessFailed', retry: false, unblockedBy: 'spec' },
    ],
    [
      'a transient process failure: ProcessFailed, retried',
      { stage: 'process', reason: 'ProcessFailed', terminal: false },
      { condition: 'Unpacked', reason: 'ProcessFailed', retry: true, unblockedBy: 'spec' },
    ],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(decideBeforeApply(input)).toEqual(expected);
  });
});

describe('decideRevisionFailure', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  const minute = 60_000;
  const ago = (m: number) => new Date(now - m * minute).toISOString();
  const good = { number: 1, contentDigest: 'a' };
  const base: RevisionFailureInput = {
    failure: { code: 'apply-failed', terminal: true },
    onFailure: 'Rollback',
    lastGood: good,
    active: true,
    contentDigest: 'b',
    attempted: undefined,
    progressDeadlineMs: 10 * minute,
    now,
  };
  const transient = { code: 'apply-failed', terminal: false };
  const install = { lastGood: undefined, active: false };
  const rollBack = (extra: Partial<Extract<RevisionFailureDecision, { kind: 'roll-back' }>> = {}): RevisionFailureDecision => ({
    kind: 'roll-back',
    reason: 'ApplyFailed',
    to: good,
    prune: true,
    refused: false,
    metric: 'ApplyFailed',
    ...extra,
  });
  const cases: Array<[string, Partial<RevisionFailureInput>, RevisionFailureDecision]> = [
    // upgrade (a revision to go back to) × onFailure × transient / terminal
    ['upgrade, Rollback, terminal: roll back and prune what the failed revision wrote', {}, rollBack()],
    [
      'upgrade, Rollback, transient: keep the installed revision, retry; the deadline counts from now',
      { failure: transient },
      { kind: 'retry-upgrade', reason: 'ApplyFailed', since: ago(0), to: good },
    ],
    [
      'upgrade, Rollback, transient within the deadline of the first failure: retry since then',
      { failure: transient, attempted: { number: 2, contentDigest: 'b', reason: 'ApplyFailed', failingSince: ago(9) } },
      { kind: 'retry-upgrade', reason: 'ApplyFailed', since: ago(9), to: good },
    ],
    [
      'upgrade, Rollback, transient for longer than the deadline: roll back',
      { failure: transient, attempted: { number: 2, contentDigest: 'b', reason: 'ApplyFailed', failingSince: ago(10) } },
      rollBack(),
    ],
    ['upgrade, Hold, terminal: retried by a rate-limited requeue', { onFailure: 'Hold' }, { kind: 'retry', reason: 'ApplyFailed', by: 'requeue' }],
    ['upgrade, Hold, transient: retried with backoff', { onFailure: 'Hold', failure: transient }, { kind: 'retry', reason: 'ApplyFailed', by: 'backoff' }],
    // install (nothing to go back to)
    ['install, Rollback, terminal: blocked until the spec changes', install, { kind: 'block', reason: 'ApplyFailed' }],
    ['install, Rollback, transient: retried with backoff', { ...install, failure: transient }, { kind: 'retry', reason: 'ApplyFailed', by: 'backoff' }],
    ['install, Hold, terminal: retried by a rate-limited requeue', { ...install, onFailure: 'Hold' }, { kind: 'retry', reason: 'ApplyFailed', by: 'requeue' }],
    [
      'install, Hold, transient: retried with backoff',
      { ...install, onFailure: 'Hold', failure: transient },
      { kind: 'retry', reason: 'ApplyFailed', by: 'backoff' },
    ],
    // what the code says
    [
      'forbidden, transient, Rollback: not retried as transient; rolled back without prune, named as refused',
      { failure: { code: 'forbidden', terminal: false } },
      rollBack({ prune: false, refused: true }),
    ],
    [
      'forbidden under Hold: retried',
      { onFailure: 'Hold', failure: { code: 'forbidden', terminal: false } },
      { kind: 'retry', reason: 'ApplyFailed', by: 'backoff' },
    ],
    [
      'progress deadline, Rollback: rolled back at once, counted as ProgressDeadline',
      { failure: { code: 'progress-deadline', terminal: true } },
      rollBack({ metric: 'ProgressDeadline' }),
    ],
    [
      'conflicting owner on upgrade, Rollback: the installed revision stays, named ConflictingOwner',
      { failure: { code: 'conflicting-owner', terminal: true } },
      rollBack({ reason: 'ConflictingOwner', refused: true, metric: 'ConflictingOwner' }),
    ],
    [
      'conflicting owner on install: blocked, looked at again now and then',
      { ...install, failure: { code: 'conflicting-owner', terminal: true } },
      { kind: 'block', reason: 'ConflictingOwner', requeueAfterMs: CONFLICT_RECHECK_MS },
    ],
    [
      'unsafe CRD change on install: blocked, named UnsafeCRDUpgrade',
      { ...install, failure: { code: 'unsafe-crd-upgrade', terminal: true } },
      { kind: 'block', reason: 'UnsafeCRDUpgrade' },
    ],
    [
      'unsafe CRD change on upgrade under Hold: retried by requeue',
      { onFailure: 'Hold', failure: { code: 'unsafe-crd-upgrade', terminal: true } },
      { kind: 'retry', reason: 'UnsafeCRDUpgrade', by: 'requeue' },
    ],
    ['a revision to go back to but none installed (all failed since): roll back without a transient retry', { active: false, failure: transient }, rollBack()],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(decideRevisionFailure({ ...base, ...input })).toEqual(expected);
  });
});
