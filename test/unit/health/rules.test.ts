/**
 * The health-rule engine (src/health/rules/rule.ts, rule-set.ts), the verdict's precedence
 * (src/health/verdict.ts) and cluster-wide rule files (rules/config.ts): pure functions, tables.
 * The shipped rules on controller-written states: rules-library.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { HealthCode } from '../../../src/health/errors.ts';
import { MAX_EXPRESSION, MAX_RULES, MAX_RULES_BYTES, parseHealthRules } from '../../../src/health/rules/config.ts';
import { compileRule, groupMatches, RuleCompileError, type HealthRuleSpec } from '../../../src/health/rules/rule.ts';
import { BUILTIN_RULES, HealthRules } from '../../../src/health/rules/rule-set.ts';
import { checkedVerdict, KSTATUS_RULE, verdictOf } from '../../../src/health/verdict.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { HoistError } from '../../../src/util/errors.ts';

const widget = (status: object | undefined, meta: Partial<KubeObject['metadata']> = {}, spec: object = { size: 1 }): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'ns', generation: 2, ...meta },
  spec,
  ...(status ? { status } : {}),
});

const rule = (extra: Partial<HealthRuleSpec> = {}) =>
  compileRule(
    {
      name: 'widgets',
      group: 'example.com',
      kinds: ['Widget'],
      ready: 'self.status.phase == "Running"',
      failed: 'self.status.phase == "Failed"',
      message: '"phase " + self.status.phase',
      ...extra,
    },
    'cluster',
  );

describe('a rule judges in a fixed order', () => {
  it.each([
    ['ready', { phase: 'Running', observedGeneration: 2 }, {}, { readiness: 'Ready' }],
    ['in progress with its message', { phase: 'Pending', observedGeneration: 2 }, {}, { readiness: 'InProgress', message: 'phase Pending' }],
    ['failed', { phase: 'Failed', observedGeneration: 2 }, {}, { readiness: 'Failed', message: 'phase Failed' }],
    [
      'deletion before everything',
      { phase: 'Failed', observedGeneration: 1 },
      { deletionTimestamp: '2026-01-01T00:00:00Z' },
      { readiness: 'Terminating', reason: 'Terminating', message: 'Resource scheduled for deletion' },
    ],
    [
      'generation lag before failure, with the old status message',
      { phase: 'Failed', observedGeneration: 1 },
      {},
      { readiness: 'InProgress', reason: 'LatestGenerationNotObserved', message: 'Widget generation is 2, but latest observed generation is 1 (phase Failed)' },
    ],
    ['a status without observedGeneration: not compared (the default)', { phase: 'Running' }, {}, { readiness: 'Ready' }],
    ['no status: not ready, a field it has not written counts as false', undefined, {}, { readiness: 'InProgress', message: 'not ready' }],
  ] as const)('%s', (_, status, meta, want) => {
    expect(rule().judge(widget(status, meta))).toEqual(want);
  });

  it('an observedGeneration expression is required to yield: no status yet is generation not observed', () => {
    const r = rule({ observedGeneration: 'self.status.observedGeneration' });
    expect(r.judge(widget(undefined))).toEqual({
      readiness: 'InProgress',
      reason: 'LatestGenerationNotObserved',
      message: 'Widget generation 2 not observed yet',
    });
    expect(r.judge(widget({ phase: 'Running', observedGeneration: 2 })).readiness).toBe('Ready');
  });

  it.each([
    ['a decimal string (Argo Rollouts)', '"1"', 'InProgress'],
    ['a CEL int', 'int(1)', 'InProgress'],
    ['a hash (an old controller): not compared', '"58b949649c"', 'Ready'],
    ['a later generation', '3', 'Ready'],
  ] as const)('observedGeneration as %s', (_, expr, want) => {
    expect(rule({ observedGeneration: expr }).judge(widget({ phase: 'Running' })).readiness).toBe(want);
  });

  it('an expression over the cost limit on this object is not evaluated: in progress, naming the rule', () => {
    // 100 × 100 assumed elements compile; 2000 × 2000 on the object are refused before evaluation
    const r = rule({ ready: 'self.spec.items.all(a, self.spec.items.all(b, a != b || a == b))' });
    expect(r.judge(widget({}, {}, { items: [1, 2, 3] })).readiness).toBe('Ready');
    const v = r.judge(widget({}, {}, { items: Array.from({ length: 2000 }, (_, i) => i) }));
    expect(v).toMatchObject({ readiness: 'InProgress', reason: 'RuleNotEvaluated' });
    expect(v.message).toMatch(
      /^rule cluster:widgets: cel self\.spec\.items\.all\(.*: not evaluated: its cost on this object \(.*\) exceeds the limit of 1000000$/,
    );
  });

  it('a message read from the object is cut at 512 characters', () => {
    const v = rule().judge(widget({ phase: 'x'.repeat(2000), observedGeneration: 2 }));
    expect(v.message).toHaveLength(512);
    expect(v.message!.endsWith('...')).toBe(true);
  });

  it('a message that is not a string, or empty, falls back', () => {
    expect(rule({ message: '42' }).judge(widget({ phase: 'Pending' })).message).toBe('not ready');
    expect(rule({ message: '""' }).judge(widget({ phase: 'Failed' })).message).toBe('failed');
  });
});

describe('which objects a rule selects', () => {
  it.each([
    ['example.com', 'example.com', true],
    ['example.com', 'sub.example.com', false],
    ['*.example.com', 'sub.example.com', true],
    ['*.example.com', 'a.b.example.com', true],
    ['*.example.com', 'example.com', false],
    ['*.example.com', 'badexample.com', false],
    ['*', '', true],
    ['', '', true],
  ] as const)('group %j matches %j: %s', (pattern, group, want) => {
    expect(groupMatches(pattern, group)).toBe(want);
  });

  it('kinds, versions and when must all agree', () => {
    const r = rule({ versions: ['v1'], when: 'has(self.spec.size)' });
    expect(r.selects(widget({}))).toBe(true);
    expect(r.selects({ ...widget({}), kind: 'Gadget' })).toBe(false);
    expect(r.selects({ ...widget({}), apiVersion: 'example.com/v2' })).toBe(false);
    expect(r.selects({ ...widget({}), apiVersion: 'other.com/v1' })).toBe(false);
    expect(r.selects(widget({}, {}, {}))).toBe(false);
  });

  it('a `when` that cannot be evaluated does not select', () => {
    expect(rule({ when: 'self.spec.missing.deeper == 1' }).selects(widget({}))).toBe(false);
  });
});

describe('precedence: cluster-wide rules, then the library, then kstatus', () => {
  const certificate = (ready: 'True' | 'False'): KubeObject => ({
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: 'c', namespace: 'ns', generation: 1 },
    status: { conditions: [{ type: 'Ready', status: ready, observedGeneration: 1, message: 'm' }] },
  });

  it('the library judges a kind it knows; kstatus what no rule selects', () => {
    expect(verdictOf(certificate('False'))).toMatchObject({ readiness: 'InProgress', rule: 'builtin:cert-manager.io/Certificate' });
    expect(verdictOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } })).toMatchObject({ readiness: 'Ready', rule: KSTATUS_RULE });
    expect(verdictOf(widget({ phase: 'Pending' })).rule).toBe(KSTATUS_RULE);
  });

  it('a cluster-wide rule for the same kind wins over the library', () => {
    const rules = new HealthRules(parseHealthRules('- { name: lenient-certs, group: cert-manager.io, kinds: [Certificate], ready: "true" }', 'r.yaml'));
    expect(verdictOf(certificate('False'), { rules })).toEqual({ readiness: 'Ready', rule: 'cluster:lenient-certs' });
  });

  it('a cluster-wide rule whose `when` is false leaves the object to the next rule', () => {
    const rules = new HealthRules(
      parseHealthRules('- { name: only-labelled, group: cert-manager.io, kinds: [Certificate], when: "has(self.metadata.labels)", ready: "true" }', 'r.yaml'),
    );
    expect(verdictOf(certificate('False'), { rules }).rule).toBe('builtin:cert-manager.io/Certificate');
  });

  it('among cluster-wide rules the first in the file wins', () => {
    const rules = new HealthRules(
      parseHealthRules(
        `- { name: first, group: example.com, ready: 'self.status.phase == "Running"' }\n- { name: second, group: "*.com", ready: "true" }`,
        'r.yaml',
      ),
    );
    expect(verdictOf(widget({ phase: 'Pending' }), { rules }).rule).toBe('cluster:first');
    expect(verdictOf({ ...widget({}), apiVersion: 'other.com/v1' }, { rules }).rule).toBe('cluster:second');
    expect(rules.clusterRules).toEqual(['first', 'second']);
  });

  it('library rules are compiled only when an object of their kind is judged', () => {
    const broken: HealthRuleSpec = { name: 'broken', group: 'example.com', kinds: ['Widget'], ready: 'self.(((' };
    const rules = new HealthRules([], [broken]);
    expect(verdictOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }, { rules }).rule).toBe(KSTATUS_RULE);
    expect(() => verdictOf(widget({}), { rules })).toThrow(RuleCompileError);
  });

  it('health checks that select an object judge it alone, except that it is being deleted', () => {
    expect(checkedVerdict(widget({ phase: 'Failed' }), ['a', 'b'])).toEqual({ readiness: 'Ready', rule: 'healthChecks:a,b' });
    expect(checkedVerdict(widget({}, { deletionTimestamp: '2026-01-01T00:00:00Z' }), ['a'])).toMatchObject({
      readiness: 'Terminating',
      rule: 'healthChecks:a',
    });
  });

  it('the Crossplane claim rule leaves Kubernetes kinds and custom resources without Crossplane fields alone', () => {
    const deployment: KubeObject = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', generation: 1 }, spec: { compositionRef: {} } };
    expect(verdictOf(deployment).rule).toBe(KSTATUS_RULE);
    expect(verdictOf(widget({ phase: 'Running' })).rule).toBe(KSTATUS_RULE);
    expect(verdictOf(widget({}, {}, { compositionSelector: { matchLabels: { provider: 'aws' } } })).rule).toBe('builtin:crossplane/composite-or-claim');
    expect(verdictOf(widget({ conditions: [{ type: 'Synced', status: 'True' }] })).rule).toBe('builtin:crossplane/composite-or-claim');
  });

  it('BUILTIN_RULES has no cluster-wide rules', () => {
    expect(BUILTIN_RULES.clusterRules).toEqual([]);
  });
});

describe('--health-rules files', () => {
  const refused = (text: string): HoistError => {
    try {
      parseHealthRules(text, 'rules.yaml');
    } catch (e) {
      expect(e).toBeInstanceOf(HoistError);
      return e as HoistError;
    }
    throw new Error('not refused');
  };

  it('reads every field; an empty file is no rules', () => {
    const [r] = parseHealthRules(
      `- name: widgets
  group: [example.com, "*.example.com"]
  kind: Widget
  versions: [v1]
  when: has(self.spec.size)
  observedGeneration: self.status.observedGeneration
  ready: self.status.phase == "Running"
  failed: self.status.phase == "Failed"
  message: self.status.phase
  source: https://example.com/docs
`,
      'rules.yaml',
    );
    expect(r!.id).toBe('cluster:widgets');
    expect(r!.spec).toMatchObject({ group: ['example.com', '*.example.com'], kinds: ['Widget'], versions: ['v1'], source: 'https://example.com/docs' });
    expect(r!.judge(widget({ phase: 'Failed', observedGeneration: 2 }))).toEqual({ readiness: 'Failed', message: 'Failed' });
    expect(parseHealthRules('', 'rules.yaml')).toEqual([]);
    expect(parseHealthRules('# nothing yet\n', 'rules.yaml')).toEqual([]);
  });

  it.each([
    ['not a list', 'name: x', /^--health-rules rules\.yaml: expected a list of rules$/],
    ['not YAML', '- [', /^--health-rules rules\.yaml: not YAML: /],
    ['an entry that is not a mapping', '- just text', /rules\[0\]: expected a mapping/],
    ['no name', '- { group: g, ready: "true" }', /rules\[0\]: name: required/],
    ['a name with spaces', '- { name: "a b", group: g, ready: "true" }', /rules\[0\]: name: required/],
    [
      'a duplicate name',
      '- { name: a, group: g, ready: "true" }\n- { name: a, group: g, ready: "true" }',
      /rule a \(rules\[1\]\): name: another rule has this name/,
    ],
    ['an unknown field (a typo)', '- { name: a, group: g, raedy: "true", ready: "true" }', /rule a \(rules\[0\]\): raedy: unknown field/],
    ['no group', '- { name: a, ready: "true" }', /rule a \(rules\[0\]\): group: required/],
    ['kinds not a list', '- { name: a, group: g, kinds: Widget, ready: "true" }', /rule a \(rules\[0\]\): kinds: a list of kinds/],
    ['kind and kinds', '- { name: a, group: g, kind: A, kinds: [B], ready: "true" }', /kind and kinds: set one/],
    ['no ready', '- { name: a, group: g }', /rule a \(rules\[0\]\): ready: required/],
    ['an expression that is not a string', '- { name: a, group: g, ready: true }', /rule a \(rules\[0\]\): ready: a CEL expression/],
    ['an expression that does not parse', '- { name: a, group: g, ready: "self.((" }', /^--health-rules rules\.yaml: rule a \(rules\[0\]\): ready: cel: /],
  ])('refuses %s, naming the file, the rule and the field', (_, text, message) => {
    const e = refused(text);
    expect(e.message).toMatch(message);
    expect(e).toMatchObject({ code: HealthCode.BadHealthRule, stage: 'spec', terminal: true });
  });

  it('refuses an expression over the CEL cost limit as health checks are (code health-check-limit)', () => {
    const ten = `[${Array.from({ length: 10 }, (_, i) => i).join(',')}]`;
    let cel = 'true';
    for (let d = 7; d >= 1; d--) cel = `${ten}.all(x${d}, ${cel})`;
    const e = refused(`- { name: bomb, group: g, failed: "${cel}", ready: "true" }`);
    expect(e.code).toBe(HealthCode.HealthCheckLimit);
    expect(e.message).toMatch(/rule bomb \(rules\[0\]\): failed: cel: estimated cost .* exceeds the limit of 1000000/);
  });

  it('refuses files, lists and expressions over their size limits', () => {
    expect(refused(`# ${'x'.repeat(MAX_RULES_BYTES)}\n`).message).toMatch(/larger than 1048576 bytes/);
    expect(refused(Array.from({ length: MAX_RULES + 1 }, (_, i) => `- { name: r${i}, group: g, ready: "true" }`).join('\n')).message).toMatch(
      /501 rules, more than the limit of 500/,
    );
    expect(refused(`- { name: a, group: g, ready: "${'1 == 1 && '.repeat(MAX_EXPRESSION / 10 + 1)}true" }`).message).toMatch(
      /ready: longer than 2048 characters/,
    );
  });

  it('refuses an alias bomb without expanding it', () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
      ...Array.from(
        { length: 8 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
      ),
    ].join('\n');
    expect(refused(bomb).message).toMatch(/not YAML: /);
  });
});
