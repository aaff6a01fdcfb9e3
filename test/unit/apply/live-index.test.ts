import { describe, expect, it } from 'vitest';
import { annotationFingerprint, liveFingerprint, liveMetaOf, metadataChange, sameLiveState, type LiveMeta } from '../../../src/apply/live-index.ts';
import { sha256HexPrefix } from '../../../src/util/hash.ts';

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

describe('annotationFingerprint', () => {
  const long = 'x'.repeat(17);
  const hexLike = sha256HexPrefix(long, 8);
  it.each([
    ['an empty value', '', '='],
    ['a short value, kept as it is', '1', '=1'],
    ['16 characters, kept', 'a'.repeat(16), `=${'a'.repeat(16)}`],
    ['17 characters, hashed', long, hexLike],
  ])('%s', (_, value, want) => expect(annotationFingerprint(value)).toBe(want));

  it("a short value that reads like another's hash is not equal to it", () => {
    expect(hexLike).toHaveLength(16);
    expect(annotationFingerprint(hexLike)).not.toBe(annotationFingerprint(long));
  });

  it('a large value is not held: only 16 hex digits of it', () => {
    const meta = liveMetaOf({ metadata: { name: 'a', annotations: { big: 'y'.repeat(100_000), small: 'v1' } } });
    expect(meta.annotationHashes).toEqual({ big: sha256HexPrefix('y'.repeat(100_000), 8), small: '=v1' });
  });
});
