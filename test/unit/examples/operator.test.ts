import { describe, expect, it } from 'vitest';
import type { BundleDeployment, Condition } from '../../../api/v1alpha2/types.ts';
import { bdName, desiredBundleDeployment } from '../../../examples/operator/bundle-deployments.ts';
import { verdict } from '../../../examples/operator/contract.ts';
import type { Operator } from '../../../examples/operator/types.ts';

const c = (type: Condition['type'], status: Condition['status'], reason: string, message = '', observedGeneration = 2): Condition => ({
  type,
  status,
  reason,
  message,
  observedGeneration,
  lastTransitionTime: '2026-01-01T00:00:00Z',
});
const bd = (conditions: Condition[], observedGeneration = 2): BundleDeployment =>
  ({
    apiVersion: 'core.rukpak.io/v1alpha2',
    kind: 'BundleDeployment',
    metadata: { name: 'x', generation: 2 },
    spec: { format: 'plain', sources: [] },
    status: { observedGeneration, conditions },
  }) as BundleDeployment;

describe('the status contract as the Operator reads it', () => {
  it('succeeded only when done with Progressing Succeeded at the current generation', () => {
    expect(verdict(bd([c('Installed', 'True', 'Installed'), c('Progressing', 'False', 'Succeeded')])).state).toBe('succeeded');
    expect(verdict(bd([c('Installed', 'True', 'Installed'), c('Progressing', 'False', 'Succeeded')], 1)).state).toBe('progressing');
    expect(verdict(bd([c('Installed', 'True', 'Installed'), c('Progressing', 'False', 'Succeeded', '', 1)])).state).toBe('progressing');
    expect(verdict(bd([c('Installed', 'True', 'Installed'), c('Progressing', 'True', 'RollingOut')])).state).toBe('progressing');
  });
  it('a lineage conflict is not a failure: another member applies', () => {
    expect(verdict(bd([c('Installed', 'False', 'Conflict'), c('Progressing', 'False', 'Conflict')])).state).toBe('progressing');
  });
  it("failed: Blocked or RolledBack, reporting the failing condition's reason", () => {
    expect(verdict(bd([c('Installed', 'False', 'ApplyFailed', 'refused: x'), c('Progressing', 'False', 'Blocked', 'retried when the spec changes')]))).toEqual({
      state: 'failed',
      reason: 'ApplyFailed',
      message: 'refused: x',
    });
    expect(
      verdict(bd([c('Installed', 'True', 'Installed'), c('Healthy', 'False', 'Unhealthy', 'pod crashed'), c('Progressing', 'False', 'Blocked', 'deadline')])),
    ).toEqual({ state: 'failed', reason: 'Unhealthy', message: 'pod crashed' });
  });
});

describe('desiredBundleDeployment', () => {
  const op: Operator = {
    apiVersion: 'examples.hoist.io/v1alpha1',
    kind: 'Operator',
    metadata: { name: 'rollouts', uid: 'u1', labels: { 'core.rukpak.io/shard': 'a' } },
    spec: {
      version: '1.9.1',
      source: { kind: 'image', image: { ref: 'quay.io/x/bundle:v{version}' } },
      template: { format: 'registry-v1', installNamespace: 'argo' },
    },
  };
  it("fills {version}, joins the Operator's lineage, keeps its labels, names sort in creation order", () => {
    const d = desiredBundleDeployment(op, 12);
    expect(d.metadata.name).toBe('rollouts-00012');
    expect(d.metadata.labels).toMatchObject({
      'core.rukpak.io/lineage': 'rollouts',
      'core.rukpak.io/shard': 'a',
      'examples.hoist.io/version': '1.9.1',
      'examples.hoist.io/sequence': '12',
    });
    expect(d.spec).toEqual({ format: 'registry-v1', installNamespace: 'argo', sources: [{ kind: 'image', image: { ref: 'quay.io/x/bundle:v1.9.1' } }] });
    expect([bdName('r', 9), bdName('r', 10)].sort()).toEqual([bdName('r', 9), bdName('r', 10)]);
  });
});
