/**
 * A byte bound on what one `git fetch` writes. git offers none for fetching: `receive.maxInputSize`
 * applies to pushes only, and fetch-pack does not pass index-pack's `--max-input-size`. So the
 * received pack is watched on disk: with `fetch.unpackLimit=1` (PACK_CONFIG) every fetch keeps
 * its objects as one pack, written while it arrives as `objects/pack/tmp_pack_*`; the object
 * store is measured every PACK_WATCH_MS and the git process group is killed once it passes the
 * limit. After the fetch it is measured once more, so whether a pack is refused does not depend
 * on timing; only how far the disk overshoots before the kill does (what arrives in 100 ms).
 * Each measurement is also handed to `measured` (the content store's budget, which may refuse:
 * git is then killed the same way and the refusal is the error).
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { formatBytes } from '../../util/content-tree.ts';
import { HoistError } from '../../util/errors.ts';
import { runGit, type GitRunOptions } from './git-cli.ts';
import { SourceCode, sourceError } from '../errors.ts';

/** git configuration that keeps every fetched pack as one file (never loose objects) */
export const PACK_CONFIG: ReadonlyArray<readonly [string, string]> = [['fetch.unpackLimit', '1']];

/** how often the object store is measured while a fetch runs */
const PACK_WATCH_MS = 100;

/** Bytes of every file under `<gitDir>/objects` (a few files: packs, their indexes). Never throws. */
export async function objectStoreBytes(gitDir: string): Promise<number> {
  let total = 0;
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile())
        total += await stat(p).then(
          (s) => s.size,
          () => 0,
        );
    }
  };
  await walk(join(gitDir, 'objects'));
  return total;
}

/**
 * Runs one `git fetch` into `gitDir` and refuses (terminal `pack-too-large`, stage fetch) an
 * object store larger than `maxBytes`, killing git as soon as the watch sees it. Other failures
 * are git's, as runGit reports them; the caller's signal still applies.
 */
export async function fetchWithPackLimit(
  args: readonly string[],
  gitDir: string,
  maxBytes: number,
  subject: string,
  run: Omit<GitRunOptions, 'input'>,
  measured?: (bytes: number) => Promise<void>,
): Promise<void> {
  const tooLarge = (bytes: number): HoistError =>
    sourceError(`the fetched objects take ${bytes} bytes, more than the limit of ${formatBytes(maxBytes)} per fetch (git packs)`, {
      stage: 'fetch',
      code: SourceCode.PackTooLarge,
      subject,
      terminal: true,
    });
  const ctl = new AbortController();
  const onParent = (): void => ctl.abort(run.signal?.reason);
  if (run.signal?.aborted) onParent();
  run.signal?.addEventListener('abort', onParent, { once: true });
  let over: number | undefined;
  let refused: unknown;
  let measuring: Promise<void> | undefined;
  const watch = setInterval(() => {
    if (measuring) return;
    measuring = (async () => {
      const bytes = await objectStoreBytes(gitDir);
      if (bytes > maxBytes && over === undefined) {
        over = bytes;
        ctl.abort();
        return;
      }
      await measured?.(bytes).catch((e: unknown) => {
        refused ??= e;
        ctl.abort();
      });
    })().finally(() => (measuring = undefined));
  }, PACK_WATCH_MS);
  try {
    await runGit(args, { ...run, signal: ctl.signal });
  } catch (e) {
    await measuring;
    if (over !== undefined) throw tooLarge(over);
    if (refused !== undefined) throw refused;
    throw e;
  } finally {
    clearInterval(watch);
    run.signal?.removeEventListener('abort', onParent);
  }
  await measuring;
  if (refused !== undefined) throw refused;
  const bytes = await objectStoreBytes(gitDir);
  if (bytes > maxBytes) throw tooLarge(bytes);
  await measured?.(bytes);
}
