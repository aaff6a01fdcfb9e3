/**
 * The repository stands alone: a clone with nothing beside it runs the demo, the tests and the
 * benchmarks, so no code, test, benchmark or script reaches outside it — not into a sibling
 * `shared` folder, nor into the absolute paths of the machine it was written on.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
// spelled in pieces so this file does not match itself
const OUTSIDE = [['..', 'shared'].join('/'), ['', 'work', ''].join('/')];

function* files(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}

describe('the repository stands alone', () => {
  it('no file in src/, test/, bench/, scripts/ or .ci/ refers to a sibling shared folder or a machine path', () => {
    const found: string[] = [];
    for (const top of ['src', 'test', 'bench', 'scripts', '.ci']) {
      for (const path of files(join(ROOT, top))) {
        const text = readFileSync(path, 'utf8');
        for (const needle of OUTSIDE) if (text.includes(needle)) found.push(`${relative(ROOT, path)}: ${needle}`);
      }
    }
    expect(found).toEqual([]);
  });
});
