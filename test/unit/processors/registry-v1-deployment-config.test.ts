/**
 * OLM v1's deploymentConfig merge rules (generators.go applyCustomConfigToDeployment), one rule
 * per case, on a small Deployment; the upstream regression goldens are compared in
 * registry-v1-olm-parity.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { RegistryV1DeploymentConfig } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { applyDeploymentConfig } from '../../../src/processors/registry-v1/deployment-config.ts';

function deployment(): any {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'op', namespace: 'ns', annotations: { keep: 'bundle' } },
    spec: {
      template: {
        metadata: { annotations: { keep: 'bundle-pod' } },
        spec: {
          initContainers: [{ name: 'init', image: 'i' }],
          containers: [
            {
              name: 'a',
              env: [
                { name: 'A', value: '1' },
                { name: 'B', value: '2' },
              ],
              envFrom: [{ configMapRef: { name: 'cm' }, prefix: '' }],
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
              resources: { limits: { cpu: '1' } },
            },
            { name: 'b' },
          ],
          volumes: [{ name: 'data', emptyDir: {} }],
          tolerations: [{ key: 'k', operator: 'Exists' }],
          nodeSelector: { zone: 'a' },
          affinity: {
            nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: {} }] },
            podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'host' }] },
          },
        },
      },
    },
  };
}

function applied(config: RegistryV1DeploymentConfig): any {
  const d = deployment();
  applyDeploymentConfig(d as KubeObject, config);
  return d;
}

const pod = (d: any) => d.spec.template.spec;

describe('registry-v1 deploymentConfig (OLM v1 merge rules)', () => {
  it('no config changes nothing', () => {
    const d = deployment();
    applyDeploymentConfig(d, undefined);
    applyDeploymentConfig(d, {});
    expect(d).toEqual(deployment());
  });

  it('env: same name replaced in place, new names appended, in every container but not init containers', () => {
    const d = applied({
      env: [
        { name: 'B', value: 'override' },
        { name: 'C', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ],
    });
    expect(pod(d).containers[0].env).toEqual([
      { name: 'A', value: '1' },
      { name: 'B', value: 'override' },
      { name: 'C', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
    expect(pod(d).containers[1].env).toEqual([
      { name: 'B', value: 'override' },
      { name: 'C', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
    expect(pod(d).initContainers).toEqual([{ name: 'init', image: 'i' }]);
  });

  it('envFrom: appended unless an equal source exists (an empty prefix equals none, as Go structs compare)', () => {
    const d = applied({
      envFrom: [{ configMapRef: { name: 'cm' } }, { secretRef: { name: 's', optional: true } }, { secretRef: { name: 's', optional: true } }],
    });
    expect(pod(d).containers[0].envFrom).toEqual([{ configMapRef: { name: 'cm' }, prefix: '' }, { secretRef: { name: 's', optional: true } }]);
    expect(pod(d).containers[1].envFrom).toEqual([{ configMapRef: { name: 'cm' } }, { secretRef: { name: 's', optional: true } }]);
  });

  it('volumes and volumeMounts: same name replaced, others appended', () => {
    const d = applied({
      volumes: [
        { name: 'data', secret: { secretName: 'x' } },
        { name: 'extra', emptyDir: {} },
      ],
      volumeMounts: [
        { name: 'data', mountPath: '/other', readOnly: true },
        { name: 'extra', mountPath: '/extra' },
      ],
    });
    expect(pod(d).volumes).toEqual([
      { name: 'data', secret: { secretName: 'x' } },
      { name: 'extra', emptyDir: {} },
    ]);
    expect(pod(d).containers[0].volumeMounts).toEqual([
      { name: 'data', mountPath: '/other', readOnly: true },
      { name: 'extra', mountPath: '/extra' },
    ]);
    expect(pod(d).containers[1].volumeMounts).toEqual([
      { name: 'data', mountPath: '/other', readOnly: true },
      { name: 'extra', mountPath: '/extra' },
    ]);
  });

  it('tolerations: appended unless equal ("" operator equals none; tolerationSeconds counts)', () => {
    const d = applied({
      tolerations: [
        { key: 'k', operator: 'Exists', value: '' },
        { key: 'k', operator: 'Exists', tolerationSeconds: 0 },
        { key: 'infra', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
      ],
    });
    expect(pod(d).tolerations).toEqual([
      { key: 'k', operator: 'Exists' },
      { key: 'k', operator: 'Exists', tolerationSeconds: 0 },
      { key: 'infra', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
    ]);
  });

  it("resources replace every container's; nodeSelector replaces the pod's, an empty one removes it", () => {
    const d = applied({ resources: { requests: { memory: '64Mi' } }, nodeSelector: { 'node-role.kubernetes.io/infra': '' } });
    expect(pod(d).containers.map((c: any) => c.resources)).toEqual([{ requests: { memory: '64Mi' } }, { requests: { memory: '64Mi' } }]);
    expect(pod(d).nodeSelector).toEqual({ 'node-role.kubernetes.io/infra': '' });
    expect(pod(applied({ nodeSelector: {} })).nodeSelector).toBeUndefined();
  });

  it('affinity: {} removes it, a set part replaces its counterpart, an empty part removes it, unset parts stay', () => {
    expect(pod(applied({ affinity: {} })).affinity).toBeUndefined();
    const podAffinity = { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'zone' }] };
    expect(pod(applied({ affinity: { podAffinity, nodeAffinity: {} } })).affinity).toEqual({
      podAffinity,
      podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'host' }] },
    });
    // removing every part removes the affinity
    expect(pod(applied({ affinity: { nodeAffinity: {}, podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [] } } })).affinity).toBeUndefined();
  });

  it('annotations: added to the Deployment and the pod template; existing keys win', () => {
    const d = applied({ annotations: { keep: 'config', proxy: 'on' } });
    expect(d.metadata.annotations).toEqual({ keep: 'bundle', proxy: 'on' });
    expect(d.spec.template.metadata.annotations).toEqual({ keep: 'bundle-pod', proxy: 'on' });
  });

  it('does not share objects with the config', () => {
    const config: RegistryV1DeploymentConfig = { env: [{ name: 'X', value: '1' }], resources: { limits: { cpu: '1' } } };
    const d = applied(config);
    pod(d).containers[0].env.at(-1).value = 'changed';
    pod(d).containers[1].resources.limits.cpu = '2';
    expect(config).toEqual({ env: [{ name: 'X', value: '1' }], resources: { limits: { cpu: '1' } } });
  });
});
