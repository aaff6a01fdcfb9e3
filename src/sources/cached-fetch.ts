/**
 * A store hit proves access at the content's own location (DESIGN §2, docs/security.md). Every
 * source's `fetch` goes through `fetchThroughStore`:
 *
 * - miss → download (verifying the digest) into the store, recording this origin;
 * - proven (this location, this credential or anonymous access, recorded durably) → serve;
 * - same location, another credential → the source's cheapest authenticated request (HEAD,
 *   manifest HEAD, ref advertisement) with the requester's own credential, then serve;
 * - fetched only elsewhere → a new download from the requester's location, verified against the
 *   digest and discarded (the stored copy is byte-identical), then serve. A 200 from the
 *   requester's own server therefore never unlocks someone else's content.
 *
 * Concurrent misses share one download (the store's in-flight put); when the shared download
 * fails, a caller that only joined it tries its own (another BD's credentials or CA failing must
 * not fail this one).
 */
import type { ContentOrigin, ContentStore, SpaceAllowance } from '../cache/content-store.ts';
import { SourceCode, sourceError } from './errors.ts';

/** how a fetch was served: from the store as is, after proving access, or by a download */
export type StoreOutcome = 'hit' | 'proved' | 'downloaded';

export interface StoreFetch {
  store: ContentStore;
  key: string;
  origin: ContentOrigin;
  /** downloads into `dir`, failing unless the content matches `key`; charges what it writes to `space` */
  download(dir: string, space: SpaceAllowance): Promise<void>;
  /** the cheapest request proving `origin`'s credential may read the content at its location */
  prove(): Promise<void>;
  subject: string;
  /** told how the fetch was served, once it was (metrics) */
  observe?: (outcome: StoreOutcome) => void;
}

/** Returns the store directory once this origin's access is proven. */
export async function fetchThroughStore(f: StoreFetch): Promise<string> {
  let downloaded = false;
  for (let round = 0; round < 3; round++) {
    const access = await f.store.access(f.key, f.origin);
    if (access === 'miss') {
      // a concurrent put for another origin may have done the download: the next round checks
      let ran = false;
      let dir: string;
      try {
        dir = await f.store.put(
          f.key,
          (dir, space) => {
            ran = true;
            return f.download(dir, space);
          },
          f.origin,
        );
      } catch (e) {
        // joined another BD's download, which failed with its own credentials or CA: not ours to report
        if (ran) throw e;
        continue;
      }
      // our own download landed with our origin recorded: serve it without reading it back
      if (ran) {
        f.observe?.('downloaded');
        return dir;
      }
      downloaded = true;
      continue;
    }
    if (access === 'same-location') {
      await f.prove();
      await f.store.addOrigin(f.key, f.origin);
    } else if (access === 'elsewhere') {
      await f.store.addOrigin(f.key, f.origin, f.download);
      downloaded = true;
    }
    const dir = await f.store.open(f.key);
    if (dir !== undefined) {
      f.observe?.(downloaded ? 'downloaded' : access === 'same-location' ? 'proved' : 'hit');
      return dir;
    }
  }
  throw sourceError('content kept leaving the store while it was fetched', { stage: 'fetch', code: SourceCode.CacheRace, subject: f.subject, terminal: false });
}
