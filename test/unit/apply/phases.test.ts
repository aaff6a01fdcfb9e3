import { describe, expect, it } from 'vitest';
import { phaseOf, planSteps, waveOf } from '../../../src/apply/phases.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const o = (apiVersion: string, kind: string, name = kind.toLowerCase(), extra: Partial<KubeObject> = {}, wave?: string): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, ...(wave === undefined ? {} : { annotations: { 'core.rukpak.io/apply-wave': wave } }) },
  ...extra,
});

describe('phaseOf', () => {
  it.each([
    ['v1', 'Namespace', 'namespaces'],
    ['networking.k8s.io/v1', 'NetworkPolicy', 'policies'],
    ['policy/v1', 'PodDisruptionBudget', 'policies'],
    ['v1', 'ServiceAccount', 'identity'],
    ['v1', 'Secret', 'configuration'],
    ['v1', 'ConfigMap', 'configuration'],
    ['v1', 'PersistentVolumeClaim', 'storage'],
    ['apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'crds'],
    ['rbac.authorization.k8s.io/v1', 'ClusterRole', 'roles'],
    ['rbac.authorization.k8s.io/v1', 'RoleBinding', 'bindings'],
    ['v1', 'Service', 'infrastructure'],
    ['apps/v1', 'Deployment', 'deploy'],
    ['batch/v1', 'Job', 'deploy'],
    ['example.com/v1', 'Widget', 'deploy'],
    ['admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', 'publish'],
    ['admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration', 'publish'],
    ['apiregistration.k8s.io/v1', 'APIService', 'publish'],
    ['networking.k8s.io/v1', 'Ingress', 'publish'],
    // same kind name in another group is not the built-in
    ['example.com/v1', 'Service', 'deploy'],
  ])('%s %s → %s', (apiVersion, kind, phase) => {
    expect(phaseOf(o(apiVersion, kind))).toBe(phase);
  });

  it('puts a CRD served by a conversion webhook after the workloads', () => {
    expect(
      phaseOf(o('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'c', { spec: { conversion: { strategy: 'Webhook' } } } as Partial<KubeObject>)),
    ).toBe('publish');
    expect(phaseOf(o('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'c', { spec: { conversion: { strategy: 'None' } } } as Partial<KubeObject>))).toBe(
      'crds',
    );
  });
});

describe('waveOf', () => {
  it.each([
    [undefined, 0],
    ['3', 3],
    [' -2 ', -2],
    ['+1', 1],
    ['1.5', undefined],
    ['x', undefined],
    ['9999999999', undefined],
  ])('%j → %j', (raw, wave) => {
    expect(waveOf(o('v1', 'ConfigMap', 'c', {}, raw))).toBe(wave);
  });
});

describe('planSteps', () => {
  it('orders phases, then waves, keeping the bundle order within a step; names waves only where a phase has several', () => {
    const objs = [
      o('admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', 'hook'),
      o('apps/v1', 'Deployment', 'late', {}, '1'),
      o('apps/v1', 'Deployment', 'early', {}, '-1'),
      o('apps/v1', 'Deployment', 'plain'),
      o('v1', 'ConfigMap', 'cm-b'),
      o('v1', 'ConfigMap', 'cm-a'),
      o('v1', 'Namespace', 'ns'),
    ];
    const { steps, invalid } = planSteps(objs, (x) => x);
    expect(invalid).toEqual([]);
    expect(steps.map((s) => [s.name, s.items.map((i) => i.metadata.name)])).toEqual([
      ['namespaces', ['ns']],
      ['configuration', ['cm-b', 'cm-a']],
      ['deploy wave -1', ['early']],
      ['deploy wave 0', ['plain']],
      ['deploy wave 1', ['late']],
      ['publish', ['hook']],
    ]);
  });

  it('returns objects whose wave is not an integer instead of guessing', () => {
    const bad = o('v1', 'ConfigMap', 'bad', {}, 'soon');
    expect(planSteps([bad, o('v1', 'ConfigMap', 'ok')], (x) => x).invalid).toEqual([bad]);
  });
});
