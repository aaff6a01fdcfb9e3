import { describe, expect, it } from 'vitest';
import type { BundleDeploymentStatus, Condition } from '../../../api/v1alpha2/types.ts';
import { decideStatusWrite, MIN_STATUS_WRITE_INTERVAL_MS } from '../../../src/reconciler/status-writes.ts';

const healthy = (status: Condition['status']): Condition => ({
  type: 'Healthy',
  status,
  reason: status === 'True' ? 'Healthy' : 'Unhealthy',
  message: '',
  observedGeneration: 2,
  lastTransitionTime: '2026-01-01T00:00:00Z',
});
const base: BundleDeploymentStatus = { observedGeneration: 2, activeRevision: { number: 1, contentDigest: 'sha256:1' }, conditions: [healthy('True')] };
const flipped: BundleDeploymentStatus = { ...base, conditions: [healthy('False')] };

describe('status writes per BD', () => {
  const cases: Array<[string, Parameters<typeof decideStatusWrite>[0], ReturnType<typeof decideStatusWrite>]> = [
    ['nothing changed', { next: base, current: base, lastWriteAt: 0, now: 10 }, { kind: 'unchanged' }],
    ['first write of this process', { next: flipped, current: base, lastWriteAt: undefined, now: 10 }, { kind: 'write' }],
    ['conditions only, a second after the last write', { next: flipped, current: base, lastWriteAt: 0, now: MIN_STATUS_WRITE_INTERVAL_MS }, { kind: 'write' }],
    [
      'conditions only, 300 ms after the last write: deferred for the rest of the second',
      { next: flipped, current: base, lastWriteAt: 1000, now: 1300 },
      { kind: 'defer', afterMs: MIN_STATUS_WRITE_INTERVAL_MS - 300 },
    ],
    [
      'the applied fingerprint only (objects relabelled by someone else): deferred too',
      {
        next: { ...base, activeRevision: { ...base.activeRevision!, appliedDigest: 'b' } },
        current: { ...base, activeRevision: { ...base.activeRevision!, appliedDigest: 'a' } },
        lastWriteAt: 1000,
        now: 1500,
      },
      { kind: 'defer', afterMs: 500 },
    ],
    ['a new generation observed: at once', { next: { ...flipped, observedGeneration: 3 }, current: base, lastWriteAt: 1000, now: 1001 }, { kind: 'write' }],
    [
      'revision bookkeeping: at once',
      { next: { ...base, activeRevision: { number: 2, contentDigest: 'sha256:2' } }, current: base, lastWriteAt: 1000, now: 1001 },
      { kind: 'write' },
    ],
    ['no status yet', { next: base, current: undefined, lastWriteAt: 1000, now: 1001 }, { kind: 'write' }],
  ];
  it.each(cases)('%s', (_what, input, want) => {
    expect(decideStatusWrite(input)).toEqual(want);
  });
});
