import { describe, expect, it } from 'vitest';
import type { HealthCheck } from '../../../api/v1alpha2/types.ts';
import { track, verdictOf, type ProbeTrack } from '../../../src/health/probe-state.ts';
import { compileHealthChecks, normalizeJsonPath, runChecks, selects } from '../../../src/health/probes.ts';
import { HoistError } from '../../../src/util/errors.ts';

const rollout = (status: object, labels: Record<string, string> = { app: 'web' }) => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Rollout',
  metadata: { name: 'web', namespace: 'shop', labels },
  spec: { replicas: 3 },
  status,
});
const one = (check: Omit<HealthCheck, 'name' | 'match'>, match: HealthCheck['match'] = { kind: 'Rollout' }) => compileHealthChecks([{ name: 'c', match, ...check }])[0]!;

describe('health check selection', () => {
  const obj = rollout({});
  it.each([
    [{ kind: 'Rollout' }, true],
    [{ kind: 'Deployment' }, false],
    [{ group: 'argoproj.io', kind: 'Rollout' }, true],
    [{ group: '', kind: 'Rollout' }, false],
    [{ name: 'web' }, true],
    [{ name: 'api' }, false],
    [{ namespace: 'shop', kind: 'Rollout' }, true],
    [{ namespace: 'other', kind: 'Rollout' }, false],
    [{ selector: { app: 'web' } }, true],
    [{ selector: { app: 'web', tier: 'x' } }, false],
  ] as const)('%j selects: %s', (match, want) => {
    expect(selects(match, obj)).toBe(want);
  });
  it('core group objects have group ""', () => {
    expect(selects({ group: '', kind: 'ConfigMap' }, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } })).toBe(true);
  });
});

describe('health check evaluation', () => {
  it('condition: passes on the wanted status, names the actual one otherwise', () => {
    const c = one({ condition: { type: 'Healthy', status: 'True' } });
    expect(c.test(rollout({ conditions: [{ type: 'Healthy', status: 'True' }] }))).toEqual({ ok: true });
    expect(c.test(rollout({ conditions: [{ type: 'Healthy', status: 'False', reason: 'Degraded', message: 'pods crash' }] }))).toEqual({
      ok: false,
      message: 'condition Healthy is False (Degraded: pods crash), want True',
    });
    expect(c.test(rollout({}))).toEqual({ ok: false, message: 'condition Healthy not reported' });
  });
  it('jsonPath: kubectl and $ forms, any yielded value may match', () => {
    expect(normalizeJsonPath('{.status.phase}')).toBe('$.status.phase');
    expect(normalizeJsonPath('.status.phase')).toBe('$.status.phase');
    expect(normalizeJsonPath('status.phase')).toBe('$.status.phase');
    expect(normalizeJsonPath('$.status.phase')).toBe('$.status.phase');
    const phase = one({ jsonPath: { path: '{.status.phase}', value: 'Healthy' } });
    expect(phase.test(rollout({ phase: 'Healthy' })).ok).toBe(true);
    expect(phase.test(rollout({ phase: 'Degraded' }))).toEqual({ ok: false, message: '{.status.phase} is Degraded, want Healthy' });
    expect(phase.test(rollout({})).message).toBe('{.status.phase} is <none>, want Healthy');
    const filtered = one({ jsonPath: { path: '$.status.conditions[?(@.type=="Available")].status', value: 'True' } });
    expect(filtered.test(rollout({ conditions: [{ type: 'Paused', status: 'False' }, { type: 'Available', status: 'True' }] })).ok).toBe(true);
    const count = one({ jsonPath: { path: '.status.readyReplicas', value: '3' } });
    expect(count.test(rollout({ readyReplicas: 3 })).ok).toBe(true);
  });
  it('cel: over self; a missing field fails the check instead of erroring', () => {
    const c = one({ cel: 'self.status.readyReplicas == self.spec.replicas' });
    expect(c.test(rollout({ readyReplicas: 3 }))).toEqual({ ok: true });
    expect(c.test(rollout({ readyReplicas: 1 })).ok).toBe(false);
    const missing = c.test(rollout({}));
    expect(missing.ok).toBe(false);
    expect(missing.message).toMatch(/readyReplicas/);
    const exists = one({ cel: 'self.status.conditions.exists(c, c.type == "Ready" && c.status == "True")' });
    expect(exists.test(rollout({ conditions: [{ type: 'Ready', status: 'True' }] })).ok).toBe(true);
    expect(one({ cel: '"not a bool"' }).test(rollout({})).message).toMatch(/not a bool/);
  });
  it('a bad expression is a terminal spec error naming the check', () => {
    const bad = (check: Partial<HealthCheck>) => () => compileHealthChecks([{ name: 'broken', match: { kind: 'X' }, ...check }]);
    expect(bad({ cel: 'self.status.((' })).toThrow(/healthChecks\[broken\]: cel: /);
    expect(bad({})).toThrow(/exactly one of condition, jsonPath or cel/);
    try {
      bad({ cel: '))' })();
    } catch (e) {
      expect(e).toBeInstanceOf(HoistError);
      expect((e as HoistError).terminal).toBe(true);
    }
  });
  it('defaults follow the CRD: periodSeconds 10, failureThreshold 3, initialDelaySeconds 0', () => {
    const c = one({ cel: 'true' });
    expect([c.periodMs, c.failureThreshold, c.initialDelayMs]).toEqual([10_000, 3, 0]);
  });
  it('runChecks returns only the checks that select the object', () => {
    const checks = compileHealthChecks([
      { name: 'rollouts', match: { kind: 'Rollout' }, cel: 'true' },
      { name: 'deployments', match: { kind: 'Deployment' }, cel: 'true' },
    ]);
    expect(runChecks(checks, rollout({}))).toEqual({ rollouts: { ok: true } });
    expect(runChecks(checks, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } })).toBeUndefined();
  });
});

describe('probe timing', () => {
  const timing = { periodMs: 10_000, failureThreshold: 3, initialDelayMs: 0 };
  const fail = { ok: false, message: 'condition Healthy is False' };
  const pass = { ok: true };
  const at = (events: Array<[number, { ok: boolean; message?: string }]>): ProbeTrack => {
    let t: ProbeTrack | undefined;
    for (const [now, r] of events) t = track(t, r, now);
    return t!;
  };

  it('a new object that has never passed is in progress, not failed, however long it takes', () => {
    const t = at([[0, fail]]);
    expect(verdictOf(t, timing, 1_000_000)).toEqual({ readiness: 'InProgress', message: 'condition Healthy is False' });
  });
  it('passing counts at once', () => {
    expect(verdictOf(at([[0, fail], [5_000, pass]]), timing, 5_000).readiness).toBe('Ready');
  });
  it('after passing, a failure is tolerated for failureThreshold × periodSeconds, then fails', () => {
    const t = at([[0, pass], [100_000, fail]]);
    expect(verdictOf(t, timing, 100_000)).toEqual({ readiness: 'Ready', changesAt: 130_000 });
    expect(verdictOf(t, timing, 129_999).readiness).toBe('Ready');
    const failed = verdictOf(t, timing, 130_000);
    expect(failed.readiness).toBe('Failed');
    expect(failed.message).toBe('condition Healthy is False (for 30s, failureThreshold 3 × periodSeconds 10)');
  });
  it('repeated failing results do not restart the clock; a pass in between does', () => {
    expect(verdictOf(at([[0, pass], [10_000, fail], [20_000, fail], [35_000, fail]]), timing, 40_000).readiness).toBe('Failed');
    expect(verdictOf(at([[0, pass], [10_000, fail], [25_000, pass], [30_000, fail]]), timing, 45_000).readiness).toBe('Ready');
  });
  it('recovers at once after failing', () => {
    expect(verdictOf(at([[0, pass], [10_000, fail], [50_000, pass]]), timing, 50_000).readiness).toBe('Ready');
  });
  it('initialDelaySeconds: pending from first sight, and a failure counts only after it', () => {
    const delayed = { ...timing, initialDelayMs: 60_000 };
    const t = at([[0, pass], [1_000, fail]]);
    expect(verdictOf(t, delayed, 30_000)).toEqual({ readiness: 'InProgress', message: 'initial delay (30s left)', changesAt: 60_000 });
    expect(verdictOf(t, delayed, 60_000)).toEqual({ readiness: 'Ready', changesAt: 90_000 });
    expect(verdictOf(t, delayed, 90_000).readiness).toBe('Failed');
  });
});
