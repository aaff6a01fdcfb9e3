import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/kube/types.ts';
import { ContentInUse } from '../../../src/reconciler/content-use.ts';
import { OwnWrites } from '../../../src/reconciler/own-writes.ts';
import { RevisionObjects } from '../../../src/reconciler/revision-objects.ts';
import { isHoistError } from '../../../src/util/errors.ts';

describe('OwnWrites', () => {
  it('knows our latest write and the versions it replaced, per BD, until forgotten', () => {
    const w = new OwnWrites();
    w.record('a', '10', '11');
    expect(w.isOwn('a', '11')).toBe(true);
    expect(w.isOwn('a', '10')).toBe(false);
    expect(w.isOwn('b', '11')).toBe(false);
    expect(w.isStale('a', '10')).toBe(true);
    expect(w.isStale('a', '11')).toBe(false);
    w.record('a', '11', '12');
    expect(w.isOwn('a', '11')).toBe(false);
    expect(w.isStale('a', '10') && w.isStale('a', '11')).toBe(true);
    w.caughtUp('a');
    expect(w.isStale('a', '10')).toBe(false);
    expect(w.isOwn('a', '12')).toBe(true);
    w.forget('a');
    expect(w.isOwn('a', '12')).toBe(false);
    expect(w.isOwn('a', undefined)).toBe(false);
  });
});

describe('ContentInUse', () => {
  it('answers only once every BD has been reconciled, with the union of their keys', () => {
    const c = new ContentInUse();
    c.record('a', ['k1', 'k2']);
    c.reconciled('a');
    expect(c.inUse(['a', 'b'])).toBeUndefined();
    c.reconciled('b'); // failed before resolving: needs nothing
    expect(c.inUse(['a', 'b'])).toEqual(new Set(['k1', 'k2']));
    c.record('b', ['k2', 'k3']);
    expect(c.inUse(['a', 'b'])).toEqual(new Set(['k1', 'k2', 'k3']));
    c.forget('a');
    expect(c.inUse(['b'])).toEqual(new Set(['k2', 'k3']));
    expect(c.inUse(['a', 'b'])).toBeUndefined();
  });
});

describe('RevisionObjects', () => {
  const obj = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
  it('serves the rendered and the loaded revision from memory and reads the store once otherwise', async () => {
    let loads = 0;
    const stored = new Map([[2, [obj('two')]]]);
    const r = new RevisionObjects({ load: async (_bd, rev) => (loads++, stored.get(rev.number)) });
    r.rememberRendered('bd', { inputs: 'i1', contentDigest: 'd1', objects: [obj('one')], hooks: [] });
    expect(r.renderedWith('bd', 'i1')?.contentDigest).toBe('d1');
    expect(r.renderedWith('bd', 'i2')).toBeUndefined();
    expect((await r.of('bd', { number: 1, contentDigest: 'd1' }))[0]?.metadata.name).toBe('one');
    expect((await r.of('bd', { number: 2, contentDigest: 'd2' }))[0]?.metadata.name).toBe('two');
    expect((await r.of('bd', { number: 2, contentDigest: 'd2' }))[0]?.metadata.name).toBe('two');
    expect(loads).toBe(1);
    const missing = await r.of('bd', { number: 3, contentDigest: 'd3' }).catch((e: unknown) => e);
    expect(isHoistError(missing) && missing.terminal === false && missing.code === 'revision-missing').toBe(true);
    r.forget('bd');
    await r.of('bd', { number: 2, contentDigest: 'd2' });
    expect(loads).toBe(3);
  });
});
