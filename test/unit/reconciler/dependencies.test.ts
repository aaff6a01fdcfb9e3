/**
 * spec.dependsOn's pure parts: cycle detection and reachability over the graph, the built-in
 * readiness of a dependency (the status contract's Succeeded), readyExpr (Flux's `dep` and
 * `self`) with its cost bound, and the waiting message.
 */
import { describe, expect, it } from 'vitest';
import type { BundleDeployment, Condition } from '../../../api/v1alpha2/types.ts';
import { CEL_COST_LIMIT } from '../../../src/health/cel-cost.ts';
import { describeWaiting, dependencyState, dependencyVerdicts } from '../../../src/reconciler/dependencies.ts';
import { cycleThrough, reaches } from '../../../src/reconciler/dependency-graph.ts';
import { compileReadyExpr } from '../../../src/reconciler/ready-expr.ts';
import { isHoistError } from '../../../src/util/errors.ts';

const graph = (edges: Record<string, string[]>) => (name: string) => edges[name];

describe('cycleThrough', () => {
  const cases: Array<[string, Record<string, string[]>, string, string[] | undefined]> = [
    ['no dependencies', { a: [] }, 'a', undefined],
    ['a chain', { a: ['b'], b: ['c'], c: [] }, 'a', undefined],
    ['a missing dependency', { a: ['ghost'] }, 'a', undefined],
    ['itself', { a: ['a'] }, 'a', ['a', 'a']],
    ['a 2-cycle, from a', { a: ['b'], b: ['a'] }, 'a', ['a', 'b', 'a']],
    ['a 2-cycle, from b', { a: ['b'], b: ['a'] }, 'b', ['b', 'a', 'b']],
    ['a 3-cycle', { a: ['b'], b: ['c'], c: ['a'] }, 'b', ['b', 'c', 'a', 'b']],
    ['depends on a cycle it is not on', { x: ['a'], a: ['b'], b: ['a'] }, 'x', undefined],
    ['the shortest of two cycles', { a: ['b', 'c'], b: ['d'], d: ['a'], c: ['a'] }, 'a', ['a', 'c', 'a']],
    ['a diamond is no cycle', { a: ['b', 'c'], b: ['d'], c: ['d'], d: [] }, 'a', undefined],
  ];
  it.each(cases)('%s', (_what, edges, start, want) => {
    expect(cycleThrough(start, graph(edges))).toEqual(want);
  });

  it('walks each BundleDeployment once, also in a large graph full of cycles', () => {
    const edges: Record<string, string[]> = {};
    const n = 2000;
    for (let i = 0; i < n; i++) edges[`n${i}`] = [`n${(i + 1) % n}`, `n${(i * 7) % n}`, `n${(i * 13 + 5) % n}`];
    edges['start'] = ['n0'];
    let lookups = 0;
    expect(cycleThrough('start', (name) => (lookups++, edges[name]))).toBeUndefined();
    expect(lookups).toBeLessThanOrEqual(n + 1);
  });
});

describe('reaches', () => {
  const edges = graph({ a: ['b'], b: ['c'], c: ['a'], x: ['a'] });
  it.each([
    ['a', 'c', true],
    ['c', 'b', true],
    ['x', 'c', true],
    ['a', 'x', false],
    ['ghost', 'a', false],
  ] as const)('%s reaches %s: %s', (from, to, want) => {
    expect(reaches(from, to, edges)).toBe(want);
  });
});

const cond = (type: Condition['type'], status: Condition['status'], reason: string, observedGeneration = 2): Condition => ({
  type,
  status,
  reason,
  message: 'm',
  observedGeneration,
  lastTransitionTime: 't',
});

function bd(
  name: string,
  opts: {
    generation?: number;
    observed?: number;
    installed?: Condition;
    progressing?: Condition;
    paused?: boolean;
    deleting?: boolean;
    labels?: Record<string, string>;
  } = {},
): BundleDeployment {
  return {
    apiVersion: 'core.rukpak.io/v1alpha2',
    kind: 'BundleDeployment',
    metadata: { name, generation: opts.generation ?? 2, ...(opts.labels ? { labels: opts.labels } : {}), ...(opts.deleting ? { deletionTimestamp: 't' } : {}) },
    spec: { format: 'plain', sources: [], ...(opts.paused ? { paused: true } : {}) },
    status: {
      observedGeneration: opts.observed ?? 2,
      conditions: [opts.installed ?? cond('Installed', 'True', 'Installed'), opts.progressing ?? cond('Progressing', 'False', 'Succeeded')],
      activeRevision: { number: 3, contentDigest: 'd' },
    },
  };
}

describe('dependencyState (the built-in check)', () => {
  const cases: Array<[string, BundleDeployment | undefined, boolean, string]> = [
    ['succeeded at its generation', bd('d'), true, 'ready'],
    ['missing', undefined, false, 'not found'],
    ['being deleted', bd('d', { deleting: true }), false, 'being deleted'],
    ['paused', bd('d', { paused: true, progressing: cond('Progressing', 'False', 'Paused') }), false, 'paused'],
    ['a newer generation not reconciled yet', bd('d', { generation: 3 }), false, 'not reconciled at generation 3 yet'],
    ['rolled back', bd('d', { progressing: cond('Progressing', 'False', 'RolledBack') }), false, 'failed (Progressing=False/RolledBack)'],
    [
      'blocked',
      bd('d', { installed: cond('Installed', 'False', 'ApplyFailed'), progressing: cond('Progressing', 'False', 'Blocked') }),
      false,
      'failed (Progressing=False/Blocked)',
    ],
    ['rolling out', bd('d', { progressing: cond('Progressing', 'True', 'RollingOut') }), false, 'not done yet (Progressing=True/RollingOut)'],
    ['retrying', bd('d', { progressing: cond('Progressing', 'True', 'Retrying') }), false, 'not done yet (Progressing=True/Retrying)'],
    [
      'a lineage conflict',
      bd('d', { installed: cond('Installed', 'False', 'Conflict'), progressing: cond('Progressing', 'False', 'Conflict') }),
      false,
      'not done yet (Progressing=False/Conflict)',
    ],
    [
      'waiting for its own dependencies',
      bd('d', { installed: cond('Installed', 'False', 'Pending'), progressing: cond('Progressing', 'False', 'DependencyNotReady') }),
      false,
      'waiting for its own dependencies (Progressing=False/DependencyNotReady)',
    ],
    [
      'a condition of an older generation',
      bd('d', { progressing: cond('Progressing', 'False', 'Succeeded', 1) }),
      false,
      'not done yet (Progressing=False/Succeeded)',
    ],
  ];
  it.each(cases)('%s', (_what, dep, succeeded, state) => {
    expect(dependencyState(dep)).toEqual({ succeeded, state });
  });
});

describe('dependencyVerdicts', () => {
  const self = bd('app', { labels: { version: 'v2' } });
  const cache = new Map([
    ['crds', bd('crds')],
    ['operator', bd('operator', { progressing: cond('Progressing', 'False', 'RolledBack'), labels: { version: 'v2' } })],
  ]);
  const lookup = (n: string) => cache.get(n);

  it('names each dependency that is not ready, in spec order', () => {
    const v = dependencyVerdicts(self, [{ name: 'crds' }, { name: 'operator' }, { name: 'db' }], lookup);
    expect(v.map((x) => x.ready)).toEqual([true, false, false]);
    expect(describeWaiting(v)).toBe('operator (failed (Progressing=False/RolledBack)), db (not found)');
  });

  it('readyExpr replaces the built-in check (dep and self, as Flux)', () => {
    const expr = "dep.metadata.labels['version'] == self.metadata.labels['version'] && dep.status.activeRevision.number >= 3";
    expect(dependencyVerdicts(self, [{ name: 'operator', readyExpr: expr }], lookup)).toEqual([{ name: 'operator', ready: true }]);
    const v = dependencyVerdicts(self, [{ name: 'crds', readyExpr: 'dep.status.activeRevision.number >= 4' }], lookup);
    expect(v[0]).toEqual({ name: 'crds', ready: false, why: 'readyExpr dep.status.activeRevision.number >= 4 is false; state: ready' });
  });

  it('readyExpr on a missing dependency: not found; one reading a missing key or yielding no bool: not ready, naming the expression only', () => {
    expect(dependencyVerdicts(self, [{ name: 'db', readyExpr: 'true' }], lookup)[0]!.why).toBe('not found');
    expect(dependencyVerdicts(self, [{ name: 'crds', readyExpr: "dep.metadata.labels['secret-value'] == 'x'" }], lookup)[0]!.why).toBe(
      `readyExpr dep.metadata.labels['secret-value'] == 'x': no such key; state: ready`,
    );
    expect(dependencyVerdicts(self, [{ name: 'crds', readyExpr: 'dep.metadata.name' }], lookup)[0]!.why).toMatch(/does not yield a bool/);
  });

  it('a readyExpr that does not parse is a terminal spec error naming the dependency', () => {
    const err = (() => {
      try {
        dependencyVerdicts(self, [{ name: 'crds', readyExpr: 'dep.status.(' }], lookup);
      } catch (e) {
        return e;
      }
    })();
    expect(isHoistError(err) && err.terminal && err.code).toBe('bad-ready-expr');
    expect((err as Error).message).toMatch(/^dependsOn\[crds\]\.readyExpr: cel: /);
  });
});

describe('readyExpr cost bound (as the cel health checks)', () => {
  it('refuses an expression whose estimated cost is over the limit when it is compiled', () => {
    // three nested comprehensions over lists assumed at 100 elements: 100^3 × body > 1,000,000
    const expensive = 'dep.status.conditions.all(a, dep.status.conditions.all(b, dep.status.conditions.all(c, a.type + b.type + c.type != "")))';
    let err: unknown;
    try {
      compileReadyExpr('operator', expensive);
    } catch (e) {
      err = e;
    }
    expect(isHoistError(err) && err.code).toBe('ready-expr-limit');
    expect((err as Error).message).toContain(`exceeds the limit of ${CEL_COST_LIMIT}`);
    expect((err as Error).message).toMatch(/^dependsOn\[operator\]\.readyExpr: /);
  });

  it('does not evaluate an affordable expression on objects whose own sizes make it too expensive', () => {
    const expr = compileReadyExpr('operator', 'dep.metadata.labels.all(a, self.metadata.labels.all(b, a != b))');
    const big = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    const dep = bd('operator', { labels: big(2000) });
    const self = bd('app', { labels: big(2000) });
    const r = expr.evaluate(dep, self);
    expect(r.ok).toBe(false);
    expect(r.message).toMatch(/not evaluated: its cost on these objects \(.*\) exceeds the limit of 1000000/);
    // the same expression on small objects runs
    expect(expr.evaluate(bd('operator', { labels: { a: '1' } }), bd('app', { labels: { b: '2' } })).ok).toBe(true);
  });

  it('matches() runs on RE2, as in the health checks: a catastrophic-backtracking pattern on a long value is answered', () => {
    // a backtracking engine takes 2^200 steps here and would not finish within the test's timeout
    const expr = compileReadyExpr('operator', "dep.metadata.labels.v.matches('^(a+)+$')");
    const dep = bd('operator', { labels: { v: `${'a'.repeat(200)}b` } });
    expect(expr.evaluate(dep, bd('app')).ok).toBe(false);
    expect(expr.evaluate(bd('operator', { labels: { v: 'aaa' } }), bd('app')).ok).toBe(true);
  });
});
