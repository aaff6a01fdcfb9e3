/**
 * Puts each fetched source at its destination in one tree for the processor. A single source at
 * the root is used in place (no copy); otherwise the parts are copied into a temp directory.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, normalize, sep } from 'node:path';
import { HoistError } from '../util/errors.ts';

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
    throw new HoistError(`destination ${JSON.stringify(dest)} leaves the tree`, { stage: 'fetch', reason: 'FetchFailed', code: 'path-traversal', subject: dest, terminal: true });
  }
  return n === '.' ? '' : n;
}

export async function composeTree(parts: readonly TreePart[], workDir = tmpdir()): Promise<ComposedTree> {
  const only = parts[0];
  if (parts.length === 1 && only && safeDestination(only.destination) === '') return { root: only.dir, dispose: async () => {} };
  const root = await mkdtemp(join(workDir, 'hoist-tree-'));
  try {
    for (const p of parts) {
      // copies keep symlinks as links; the unpacker already refused links that leave their tree
      await cp(p.dir, join(root, safeDestination(p.destination)), { recursive: true, verbatimSymlinks: true, force: true });
    }
  } catch (e) {
    await rm(root, { recursive: true, force: true });
    throw e;
  }
  return { root, dispose: () => rm(root, { recursive: true, force: true }) };
}
