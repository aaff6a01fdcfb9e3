import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Sum of the sizes of the regular files under `dir`; symlinks are not followed (they count 0). */
export async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) total += (await lstat(join(e.parentPath, e.name))).size;
  }
  return total;
}
