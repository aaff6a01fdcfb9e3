/**
 * Puts each fetched source at its destination in one tree for the processor, then checks the
 * result against the containment rule (src/util/content-tree.ts: every symlink ends at a regular
 * file inside the tree, no special files). The check runs on the final tree because that is
 * where links meet: a destination can place one source's links next to another's files. A single
 * source at the root is used in place (no copy); otherwise the parts are copied into a temp
 * directory. Errors name paths relative to the composed tree, never the store's directories.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, normalize, sep } from 'node:path';
import { describeFsError, verifyTree } from '../util/content-tree.ts';
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

/**
 * Composes and verifies; throws a terminal HoistError (stage fetch) for a tree that breaks the
 * rule, or the signal's reason once it fires (checked by every verification, before each link).
 */
export async function composeTree(parts: readonly TreePart[], workDir = tmpdir(), signal?: AbortSignal): Promise<ComposedTree> {
  const withSignal = signal ? { signal } : {};
  const only = parts[0];
  if (parts.length === 1 && only && safeDestination(only.destination) === '') {
    await verifyTree(only.dir, { stage: 'fetch', ...withSignal });
    return { root: only.dir, dispose: async () => {} };
  }
  const root = await mkdtemp(join(workDir, 'hoist-tree-')).catch((e: unknown) => {
    throw sourceError(`cannot create a directory to compose the sources in: ${describeFsError(e)}`, { stage: 'fetch', code: SourceCode.ComposeFailed, terminal: false, cause: e });
  });
  try {
    for (const p of parts) {
      const dest = safeDestination(p.destination);
      // each part first, so no copy can go through a link of an earlier part (parts hold no
      // links to directories once verified); the final check judges links where they ended up
      await verifyTree(p.dir, { stage: 'fetch', ...(dest ? { prefix: dest } : {}), ...withSignal });
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
    await rm(root, { recursive: true, force: true });
    throw e;
  }
  return { root, dispose: () => rm(root, { recursive: true, force: true }) };
}
