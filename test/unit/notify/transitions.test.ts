import { describe, expect, it } from 'vitest';
import type { BundleDeploymentStatus, Condition } from '../../../api/v1alpha2/types.ts';
import { transitionsOf } from '../../../src/notify/transitions.ts';

const c = (type: Condition['type'], status: Condition['status'], reason: string, message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: '2025-01-01T00:00:00Z',
});
const st = (
  rev: number,
  digest: string,
  progressing: string,
  opts: { healthy?: string; paused?: boolean; revisions?: number[]; attempted?: number } = {},
): BundleDeploymentStatus => ({
  conditions: [
    c(
      'Healthy',
      opts.healthy === 'Unhealthy' ? 'False' : 'True',
      opts.healthy ?? 'Healthy',
      opts.healthy === 'Unhealthy' ? 'Deployment web: 0/1 ready' : 'all healthy',
    ),
    c('Progressing', progressing === 'RollingOut' ? 'True' : 'False', progressing, `progressing ${progressing}`),
    c('Paused', opts.paused ? 'True' : 'False', opts.paused ? 'Paused' : 'Reconciling'),
  ],
  activeRevision: { number: rev, contentDigest: digest, objects: 1 },
  revisions: (opts.revisions ?? [rev]).map((n) => ({ number: n, contentDigest: `d${n}`, phase: n === rev ? 'Active' : 'Superseded' })),
  ...(opts.attempted ? { attemptedRevision: { number: opts.attempted, contentDigest: `d${opts.attempted}`, reason: 'ApplyFailed' } } : {}),
  resolvedSources: [{ kind: 'git', commit: 'a'.repeat(40) }],
});
const bd = {
  name: 'web',
  labels: { team: 'a' },
  installNamespace: 'team-a',
  sources: [{ kind: 'git' as const, git: { repository: 'https://user:pw@git.example.com/acme/app.git?x=1', ref: { branch: 'main' } } }],
};
const now = new Date('2025-01-01T00:00:10Z');
const events = (before: BundleDeploymentStatus | undefined, after: BundleDeploymentStatus, facts = {}) =>
  transitionsOf(bd, before, after, facts, now).map((t) => t.event);

describe('transitionsOf', () => {
  it.each([
    ['first install', undefined, st(1, 'd1', 'Succeeded'), ['InstallSucceeded']],
    ['install from rolling out', st(1, 'd1', 'RollingOut'), st(1, 'd1', 'Succeeded'), ['InstallSucceeded']],
    ['the same status again: nothing', st(1, 'd1', 'Succeeded'), st(1, 'd1', 'Succeeded'), []],
    ['an upgrade', st(1, 'd1', 'Succeeded'), st(2, 'd2', 'Succeeded', { revisions: [1, 2] }), ['UpgradeSucceeded']],
    ['a rollout starts', st(1, 'd1', 'Succeeded'), st(2, 'd2', 'RollingOut', { revisions: [1, 2] }), ['RolloutStarted']],
    ['rolled back', st(1, 'd1', 'Succeeded'), st(1, 'd1', 'RolledBack', { attempted: 2, revisions: [1, 2] }), ['RolledBack']],
    ['rolled back again in a later reconcile: nothing', st(1, 'd1', 'RolledBack', { attempted: 2 }), st(1, 'd1', 'RolledBack', { attempted: 2 }), []],
    ['blocked', undefined, st(1, 'd1', 'Blocked'), ['Blocked']],
    ['waiting for a dependency', undefined, st(1, 'd1', 'DependencyNotReady'), ['DependencyNotReady']],
    ['paused', st(1, 'd1', 'Succeeded'), st(1, 'd1', 'Paused', { paused: true }), ['Paused']],
    ['resumed: no second success of the same revision', st(1, 'd1', 'Paused', { paused: true }), st(1, 'd1', 'Succeeded'), ['Resumed']],
    ['an installed revision turns unhealthy', st(1, 'd1', 'Succeeded'), st(1, 'd1', 'Succeeded', { healthy: 'Unhealthy' }), ['Unhealthy']],
    ['and recovers', st(1, 'd1', 'Succeeded', { healthy: 'Unhealthy' }), st(1, 'd1', 'Succeeded'), ['Recovered']],
    ['retrying: nothing', st(1, 'd1', 'Succeeded'), st(1, 'd1', 'Retrying'), []],
  ])('%s', (_what, before, after, want) => {
    expect(events(before, after)).toEqual(want);
  });

  it('drift reverted is news of its own, with the objects', () => {
    const [t] = transitionsOf(bd, st(1, 'd1', 'Succeeded'), st(1, 'd1', 'Succeeded'), { driftReverted: ['apps/v1 Deployment team-a/web'] }, now);
    expect(t).toMatchObject({
      event: 'DriftReverted',
      severity: 'warning',
      kind: 'news',
      summary: 'changed back to revision 1: apps/v1 Deployment team-a/web',
    });
  });

  it('a rollback names the failed revision, the failure, the source without credentials and the changes', () => {
    const failure = { stage: 'apply', subject: 'apps/v1 Deployment team-a/web', code: 'apply-failed', message: 'refused' };
    const [t] = transitionsOf(
      bd,
      st(1, 'd1', 'Succeeded'),
      st(1, 'd1', 'RolledBack', { attempted: 2 }),
      { failure, changes: { created: 1, configured: 2, pruned: 0 } },
      now,
    );
    expect(t).toEqual({
      event: 'RolledBack',
      severity: 'error',
      kind: 'failure',
      bd: { name: 'web', uid: undefined, labels: { team: 'a' }, installNamespace: 'team-a' },
      revision: { number: 2, contentDigest: 'd2' },
      sources: [{ kind: 'git', location: 'https://git.example.com/acme/app.git', commit: 'a'.repeat(40) }],
      changes: { created: 1, configured: 2, pruned: 0 },
      failure,
      summary: 'progressing RolledBack',
      at: '2025-01-01T00:00:10.000Z',
    });
  });

  it('a success carries no failure', () => {
    const [t] = transitionsOf(bd, undefined, st(1, 'd1', 'Succeeded'), { failure: { stage: 'apply', code: 'x', message: 'm' } }, now);
    expect(t?.failure).toBeUndefined();
  });
});
