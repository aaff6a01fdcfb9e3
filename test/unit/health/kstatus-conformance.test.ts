/**
 * kstatus's own test cases (testdata/kstatus, Apache-2.0) through Hoist's readiness: each agrees
 * with kstatus's expectation (Current is Ready), or is one of the named deliberate differences
 * and judged as that difference says.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DIFFERENCES, readinessOf, type Difference, type Readiness } from '../../../src/health/readiness.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

interface Case {
  id: string;
  expected: 'Current' | 'InProgress' | 'Failed' | 'Terminating';
  expectedReason?: string;
  yaml: string;
}

const cases = JSON.parse(readFileSync(new URL('../../../testdata/kstatus/upstream-cases.json', import.meta.url), 'utf8')) as Case[];
const NOW = Date.parse('2026-12-03T12:00:00Z');

/** the cases where Hoist judges otherwise, and how */
const differ: Record<string, { difference: Difference; readiness: Readiness; reason: string }> = {
  'upstream/TestJobStatus/jobInProgress': { difference: DIFFERENCES.jobComplete, readiness: 'InProgress', reason: 'JobRunning' },
  'upstream/TestServiceStatus/serviceLBok': { difference: DIFFERENCES.loadBalancerAddress, readiness: 'InProgress', reason: 'NoAddressAssigned' },
  'upstream/TestPodStatus/podCompletedFailed': { difference: DIFFERENCES.podFailedPhase, readiness: 'Failed', reason: 'PodFailed' },
};

const asReadiness = (s: Case['expected']): Readiness => (s === 'Current' ? 'Ready' : s);

describe('kstatus conformance (testdata/kstatus/upstream-cases.json)', () => {
  it('carries all 63 upstream cases', () => {
    expect(cases).toHaveLength(63);
  });
  for (const c of cases) {
    const obj = parse(c.yaml.replaceAll('__NOW__', new Date(NOW).toISOString()), { uniqueKeys: false }) as KubeObject;
    const d = differ[c.id];
    if (d) {
      it(`${c.id}: deliberate difference ${d.difference}`, () => {
        // kstatus itself says otherwise: the test data still holds the upstream expectation
        expect(asReadiness(c.expected)).not.toBe(d.readiness);
        const v = readinessOf(obj, NOW);
        expect(v.readiness).toBe(d.readiness);
        expect(v.reason).toBe(d.reason);
      });
      continue;
    }
    it(`${c.id}: ${c.expected}${c.expectedReason ? ` (${c.expectedReason})` : ''}`, () => {
      const v = readinessOf(obj, NOW);
      expect(v.readiness).toBe(asReadiness(c.expected));
      if (c.expectedReason) expect(v.reason).toBe(c.expectedReason);
    });
  }
  it('every named difference is exercised by a case or a table test', () => {
    const used = new Set(Object.values(differ).map((d) => d.difference));
    // APIService has no upstream case: test/unit/health/readiness.test.ts covers it
    expect([...used, DIFFERENCES.apiServiceAvailable].sort()).toEqual(Object.values(DIFFERENCES).sort());
  });
});
