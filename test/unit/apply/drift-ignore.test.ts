import { describe, expect, it } from 'vitest';
import type { DriftIgnoreRule } from '../../../api/v1alpha2/types.ts';
import { ignoredPointers, pointerSegments, selects, splitFields, withoutIgnored, withValuesOf } from '../../../src/apply/drift-ignore.ts';
import { takeOverManagedFields, type ManagedFieldsEntry } from '../../../src/apply/field-managers.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const deployment = (): KubeObject =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', labels: { tier: 'web' } },
    spec: {
      replicas: 2,
      template: {
        spec: {
          containers: [
            { name: 'web', image: 'web:1', args: ['a', 'b'] },
            { name: 'side', image: 'side:1' },
          ],
        },
      },
    },
  }) as KubeObject;

const crd = (): KubeObject =>
  ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: { conversion: { strategy: 'Webhook', webhook: { clientConfig: { caBundle: 'Zm9v', service: { name: 'conv', namespace: 'x' } } } } },
  }) as KubeObject;

describe('ignoredPointers', () => {
  const rules: DriftIgnoreRule[] = [
    { target: { group: 'apps', kind: 'Deployment' }, jsonPointers: ['/spec/replicas'] },
    { target: { kind: 'CustomResourceDefinition' }, jsonPointers: ['/spec/conversion/webhook/clientConfig/caBundle'] },
    { target: { kind: 'Deployment', namespace: 'other' }, jsonPointers: ['/spec/paused'] },
    { target: { version: 'v2' }, jsonPointers: ['/x'] },
    { target: { labelSelector: { matchLabels: { tier: 'web' } } }, jsonPointers: ['/spec/replicas', '/metadata/annotations/x'] },
  ];

  it('collects the pointers of every rule whose target matches, each once', () => {
    expect(ignoredPointers(rules, deployment())).toEqual(['/spec/replicas', '/metadata/annotations/x']);
    expect(ignoredPointers(rules, crd())).toEqual(['/spec/conversion/webhook/clientConfig/caBundle']);
    expect(ignoredPointers(undefined, deployment())).toEqual([]);
  });

  it('matches the core group as "" and the version after the slash', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n' } } as KubeObject;
    expect(ignoredPointers([{ target: { group: '', version: 'v1' }, jsonPointers: ['/data/k'] }], cm)).toEqual(['/data/k']);
    expect(ignoredPointers([{ target: { group: 'apps' }, jsonPointers: ['/data/k'] }], cm)).toEqual([]);
  });
});

describe('selects', () => {
  it('has metav1.LabelSelector semantics', () => {
    const labels = { app: 'web', tier: 'front' };
    expect(selects({}, labels)).toBe(true);
    expect(selects({ matchLabels: { app: 'web' } }, labels)).toBe(true);
    expect(selects({ matchLabels: { app: 'api' } }, labels)).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['front', 'back'] }] }, labels)).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] }, labels)).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, labels)).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, labels)).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }, labels)).toBe(true);
  });
});

describe('withoutIgnored', () => {
  it('removes the named fields from a copy and says which the object set', () => {
    const d = deployment();
    const { obj, present } = withoutIgnored(d, ['/spec/replicas', '/spec/template/spec/containers/0/image', '/spec/paused']);
    expect(present).toEqual(['/spec/replicas', '/spec/template/spec/containers/0/image']);
    expect(obj.spec).toEqual({
      template: {
        spec: {
          containers: [
            { name: 'web', args: ['a', 'b'] },
            { name: 'side', image: 'side:1' },
          ],
        },
      },
    });
    expect((d.spec as { replicas: number }).replicas).toBe(2);
  });

  it('removes list elements from the highest index down, and unescapes ~1 and ~0', () => {
    const { obj } = withoutIgnored(deployment(), ['/spec/template/spec/containers/0/args/0', '/spec/template/spec/containers/0/args/1']);
    expect((obj.spec as { template: { spec: { containers: Array<{ args: string[] }> } } }).template.spec.containers[0]!.args).toEqual([]);
    expect(pointerSegments('/metadata/annotations/example.com~1a~0b')).toEqual(['metadata', 'annotations', 'example.com/a~b']);
    const annotated = { ...deployment(), metadata: { name: 'w', annotations: { 'example.com/a~b': 'x', keep: 'y' } } } as KubeObject;
    expect(withoutIgnored(annotated, ['/metadata/annotations/example.com~1a~0b']).obj.metadata.annotations).toEqual({ keep: 'y' });
  });
});

const hoist: ManagedFieldsEntry = {
  manager: 'hoist-web',
  operation: 'Apply',
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: {
    'f:spec': { 'f:replicas': {}, 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } } },
  },
};
const kubectlPatch: ManagedFieldsEntry = {
  manager: 'kubectl-patch',
  operation: 'Update',
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:metadata': { 'f:labels': { 'f:hotfix': {} } }, 'f:spec': { 'f:replicas': {} } },
};

describe('splitFields', () => {
  it('splits off the named fields, finding list elements through the live object', () => {
    const { rest, held } = splitFields(hoist.fieldsV1!, deployment(), ['/spec/replicas', '/spec/template/spec/containers/0/image']);
    expect(held).toEqual({ 'f:spec': { 'f:replicas': {}, 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:image': {} } } } } } });
    expect(rest).toEqual({ 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:name': {} } } } } } });
  });

  it('drops parents left empty and leaves the input alone', () => {
    const only = { 'f:spec': { 'f:replicas': {} } };
    expect(splitFields(only, deployment(), ['/spec/replicas'])).toEqual({ rest: {}, held: only });
    expect(only).toEqual({ 'f:spec': { 'f:replicas': {} } });
    expect(splitFields(only, deployment(), ['/spec/paused', '/spec/template/spec/containers/9/image'])).toEqual({ rest: only, held: {} });
  });
});

describe('takeOverManagedFields with drift-ignore rules', () => {
  const hold = (fields: Record<string, unknown>) => splitFields(fields, deployment(), ['/spec/replicas']);

  it("never takes an ignored field from kubectl, and gives up Hoist's own ownership of it", () => {
    const out = takeOverManagedFields([hoist, kubectlPatch], 'hoist-web', 'apps/v1', new Set(['kubectl-patch']), hold)!;
    expect(out.map((e) => e.manager)).toEqual(['hoist-web', 'kubectl-patch']);
    const template = { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } };
    expect(out[0]!.fieldsV1).toEqual({ 'f:metadata': { 'f:labels': { 'f:hotfix': {} } }, 'f:spec': { 'f:template': template } });
    expect(out[1]!.fieldsV1).toEqual({ 'f:spec': { 'f:replicas': {} } });
  });

  it("only releasing (no manager to take over) still rewrites Hoist's entry; nothing to release is undefined", () => {
    const out = takeOverManagedFields([hoist, kubectlPatch], 'hoist-web', 'apps/v1', new Set(), hold)!;
    expect(out.map((e) => e.manager)).toEqual(['hoist-web', 'kubectl-patch']);
    expect((out[0]!.fieldsV1!['f:spec'] as Record<string, unknown>)['f:replicas']).toBeUndefined();
    expect(out[1]).toBe(kubectlPatch);
    const released = out[0]!;
    expect(takeOverManagedFields([released, kubectlPatch], 'hoist-web', 'apps/v1', new Set(), hold)).toBeUndefined();
  });

  it('a kubectl entry holding only ignored fields is left as it was', () => {
    const onlyReplicas: ManagedFieldsEntry = { ...kubectlPatch, fieldsV1: { 'f:spec': { 'f:replicas': {} } } };
    const released = { ...hoist, fieldsV1: splitFields(hoist.fieldsV1!, deployment(), ['/spec/replicas']).rest };
    expect(takeOverManagedFields([released, onlyReplicas], 'hoist-web', 'apps/v1', new Set(['kubectl-patch']), hold)).toBeUndefined();
  });
});

describe('withValuesOf', () => {
  const obj = (spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec }) as KubeObject;
  it.each<[string, KubeObject, KubeObject, string[], Record<string, unknown>]>([
    [
      'a field the apply would remove keeps its live value',
      obj({ paused: false }),
      obj({ paused: false, replicas: 5 }),
      ['/spec/replicas'],
      { paused: false, replicas: 5 },
    ],
    ['a field the live object lacks is not there', obj({ replicas: 2 }), obj({}), ['/spec/replicas'], {}],
    [
      'a field inside a list element found by index',
      obj({ c: [{ name: 'a', image: 'x:2' }] }),
      obj({ c: [{ name: 'a', image: 'x:1' }] }),
      ['/spec/c/0/image'],
      { c: [{ name: 'a', image: 'x:1' }] },
    ],
    ['a pointer whose parent the object lacks is left out', obj({}), obj({ template: { x: 1 } }), ['/spec/template/x'], {}],
  ])('%s', (_, target, source, pointers, want) => {
    expect(withValuesOf(target, source, pointers).spec).toEqual(want);
  });
});
