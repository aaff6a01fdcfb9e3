import { describe, expect, it } from 'vitest';
import {
  afterTakeOver,
  DEFAULT_OVERRIDE_MANAGERS,
  fieldPaths,
  managerNames,
  subtractFields,
  takeOverManagedFields,
  withoutFields,
  type ManagedFieldsEntry,
} from '../../../src/apply/field-managers.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const hoist: ManagedFieldsEntry = {
  manager: 'hoist-web',
  operation: 'Apply',
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } } } },
};
const kubectlSet: ManagedFieldsEntry = {
  manager: 'kubectl-set',
  operation: 'Update',
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: {
    'f:spec': {
      'f:template': {
        'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:env': { '.': {}, 'k:{"name":"HOTFIX"}': { '.': {}, 'f:name': {}, 'f:value': {} } } } } },
      },
    },
  },
};
const hpa: ManagedFieldsEntry = {
  manager: 'hpa-stand-in',
  operation: 'Update',
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:spec': { 'f:replicas': {} } },
};
const status: ManagedFieldsEntry = {
  manager: 'kube-controller-manager',
  operation: 'Update',
  apiVersion: 'apps/v1',
  subresource: 'status',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:status': { 'f:replicas': {} } },
};

describe('takeOverManagedFields with only the interactive managers', () => {
  it("folds kubectl-set's fields into Hoist's entry and keeps the HPA's and the status entries", () => {
    const out = takeOverManagedFields([hoist, kubectlSet, hpa, status], 'hoist-web', 'apps/v1', new Set(DEFAULT_OVERRIDE_MANAGERS))!;
    expect(out.map((e) => e.manager)).toEqual(['hoist-web', 'hpa-stand-in', 'kube-controller-manager']);
    expect(out[0]).toMatchObject({ operation: 'Apply' });
    const at = (o: unknown, ...keys: string[]) => keys.reduce((n, k) => (n as Record<string, unknown>)[k], o) as Record<string, unknown>;
    const c = at(out[0]!.fieldsV1, 'f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"web"}');
    expect(Object.keys(c).sort()).toEqual(['.', 'f:env', 'f:image', 'f:name']);
    expect(out[1]).toBe(hpa);
  });

  it('has nothing to take over when no interactive manager owns fields', () => {
    expect(takeOverManagedFields([hoist, hpa, status], 'hoist-web', 'apps/v1', new Set(DEFAULT_OVERRIDE_MANAGERS))).toBeUndefined();
  });

  it('without only (adoption) folds every non-status entry', () => {
    expect(takeOverManagedFields([hoist, kubectlSet, hpa, status], 'hoist-web', 'apps/v1')!.map((e) => e.manager)).toEqual([
      'hoist-web',
      'kube-controller-manager',
    ]);
  });
});

describe('fieldPaths', () => {
  it('names a node owned as a whole once, with list keys', () => {
    expect(fieldPaths(kubectlSet.fieldsV1)).toEqual(['spec.template.spec.containers[name=web].env']);
    expect(
      fieldPaths({ 'f:metadata': { 'f:labels': { 'f:hotfix': {} } }, 'f:spec': { 'f:ports': { 'k:{"port":80,"protocol":"TCP"}': { 'f:name': {} } } } }),
    ).toEqual(['metadata.labels.hotfix', 'spec.ports[port=80,protocol=TCP].name']);
  });
});

describe('managerNames', () => {
  it('lists the managers of the object itself, once each, sorted', () => {
    expect(managerNames([kubectlSet, hoist, status, hpa, { ...hpa }])).toEqual(['hoist-web', 'hpa-stand-in', 'kubectl-set']);
    expect(managerNames(undefined)).toEqual([]);
  });
});

describe('what a takeover does to a dry-run apply', () => {
  const set = (fields: Record<string, unknown>) => fields;
  it.each<[string, Record<string, unknown>, Record<string, unknown>, Record<string, unknown>]>([
    ['a leaf the other owns stays', set({ 'f:data': { 'f:a': {}, 'f:b': {} } }), set({ 'f:data': { 'f:a': {} } }), set({ 'f:data': { 'f:b': {} } })],
    [
      'owning a node (.) is not owning its children',
      set({ 'f:data': { '.': {}, 'f:a': {} } }),
      set({ 'f:data': { '.': {} } }),
      set({ 'f:data': { 'f:a': {} } }),
    ],
    ['owning a leaf is owning it whole', set({ 'f:args': { 'f:x': {} } }), set({ 'f:args': {} }), {}],
    [
      'a node owned only by its children stays with what is left',
      set({ 'f:data': { '.': {}, 'f:a': {} } }),
      set({ 'f:data': { 'f:a': {} } }),
      set({ 'f:data': { '.': {} } }),
    ],
    [
      'list elements by key',
      set({ 'f:env': { 'k:{"name":"A"}': { '.': {}, 'f:value': {} }, 'k:{"name":"B"}': { '.': {} } } }),
      set({ 'f:env': { 'k:{"name":"A"}': { '.': {} } } }),
      set({ 'f:env': { 'k:{"name":"A"}': { 'f:value': {} }, 'k:{"name":"B"}': { '.': {} } } }),
    ],
  ])('subtractFields: %s', (_, a, b, want) => {
    expect(subtractFields(a, b)).toEqual(want);
  });

  const cm = (data: Record<string, string>, labels?: Record<string, string>): KubeObject =>
    ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', ...(labels ? { labels } : {}) }, data }) as KubeObject;
  it.each<[string, KubeObject, Record<string, unknown>, KubeObject]>([
    ['a leaf', cm({ a: '1', b: '2' }), { 'f:data': { 'f:b': {} } }, cm({ a: '1' })],
    [
      'a map emptied that the set owns itself',
      cm({ b: '2' }),
      { 'f:data': { '.': {}, 'f:b': {} } },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } } as KubeObject,
    ],
    ['a map the set owns itself that keeps other fields', cm({ a: '1', b: '2' }), { 'f:data': { '.': {}, 'f:b': {} } }, cm({ a: '1' })],
    ['fields it does not have', cm({ a: '1' }), { 'f:data': { 'f:zzz': {} }, 'f:spec': {} }, cm({ a: '1' })],
  ])('withoutFields: %s', (_, obj, fields, want) => {
    expect(withoutFields(obj, fields)).toEqual(want);
  });

  it('removes list elements named by key, and leaves the others', () => {
    const d = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'd' },
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'web',
                env: [
                  { name: 'A', value: '1' },
                  { name: 'HOTFIX', value: 'x' },
                ],
              },
            ],
          },
        },
      },
    } as KubeObject;
    const out = withoutFields(d, {
      'f:spec': {
        'f:template': {
          'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:env': { 'k:{"name":"HOTFIX"}': { '.': {}, 'f:name': {}, 'f:value': {} } } } } },
        },
      },
    });
    expect((out.spec as { template: { spec: { containers: Array<{ env: unknown[] }> } } }).template.spec.containers[0]!.env).toEqual([
      { name: 'A', value: '1' },
    ]);
  });

  const entry = (manager: string, operation: 'Apply' | 'Update', fieldsV1: Record<string, unknown>, subresource?: string): ManagedFieldsEntry => ({
    manager,
    operation,
    apiVersion: 'v1',
    fieldsType: 'FieldsV1',
    fieldsV1,
    ...(subresource ? { subresource } : {}),
  });
  // a dry-run answer: Hoist applied data.a (forced over kubectl-edit), kubectl-edit still holds data.extra, another controller data.other
  const answer = (): KubeObject =>
    ({
      ...cm({ a: '1', extra: 'hand', other: 'ctl' }),
      metadata: {
        name: 'c',
        managedFields: [
          entry('hoist-x', 'Apply', { 'f:data': { 'f:a': {} } }),
          entry('kubectl-edit', 'Update', { 'f:data': { 'f:extra': {} } }),
          entry('ctl', 'Update', { 'f:data': { '.': {}, 'f:other': {} } }),
        ],
      },
    }) as KubeObject;
  const data = (o: KubeObject) => o.data;

  it.each<[string, ReadonlySet<string> | undefined, readonly string[] | undefined, Record<string, string>]>([
    ["the interactive managers' fields the apply does not set", new Set(DEFAULT_OVERRIDE_MANAGERS), undefined, { a: '1', other: 'ctl' }],
    ["on adoption every manager's", undefined, undefined, { a: '1' }],
    ["never a driftIgnore'd field", new Set(DEFAULT_OVERRIDE_MANAGERS), ['/data/extra'], { a: '1', extra: 'hand', other: 'ctl' }],
  ])('afterTakeOver: %s', (_, only, ignored, want) => {
    expect(data(afterTakeOver(answer(), 'hoist-x', only, ignored))).toEqual(want);
  });

  it('afterTakeOver with nothing to take over is the dry-run answer itself', () => {
    const a = answer();
    expect(afterTakeOver(a, 'hoist-x', new Set(['nobody']))).toBe(a);
  });
});
