/**
 * Reusing a stored revision instead of fetching and rendering: the real RevisionStore over an
 * in-memory client (label selectors as the API server reads them), and what the BD is told when
 * the revision store cannot be read (the API server restarting mid-reconcile).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RevisionStore } from '../../../src/revisions/revision-store.ts';
import type { KubeClient, KubeObject } from '../../../src/kube/types.ts';
import { TransportError } from '../../../src/kube/api-error.ts';
import { storedRevision } from '../../../src/reconciler/pipeline/render.ts';
import { HoistError } from '../../../src/util/errors.ts';

/** Secrets in memory; `failListAfter` lists succeed, then every list is a refused connection */
function memoryClient(failListAfter = Infinity): KubeClient {
  const secrets: KubeObject[] = [];
  let lists = 0;
  const matches = (o: KubeObject, selector: string) =>
    selector.split(',').every((term) => {
      const [k, v] = term.split('=');
      return v === undefined ? o.metadata.labels?.[k!] !== undefined : o.metadata.labels?.[k!] === v;
    });
  return {
    async create(o: KubeObject) {
      const created = { ...o, metadata: { ...o.metadata, resourceVersion: String(secrets.length + 1), creationTimestamp: new Date().toISOString() } };
      secrets.push(created);
      return created;
    },
    async list(_type: unknown, opts: { labelSelector: string }) {
      if (++lists > failListAfter)
        throw new TransportError('list', 'v1 Secret hoist-system', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }));
      return { items: secrets.filter((s) => matches(s, opts.labelSelector)) };
    },
  } as unknown as KubeClient;
}

const objects: KubeObject[] = [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'team-a' } }];
const rev = { number: 3, contentDigest: 'sha256:abc', inputs: 'in-1' };

describe('storedRevision (render reuses what these inputs produced)', () => {
  it('finds the revision stored for the same inputs, with its objects; other inputs find none', async () => {
    const store = new RevisionStore(memoryClient(), 'hoist-system');
    await store.save('app', rev, objects);
    expect(await storedRevision(store, 'app', 'in-1')).toEqual({
      contentDigest: 'sha256:abc',
      objects,
      stored: { number: 3, contentDigest: 'sha256:abc', inputs: 'in-1' },
    });
    expect(await storedRevision(store, 'app', 'in-2')).toBeUndefined();
    expect(await storedRevision(store, 'other', 'in-1')).toBeUndefined();
  });

  it('the revision store unreadable: a transient fetch error naming the revision store, not a source', async () => {
    const lookup = new RevisionStore(memoryClient(0), 'hoist-system');
    const e1 = await storedRevision(lookup, 'app', 'in-1').catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(HoistError);
    expect(e1).toMatchObject({ stage: 'fetch', code: 'revision-store', subject: 'stored revisions', terminal: false });
    expect((e1 as HoistError).describe()).toMatch(/^fetch stored revisions: list v1 Secret hoist-system: .*ECONNREFUSED/);

    // found by its inputs, then its objects cannot be read
    const client = memoryClient(1);
    const store = new RevisionStore(client, 'hoist-system');
    await store.save('app', rev, objects);
    const e2 = await storedRevision(store, 'app', 'in-1').catch((e: unknown) => e);
    expect(e2).toMatchObject({ stage: 'fetch', code: 'revision-store', subject: 'stored revision 3', terminal: false });
  });
});

describe('packing a revision (gzip in slices, stopped at the size cap)', () => {
  // incompressible text with astral characters (surrogate pairs) across the 1 MiB slice boundaries
  const big = (chars: number): KubeObject[] => {
    const parts: string[] = [];
    for (let n = 0; n < chars; n += 64) parts.push(`${randomBytes(30).toString('base64')}😀`.padEnd(64, 'é'));
    return [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big', namespace: 'team-a' }, data: { blob: parts.join('') } } as KubeObject];
  };

  // only astral characters: one of the two names puts a 1 MiB slice boundary between the two halves of a pair
  it.each(['big', 'bigg'])('a revision of several slices is stored and read back unchanged (%s)', async (name) => {
    const store = new RevisionStore(memoryClient(), 'hoist-system', undefined, 16 * 1024 * 1024);
    const objs = [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data: { blob: '😀'.repeat(1_600_000) } }];
    await store.save('app', rev, await store.pack(objs, rev.contentDigest));
    expect(await store.load('app', rev)).toEqual(objs);
  });

  it('over the cap: refused naming the limit, remembered by content digest', async () => {
    const store = new RevisionStore(memoryClient(), 'hoist-system', undefined, 1024 * 1024);
    const objs = big(4 * 1024 * 1024);
    const e = await store.pack(objs, 'sha256:big').catch((x: unknown) => x);
    expect(e).toMatchObject({ stage: 'process', code: 'revision-too-large', terminal: true });
    expect((e as Error).message).toMatch(
      /^the rendered objects \(\d+ characters of JSON\) compress to more than 1048576 bytes, over the limit of 1 MiB per revision \(hoist run --max-revision-size\)/,
    );
    await expect(store.pack(objs, 'sha256:big')).rejects.toBe(e);
    // small revisions still fit
    await expect(store.pack(objects)).resolves.toHaveProperty('packed');
  });
});
