import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultContentRoot, entryName, FsContentStore } from '../../../src/cache/fs-content-store.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'hoist-store-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** a clock the test moves by hand */
function clock(start = Date.parse('2025-01-01T00:00:00Z')): { now: () => Date; advance: (ms: number) => void } {
  let t = start;
  return { now: () => new Date(t), advance: (ms) => (t += ms) };
}

const writeFileOf = (name: string, body: string) => async (dir: string) => {
  await writeFile(join(dir, name), body);
};

describe('FsContentStore', () => {
  it('defaults to $HOIST_CACHE/content, else ~/.cache/hoist/content', () => {
    expect(defaultContentRoot({ HOIST_CACHE: '/var/cache/h' })).toBe('/var/cache/h/content');
    expect(defaultContentRoot({})).toMatch(/\.cache\/hoist\/content$/);
  });

  it('puts, opens and reports metadata', async () => {
    const store = new FsContentStore({ root });
    expect(await store.has('sha256:abc')).toBe(false);
    expect(await store.open('sha256:abc')).toBeUndefined();
    const dir = await store.put('sha256:abc', writeFileOf('a.yaml', 'hello'));
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe('hello');
    expect(await store.has('sha256:abc')).toBe(true);
    expect(await store.open('sha256:abc')).toBe(dir);
    expect(dir).toBe(join(root, 'entries', entryName('sha256:abc'), 'content'));
    const [meta] = await store.list();
    expect(meta).toMatchObject({ key: 'sha256:abc', size: 5 });
  });

  it('keys with any characters map to safe directory names', async () => {
    const store = new FsContentStore({ root });
    const dir = await store.put('git:../../etc@HEAD:/x y', writeFileOf('f', 'x'));
    expect(dir.startsWith(join(root, 'entries'))).toBe(true);
    expect(entryName('../x')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('put is idempotent: an existing key does not run the writer again', async () => {
    const store = new FsContentStore({ root });
    let runs = 0;
    const w = async (d: string) => {
      runs++;
      await writeFile(join(d, 'f'), 'x');
    };
    await store.put('k', w);
    await store.put('k', w);
    expect(runs).toBe(1);
  });

  it('concurrent puts of one key run the writer once and share the result', async () => {
    const store = new FsContentStore({ root });
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = async (d: string) => {
      runs++;
      await gate;
      await writeFile(join(d, 'f'), 'x');
    };
    const all = Promise.all([store.put('k', w), store.put('k', w), store.put('k', w)]);
    await new Promise((r) => setTimeout(r, 20));
    release();
    const dirs = await all;
    expect(runs).toBe(1);
    expect(new Set(dirs).size).toBe(1);
  });

  it('a failing writer leaves nothing behind and every waiter sees the error', async () => {
    const store = new FsContentStore({ root });
    const w = async (d: string) => {
      await writeFile(join(d, 'half'), 'x');
      throw new Error('digest mismatch');
    };
    const results = await Promise.allSettled([store.put('k', w), store.put('k', w)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await store.has('k')).toBe(false);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    // and a later put can succeed
    await store.put('k', writeFileOf('f', 'ok'));
    expect(await store.has('k')).toBe(true);
  });

  it('ignores and cleans a crashed half-written temp dir', async () => {
    // a temp left by a process that no longer exists, and a half-written entry-looking dir with no meta
    await mkdir(join(root, 'tmp', '999999999.deadbeef-0123/content'), { recursive: true });
    await writeFile(join(root, 'tmp', '999999999.deadbeef-0123/content/f'), 'partial');
    await mkdir(join(root, 'entries', entryName('k')), { recursive: true });
    const store = new FsContentStore({ root });
    expect(await store.has('k')).toBe(false);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
  });

  it('putComputed learns the key from the writer and keeps the first copy of equal content', async () => {
    const store = new FsContentStore({ root });
    const a = await store.putComputed(async (d) => {
      await writeFile(join(d, 'f'), 'one');
      return 'sha256:one';
    });
    const b = await store.putComputed(async (d) => {
      await writeFile(join(d, 'f'), 'one (second download)');
      return 'sha256:one';
    });
    expect(a).toEqual(b);
    expect(await readFile(join(a.dir, 'f'), 'utf8')).toBe('one');
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
  });

  it('gc removes entries not in keep', async () => {
    const store = new FsContentStore({ root });
    for (const k of ['a', 'b', 'c']) await store.put(k, writeFileOf('f', k));
    expect((await store.gc(new Set(['b']))).sort()).toEqual(['a', 'c']);
    expect((await store.list()).map((m) => m.key)).toEqual(['b']);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
  });

  it('enforceBudget evicts least-recently-used entries outside keep until under maxBytes', async () => {
    const c = clock();
    const store = new FsContentStore({ root, maxBytes: 250, now: c.now });
    for (const k of ['a', 'b', 'c', 'd']) {
      await store.put(k, writeFileOf('f', 'x'.repeat(100)));
      c.advance(120_000);
    }
    await store.open('a'); // a becomes the most recently used
    c.advance(120_000);
    // 400 bytes, budget 250: evict LRU not kept — b is kept, so c and d... c is older than d
    const removed = await store.enforceBudget(new Set(['b']));
    expect(removed).toEqual(['c', 'd']);
    expect((await store.list()).map((m) => m.key).sort()).toEqual(['a', 'b']);
    // keep wins over the budget
    expect(await store.enforceBudget(new Set(['a', 'b']), 10)).toEqual([]);
    // without a budget nothing is evicted
    expect(await new FsContentStore({ root }).enforceBudget(new Set())).toEqual([]);
  });
});

describe('FsContentStore debris', () => {
  it('replaces an entry directory that has content but no metadata', async () => {
    await mkdir(join(root, 'entries', entryName('k'), 'content'), { recursive: true });
    await writeFile(join(root, 'entries', entryName('k'), 'content', 'junk'), 'x');
    const store = new FsContentStore({ root });
    const dir = await store.put('k', writeFileOf('f', 'ok'));
    expect(await readdir(dir)).toEqual(['f']);
  });
});
