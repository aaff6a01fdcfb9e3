/**
 * The content-addressed store: one directory per content key, written atomically (temp dir,
 * verify, rename) and shared by every BundleDeployment that asks for the same content.
 */
export interface ContentStore {
  has(key: string): Promise<boolean>;
  /** directory of the content; undefined when absent */
  open(key: string): Promise<string | undefined>;
  /**
   * Runs `write` into a fresh temp directory at most once per key at a time (concurrent callers
   * share the same in-flight promise), then renames it into place. Returns the final directory.
   */
  put(key: string, write: (tmpDir: string) => Promise<void>): Promise<string>;
  /** removes every entry whose key is not in `keep`; returns the keys removed */
  gc(keep: ReadonlySet<string>): Promise<string[]>;
  /** Optional: evicts least-recently-used entries not in `keep` until the store fits its size budget */
  enforceBudget?(keep: ReadonlySet<string>): Promise<string[]>;
  /**
   * Optional: for content whose key is known only after writing it (an unpinned download whose
   * digest is computed while streaming). `write` fills a fresh temp directory and returns the
   * key; the directory is renamed into place, or discarded when the key is already present.
   * Stores without it make such sources stage elsewhere and copy.
   */
  putComputed?(write: (tmpDir: string) => Promise<string>): Promise<{ key: string; dir: string }>;
}
