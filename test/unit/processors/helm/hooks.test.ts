import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../../src/kube/types.ts';
import { ANNOTATION_HOOK, classifyHook, hookDeletePolicies, hookWeight, orderHooks } from '../../../../src/processors/helm/hooks.ts';

function obj(name: string, annotations?: Record<string, string>, kind = 'ConfigMap'): KubeObject {
  return { apiVersion: 'v1', kind, metadata: { name, ...(annotations ? { annotations } : {}) } };
}
const hook = (name: string, events: string, weight?: string): KubeObject =>
  obj(name, { 'helm.sh/hook': events, ...(weight === undefined ? {} : { 'helm.sh/hook-weight': weight }) });

describe('classifyHook', () => {
  it.each([
    ['pre-install', ['pre-install']],
    ['pre-upgrade', ['pre-upgrade']],
    ['post-install', ['post-install']],
    ['post-upgrade', ['post-upgrade']],
    ['post-install, pre-upgrade', ['post-install', 'pre-upgrade']],
    ['pre-install,post-delete', ['pre-install', 'post-delete']],
    [' post-upgrade ,post-rollback', ['post-upgrade', 'post-rollback']],
    ['pre-delete', ['pre-delete']],
    ['pre-rollback,no-such-event', ['pre-rollback']],
  ])('%s → runs for %j', (events, runs) => {
    expect(classifyHook(hook('h', events))).toMatchObject({ action: 'keep-hook', events: runs });
  });

  it.each(['test', 'test-success', 'pre-install,test', 'no-such-event', ''])('drops %j', (events) => {
    expect(classifyHook(hook('h', events)).action).toBe('drop');
  });

  it('keeps objects without the hook annotation as they are', () => {
    expect(classifyHook(obj('plain'))).toEqual({ action: 'keep-manifest' });
    expect(classifyHook(obj('other', { 'helm.sh/resource-policy': 'keep' }))).toEqual({ action: 'keep-manifest' });
  });

  it('reads weights as helm does (Atoi, 0 when unparsable)', () => {
    expect(hookWeight(hook('h', 'pre-install', '-5'))).toBe(-5);
    expect(hookWeight(hook('h', 'pre-install', '+3'))).toBe(3);
    expect(hookWeight(hook('h', 'pre-install', 'abc'))).toBe(0);
    expect(hookWeight(hook('h', 'pre-install', '1.5'))).toBe(0);
    expect(hookWeight(hook('h', 'pre-install'))).toBe(0);
  });
});

describe('hookDeletePolicies', () => {
  it.each([
    [undefined, ['before-hook-creation']],
    ['', ['before-hook-creation']],
    ['hook-succeeded', ['hook-succeeded']],
    ['before-hook-creation, hook-succeeded', ['before-hook-creation', 'hook-succeeded']],
    ['hook-failed,unknown', ['hook-failed']],
    ['unknown', ['before-hook-creation']],
  ])("%j → %j (helm's default is before-hook-creation)", (raw, policies) => {
    expect(
      hookDeletePolicies(
        obj('h', raw === undefined ? { 'helm.sh/hook': 'pre-install' } : { 'helm.sh/hook': 'pre-install', 'helm.sh/hook-delete-policy': raw }),
      ),
    ).toEqual(policies);
  });
});

describe('orderHooks', () => {
  it("orders crds/, the rest, then hooks by weight, name and helm's kind order", () => {
    const input = [
      { object: obj('crd', undefined, 'CustomResourceDefinition'), source: 'c/crds/crd.yaml' },
      { object: obj('sub-crd', undefined, 'CustomResourceDefinition'), source: 'c/charts/s/crds/crd.yaml' },
      { object: obj('templated-crd', undefined, 'CustomResourceDefinition'), source: 'c/templates/crds/crd.yaml' },
      { object: obj('main-1'), source: 'c/templates/a.yaml' },
      { object: hook('post-a', 'post-install'), source: 'c/templates/h.yaml' },
      { object: hook('pre-b', 'pre-install', '1'), source: 'c/templates/h.yaml' },
      { object: hook('pre-a', 'pre-install', '1'), source: 'c/templates/h.yaml' },
      { object: hook('pre-z', 'pre-upgrade', '-10'), source: 'c/templates/h.yaml' },
      { object: hook('gone', 'pre-delete'), source: 'c/templates/h.yaml' },
      { object: obj('main-2'), source: 'c/templates/b.yaml' },
    ];
    const before = JSON.stringify(input);
    const { objects, warnings } = orderHooks(input);
    expect(objects.map((o) => o.metadata.name)).toEqual(['crd', 'sub-crd', 'templated-crd', 'main-1', 'main-2', 'pre-z', 'gone', 'post-a', 'pre-a', 'pre-b']);
    expect(objects.find((o) => o.metadata.name === 'pre-a')?.metadata.annotations?.[ANNOTATION_HOOK]).toBe('pre-install');
    expect(objects.find((o) => o.metadata.name === 'gone')?.metadata.annotations?.[ANNOTATION_HOOK]).toBe('pre-delete');
    expect(objects.find((o) => o.metadata.name === 'main-1')?.metadata.annotations).toBeUndefined();
    expect(warnings).toEqual([]);
    expect(JSON.stringify(input)).toBe(before);
  });
});

describe('orderHooks kind order', () => {
  it("sorts hooks of equal weight and name by helm's install order of kinds", () => {
    const input = [
      { object: obj('same', { 'helm.sh/hook': 'pre-install' }, 'Job'), source: 'c/templates/a.yaml' },
      { object: obj('same', { 'helm.sh/hook': 'pre-install' }, 'ServiceAccount'), source: 'c/templates/a.yaml' },
      { object: obj('same', { 'helm.sh/hook': 'pre-install' }, 'RoleBinding'), source: 'c/templates/a.yaml' },
      { object: obj('same', { 'helm.sh/hook': 'pre-install' }, 'Role'), source: 'c/templates/a.yaml' },
    ];
    expect(orderHooks(input).objects.map((o) => o.kind)).toEqual(['ServiceAccount', 'Role', 'RoleBinding', 'Job']);
  });
});
