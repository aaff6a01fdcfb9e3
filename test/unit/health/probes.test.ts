import { describe, expect, it } from 'vitest';
import type { HealthCheck } from '../../../api/v1alpha2/types.ts';
import { track, verdictOf, type ProbeTrack } from '../../../src/health/probe-state.ts';
import { parse } from '@marcbachmann/cel-js';
import { ASSUMED_DATA_SIZES, estimateCost } from '../../../src/health/cel-cost.ts';
import { compileHealthChecks, JSONPATH_MAX_RESULTS, normalizeJsonPath, runChecks, selects } from '../../../src/health/probes.ts';
import { HoistError } from '../../../src/util/errors.ts';

const rollout = (status: object, labels: Record<string, string> = { app: 'web' }) => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Rollout',
  metadata: { name: 'web', namespace: 'shop', labels },
  spec: { replicas: 3 },
  status,
});
const one = (check: Omit<HealthCheck, 'name' | 'match'>, match: HealthCheck['match'] = { kind: 'Rollout' }) =>
  compileHealthChecks([{ name: 'c', match, ...check }])[0]!;

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
  it("condition: passes on the wanted status; otherwise says so without the object's reason or message", () => {
    const c = one({ condition: { type: 'Healthy', status: 'True' } });
    expect(c.test(rollout({ conditions: [{ type: 'Healthy', status: 'True' }] }))).toEqual({ ok: true });
    expect(c.test(rollout({ conditions: [{ type: 'Healthy', status: 'False', reason: 'Degraded', message: 'pods crash' }] }))).toEqual({
      ok: false,
      message: 'condition Healthy is not True',
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
    expect(phase.test(rollout({ phase: 'Degraded' }))).toEqual({ ok: false, message: '{.status.phase} does not yield Healthy' });
    expect(phase.test(rollout({})).message).toBe('{.status.phase} does not yield Healthy');
    const filtered = one({ jsonPath: { path: '$.status.conditions[?(@.type=="Available")].status', value: 'True' } });
    expect(
      filtered.test(
        rollout({
          conditions: [
            { type: 'Paused', status: 'False' },
            { type: 'Available', status: 'True' },
          ],
        }),
      ).ok,
    ).toBe(true);
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
    expect(one({ cel: '"not a bool"' }).test(rollout({})).message).toBe('cel "not a bool" does not yield a bool');
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
    expect(
      verdictOf(
        at([
          [0, fail],
          [5_000, pass],
        ]),
        timing,
        5_000,
      ).readiness,
    ).toBe('Ready');
  });
  it('after passing, a failure is tolerated for failureThreshold × periodSeconds, then fails', () => {
    const t = at([
      [0, pass],
      [100_000, fail],
    ]);
    expect(verdictOf(t, timing, 100_000)).toEqual({ readiness: 'Ready', changesAt: 130_000 });
    expect(verdictOf(t, timing, 129_999).readiness).toBe('Ready');
    const failed = verdictOf(t, timing, 130_000);
    expect(failed.readiness).toBe('Failed');
    expect(failed.message).toBe('condition Healthy is False (for 30s, failureThreshold 3 × periodSeconds 10)');
  });
  it('repeated failing results do not restart the clock; a pass in between does', () => {
    expect(
      verdictOf(
        at([
          [0, pass],
          [10_000, fail],
          [20_000, fail],
          [35_000, fail],
        ]),
        timing,
        40_000,
      ).readiness,
    ).toBe('Failed');
    expect(
      verdictOf(
        at([
          [0, pass],
          [10_000, fail],
          [25_000, pass],
          [30_000, fail],
        ]),
        timing,
        45_000,
      ).readiness,
    ).toBe('Ready');
  });
  it('recovers at once after failing', () => {
    expect(
      verdictOf(
        at([
          [0, pass],
          [10_000, fail],
          [50_000, pass],
        ]),
        timing,
        50_000,
      ).readiness,
    ).toBe('Ready');
  });
  it('initialDelaySeconds: pending from first sight, and a failure counts only after it', () => {
    const delayed = { ...timing, initialDelayMs: 60_000 };
    const t = at([
      [0, pass],
      [1_000, fail],
    ]);
    expect(verdictOf(t, delayed, 30_000)).toEqual({ readiness: 'InProgress', message: 'initial delay (30s left)', changesAt: 60_000 });
    expect(verdictOf(t, delayed, 60_000)).toEqual({ readiness: 'Ready', changesAt: 90_000 });
    expect(verdictOf(t, delayed, 90_000).readiness).toBe('Failed');
  });
});

// Issue 23: Healthy's message is readable by every reader of the BundleDeployment; the objects are
// read with the controller's rights. No message may carry a value read from the object.
describe('status hygiene: messages never carry values of the matched object', () => {
  const SECRET = 'hunter2-s3cr3t';
  const leaky = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db', namespace: 'shop', labels: { app: 'web' } },
    data: { password: SECRET, [SECRET]: SECRET },
    status: { phase: SECRET, conditions: [{ type: 'Ready', status: 'False', reason: SECRET, message: SECRET }], list: [SECRET] },
  };
  it.each([
    ['condition', { condition: { type: 'Ready', status: 'True' } }],
    ['jsonPath, one value', { jsonPath: { path: '{.status.phase}', value: 'Running' } }],
    ['jsonPath, several values', { jsonPath: { path: '$.data.*', value: 'x' } }],
    ['cel false', { cel: 'self.status.phase == "Running"' }],
    ['cel not a bool', { cel: 'self.status.phase' }],
    ['cel no such key, the key read from the object', { cel: 'self.data[self.status.phase] == "x"' }],
    ['cel no such overload, with a value of the object', { cel: 'self.status.phase + 1 == 2' }],
    ['cel list', { cel: 'self.status.list' }],
  ] as const)('%s', (_name, check) => {
    const r = one(check as Omit<HealthCheck, 'name' | 'match'>, { kind: 'Secret' }).test(leaky);
    expect(r.ok).toBe(false);
    expect(r.message).toBeTruthy();
    expect(r.message).not.toContain(SECRET);
    expect(r.message).not.toContain('hunter2');
  });
});

describe('budgets: CEL cost and JSONPath limits (issue 23)', () => {
  const nested = (depth: number, size = 10) => {
    const list = `[${Array.from({ length: size }, (_, i) => i).join(',')}]`;
    let body = 'true';
    for (let d = depth; d >= 1; d--) body = `${list}.all(x${d}, ${body})`;
    return body;
  };
  const compileError = (check: Partial<HealthCheck>): HoistError => {
    try {
      compileHealthChecks([{ name: 'hostile', match: { kind: 'Rollout' }, ...check }]);
    } catch (e) {
      expect(e).toBeInstanceOf(HoistError);
      return e as HoistError;
    }
    throw new Error('compiled');
  };

  it.each([
    // [expression, estimated cost with lists read from the object assumed at 100 elements]
    ['true', 1],
    ['self.status.readyReplicas == self.spec.replicas', 7],
    ['[1, 2, 3].all(x, x > 0)', 17],
  ] as const)('estimateCost(%s) = %d', (expr, want) => {
    expect(estimateCost(parse(expr).ast, ASSUMED_DATA_SIZES)).toBe(want);
  });

  it.each([
    // [what, expression, compiles]
    ['one comprehension over the object', 'self.status.conditions.exists(c, c.type == "Ready" && c.status == "True")', true],
    ['two nested over the object', 'self.spec.containers.all(c, c.ports.all(p, p.containerPort > 0))', true],
    ['three nested over ten-element lists', nested(3), true],
    ["the issue's: nine nested over ten-element lists", nested(9), false],
    ['six nested over ten-element lists', nested(6), false],
    ['three nested over the object', 'self.a.all(x, self.a.all(y, self.a.all(z, x == y && y == z)))', false],
    ['exponential strings through cel.bind', `cel.bind(a, self.s + self.s, ${'cel.bind(a, a + a, '.repeat(20)}a.size() > 0${')'.repeat(20)})`, false],
  ] as const)('%s: compiles %s', (_what, cel, compiles) => {
    if (compiles) {
      expect(() => compileHealthChecks([{ name: 'c', match: { kind: 'X' }, cel }])).not.toThrow();
      return;
    }
    const e = compileError({ cel });
    expect(e.terminal).toBe(true);
    expect(e.code).toBe('health-check-limit');
    expect(e.message).toMatch(/^healthChecks\[hostile\]: cel: estimated cost .* exceeds the limit of 1000000 /);
  });

  it("the issue's depth-9 expression is refused without evaluating anything (the old code blocked the event loop 39 s)", () => {
    expect(estimateCost(parse(nested(9)).ast, ASSUMED_DATA_SIZES)).toBeGreaterThan(1e9);
  });

  it('at run time, an expression too costly for this object is not evaluated', () => {
    const c = one({ cel: 'self.spec.a.all(x, self.spec.a.all(y, x == y || x != y))' });
    // within the compile-time assumption (100 elements): evaluated
    expect(c.test(rollout({})).ok).toBe(false); // no such key, but evaluated
    const small = { ...rollout({}), spec: { a: Array.from({ length: 50 }, (_, i) => i) } };
    expect(c.test(small)).toEqual({ ok: true });
    // 5000 × 5000 comparisons: refused before evaluation, naming the limit
    const big = { ...rollout({}), spec: { a: Array.from({ length: 5000 }, (_, i) => i) } };
    const r = c.test(big);
    expect(r.ok).toBe(false);
    expect(r.message).toMatch(/not evaluated: its cost on this object \(.*\) exceeds the limit of 1000000$/);
  });

  it('objects nested deeper than 100 levels are not evaluated by cel or jsonPath checks', () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 150; i++) deep = (deep['a'] = {}) as Record<string, unknown>;
    const obj = { ...rollout({}), spec: root };
    expect(one({ cel: 'true' }).test(obj).message).toMatch(/nests deeper than 100 levels \(the limit for jsonPath and cel checks\)/);
    expect(one({ jsonPath: { path: '$..a', value: 'x' } }).test(obj).message).toMatch(/nests deeper than 100 levels/);
  });

  it.each([
    ['$..*..*..*', false],
    ['$..a..b', false],
    ['{..status..phase}', false],
    ['$..phase', true],
    ['$.status.conditions[?(@.type=="Ready")].status', true],
  ] as const)('jsonPath %s compiles: %s', (path, compiles) => {
    if (compiles) {
      expect(() => one({ jsonPath: { path, value: 'x' } })).not.toThrow();
      return;
    }
    const e = compileError({ jsonPath: { path, value: 'x' } });
    expect(e.code).toBe('health-check-limit');
    expect(e.message).toBe(`healthChecks[hostile]: jsonPath ${path}: more than one recursive descent (..) is not allowed`);
  });

  it(`jsonPath yields at most ${JSONPATH_MAX_RESULTS} values, then fails naming the limit`, () => {
    const obj = { ...rollout({}), spec: { items: Array.from({ length: 5000 }, (_, i) => ({ v: i })) } };
    const c = one({ jsonPath: { path: '$..v', value: '4999' } });
    expect(c.test(obj)).toEqual({ ok: false, message: `jsonPath $..v: yields more than ${JSONPATH_MAX_RESULTS} values (the limit)` });
    expect(one({ jsonPath: { path: '$..v', value: '3' } }).test({ ...rollout({}), spec: { items: [{ v: 3 }] } })).toEqual({ ok: true });
  });
});
