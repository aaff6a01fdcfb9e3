/**
 * One file (over 400 lines) because every operation below rests on the same layout and the
 * class's private state (in-flight writes, leases, per-entry meta locks, the origin key): the
 * atomicity and budget guarantees cannot be checked one part at a time.
 *
 * A ContentStore on the local filesystem.
 *
 * Layout under `root`:
 *   entries/<sha256(key)>/content/   the content handed out by `open`
 *   entries/<sha256(key)>/meta.json  { key, size, createdAt, lastUsed, origins }
 *   tmp/<pid>-<random>/              entries being written (or being deleted)
 *   origin-key                       random HMAC key for the origins recorded in meta.json
 *
 * Keys are hashed into directory names so that any key (`sha256:…`, `git:<commit>:<dir>`, an
 * image reference) maps to a safe, fixed-length name. An entry exists exactly when its
 * directory exists under `entries/`: it only ever appears there through one rename() of a
 * complete temp directory, and leaves through one rename() into `tmp/` before being deleted, so
 * a reader never sees a half-written or half-deleted entry. Temp directories left behind by a
 * crashed process are ignored and removed the next time a store opens the same root.
 *
 * Origins (docs/security.md, "Credentials and the content store"): every entry records, in its
 * meta.json, each origin (location + credential) that downloaded or proved the content, as HMACs
 * under the store's own key, so no URL query or credential is written in the clear and the record
 * survives restarts. `access` compares a requester's origin against them.
 *
 * Size budget (`maxBytes`): it covers the entries and every byte written towards the store that
 * is not an entry yet — downloads in flight (their writers charge each file before writing it:
 * `SpaceAllowance`) and trees composed in `scratch()` directories. Whenever a charge or a commit
 * would go over it, least-recently-used entries are evicted to make room, except entries being
 * written and entries handed out in the last LEASE_MS (a reconcile may still be reading them);
 * what cannot fit is refused: terminal when one write alone is larger than the whole budget,
 * transient when what is in use leaves no room. A write's charges are released when it ends, on
 * every path, and its temp directory removed. `enforceBudget(keep)` applies the budget during gc.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { systemClock, type Clock } from '../util/clock.ts';
import { formatBytes } from '../util/content-tree.ts';
import { HoistError } from '../util/errors.ts';
import { treeBytes } from '../util/tree-bytes.ts';
import type { ContentOrigin, ContentStore, OriginAccess, Scratch, SpaceAllowance } from './content-store.ts';
import { CacheCode, cacheError } from './errors.ts';

export interface FsContentStoreOptions {
  /** root directory; default `defaultContentRoot()` */
  root?: string;
  /** size budget in bytes, enforced on every commit and by `enforceBudget`; undefined = unlimited */
  maxBytes?: number;
  /** the time of leases and last-use stamps (default: the system clock) */
  clock?: Clock;
}

/** Metadata kept beside each entry; small enough to read for every entry during gc. */
export interface ContentEntryMeta {
  key: string;
  /** bytes of regular files in the entry (symlinks and directories count 0) */
  size: number;
  createdAt: string;
  lastUsed: string;
  /** origins that downloaded or proved this content */
  origins: StoredOrigin[];
}

/** An origin as kept on disk: location and credential as HMACs under the store's key. */
export interface StoredOrigin {
  location: string;
  /** HMAC of the credential identity, or "anonymous" */
  credential: string;
  /** the location as shown to operators (no userinfo, no query) */
  display: string;
}

/** `${HOIST_CACHE:-~/.cache/hoist}/content` */
export function defaultContentRoot(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.HOIST_CACHE && env.HOIST_CACHE.length > 0 ? env.HOIST_CACHE : join(homedir(), '.cache', 'hoist');
  return join(base, 'content');
}

/** Directory name for a key: hex sha256, so keys may contain any character. */
export function entryName(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

// Temp names carry the pid and a per-process id: a pid alone is reused across container restarts
// (the controller is often pid 1), so "same pid" does not mean "mine".
const INSTANCE = randomBytes(4).toString('hex');
const TEMP_PREFIX = `${process.pid}.${INSTANCE}-`;

// lastUsed is refreshed at most this often per entry: `open` is on the hot path of every
// reconcile and a metadata write each time would turn reads into writes.
const TOUCH_INTERVAL_MS = 60_000;
// entries handed out this recently are not evicted by the budget: a reconcile may be reading them
const LEASE_MS = 10 * 60_000;

/** one write's share of the budget; `release` gives it back (idempotent) */
class Allowance implements SpaceAllowance {
  charged = 0;
  constructor(
    private readonly store: { chargeTo(a: Allowance, bytes: number): Promise<void>; releaseFrom(a: Allowance): void },
    /** names the write in refusals: a content key, or what the scratch space is for */
    readonly subject: string,
    /** the write, as a refusal describes it: "this download", "the composed sources" */
    readonly what = 'this download',
  ) {}

  charge(bytes: number): Promise<void> {
    return this.store.chargeTo(this, bytes);
  }

  release(): void {
    this.store.releaseFrom(this);
  }
}

export class FsContentStore implements ContentStore {
  readonly root: string;
  readonly maxBytes: number | undefined;
  private readonly entriesDir: string;
  private readonly tmpDir: string;
  private readonly now: () => Date;
  private readonly inFlight = new Map<string, Promise<string>>();
  /** key → when it was last handed out (open, put) */
  private readonly leases = new Map<string, number>();
  /** serializes metadata rewrites per key (touch, addOrigin) */
  private readonly metaLocks = new Map<string, Promise<unknown>>();
  private originKey: Buffer | undefined;
  private ready: Promise<void> | undefined;
  /** bytes charged by writes in flight (downloads, composed trees), all together */
  private reserved = 0;
  /** bytes of the entries as last measured; undefined: measure at the next charge that needs it */
  private committed: number | undefined;

  constructor(options: FsContentStoreOptions = {}) {
    this.root = options.root ?? defaultContentRoot();
    this.maxBytes = options.maxBytes;
    const clock = options.clock ?? systemClock;
    this.now = () => new Date(clock.now());
    this.entriesDir = join(this.root, 'entries');
    this.tmpDir = join(this.root, 'tmp');
  }

  async has(key: string): Promise<boolean> {
    await this.init();
    return (await this.readMeta(key)) !== undefined;
  }

  /** Directory of the content, or undefined. Refreshes lastUsed (throttled). */
  async open(key: string): Promise<string | undefined> {
    await this.init();
    const meta = await this.readMeta(key);
    if (!meta) return undefined;
    this.leases.set(key, this.now().getTime());
    await this.touch(key, meta);
    return this.contentDir(key);
  }

  async access(key: string, origin: ContentOrigin): Promise<OriginAccess> {
    await this.init();
    const meta = await this.readMeta(key);
    if (!meta) return 'miss';
    const mine = this.storedOrigin(origin);
    const here = meta.origins.filter((o) => o.location === mine.location);
    if (here.length === 0) return 'elsewhere';
    // anonymous access proven here means anyone reaching this location may read it
    return here.some((o) => o.credential === mine.credential || o.credential === 'anonymous') ? 'proven' : 'same-location';
  }

  async addOrigin(key: string, origin: ContentOrigin, verify?: (scratchDir: string, space: SpaceAllowance) => Promise<void>): Promise<void> {
    await this.init();
    if (verify) {
      const tmp = await this.makeTemp();
      const space = new Allowance(this, key);
      try {
        await verify(join(tmp, 'content'), space);
      } finally {
        await rm(tmp, { recursive: true, force: true });
        space.release();
      }
    }
    await this.recordOrigin(key, this.storedOrigin(origin));
  }

  /** A directory in the store's temp area (same disk, cleaned on start after a crash) and its allowance. */
  async scratch(what = 'composed sources'): Promise<Scratch> {
    await this.init();
    const tmp = await this.makeTemp();
    const space = new Allowance(this, what, `the ${what}`);
    return {
      dir: join(tmp, 'content'),
      space,
      dispose: async () => {
        try {
          await rm(tmp, { recursive: true, force: true });
        } finally {
          space.release();
        }
      },
    };
  }

  /** counts `bytes` more for `a`, making room or refusing (see SpaceAllowance.charge) */
  async chargeTo(a: Allowance, bytes: number): Promise<void> {
    if (!(bytes > 0)) return;
    const max = this.maxBytes;
    if (max !== undefined && a.charged + bytes > max) {
      throw cacheError(
        `${a.what} would take more than the whole content-store budget of ${formatBytes(max)} (hoist run --cache-max-size): ${formatBytes(a.charged + bytes)} so far`,
        CacheCode.CacheBudget,
        a.subject,
        true,
      );
    }
    a.charged += bytes;
    this.reserved += bytes;
    if (max === undefined || (this.committed !== undefined && this.committed + this.reserved <= max)) return;
    const { total } = await this.evict(max - this.reserved, this.leasedNow());
    this.committed = total;
    if (total + this.reserved > max) {
      a.charged -= bytes;
      this.reserved -= bytes;
      throw this.fullError(a.subject, bytes, total, max);
    }
  }

  releaseFrom(a: Allowance): void {
    this.reserved -= a.charged;
    a.charged = 0;
  }

  /** `inFlight`: the writes in flight other than the refused one's own (default: all) */
  private fullError(subject: string, bytes: number, entries: number, max: number, inFlight = this.reserved): HoistError {
    return cacheError(
      `content store is full: ${formatBytes(entries)} of entries in use and ${formatBytes(inFlight)} of downloads and composed sources in flight leave no room for ${formatBytes(bytes)} more within its budget of ${formatBytes(max)} (hoist run --cache-max-size)`,
      CacheCode.CacheFull,
      subject,
      false,
    );
  }

  /** entries handed out in the last LEASE_MS, and `also` */
  private leasedNow(also?: string): (key: string) => boolean {
    const now = this.now().getTime();
    return (k) => k === also || now - (this.leases.get(k) ?? Number.NEGATIVE_INFINITY) < LEASE_MS;
  }

  /**
   * Idempotent: returns the existing directory when the key is present (the writer is not run).
   * Concurrent calls for one key share one in-flight write. A writer that throws leaves nothing
   * behind and the error goes to every waiting caller.
   */
  put(key: string, write: (tmpDir: string, space: SpaceAllowance) => Promise<void>, origin?: ContentOrigin): Promise<string> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const p = this.doPut(key, write, origin).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, p);
    return p;
  }

  /**
   * For content whose key is known only once it has been written (an unpinned download: the
   * digest is computed while streaming). `write` fills the temp dir and returns the key; the
   * directory is then renamed into place, or discarded when that key is already present; either
   * way `origin` is recorded (the download proved it).
   */
  async putComputed(write: (tmpDir: string, space: SpaceAllowance) => Promise<string>, origin?: ContentOrigin): Promise<{ key: string; dir: string }> {
    await this.init();
    const tmp = await this.makeTemp();
    const space = new Allowance(this, 'a download');
    let renamed = false;
    try {
      const key = await write(join(tmp, 'content'), space);
      // the bytes move from in flight to the entry: commit counts them as the entry, not twice,
      // and they stay reserved until it has (released in finally), so no other write takes
      // their room while the entry is committed
      const c = await this.commit(key, tmp, origin, true, space.charged);
      renamed = c.renamed;
      return { key, dir: c.dir };
    } finally {
      space.release();
      if (!renamed) await rm(tmp, { recursive: true, force: true });
    }
  }

  /** Removes every entry whose key is not in `keep` (and entries being written are kept). */
  async gc(keep: ReadonlySet<string>): Promise<string[]> {
    await this.init();
    const removed: string[] = [];
    for (const meta of await this.list()) {
      if (keep.has(meta.key) || this.inFlight.has(meta.key)) continue;
      await this.remove(meta.key);
      removed.push(meta.key);
    }
    return removed;
  }

  /**
   * Evicts least-recently-used entries not in `keep` until the store fits in `maxBytes`
   * (default: the constructor's budget). Entries in `keep` are never evicted, even when they
   * alone exceed the budget. Returns the keys removed.
   */
  async enforceBudget(keep: ReadonlySet<string>, maxBytes: number | undefined = this.maxBytes): Promise<string[]> {
    if (maxBytes === undefined) return [];
    await this.init();
    return (await this.evict(maxBytes, (k) => keep.has(k))).removed;
  }

  /** Evicts LRU entries (not in flight, not `kept`) until the total is at most `maxBytes`. */
  private async evict(maxBytes: number, kept: (key: string) => boolean): Promise<{ removed: string[]; total: number }> {
    const entries = await this.list();
    let total = entries.reduce((n, e) => n + e.size, 0);
    const candidates = entries
      .filter((e) => !kept(e.key) && !this.inFlight.has(e.key))
      .sort((a, b) => a.lastUsed.localeCompare(b.lastUsed) || a.createdAt.localeCompare(b.createdAt));
    const removed: string[] = [];
    for (const e of candidates) {
      if (total <= maxBytes) break;
      await this.remove(e.key);
      total -= e.size;
      removed.push(e.key);
    }
    return { removed, total };
  }

  /**
   * Makes room for `size` more bytes of entry under the budget (beside the writes in flight, but
   * for `own`: the committing writer's, which are these bytes), or refuses the entry.
   */
  private async makeRoom(key: string, size: number, own = 0): Promise<void> {
    const max = this.maxBytes;
    if (max === undefined) return;
    if (size > max)
      throw cacheError(
        `content of ${formatBytes(size)} is larger than the whole content-store budget of ${formatBytes(max)} (hoist run --cache-max-size)`,
        CacheCode.CacheBudget,
        key,
        true,
      );
    const others = () => this.reserved - own;
    // the entries' total as last measured, kept current by commits: while it and this entry fit,
    // nothing is listed (listing reads every entry's metadata: once per commit, quadratic in entries)
    if (this.committed !== undefined && this.committed + size + others() <= max) return;
    const { total } = await this.evict(max - size - others(), this.leasedNow(key));
    this.committed = total;
    if (total + size + others() > max) throw this.fullError(key, size, total, max, others());
  }

  /** Metadata of every complete entry. */
  async list(): Promise<ContentEntryMeta[]> {
    await this.init();
    const out: ContentEntryMeta[] = [];
    for (const name of await readdir(this.entriesDir)) {
      const meta = await readMetaFile(join(this.entriesDir, name, 'meta.json'));
      if (meta) out.push(meta);
    }
    return out;
  }

  /** Removes one entry; a missing key is not an error. */
  async remove(key: string): Promise<boolean> {
    await this.init();
    // measured again when a charge needs it
    this.committed = undefined;
    const trash = join(this.tmpDir, `${TEMP_PREFIX}rm-${randomBytes(6).toString('hex')}`);
    try {
      // rename first: the entry disappears atomically, the slow recursive delete happens out of sight
      await rename(join(this.entriesDir, entryName(key)), trash);
    } catch (e) {
      if (errCode(e) === 'ENOENT') return false;
      throw e;
    }
    await rm(trash, { recursive: true, force: true });
    return true;
  }

  private contentDir(key: string): string {
    return join(this.entriesDir, entryName(key), 'content');
  }

  private init(): Promise<void> {
    this.ready ??= (async () => {
      await mkdir(this.entriesDir, { recursive: true });
      await mkdir(this.tmpDir, { recursive: true });
      this.originKey = await loadOriginKey(join(this.root, 'origin-key'));
      await this.cleanStaleTemps();
    })();
    return this.ready;
  }

  // Temp dirs are named after the writing process; one whose process is gone is a crashed write.
  private async cleanStaleTemps(): Promise<void> {
    for (const name of await readdir(this.tmpDir)) {
      if (name.startsWith(TEMP_PREFIX)) continue;
      const pid = Number(name.split('.', 1)[0]);
      const otherLiveProcess = Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid);
      if (otherLiveProcess) continue;
      await rm(join(this.tmpDir, name), { recursive: true, force: true });
    }
  }

  private async makeTemp(): Promise<string> {
    const tmp = join(this.tmpDir, `${TEMP_PREFIX}${randomBytes(8).toString('hex')}`);
    // the parent exists (init): two plain mkdirs, not a recursive walk
    await mkdir(tmp);
    await mkdir(join(tmp, 'content'));
    return tmp;
  }

  private async doPut(key: string, write: (tmpDir: string, space: SpaceAllowance) => Promise<void>, origin: ContentOrigin | undefined): Promise<string> {
    await this.init();
    if (await this.readMeta(key)) {
      this.leases.set(key, this.now().getTime());
      return this.contentDir(key);
    }
    const tmp = await this.makeTemp();
    const space = new Allowance(this, key);
    let renamed = false;
    try {
      await write(join(tmp, 'content'), space);
      // the bytes move from in flight to the entry (see putComputed); just checked above: a key
      // that appeared meanwhile is caught by the rename
      const c = await this.commit(key, tmp, origin, false, space.charged);
      renamed = c.renamed;
      return c.dir;
    } finally {
      space.release();
      // discards a failed or superseded write; after our own rename nothing is left to remove
      if (!renamed) await rm(tmp, { recursive: true, force: true });
    }
  }

  /**
   * Writes meta.json into `tmp` and renames it into place; the first writer of a key wins. The
   * writer's origin is recorded either way: its download (digest verified) proved it. `check`:
   * look for the key before measuring and making room (false when the caller just did).
   * `renamed`: `tmp` is gone (it became the entry); otherwise the caller removes it.
   */
  /** `own`: what the writer of `tmp` has in flight, which becomes the entry (not counted twice) */
  private async commit(key: string, tmp: string, origin: ContentOrigin | undefined, check = true, own = 0): Promise<{ dir: string; renamed: boolean }> {
    const now = this.now().toISOString();
    const stored = origin ? this.storedOrigin(origin) : undefined;
    this.leases.set(key, this.now().getTime());
    if (check && (await this.readMeta(key))) {
      if (stored) await this.recordOrigin(key, stored);
      return { dir: this.contentDir(key), renamed: false };
    }
    const size = await treeBytes(join(tmp, 'content'));
    await this.makeRoom(key, size, own);
    const meta: ContentEntryMeta = { key, size, createdAt: now, lastUsed: now, origins: stored ? [stored] : [] };
    await writeFile(join(tmp, 'meta.json'), JSON.stringify(meta));
    const final = join(this.entriesDir, entryName(key));
    for (let attempt = 0; ; attempt++) {
      try {
        await rename(tmp, final);
        if (this.committed !== undefined) this.committed += size;
        return { dir: this.contentDir(key), renamed: true };
      } catch (e) {
        const code = errCode(e);
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
        // another process (or a putComputed of the same content) got there first: same content, keep theirs
        if (await this.readMeta(key)) {
          if (stored) await this.recordOrigin(key, stored);
          return { dir: this.contentDir(key), renamed: false };
        }
        // a directory without valid metadata is debris (tampering, a foreign tool): replace it once
        if (attempt > 0) throw e;
        await this.remove(key);
      }
    }
  }

  private async readMeta(key: string): Promise<ContentEntryMeta | undefined> {
    const meta = await readMetaFile(join(this.entriesDir, entryName(key), 'meta.json'));
    // a hash collision is astronomically unlikely, but a mismatch must never serve wrong content
    return meta && meta.key === key ? meta : undefined;
  }

  private async touch(key: string, meta: ContentEntryMeta): Promise<void> {
    const now = this.now();
    if (now.getTime() - Date.parse(meta.lastUsed) < TOUCH_INTERVAL_MS) return;
    await this.updateMeta(key, (m) => ({ ...m, lastUsed: now.toISOString() }));
  }

  private async recordOrigin(key: string, origin: StoredOrigin): Promise<void> {
    const found = await this.updateMeta(key, (m) =>
      m.origins.some((o) => o.location === origin.location && o.credential === origin.credential) ? undefined : { ...m, origins: [...m.origins, origin] },
    );
    if (!found) throw cacheError('content left the store while its access was being recorded', CacheCode.CacheRace, key, false);
  }

  /**
   * Rewrites meta.json atomically (temp file + rename), one rewrite per key at a time. `change`
   * returns undefined for "nothing to write". Returns false when the entry is gone.
   */
  private updateMeta(key: string, change: (m: ContentEntryMeta) => ContentEntryMeta | undefined): Promise<boolean> {
    const run = async (): Promise<boolean> => {
      const meta = await this.readMeta(key);
      if (!meta) return false;
      const next = change(meta);
      if (!next) return true;
      const dir = join(this.entriesDir, entryName(key));
      const tmpMeta = join(dir, `meta.json.${process.pid}-${randomBytes(4).toString('hex')}`);
      try {
        await writeFile(tmpMeta, JSON.stringify(next));
        await rename(tmpMeta, join(dir, 'meta.json'));
        return true;
      } catch (e) {
        // the entry was removed concurrently
        await rm(tmpMeta, { force: true });
        if (errCode(e) !== 'ENOENT') throw e;
        return false;
      }
    };
    const prev = this.metaLocks.get(key) ?? Promise.resolve();
    const p = prev.then(run, run);
    this.metaLocks.set(key, p);
    void p
      .finally(() => {
        if (this.metaLocks.get(key) === p) this.metaLocks.delete(key);
      })
      .catch(() => undefined);
    return p;
  }

  private storedOrigin(origin: ContentOrigin): StoredOrigin {
    const mac = (kind: string, v: string): string => createHmac('sha256', this.originKey!).update(`${kind}\0${v}`).digest('hex');
    return {
      location: mac('location', origin.location),
      credential: origin.credential === undefined ? 'anonymous' : mac('credential', origin.credential),
      display: origin.display,
    };
  }
}

async function readMetaFile(path: string): Promise<ContentEntryMeta | undefined> {
  let raw: string;
  try {
    raw = await readFile(path, 'utf8');
  } catch (e) {
    if (errCode(e) === 'ENOENT' || errCode(e) === 'ENOTDIR') return undefined;
    throw e;
  }
  try {
    const m = JSON.parse(raw) as Partial<ContentEntryMeta>;
    if (typeof m.key !== 'string' || typeof m.size !== 'number') return undefined;
    // an entry without origins (written before they were recorded) proves nothing: every hit re-fetches once
    const origins = Array.isArray(m.origins) ? m.origins.filter((o) => typeof o?.location === 'string' && typeof o.credential === 'string') : [];
    return { key: m.key, size: m.size, createdAt: String(m.createdAt ?? ''), lastUsed: String(m.lastUsed ?? m.createdAt ?? ''), origins };
  } catch {
    return undefined;
  }
}

/** The store's HMAC key: created once (mode 0600), then read; kept beside the entries it protects. */
async function loadOriginKey(path: string): Promise<Buffer> {
  try {
    await writeFile(path, randomBytes(32), { flag: 'wx', mode: 0o600 });
  } catch (e) {
    if (errCode(e) !== 'EEXIST') throw e;
  }
  const key = await readFile(path);
  if (key.length < 32) throw new Error(`content store key ${path} is damaged; remove it (the store's access records are then re-proven)`);
  return key;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else
    return errCode(e) === 'EPERM';
  }
}

function errCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}
