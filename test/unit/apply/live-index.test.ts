import { describe, expect, it } from 'vitest';
import { liveFingerprint, metadataChange, sameLiveState, type LiveMeta } from '../../../src/apply/live-index.ts';

const base: LiveMeta = { uid: 'u1', resourceVersion: '10', generation: 2, labels: { a: '1', b: '2' }, annotationHashes: { x: 'h1' } };

describe('sameLiveState', () => {
  // it must say "same" exactly when the fingerprints are equal: the watches compare with it, the applier stores fingerprints
  const cases: Array<[string, LiveMeta]> = [
    ['identical', { ...base }],
    ['labels in another order', { ...base, labels: { b: '2', a: '1' } }],
    ['another resourceVersion, same generation (a status update)', { ...base, resourceVersion: '11' }],
    ['another generation', { ...base, generation: 3 }],
    ['another uid', { ...base, uid: 'u2' }],
    ['a label changed', { ...base, labels: { a: '1', b: '3' } }],
    ['a label added', { ...base, labels: { a: '1', b: '2', c: '' } }],
    ['a label removed', { ...base, labels: { a: '1' } }],
    ['no labels', { ...base, labels: undefined }],
    ['an annotation changed', { ...base, annotationHashes: { x: 'h2' } }],
    ['an annotation added', { ...base, annotationHashes: { x: 'h1', y: 'h3' } }],
    ['managers differ (not part of the state)', { ...base, managers: ['kubectl-edit'] }],
    ['no generation, another resourceVersion', { ...base, generation: undefined, resourceVersion: '12' }],
  ];
  it.each(cases)('%s', (_, other) => {
    expect(sameLiveState(base, other)).toBe(liveFingerprint(base) === liveFingerprint(other));
    expect(sameLiveState(other, base)).toBe(liveFingerprint(base) === liveFingerprint(other));
  });
  it('kinds without generation compare resourceVersions', () => {
    const a = { ...base, generation: undefined };
    expect(sameLiveState(a, { ...a })).toBe(true);
    expect(sameLiveState(a, { ...a, resourceVersion: '11' })).toBe(false);
  });
});

describe('metadataChange', () => {
  it('names the label and annotation keys changed, added or removed, and the new managers', () => {
    const a: LiveMeta = { ...base, managers: ['hoist'] };
    const b: LiveMeta = {
      ...base,
      resourceVersion: '11',
      labels: { a: '1', c: '3' },
      annotationHashes: { x: 'h2', 'deployment.kubernetes.io/revision': 'h9' },
      managers: ['hoist', 'kube-controller-manager'],
    };
    expect(metadataChange(a, b)).toEqual({
      labels: ['b', 'c'],
      annotations: ['x', 'deployment.kubernetes.io/revision'],
      newManagers: ['kube-controller-manager'],
    });
  });
  it('is undefined when the object itself changed: another uid or generation', () => {
    expect(metadataChange(base, { ...base, generation: 3 })).toBeUndefined();
    expect(metadataChange(base, { ...base, uid: 'u2' })).toBeUndefined();
    const noGen = { ...base, generation: undefined };
    expect(metadataChange(noGen, { ...noGen, resourceVersion: '11', labels: {} })).toBeUndefined();
  });
});
