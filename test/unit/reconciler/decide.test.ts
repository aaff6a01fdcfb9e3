import { describe, expect, it } from 'vitest';
import type { ActiveRevision, AttemptedRevision } from '../../../api/v1alpha2/types.ts';
import { decideApplyFailure, decideRevision, decideRollout, type RolloutInput } from '../../../src/reconciler/pipeline/decide.ts';

const active = (digest: string, extra: Partial<ActiveRevision> = {}): ActiveRevision => ({ number: 1, contentDigest: digest, ...extra });
const attempted = (digest: string, extra: Partial<AttemptedRevision> = {}): AttemptedRevision => ({ number: 2, contentDigest: digest, reason: 'ApplyFailed', ...extra });

describe('decideRevision', () => {
  const cases: Array<[string, Parameters<typeof decideRevision>[0], string]> = [
    ['nothing installed: new', { generation: 1, contentDigest: 'b', active: undefined, attempted: undefined }, 'new'],
    ['the active content again: same', { generation: 1, contentDigest: 'a', active: active('a'), attempted: undefined }, 'same'],
    ['other content: new', { generation: 1, contentDigest: 'b', active: active('a'), attempted: undefined }, 'new'],
    ['rolled back under this generation: held back', { generation: 3, contentDigest: 'b', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }) }, 'held-back'],
    ['rolled back under an older generation: new', { generation: 4, contentDigest: 'b', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }) }, 'new'],
    ['failed without rollback (Hold, Blocked): tried again', { generation: 3, contentDigest: 'b', active: active('a'), attempted: attempted('b', { generation: 3 }) }, 'new'],
    ['other content than the rolled-back one: new', { generation: 3, contentDigest: 'c', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }) }, 'new'],
    ['the spec asks for the active content after a rollback: same', { generation: 3, contentDigest: 'a', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }) }, 'same'],
    ['a status from before generation was recorded: tried again', { generation: 3, contentDigest: 'b', active: active('a'), attempted: attempted('b', { rolledBackTo: 1 }) }, 'new'],
    ['rolled back under this generation, a reconcile requested: tried once more', { generation: 3, contentDigest: 'b', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }), retry: true }, 'new'],
    ['a request with the active content: same', { generation: 3, contentDigest: 'a', active: active('a'), attempted: attempted('b', { generation: 3, rolledBackTo: 1 }), retry: true }, 'same'],
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
    ['healthy again: succeeded', { healthy: true, active: active('a', { appliedAt: new Date(now - 2 * minute).toISOString(), healthyAt: new Date(now - minute).toISOString() }) }, { kind: 'succeeded', first: false }],
    ['unhealthy after it was healthy once: installed, never rolled back', { active: active('a', { appliedAt: new Date(now - 60 * minute).toISOString(), healthyAt: new Date(now - 59 * minute).toISOString() }) }, { kind: 'installed' }],
    ['not healthy within the deadline: rolling out, check when it runs out', {}, { kind: 'rolling-out', checkAfterMs: 8 * minute }],
    ['past the deadline, Rollback with a good revision: roll back', { active: active('a', { appliedAt: new Date(now - 11 * minute).toISOString() }) }, { kind: 'roll-back' }],
    ['exactly at the deadline: roll back', { active: active('a', { appliedAt: new Date(now - 10 * minute).toISOString() }) }, { kind: 'roll-back' }],
    ['past the deadline, nothing to roll back to: blocked', { canRollBack: false, active: active('a', { appliedAt: new Date(now - 11 * minute).toISOString() }) }, { kind: 'blocked', because: 'nothing-to-roll-back-to' }],
    ['past the deadline, Hold: blocked', { onFailure: 'Hold', active: active('a', { appliedAt: new Date(now - 11 * minute).toISOString() }) }, { kind: 'blocked', because: 'hold' }],
    ['rolled back under this generation: stays reported, even when healthy', { healthy: true, attempted: attempted('b', { generation: 5, rolledBackTo: 1 }) }, { kind: 'rolled-back' }],
    ['rolled back under an older generation: judged afresh', { healthy: true, attempted: attempted('b', { generation: 4, rolledBackTo: 1 }) }, { kind: 'succeeded', first: true }],
    ['a failure without rollback does not count as rolled back', { attempted: attempted('b', { generation: 5 }) }, { kind: 'rolling-out', checkAfterMs: 8 * minute }],
    ['no appliedAt: the deadline counts from now', { active: active('a') }, { kind: 'rolling-out', checkAfterMs: 10 * minute }],
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
    ['transient again within the deadline: retry, since the first failure', { attempted: attempted('b', { failingSince: ago(4) }) }, { kind: 'retry', since: ago(4) }],
    ['transient for longer than progressDeadline: give up (onFailure decides)', { attempted: attempted('b', { failingSince: ago(10) }) }, { kind: 'give-up' }],
    ['an earlier failure of other content does not count', { attempted: attempted('c', { failingSince: ago(30) }) }, { kind: 'retry', since: ago(0) }],
    ['the same content rolled back before (a new generation asks again): the deadline starts afresh', { attempted: attempted('b', { failingSince: ago(30), rolledBackTo: 1 }) }, { kind: 'retry', since: ago(0) }],
    ['a terminal failure after transient ones: give up', { terminal: true, attempted: attempted('b', { failingSince: ago(1) }) }, { kind: 'give-up' }],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(decideApplyFailure({ ...base, ...input })).toEqual(expected);
  });
});
