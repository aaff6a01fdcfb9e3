import { describe, expect, it } from 'vitest';
import { readinessOf } from '../../../src/health/readiness.ts';

const deploy = (spec: object, status: object, generation = 2) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd', namespace: 'n', generation },
  spec,
  status,
});

describe('readinessOf', () => {
  it('deployment: ready only when updated and available replicas reach spec', () => {
    expect(readinessOf(deploy({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 2 })).readiness).toBe('Ready');
    expect(readinessOf(deploy({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 1 }))).toEqual({
      readiness: 'InProgress',
      message: '1/2 replicas available',
    });
    expect(readinessOf(deploy({ replicas: 2 }, { observedGeneration: 1, updatedReplicas: 2, replicas: 2, availableReplicas: 2 })).readiness).toBe('InProgress');
    expect(readinessOf(deploy({ replicas: 1 }, { observedGeneration: 2, updatedReplicas: 1, replicas: 2, availableReplicas: 1 })).message).toMatch(
      /old replicas/,
    );
  });
  it('deployment: progress deadline exceeded is a failure', () => {
    const v = readinessOf(
      deploy({}, { observedGeneration: 2, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'too slow' }] }),
    );
    expect(v).toEqual({ readiness: 'Failed', message: 'too slow' });
  });
  it('job: complete, failed, running', () => {
    const job = (conditions: object[]) => ({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, status: { conditions } });
    expect(readinessOf(job([{ type: 'Complete', status: 'True' }])).readiness).toBe('Ready');
    expect(readinessOf(job([{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded' }])).readiness).toBe('Failed');
    expect(readinessOf(job([])).readiness).toBe('InProgress');
  });
  it('crd established, pvc bound, generic Ready condition, plain configmap', () => {
    expect(
      readinessOf({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'x' },
        status: { conditions: [{ type: 'Established', status: 'True' }] },
      }).readiness,
    ).toBe('Ready');
    expect(readinessOf({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'p' }, status: { phase: 'Pending' } }).readiness).toBe(
      'InProgress',
    );
    expect(
      readinessOf({
        apiVersion: 'acme.io/v1',
        kind: 'Widget',
        metadata: { name: 'w' },
        status: { conditions: [{ type: 'Ready', status: 'False', message: 'waiting' }] },
      }),
    ).toEqual({ readiness: 'InProgress', message: 'waiting' });
    expect(readinessOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }).readiness).toBe('Ready');
  });
});
