import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { defaultContentRoot, entryName, FsContentStore } from '../../../src/cache/fs-content-store.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { sleep } from '../../support/wait.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'hoist-store-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

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
    await sleep(20);
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

  it('the budget bounds the store on every write: LRU entries are evicted, recently handed-out ones kept', async () => {
    const c = new FakeClock();
    const store = new FsContentStore({ root, maxBytes: 250, clock: c });
    await store.put('a', writeFileOf('f', 'x'.repeat(100)));
    await c.advance(11 * 60_000);
    await store.put('b', writeFileOf('f', 'x'.repeat(100)));
    await c.advance(11 * 60_000);
    await store.open('a'); // a is handed out again: a reconcile may be reading it
    await c.advance(60_000);
    await store.put('c', writeFileOf('f', 'x'.repeat(100)));
    // 300 bytes would not fit in 250: b, the least recently used entry not in use, made room
    expect((await store.list()).map((m) => m.key).sort()).toEqual(['a', 'c']);
    expect((await store.list()).reduce((n, m) => n + m.size, 0)).toBeLessThanOrEqual(250);
  });

  // issue 26: each commit listed every entry's metadata to measure the store (the chart sets a
  // budget): at 1,000 BundleDeployments half a million metadata reads in one wave
  it('under the budget, writes do not list the store: its total is measured once and kept as entries land', async () => {
    const c = new FakeClock();
    const store = new FsContentStore({ root, maxBytes: 10_000, clock: c });
    const list = vi.spyOn(store, 'list');
    for (let i = 0; i < 30; i++) await store.put(`k${i}`, writeFileOf('f', 'x'.repeat(100)));
    expect(list).toHaveBeenCalledTimes(1);
    // and the kept total still bounds the store: 3,000 bytes in, 7,000 more fit, 7,001 do not
    await store.put('fits', writeFileOf('f', 'x'.repeat(7000)));
    expect(list).toHaveBeenCalledTimes(1);
    // past the budget the store is measured again and the least recently used entry makes room
    await c.advance(11 * 60_000);
    await store.put('over', writeFileOf('f', 'x'.repeat(100)));
    expect(list).toHaveBeenCalledTimes(2);
    expect((await store.list()).reduce((n, m) => n + m.size, 0)).toBeLessThanOrEqual(10_000);
  });

  it('refuses content larger than the whole budget (terminal), and content that cannot fit beside content in use (transient)', async () => {
    const c = new FakeClock();
    const store = new FsContentStore({ root, maxBytes: 250, clock: c });
    await expect(store.put('huge', writeFileOf('f', 'x'.repeat(300)))).rejects.toMatchObject({ code: 'cache-budget', terminal: true });
    await store.put('a', writeFileOf('f', 'x'.repeat(100)));
    await c.advance(1000);
    await store.put('b', writeFileOf('f', 'x'.repeat(100)));
    await expect(store.put('c', writeFileOf('f', 'x'.repeat(100)))).rejects.toMatchObject({ code: 'cache-full', terminal: false });
    expect((await store.list()).map((m) => m.key).sort()).toEqual(['a', 'b']);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    // once a and b are no longer in use, c fits
    await c.advance(11 * 60_000);
    await store.put('c', writeFileOf('f', 'x'.repeat(100)));
    expect((await store.list()).map((m) => m.key).sort()).toEqual(['b', 'c']);
  });

  // issue 23: bytes written towards the store count while they are written, not only once they land
  describe('downloads in flight and scratch space count against the budget', () => {
    it('a second download in flight is refused while the first holds the room, naming the budget; nothing is left in tmp', async () => {
      const store = new FsContentStore({ root, maxBytes: 1000 });
      const first = Promise.withResolvers<void>();
      const charged = Promise.withResolvers<void>();
      const holding = store.put('a', async (dir, space) => {
        await space.charge(700);
        await writeFile(join(dir, 'f'), 'x'.repeat(700));
        charged.resolve();
        await first.promise;
      });
      await charged.promise;
      const err = await store.put('b', async (_dir, space) => space.charge(700)).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'cache-full', terminal: false, stage: 'fetch' });
      expect((err as Error).message).toMatch(
        /^content store is full: 0 bytes of entries in use and 700 bytes of downloads and composed sources in flight leave no room for 700 bytes more within its budget of 1000 bytes \(hoist run --cache-max-size\)$/,
      );
      // the refused write left nothing behind; the first one lands
      first.resolve();
      await holding;
      expect((await store.list()).map((m) => m.key)).toEqual(['a']);
      expect(await readdir(join(root, 'tmp'))).toEqual([]);
      // and its charge became the entry: 700 counted once, so 300 more fit and 301 do not
      await store.put('c', async (dir, space) => {
        await space.charge(300);
        await writeFile(join(dir, 'f'), 'x'.repeat(300));
      });
      await expect(store.put('d', async (_dir, space) => space.charge(1))).rejects.toMatchObject({ code: 'cache-full' });
    });

    it('one write larger than the whole budget is refused terminally, as soon as it is charged', async () => {
      const store = new FsContentStore({ root, maxBytes: 1000 });
      let wrote = false;
      const err = await store
        .put('huge', async (_dir, space) => {
          await space.charge(600);
          await space.charge(600);
          wrote = true;
        })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'cache-budget', terminal: true });
      expect((err as Error).message).toBe(
        'this download would take more than the whole content-store budget of 1000 bytes (hoist run --cache-max-size): 1200 bytes so far',
      );
      expect(wrote).toBe(false);
      expect(await readdir(join(root, 'tmp'))).toEqual([]);
    });

    it('a charge evicts least-recently-used entries not in use to make room', async () => {
      const c = new FakeClock();
      const store = new FsContentStore({ root, maxBytes: 1000, clock: c });
      await store.put('old', writeFileOf('f', 'x'.repeat(600)));
      await c.advance(11 * 60_000);
      await store.put('new', async (dir, space) => {
        await space.charge(600);
        await writeFile(join(dir, 'f'), 'x'.repeat(600));
      });
      expect((await store.list()).map((m) => m.key)).toEqual(['new']);
    });

    it('scratch space is counted until disposed; putComputed and a verifying addOrigin charge too', async () => {
      const store = new FsContentStore({ root, maxBytes: 1000 });
      const scratch = await store.scratch();
      await scratch.space.charge(900);
      await expect(store.putComputed(async (_dir, space) => (await space.charge(200), 'k'))).rejects.toMatchObject({ code: 'cache-full' });
      await scratch.dispose();
      expect(await readdir(join(root, 'tmp'))).toEqual([]);
      const { key } = await store.putComputed(async (dir, space) => {
        await space.charge(200);
        await writeFile(join(dir, 'f'), 'x'.repeat(200));
        return 'k';
      });
      expect(key).toBe('k');
      // a verifying download for another origin is charged while it runs, and released after
      const elsewhere = { location: 'https://b.example/x', credential: undefined, display: 'https://b.example/x' };
      await expect(store.addOrigin('k', elsewhere, async (_dir, space) => space.charge(900))).rejects.toMatchObject({ code: 'cache-full' });
      await store.addOrigin('k', elsewhere, async (_dir, space) => space.charge(800));
      expect(await readdir(join(root, 'tmp'))).toEqual([]);
    });

    it('without a budget, charges only count', async () => {
      const store = new FsContentStore({ root });
      await store.put('k', async (dir, space) => {
        await space.charge(10 ** 12);
        expect(space.charged).toBe(10 ** 12);
        await writeFile(join(dir, 'f'), 'x');
      });
    });
  });

  it('enforceBudget (during gc) evicts least-recently-used entries outside keep', async () => {
    const c = new FakeClock();
    const store = new FsContentStore({ root, clock: c });
    for (const k of ['a', 'b', 'c', 'd']) {
      await store.put(k, writeFileOf('f', 'x'.repeat(100)));
      await c.advance(120_000);
    }
    await store.open('a'); // a becomes the most recently used
    await c.advance(120_000);
    // 400 bytes, budget 250: b is kept, so c and d (c is older than d) go
    expect(await store.enforceBudget(new Set(['b']), 250)).toEqual(['c', 'd']);
    expect((await store.list()).map((m) => m.key).sort()).toEqual(['a', 'b']);
    // keep wins over the budget
    expect(await store.enforceBudget(new Set(['a', 'b']), 10)).toEqual([]);
    // without a budget nothing is evicted
    expect(await new FsContentStore({ root }).enforceBudget(new Set())).toEqual([]);
  });

  it('records origins durably, as HMACs, and tells a requester how its origin relates to them', async () => {
    const victim = { location: 'https://a.example/private.tgz?sig=SIG-SECRET', credential: 'Basic VICTIM-SECRET', display: 'https://a.example/private.tgz' };
    const store = new FsContentStore({ root });
    expect(await store.access('k', victim)).toBe('miss');
    await store.put('k', writeFileOf('f', 'private'), victim);
    expect(await store.access('k', victim)).toBe('proven');
    expect(await store.access('k', { ...victim, credential: undefined })).toBe('same-location');
    expect(await store.access('k', { ...victim, credential: 'Basic OTHER' })).toBe('same-location');
    // another query string is another location: a pre-signed URL's signature is a credential
    expect(await store.access('k', { ...victim, location: 'https://a.example/private.tgz' })).toBe('elsewhere');
    expect(await store.access('k', { location: 'https://evil.example/x', credential: undefined, display: '' })).toBe('elsewhere');
    // nothing secret is written in the clear
    const meta = await readFile(join(root, 'entries', entryName('k'), 'meta.json'), 'utf8');
    expect(meta).not.toContain('SECRET');
    // a restarted controller (store reopened from disk) sees the same records
    const reopened = new FsContentStore({ root });
    expect(await reopened.access('k', victim)).toBe('proven');
    expect(await reopened.access('k', { ...victim, credential: undefined })).toBe('same-location');
    // a proof without download (same location) and with a verifying download (elsewhere)
    await reopened.addOrigin('k', { ...victim, credential: 'Basic OTHER' });
    expect(await reopened.access('k', { ...victim, credential: 'Basic OTHER' })).toBe('proven');
    const evil = { location: 'https://evil.example/x', credential: undefined, display: 'https://evil.example/x' };
    await expect(reopened.addOrigin('k', evil, async () => Promise.reject(new Error('digest mismatch')))).rejects.toThrow('digest mismatch');
    expect(await reopened.access('k', evil)).toBe('elsewhere');
    let scratch = '';
    await reopened.addOrigin('k', evil, async (d) => {
      scratch = d;
      await writeFile(join(d, 'f'), 'private');
    });
    expect(await reopened.access('k', evil)).toBe('proven');
    // the verifying download was discarded; the stored content is untouched
    expect(scratch).not.toBe('');
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    expect(await readFile(join((await reopened.open('k'))!, 'f'), 'utf8')).toBe('private');
    // anonymous access proven at a location serves every requester at that location
    await reopened.put('pub', writeFileOf('f', 'public'), { ...evil, credential: undefined });
    expect(await reopened.access('pub', { ...evil, credential: 'Basic ANY' })).toBe('proven');
  });

  it('putComputed records the origin also when the content was already there (the download proved it)', async () => {
    const store = new FsContentStore({ root });
    const a = { location: 'https://a.example/x', credential: undefined, display: 'https://a.example/x' };
    const b = { location: 'https://b.example/x', credential: 'Bearer t', display: 'https://b.example/x' };
    await store.putComputed(async (d) => (await writeFile(join(d, 'f'), 'same'), 'sha256:same'), a);
    expect(await store.access('sha256:same', b)).toBe('elsewhere');
    await store.putComputed(async (d) => (await writeFile(join(d, 'f'), 'same'), 'sha256:same'), b);
    expect(await store.access('sha256:same', b)).toBe('proven');
    expect(await store.list()).toHaveLength(1);
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

  it('a download that held its room keeps it while it is committed: another write cannot take it in between', async () => {
    const KIB = 1024;
    // the commit's eviction pass (list) is where another write used to get in
    let between: (() => Promise<void>) | undefined;
    class Gated extends FsContentStore {
      override async list() {
        const run = between;
        between = undefined;
        if (run) await run();
        return super.list();
      }
    }
    const store = new Gated({ root, maxBytes: 1024 * KIB });
    let other: unknown;
    const dir = await store.put('sha256:first', async (d, space) => {
      await space.charge(600 * KIB);
      await writeFile(join(d, 'big.bin'), Buffer.alloc(600 * KIB));
      // the store's measured total is forgotten (a removal does that), so the commit measures it
      // again with an eviction pass, as a commit past the kept total does
      await store.remove('sha256:absent');
      // once this download is written, before its commit has counted it: another write of 600 KiB
      between = async () => {
        const scratch = await store.scratch();
        other = await scratch.space.charge(600 * KIB).then(
          () => 'charged',
          (e: unknown) => e,
        );
        await scratch.dispose();
      };
    });
    expect(await readdir(dir)).toEqual(['big.bin']);
    expect(other).toMatchObject({ code: 'cache-full' });
  });
});
