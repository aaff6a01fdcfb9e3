/**
 * Puts each fetched source at its destination in one tree for the processor, then checks the
 * result against the containment rule (src/util/content-tree.ts: every symlink ends at a regular
 * file inside the tree, no special files). The check runs on the final tree because that is
 * where links meet: a destination can place one source's links next to another's files. A single
 * source at the root is used in place (no copy); otherwise the parts are copied into a scratch
 * directory of the content store, each part's bytes charged to the store's budget before it is
 * copied (`--cache-max-size` counts composed trees: one that does not fit is refused naming it),
 * and the directory removed — with its charge — on every path. Errors name paths relative to the
 * composed tree, never the store's directories.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, normalize, sep } from 'node:path';
import type { Scratch } from '../cache/content-store.ts';
import { describeFsError, verifyTree } from '../util/content-tree.ts';
import { treeBytes } from '../util/tree-bytes.ts';
import { SourceCode, sourceError } from './errors.ts';

export interface TreePart {
  dir: string;
  destination: string;
}

export interface ComposedTree {
  root: string;
  dispose(): Promise<void>;
}

function safeDestination(dest: string): string {
  const n = normalize(dest || '.');
  if (n.startsWith('/') || n === '..' || n.startsWith(`..${sep}`) || n.includes('\\')) {
    throw sourceError(`destination ${JSON.stringify(dest)} leaves the tree`, { stage: 'fetch', code: SourceCode.PathTraversal, subject: dest, terminal: true });
  }
  return n === '.' ? '' : n;
}

export interface ComposeOptions {
  signal?: AbortSignal | undefined;
  /** where to compose, counted against whose budget: the content store's `scratch` (default: an uncounted temp directory) */
  scratch?: () => Promise<Scratch>;
}

/**
 * Composes and verifies; throws a terminal HoistError (stage fetch) for a tree that breaks the
 * rule, the store's budget error (cache-full, cache-budget) for one that does not fit, or the
 * signal's reason once it fires (checked by every verification, before each link).
 */
export async function composeTree(parts: readonly TreePart[], opts: ComposeOptions = {}): Promise<ComposedTree> {
  const withSignal = opts.signal ? { signal: opts.signal } : {};
  const only = parts[0];
  if (parts.length === 1 && only && safeDestination(only.destination) === '') {
    await verifyTree(only.dir, { stage: 'fetch', ...withSignal });
    return { root: only.dir, dispose: async () => {} };
  }
  const work = await (opts.scratch ?? tempScratch)().catch((e: unknown) => {
    throw sourceError(`cannot create a directory to compose the sources in: ${describeFsError(e)}`, {
      stage: 'fetch',
      code: SourceCode.ComposeFailed,
      terminal: false,
      cause: e,
    });
  });
  const root = work.dir;
  try {
    for (const p of parts) {
      const dest = safeDestination(p.destination);
      // each part first, so no copy can go through a link of an earlier part (parts hold no
      // links to directories once verified); the final check judges links where they ended up
      await verifyTree(p.dir, { stage: 'fetch', ...(dest ? { prefix: dest } : {}), ...withSignal });
      await work.space?.charge(await treeBytes(p.dir));
      await cp(p.dir, join(root, dest), { recursive: true, verbatimSymlinks: true, force: true }).catch((e: unknown) => {
        throw sourceError(`cannot place a source at destination ${JSON.stringify(dest || '.')}: ${describeFsError(e)}`, {
          stage: 'fetch',
          code: SourceCode.ComposeFailed,
          subject: dest || '.',
          terminal: false,
          cause: e,
        });
      });
    }
    await verifyTree(root, { stage: 'fetch', ...withSignal });
  } catch (e) {
    await work.dispose();
    throw e;
  }
  return { root, dispose: () => work.dispose() };
}

/** a temp directory counted against nothing (composition without a content store) */
async function tempScratch(): Promise<Pick<Scratch, 'dir' | 'dispose'> & { space?: undefined }> {
  const dir = await mkdtemp(join(tmpdir(), 'hoist-tree-'));
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}
