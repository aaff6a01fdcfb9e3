/**
 * The containment rule (src/util/content-tree.ts) on real directories, written as an attacker
 * would: each escape points at a real file outside the tree whose content must never come back.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContentTree, verifyTree } from '../../../src/util/content-tree.ts';
import { failure } from '../../support/failure.ts';

let work: string;
let root: string;
const SECRET = 'outside-secret-7f3a';

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-ct-'));
  root = join(work, 'bundle', 'tree');
  await mkdir(join(root, 'sub/deep'), { recursive: true });
  await writeFile(join(work, 'bundle', 'secret.txt'), SECRET);
  await writeFile(join(root, 'real.yaml'), 'kind: A\n');
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

const ctx = { stage: 'process' as const, who: 'test processor' };
const tree = (limits = { maxFileBytes: 1024, maxTotalBytes: 4096 }): ContentTree => new ContentTree(root, { ...ctx, limits });

describe('links that stay inside the tree', () => {
  it('are followed, through chains and directories', async () => {
    await symlink('real.yaml', join(root, 'a.yaml'));
    await symlink('a.yaml', join(root, 'b.yaml'));
    await symlink('../../real.yaml', join(root, 'sub/deep/c.yaml'));
    await writeFile(join(root, 'sub/f.yaml'), 'kind: F\n');
    await symlink('../../sub/./deep/../f.yaml', join(root, 'sub/deep/d.yaml'));
    expect(await verifyTree(root, ctx)).toEqual({ files: 2, symlinks: 4, bytes: 0 });
    const t = tree();
    expect(await t.readText('b.yaml')).toBe('kind: A\n');
    expect(await t.readText('sub/deep/c.yaml')).toBe('kind: A\n');
    expect(await t.readText('sub/deep/d.yaml')).toBe('kind: F\n');
    expect(await t.readTextOptional('missing.yaml')).toBeUndefined();
    // a directory known from an earlier read is still a directory, not the file read before it
    expect((await failure(t.read('sub/deep/.'))).code).toBe('not-a-regular-file');
  });
});

describe('links that leave the tree, or end anywhere but at a regular file', () => {
  const cases: Array<[string, (r: string) => Promise<void>, string, string, RegExp]> = [
    ['absolute target', (r) => symlink('/etc/hostname', join(r, 'x.yaml')), 'x.yaml', 'symlink-escape', /absolute path "\/etc\/hostname"/],
    ['.. above the root', (r) => symlink('../secret.txt', join(r, 'x.yaml')), 'x.yaml', 'symlink-escape', /outside the content tree/],
    [
      'a chain that only escapes once resolved (y -> sub/deep, x -> y/../../../secret.txt)',
      async (r) => {
        await symlink('sub/deep', join(r, 'y'));
        await symlink('y/../../../secret.txt', join(r, 'x.yaml'));
      },
      'x.yaml',
      'symlink-escape',
      /outside/,
    ],
    [
      'a chain through a link to "." (y -> ., x -> y/../secret.txt)',
      async (r) => {
        await symlink('.', join(r, 'sub/y'));
        await symlink('y/../../secret.txt', join(r, 'sub/x.yaml'));
      },
      'sub/x.yaml',
      'symlink-escape',
      /outside/,
    ],
    ['/proc/self/environ', (r) => symlink('/proc/self/environ', join(r, 'x.yaml')), 'x.yaml', 'symlink-escape', /"\/proc\/self\/environ"/],
    ['/dev/zero by a relative path', (r) => symlink('../'.repeat(40) + 'dev/zero', join(r, 'x.yaml')), 'x.yaml', 'symlink-escape', /outside/],
    [
      'a loop',
      async (r) => {
        await symlink('b.yaml', join(r, 'a.yaml'));
        await symlink('a.yaml', join(r, 'b.yaml'));
      },
      'a.yaml',
      'symlink-escape',
      /more than 40 levels of links \(the limit per chain/,
    ],
    ['a dangling link', (r) => symlink('nothing.yaml', join(r, 'x.yaml')), 'x.yaml', 'not-found', /does not exist in the content tree/],
    ['a link to a directory', (r) => symlink('sub', join(r, 'x')), 'x', 'not-a-regular-file', /a directory/],
  ];
  for (const [name, plant, path, code, message] of cases) {
    it(`${name}: refused by verifyTree and by the reader, naming ${path}`, async () => {
      await plant(root);
      const v = await failure(verifyTree(root, { ...ctx, prefix: 'bundle' }));
      expect(v).toMatchObject({ code, subject: `bundle/${path}`, terminal: true, stage: 'process' });
      expect(v.message).toMatch(message);
      expect(v.message).toContain(`"bundle/${path}"`);
      const r = await failure(tree().read(path));
      expect(r).toMatchObject({ code, subject: path });
      expect(r.message).toMatch(/^test processor: /);
      expect(r.message).not.toContain(SECRET);
    });
  }

  it('a fifo in the tree is refused (reading it would block forever)', async () => {
    execFileSync('mkfifo', [join(root, 'sub/pipe.yaml')]);
    expect(await failure(verifyTree(root, ctx))).toMatchObject({ code: 'special-file', subject: 'sub/pipe.yaml' });
    expect(await failure(tree().read('sub/pipe.yaml'))).toMatchObject({ code: 'special-file', subject: 'sub/pipe.yaml' });
    await symlink('sub/pipe.yaml', join(root, 'p.yaml'));
    expect((await failure(tree().read('p.yaml'))).message).toMatch(/points to "sub\/pipe.yaml", which is a fifo/);
  });
});

describe('size caps', () => {
  it('per file and per tree, naming the file and the cap', async () => {
    await writeFile(join(root, 'big.yaml'), 'x'.repeat(2000));
    const big = await failure(tree().read('big.yaml'));
    expect(big).toMatchObject({ code: 'too-large', subject: 'big.yaml', terminal: true });
    expect(big.message).toBe('test processor: "big.yaml" is 2000 bytes, over the limit of 1 KiB per file');
    const t = tree({ maxFileBytes: 4096, maxTotalBytes: 2048 });
    await t.read('big.yaml');
    const total = await failure(t.read('big.yaml'));
    expect(total.message).toMatch(/over|more than the limit of 2 KiB per bundle/);
    const v = await failure(verifyTree(root, { ...ctx, limits: { maxFileBytes: 1024 } }));
    expect(v).toMatchObject({ code: 'too-large', subject: 'big.yaml' });
  });
});
