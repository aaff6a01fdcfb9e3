/**
 * Retention policies (src/apply/retention.ts): which annotation values keep an object, read from
 * which copy (the revision's stored object, the live one), and the patch that lets go of a kept
 * object. Helm's own rules the table follows (helm.sh/helm v3.19.5): its uninstall keeps an
 * object of the release manifest whose `helm.sh/resource-policy`, trimmed and lowercased, is
 * `keep` (pkg/action/resource_policy.go filterManifestsToKeep); its upgrade and rollback keep a
 * dropped object whose live annotation is exactly `keep` (pkg/kube/client.go Update). The e2e
 * test (test/e2e/resource-policy.test.ts) compares the outcome with the real helm.
 */
import { describe, expect, it } from 'vitest';
import { ANNOTATION_PRUNE, ANNOTATION_REVISION, LABEL_LINEAGE, LABEL_OWNER_NAME } from '../../../api/v1alpha2/types.ts';
import { ANNOTATION_HELM_RESOURCE_POLICY as POLICY, KEPT_MANAGER, releasePatch, released, retentionOf } from '../../../src/apply/retention.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const KEEP = 'helm.sh/resource-policy: keep';
const DISABLED = 'core.rukpak.io/prune: disabled';

const withAnnotations = (annotations?: Record<string, string>): Pick<KubeObject, 'metadata'> => ({
  metadata: { name: 'data', ...(annotations ? { annotations } : {}) },
});

describe('retentionOf: which values keep an object', () => {
  // prettier-ignore
  it.each([
    // Helm's keep, as its uninstall compares it (trimmed, lowercased)
    [{ [POLICY]: 'keep' }, KEEP],
    [{ [POLICY]: 'Keep' }, KEEP], // helm upgrade would delete it (exact compare): Hoist keeps, as helm uninstall does
    [{ [POLICY]: ' keep\n' }, KEEP],
    [{ [POLICY]: 'KEEP' }, KEEP],
    // any other value is no policy: deleted (helm upgrade deletes it; helm uninstall leaves it, helm/helm#12048)
    [{ [POLICY]: '' }, undefined],
    [{ [POLICY]: 'delete' }, undefined],
    [{ [POLICY]: 'keep-it' }, undefined],
    [{ [POLICY]: 'k eep' }, undefined],
    // the annotation's name is exact
    [{ 'Helm.sh/resource-policy': 'keep' }, undefined],
    [{ 'helm.sh/resource-policy ': 'keep' }, undefined],
    // Hoist's own opt-out, after Flux's kustomize.toolkit.fluxcd.io/prune: disabled
    [{ [ANNOTATION_PRUNE]: 'disabled' }, DISABLED],
    [{ [ANNOTATION_PRUNE]: ' Disabled ' }, DISABLED],
    [{ [ANNOTATION_PRUNE]: 'enabled' }, undefined],
    [{ [ANNOTATION_PRUNE]: 'false' }, undefined],
    [{ 'kustomize.toolkit.fluxcd.io/prune': 'disabled' }, undefined],
    // both: Helm's is named
    [{ [POLICY]: 'keep', [ANNOTATION_PRUNE]: 'disabled' }, KEEP],
    [{ [POLICY]: 'delete', [ANNOTATION_PRUNE]: 'disabled' }, DISABLED],
    [{}, undefined],
    [undefined, undefined],
  ] as const)('%j → %s', (annotations, expected) => {
    expect(retentionOf(withAnnotations(annotations as Record<string, string> | undefined))).toBe(expected);
  });
});

describe('retentionOf: which copy says so', () => {
  const keep = withAnnotations({ [POLICY]: 'keep' });
  const plain = withAnnotations({ other: 'x' });
  it.each([
    ['the stored object only (a live object whose annotation was removed by hand: helm uninstall reads the manifest)', keep, plain, KEEP],
    ['the live object only (annotated by hand: helm upgrade reads the live object)', plain, keep, KEEP],
    ['both', keep, keep, KEEP],
    ['neither', plain, plain, undefined],
    ['the stored object, nothing live', keep, undefined, KEEP],
    ['no copy at all', undefined, undefined, undefined],
  ])('%s', (_what, stored, live, expected) => {
    expect(retentionOf(stored, live)).toBe(expected);
  });
});

const MANAGER = 'hoist-web';
const hoistApply = { manager: MANAGER, operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': {} } };
const binder = {
  manager: 'kube-controller-manager',
  operation: 'Update',
  apiVersion: 'v1',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:spec': { 'f:volumeName': {} } },
};
const status = { manager: MANAGER, operation: 'Apply', apiVersion: 'v1', subresource: 'status', fieldsV1: { 'f:status': {} } };
const hoistUpdate = { manager: MANAGER, operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:metadata': {} } };

function live(labels: Record<string, string>, annotations: Record<string, string>, managedFields: unknown[]): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'data', namespace: 'ns', uid: 'u1', resourceVersion: '42', labels, annotations, managedFields },
    data: { a: '1' },
  };
}

const ours = { [LABEL_OWNER_NAME]: 'web', [LABEL_LINEAGE]: 'web', app: 'web' };
const rv = { op: 'replace', path: '/metadata/resourceVersion', value: '42' };
const dropOwner = { op: 'remove', path: '/metadata/labels/core.rukpak.io~1owner-name' };
const dropRevision = { op: 'remove', path: '/metadata/annotations/core.rukpak.io~1revision' };

describe('releasePatch: letting go of a kept object', () => {
  const handed = (fieldsV1: Record<string, unknown>) => ({ ...hoistApply, manager: KEPT_MANAGER, operation: 'Update', fieldsV1 });
  it.each([
    [
      'only Hoist manages it: the owner label and revision annotation go, its fields are handed to KEPT_MANAGER',
      live(ours, { [ANNOTATION_REVISION]: '3', [POLICY]: 'keep' }, [hoistApply]),
      [rv, dropOwner, dropRevision, { op: 'replace', path: '/metadata/managedFields', value: [handed({ 'f:data': {} })] }],
    ],
    [
      'a controller owns fields too (a bound PVC): its entry stays, and the status entry and Hoist’s Update entries too',
      live(ours, { [ANNOTATION_REVISION]: '3' }, [hoistApply, binder, status, hoistUpdate]),
      [rv, dropOwner, dropRevision, { op: 'replace', path: '/metadata/managedFields', value: [handed({ 'f:data': {} }), binder, status, hoistUpdate] }],
    ],
    [
      'kept before (taken back, kept again): one KEPT_MANAGER entry with both field sets',
      live(ours, {}, [hoistApply, { ...handed({ 'f:binaryData': {} }), apiVersion: 'v1' }]),
      [rv, dropOwner, { op: 'replace', path: '/metadata/managedFields', value: [handed({ 'f:binaryData': {}, 'f:data': {} })] }],
    ],
    ['no field manager entry of Hoist’s: managedFields untouched', live(ours, { [ANNOTATION_REVISION]: '3' }, [binder]), [rv, dropOwner, dropRevision]],
    ['another lineage’s manager is not Hoist’s entry for this one', live(ours, {}, [{ ...hoistApply, manager: 'hoist-other' }]), [rv, dropOwner]],
    [
      'already let go of: nothing but the resourceVersion condition',
      live({ [LABEL_LINEAGE]: 'web' }, { [POLICY]: 'keep' }, [handed({ 'f:data': {} }), binder]),
      [rv],
    ],
  ])('%s', (_what, object, expected) => {
    expect(releasePatch(object, MANAGER)).toEqual(expected);
  });

  it('KEPT_MANAGER is no lineage’s field manager', () => {
    expect(KEPT_MANAGER.startsWith('hoist-')).toBe(false);
  });

  it('the lineage label, the policy annotation and the content stay', () => {
    const object = live(ours, { [ANNOTATION_REVISION]: '3', [POLICY]: 'keep' }, [hoistApply]);
    const paths = releasePatch(object, MANAGER).map((op) => op.path);
    expect(paths.some((p) => p.includes('lineage') || p.includes('resource-policy') || p.startsWith('/data'))).toBe(false);
    expect(released(object).metadata.labels).toEqual({ [LABEL_LINEAGE]: 'web', app: 'web' });
    expect(released(object).metadata.annotations).toEqual({ [POLICY]: 'keep' });
    expect(released(object).data).toEqual({ a: '1' });
    expect(object.metadata.labels).toEqual(ours); // released() copies
  });
});
