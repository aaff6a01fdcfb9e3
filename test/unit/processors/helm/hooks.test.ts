import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../../src/kube/types.ts';
import { ANNOTATION_APPLY_PHASE, classifyHook, hookWeight, orderHooks } from '../../../../src/processors/helm/hooks.ts';

function obj(name: string, annotations?: Record<string, string>, kind = 'ConfigMap'): KubeObject {
  return { apiVersion: 'v1', kind, metadata: { name, ...(annotations ? { annotations } : {}) } };
}
const hook = (name: string, events: string, weight?: string): KubeObject =>
  obj(name, { 'helm.sh/hook': events, ...(weight === undefined ? {} : { 'helm.sh/hook-weight': weight }) });

describe('classifyHook', () => {
  it.each([
    ['pre-install', 'pre'],
    ['pre-upgrade', 'pre'],
    ['post-install', 'post'],
    ['post-upgrade', 'post'],
    ['post-install, pre-upgrade', 'pre'],
    ['pre-install,post-delete', 'pre'],
    [' post-upgrade ,post-rollback', 'post'],
  ])('%s → %s', (events, phase) => {
    expect(classifyHook(hook('h', events))).toMatchObject({ action: 'keep-hook', phase });
  });

  it.each(['test', 'test-success', 'pre-install,test', 'pre-delete', 'post-delete', 'pre-rollback', 'post-rollback', 'pre-delete,post-rollback', 'no-such-event', ''])(
    'drops %j',
    (events) => {
      expect(classifyHook(hook('h', events)).action).toBe('drop');
    },
  );

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

describe('orderHooks', () => {
  it('orders crds/, pre hooks, the rest, post hooks; hooks by weight then name, stable otherwise', () => {
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
    expect(objects.map((o) => o.metadata.name)).toEqual([
      'crd',
      'sub-crd',
      'pre-z',
      'pre-a',
      'pre-b',
      'templated-crd',
      'main-1',
      'main-2',
      'post-a',
    ]);
    expect(objects.find((o) => o.metadata.name === 'pre-a')?.metadata.annotations?.[ANNOTATION_APPLY_PHASE]).toBe('pre');
    expect(objects.find((o) => o.metadata.name === 'post-a')?.metadata.annotations?.[ANNOTATION_APPLY_PHASE]).toBe('post');
    expect(objects.find((o) => o.metadata.name === 'main-1')?.metadata.annotations).toBeUndefined();
    expect(warnings).toEqual(['helm hook v1 ConfigMap gone (c/templates/h.yaml) [pre-delete] dropped: delete and rollback hooks have no counterpart in a declarative apply']);
    expect(JSON.stringify(input)).toBe(before);
  });
});
