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
}
