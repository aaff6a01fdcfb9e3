import { describe, expect, it } from 'vitest';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { objectId } from '../../../src/apply/object-id.ts';
import { ContentInUse } from '../../../src/reconciler/content-use.ts';
import { decideUpdateEvent, OwnWrites } from '../../../src/reconciler/own-writes.ts';
import { RevisionObjects, type Rendered } from '../../../src/revisions/revision-objects.ts';
import { isHoistError } from '../../../src/util/errors.ts';

describe('OwnWrites', () => {
  it('knows our latest writes and the versions they replaced, per BD, until forgotten', () => {
    const w = new OwnWrites();
    w.record('a', '10', '11');
    expect(w.isOwn('a', '11')).toBe(true);
    expect(w.isOwn('a', '10')).toBe(false);
    expect(w.isOwn('b', '11')).toBe(false);
    expect(w.isStale('a', '10')).toBe(true);
    expect(w.isStale('a', '11')).toBe(false);
    w.record('a', '11', '12');
    // the finalizer's event may come after the status write that followed it: still ours
    expect(w.isOwn('a', '11') && w.isOwn('a', '12')).toBe(true);
    expect(w.isStale('a', '10') && w.isStale('a', '11')).toBe(true);
    w.caughtUp('a');
    expect(w.isStale('a', '10')).toBe(false);
    expect(w.isOwn('a', '12')).toBe(true);
    // a few are remembered, not all
    for (const rv of ['13', '14', '15', '16']) w.record('a', undefined, rv);
    expect(w.isOwn('a', '12')).toBe(false);
    w.forget('a');
    expect(w.isOwn('a', '16')).toBe(false);
    expect(w.isOwn('a', undefined)).toBe(false);
  });

  const bd = (rv: string, generation = 1) => ({ metadata: { name: 'a', resourceVersion: rv, generation } }) as unknown as BundleDeployment;

  it('decides the event of a write still in flight once the write has returned (the API server may send the event first)', async () => {
    const w = new OwnWrites();
    let respond!: (v: { metadata: { resourceVersion: string } }) => void;
    const writing = w.write('a', '10', () => new Promise<{ metadata: { resourceVersion: string } }>((r) => (respond = r)));
    const enqueued: string[] = [];
    // our write's event, then someone else's, both before the response
    w.updateEvent(bd('10'), bd('11'), () => enqueued.push('11'));
    w.updateEvent(bd('11'), bd('12'), () => enqueued.push('12'));
    // a spec change is someone else's whatever is in flight
    w.updateEvent(bd('12'), bd('13', 2), () => enqueued.push('13'));
    expect(enqueued).toEqual(['13']);
    respond({ metadata: { resourceVersion: '11' } });
    await writing;
    expect(enqueued).toEqual(['13', '12']);
    // with nothing in flight: decided at once
    w.updateEvent(bd('13'), bd('11'), () => enqueued.push('own'));
    w.updateEvent(bd('13'), bd('14'), () => enqueued.push('14'));
    expect(enqueued).toEqual(['13', '12', '14']);
  });

  it("a failed write tells the waiting events too: they are someone else's", async () => {
    const w = new OwnWrites();
    let fail!: (e: Error) => void;
    const writing = w.write('a', '10', () => new Promise<{ metadata: { resourceVersion: string } }>((_, reject) => (fail = reject)));
    const enqueued: string[] = [];
    w.updateEvent(bd('10'), bd('11'), () => enqueued.push('11'));
    fail(new Error('conflict'));
    await expect(writing).rejects.toThrow('conflict');
    expect(enqueued).toEqual(['11']);
  });
});

describe('decideUpdateEvent', () => {
  it.each([
    // generationChanged, ownVersion, writing → decision
    [true, false, false, 'reconcile'],
    [true, true, false, 'reconcile'],
    [true, false, true, 'reconcile'],
    [false, true, false, 'ignore'],
    [false, true, true, 'ignore'],
    [false, false, true, 'after-write'],
    [false, false, false, 'reconcile'],
  ] as const)('generation changed %s, our version %s, writing %s: %s', (generationChanged, ownVersion, writing, want) => {
    expect(decideUpdateEvent({ generationChanged, ownVersion, writing })).toBe(want);
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

describe('RevisionObjects out of the hot set (kept as JSON text, parsed again on use)', () => {
  const obj = (name: string, labels?: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...(labels ? { labels } : {}) },
  });
  const rendered = (i: number) => ({ inputs: `i${i}`, contentDigest: `d${i}`, objects: [obj(`o${i}`, { app: `a${i}` })], hooks: [obj(`h${i}`)] });

  it('serves the same objects after its BD left the hot set, and reads no revision from the store for them', async () => {
    let loads = 0;
    const r = new RevisionObjects({ load: async () => (loads++, undefined) }, undefined, 2);
    for (let i = 0; i < 5; i++) {
      const entry = rendered(i);
      r.rememberRendered(`bd${i}`, entry);
      // a fresh install: the loaded revision is the rendered one
      r.rememberLoaded(`bd${i}`, 1, entry);
    }
    for (let i = 0; i < 5; i++) {
      const want = rendered(i);
      expect(r.renderedWith(`bd${i}`, `i${i}`)).toMatchObject({ contentDigest: want.contentDigest, objects: want.objects, hooks: want.hooks });
      expect(await r.of(`bd${i}`, { number: 1, contentDigest: `d${i}` })).toEqual(want.objects);
      expect(await r.hooksOf(`bd${i}`, { number: 1, contentDigest: `d${i}` })).toEqual(want.hooks);
      expect(r.setsNoneOf(`bd${i}`, objectId(obj(`o${i}`)), { labels: ['app'], annotations: [] }, { labels: [], annotations: [] })).toBe(false);
      expect(r.setsNoneOf(`bd${i}`, objectId(obj(`o${i}`)), { labels: ['other'], annotations: [] }, { labels: [], annotations: [] })).toBe(true);
    }
    expect(r.renderedWith('bd0', 'other inputs')).toBeUndefined();
    expect(loads).toBe(0);
  });

  it('a cold entry drops the compressed form of a fresh render; a hot one keeps it', () => {
    const r = new RevisionObjects({ load: async () => undefined }, undefined, 1);
    const packed = { text: 'x' } as unknown as Rendered['packed'];
    r.rememberRendered('a', { ...rendered(0), packed });
    expect(r.renderedWith('a', 'i0')?.packed).toBe(packed);
    r.rememberRendered('b', rendered(1));
    expect(r.renderedWith('a', 'i0')?.packed).toBeUndefined();
  });

  it('places objects again after a thaw (their placement is not remembered across it)', async () => {
    let placements = 0;
    const place = async (_bd: string, objects: KubeObject[]) => (placements++, { objects, settled: true });
    const r = new RevisionObjects({ load: async () => undefined }, place, 1);
    r.rememberRendered('a', rendered(0));
    await r.of('a', { number: 1, contentDigest: 'd0' });
    await r.of('a', { number: 1, contentDigest: 'd0' });
    expect(placements).toBe(1);
    r.rememberRendered('b', rendered(1));
    await r.of('a', { number: 1, contentDigest: 'd0' });
    expect(placements).toBe(2);
  });
});
