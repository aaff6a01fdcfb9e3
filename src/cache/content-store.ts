/**
 * The content-addressed store: one directory per content key, written atomically (temp dir,
 * verify, rename) and shared by every BundleDeployment that asks for the same content.
 */
/**
 * Where an entry's content was fetched from, and with which credential. A cache hit proves
 * access at the content's own location (DESIGN §2, docs/security.md): the store records every
 * origin that fetched or proved the content, durably, so the proof survives restarts.
 */
export interface ContentOrigin {
  /** the location, compared exactly: http URL (with query), git repository URL, registry/repository */
  location: string;
  /** opaque identity of the credential used (a hash is fine); undefined = anonymous */
  credential?: string | undefined;
  /** the location as shown to operators: no userinfo, no query */
  display: string;
}

/**
 * How an entry relates to a requester's origin:
 * - `miss`: no entry;
 * - `proven`: this location with this credential (or anonymously) already fetched or proved it;
 * - `same-location`: fetched at this location, but with another credential: prove access with
 *   the cheapest authenticated request before serving;
 * - `elsewhere`: fetched only at other locations: a new fetch that verifies the digest.
 */
export type OriginAccess = 'miss' | 'proven' | 'same-location' | 'elsewhere';

/**
 * Bytes on the store's disk that are not an entry yet, counted against the store's size budget
 * while they exist: a download in flight (charged by the writer as it writes, before each file's
 * data) and a tree composed from several sources. Released when the write ends, however it ends.
 */
export interface SpaceAllowance {
  /**
   * Counts `bytes` more, evicting least-recently-used entries not in use to make room. Throws a
   * HoistError naming the budget (hoist run --cache-max-size): terminal `cache-budget` when this
   * allowance alone outgrows the whole budget, transient `cache-full` when entries in use and
   * other writes in flight leave no room (nothing is counted then).
   */
  charge(bytes: number): Promise<void>;
  /** bytes counted so far */
  readonly charged: number;
}

/** a directory on the store's disk for work outside entries (a composed tree), with its allowance */
export interface Scratch {
  dir: string;
  space: SpaceAllowance;
  /** removes the directory and releases what was charged */
  dispose(): Promise<void>;
}

export interface ContentStore {
  has(key: string): Promise<boolean>;
  /** directory of the content; undefined when absent */
  open(key: string): Promise<string | undefined>;
  /**
   * Runs `write` into a fresh temp directory at most once per key at a time (concurrent callers
   * share the same in-flight promise), then renames it into place. Returns the final directory.
   * `write` charges what it writes to `space` (a writer that does not is counted when it lands).
   */
  put(key: string, write: (tmpDir: string, space: SpaceAllowance) => Promise<void>, origin?: ContentOrigin): Promise<string>;
  /** how the entry for `key` relates to `origin` (see OriginAccess) */
  access(key: string, origin: ContentOrigin): Promise<OriginAccess>;
  /**
   * Records `origin` as proven for an existing entry. With `verify`, runs it first into a scratch
   * directory that is discarded (a download whose digest check is the proof); without, the caller
   * has already proven access (an authenticated request at the same location).
   */
  addOrigin(key: string, origin: ContentOrigin, verify?: (scratchDir: string, space: SpaceAllowance) => Promise<void>): Promise<void>;
  /** removes every entry whose key is not in `keep`; returns the keys removed */
  gc(keep: ReadonlySet<string>): Promise<string[]>;
  /** Optional: evicts least-recently-used entries not in `keep` until the store fits its size budget */
  enforceBudget?(keep: ReadonlySet<string>): Promise<string[]>;
  /**
   * For content whose key is known only after writing it (an unpinned download whose digest is
   * computed while streaming). `write` fills a fresh temp directory and returns the key; the
   * directory is renamed into place, or discarded when the key is already present. Either way the
   * download proved `origin`, which is recorded.
   */
  putComputed(write: (tmpDir: string, space: SpaceAllowance) => Promise<string>, origin?: ContentOrigin): Promise<{ key: string; dir: string }>;
  /** a fresh directory on the store's disk whose bytes the caller charges to its allowance; `what` names it in refusals (default "composed sources") */
  scratch(what?: string): Promise<Scratch>;
}
