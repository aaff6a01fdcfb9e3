import { describe, expect, it } from 'vitest';
import { DEFAULT_OVERRIDE_MANAGERS, fieldPaths, managerNames, takeOverManagedFields, type ManagedFieldsEntry } from '../../../src/apply/field-managers.ts';

const hoist: ManagedFieldsEntry = { manager: 'hoist-web', operation: 'Apply', apiVersion: 'apps/v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } } } } };
const kubectlSet: ManagedFieldsEntry = {
  manager: 'kubectl-set',
  operation: 'Update',
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:env': { '.': {}, 'k:{"name":"HOTFIX"}': { '.': {}, 'f:name': {}, 'f:value': {} } } } } } } } },
};
const hpa: ManagedFieldsEntry = { manager: 'hpa-stand-in', operation: 'Update', apiVersion: 'apps/v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } };
const status: ManagedFieldsEntry = { manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'apps/v1', subresource: 'status', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': { 'f:replicas': {} } } };

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
    expect(takeOverManagedFields([hoist, kubectlSet, hpa, status], 'hoist-web', 'apps/v1')!.map((e) => e.manager)).toEqual(['hoist-web', 'kube-controller-manager']);
  });
});

describe('fieldPaths', () => {
  it('names a node owned as a whole once, with list keys', () => {
    expect(fieldPaths(kubectlSet.fieldsV1)).toEqual(['spec.template.spec.containers[name=web].env']);
    expect(fieldPaths({ 'f:metadata': { 'f:labels': { 'f:hotfix': {} } }, 'f:spec': { 'f:ports': { 'k:{"port":80,"protocol":"TCP"}': { 'f:name': {} } } } })).toEqual([
      'metadata.labels.hotfix',
      'spec.ports[port=80,protocol=TCP].name',
    ]);
  });
});

describe('managerNames', () => {
  it('lists the managers of the object itself, once each, sorted', () => {
    expect(managerNames([kubectlSet, hoist, status, hpa, { ...hpa }])).toEqual(['hoist-web', 'hpa-stand-in', 'kubectl-set']);
    expect(managerNames(undefined)).toEqual([]);
  });
});
