import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalOrder, contentDigest } from '../../../src/processors/content-digest.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const obj = (apiVersion: string, kind: string, name: string, namespace?: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}) },
  ...extra,
});

describe('contentDigest', () => {
  const a = obj('apps/v1', 'Deployment', 'web', 'prod', { spec: { replicas: 2, selector: { matchLabels: { app: 'web' } } } });
  const b = obj('v1', 'ConfigMap', 'cfg', 'prod', { data: { x: '1', a: '2' } });
  const c = obj('rbac.authorization.k8s.io/v1', 'ClusterRole', 'reader', undefined, { rules: [] });

  it('is sha256:<64 hex>', () => {
    expect(contentDigest([a, b, c])).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('does not depend on object order or key order', () => {
    const reordered = { data: { a: '2', x: '1' }, metadata: { namespace: 'prod', name: 'cfg' }, kind: 'ConfigMap', apiVersion: 'v1' } as KubeObject;
    expect(contentDigest([c, reordered, a])).toBe(contentDigest([a, b, c]));
  });

  it('changes when any field changes, including array order', () => {
    const base = contentDigest([a, b, c]);
    expect(contentDigest([a, { ...b, data: { x: '1', a: '3' } }, c])).not.toBe(base);
    expect(contentDigest([a, b])).not.toBe(base);
    const r1 = obj('v1', 'ConfigMap', 'x', undefined, { list: [1, 2] });
    const r2 = obj('v1', 'ConfigMap', 'x', undefined, { list: [2, 1] });
    expect(contentDigest([r1])).not.toBe(contentDigest([r2]));
  });

  it('of nothing is the digest of "[]"', () => {
    expect(contentDigest([])).toBe('sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945');
  });

  it('is the sha256 of the canonical JSON array', async () => {
    const { createHash } = await import('node:crypto');
    const expected = createHash('sha256')
      .update(`[${canonicalJson(b)}]`)
      .digest('hex');
    expect(contentDigest([b])).toBe(`sha256:${expected}`);
  });

  it('is pure: the input is not modified', () => {
    const input = [c, b, a];
    const copy = structuredClone(input);
    contentDigest(input);
    expect(input).toEqual(copy);
  });
});

describe('canonicalJson', () => {
  it('sorts keys recursively, omits undefined members, keeps arrays in order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[3,{"y":2,"z":1}]},"b":1}');
  });
});

describe('canonicalOrder', () => {
  it('sorts by group, kind, namespace, name', () => {
    const objs = [obj('v1', 'Service', 'b', 'ns'), obj('apps/v1', 'Deployment', 'a', 'ns'), obj('v1', 'Service', 'a', 'ns'), obj('v1', 'ConfigMap', 'z')];
    expect(canonicalOrder(objs).map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['ConfigMap/z', 'Service/a', 'Service/b', 'Deployment/a']);
  });
});
