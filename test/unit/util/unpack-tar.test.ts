import { lstat, mkdtemp, readFile, readlink, readdir, rm, mkdir, writeFile, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { detectCompression, unpackTar, zstdSupported } from '../../../src/util/unpack-tar.ts';
import { buildTar, buildTarGz, chunked, fileHeader } from './tar-fixtures.ts';
import { failure } from '../../support/failure.ts';

let work: string;
let dest: string;
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-unpack-'));
  dest = join(work, 'out');
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

async function tree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const ent of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = prefix + ent.name;
    if (ent.isDirectory()) out.push(`${rel}/`, ...(await tree(join(dir, ent.name), `${rel}/`)));
    else if (ent.isSymbolicLink()) out.push(`${rel} -> ${await readlink(join(dir, ent.name))}`);
    else out.push(rel);
  }
  return out;
}

describe('unpackTar: well-formed archives', () => {
  const items = [
    { header: { name: './', type: 'directory' as const } },
    { header: { name: './manifests/', type: 'directory' as const } },
    { header: { name: './manifests/a.yaml' }, body: 'kind: A\n' },
    { header: { name: 'manifests/sub/b.yaml', mode: 0o4755 }, body: 'kind: B\n' },
    { header: { name: 'link.yaml', type: 'symlink' as const, linkname: 'manifests/a.yaml' } },
    { header: { name: 'manifests/hard.yaml', type: 'link' as const, linkname: 'manifests/a.yaml' } },
  ];

  it('unpacks a plain tar, across chunk boundaries', async () => {
    const r = await unpackTar(chunked(await buildTar(items), 100), dest);
    expect(r).toEqual({ compression: 'none', files: 5, bytes: 16, links: 1 });
    expect(await tree(dest)).toEqual([
      'link.yaml -> manifests/a.yaml',
      'manifests/',
      'manifests/a.yaml',
      'manifests/hard.yaml',
      'manifests/sub/',
      'manifests/sub/b.yaml',
    ]);
    expect(await readFile(join(dest, 'manifests/hard.yaml'), 'utf8')).toBe('kind: A\n');
    // setuid is dropped, execute bits kept
    expect((await lstat(join(dest, 'manifests/sub/b.yaml'))).mode & 0o7777).toBe(0o755);
  });

  it('detects gzip and zstd by magic bytes', async () => {
    const plain = await buildTar(items);
    expect(detectCompression(gzipSync(plain))).toBe('gzip');
    expect((await unpackTar(chunked(gzipSync(plain)), dest)).compression).toBe('gzip');
    expect(zstdSupported()).toBe(true); // node 24 has zlib zstd
    const dest2 = join(work, 'zstd');
    expect((await unpackTar(chunked(zstdCompressSync(plain)), dest2)).compression).toBe('zstd');
    expect(await tree(dest2)).toEqual(await tree(dest));
  });

  it('refuses a body that is not a tar as bad-archive', async () => {
    const e = await failure(unpackTar(chunked(Buffer.from('<html>not found</html>'.repeat(100))), dest));
    expect(e.code).toBe('bad-archive');
    expect(e.terminal).toBe(true);
    expect(e.stage).toBe('fetch');
  });

  it('refuses a truncated gzip as bad-archive', async () => {
    const gz = await buildTarGz([{ header: { name: 'a.yaml' }, body: 'x'.repeat(100_000) }]);
    const e = await failure(unpackTar(chunked(gz.subarray(0, Math.floor(gz.length / 2))), dest, { subject: 'https://h/x.tgz' }));
    expect(e.code).toBe('bad-archive');
    expect(e.subject).toBe('https://h/x.tgz');
  });

  it('rethrows an error from the input itself unchanged', async () => {
    const gz = await buildTarGz([{ header: { name: 'a.yaml' }, body: 'x'.repeat(100_000) }]);
    const boom = new Error('socket hang up');
    async function* broken(): AsyncGenerator<Buffer> {
      yield gz.subarray(0, 100);
      throw boom;
    }
    await expect(unpackTar(broken(), dest)).rejects.toBe(boom);
  });
});

describe('unpackTar: hostile archives', () => {
  const cases: Array<[string, Parameters<typeof buildTar>[0], string, RegExp]> = [
    ['dot-dot segment', [{ header: { name: 'a/../../evil' }, body: 'x' }], 'path-traversal', /"a\/..\/..\/evil"/],
    ['absolute path', [{ header: { name: '/etc/evil' }, body: 'x' }], 'path-traversal', /absolute/],
    ['absolute symlink', [{ header: { name: 'l', type: 'symlink', linkname: '/etc/passwd' } }], 'symlink-escape', /"l"/],
    ['relative symlink escaping', [{ header: { name: 'a/l', type: 'symlink', linkname: '../../x' } }], 'symlink-escape', /outside/],
    ['hardlink escaping', [{ header: { name: 'h', type: 'link', linkname: '../outside' } }], 'hardlink-escape', /"h"/],
    [
      'hardlink to a symlink (would change meaning in another directory)',
      [{ header: { name: 'a/b/l', type: 'symlink', linkname: '../x' } }, { header: { name: 'h', type: 'link', linkname: 'a/b/l' } }],
      'hardlink-escape',
      /regular file/,
    ],
    ['char device', [{ header: { name: 'null', type: 'character-device', devmajor: 1, devminor: 3 } }], 'special-file', /character-device/],
    ['block device', [{ header: { name: 'sda', type: 'block-device' } }], 'special-file', /block-device/],
    ['fifo', [{ header: { name: 'pipe', type: 'fifo' } }], 'special-file', /fifo/],
    [
      'write through an in-tree symlink to a directory',
      [{ header: { name: 'd', type: 'symlink', linkname: '.' } }, { header: { name: 'd/f' }, body: 'x' }],
      'path-traversal',
      /through symlink "d"/,
    ],
    [
      'symlink chain that only escapes once resolved (y -> ., x -> y/..)',
      [{ header: { name: 'y', type: 'symlink', linkname: '.' } }, { header: { name: 'x', type: 'symlink', linkname: 'y/..' } }],
      'symlink-escape',
      /"x" resolves outside/,
    ],
  ];
  for (const [what, items, code, message] of cases) {
    it(`refuses ${what}`, async () => {
      const e = await failure(unpackTar(chunked(await buildTarGz(items)), dest));
      expect(e.code).toBe(code);
      expect(e.terminal).toBe(true);
      expect(e.stage).toBe('fetch');
      expect(e.message).toMatch(message);
    });
  }

  it('never writes outside dest even when a file entry replaces a planted symlink', async () => {
    const outside = join(work, 'outside.txt');
    await writeFile(outside, 'original');
    await mkdir(dest, { recursive: true });
    await symlink(outside, join(dest, 'f')); // as if an earlier layer planted it
    await unpackTar(chunked(await buildTar([{ header: { name: 'f' }, body: 'new' }])), dest);
    expect(await readFile(outside, 'utf8')).toBe('original');
    expect(await readFile(join(dest, 'f'), 'utf8')).toBe('new');
    expect((await lstat(join(dest, 'f'))).isFile()).toBe(true);
  });

  // directories are made with mkdir first and looked at only when something is already there
  it('refuses a directory entry over a planted symlink to a directory outside, writing nothing there', async () => {
    const outsideDir = join(work, 'outside-dir');
    await mkdir(outsideDir);
    await mkdir(dest, { recursive: true });
    await symlink(outsideDir, join(dest, 'd')); // as if an earlier layer planted it
    const e = await failure(unpackTar(chunked(await buildTar([{ header: { name: 'd/', type: 'directory' } }, { header: { name: 'd/f' }, body: 'x' }])), dest));
    expect(e.code).toBe('path-traversal');
    expect(e.message).toMatch(/through symlink "d"/);
    expect(await readdir(outsideDir)).toEqual([]);
  });

  // files are created with O_EXCL first and whatever is in the way is cleared only when the create fails
  it('a later file entry replaces a directory and a file of earlier entries', async () => {
    const items = [
      { header: { name: 'x/', type: 'directory' as const } },
      { header: { name: 'x/a' }, body: 'inner' },
      { header: { name: 'x' }, body: 'now a file' },
      { header: { name: 'y' }, body: 'first' },
      { header: { name: 'y' }, body: 'second' },
    ];
    await unpackTar(chunked(await buildTar(items)), dest);
    expect(await readFile(join(dest, 'x'), 'utf8')).toBe('now a file');
    expect(await readFile(join(dest, 'y'), 'utf8')).toBe('second');
  });

  it('enforces the file count', async () => {
    const items = Array.from({ length: 11 }, (_, i) => ({ header: { name: `f${i}` }, body: 'x' }));
    const e = await failure(unpackTar(chunked(await buildTar(items)), dest, { limits: { maxFiles: 10 } }));
    expect(e.code).toBe('too-many-files');
    expect(e.message).toContain('"f10"');
  });

  it('enforces the symlink count as they arrive, before resolving any (issue 23: each costs up to 40 lookups)', async () => {
    const items = [
      { header: { name: 'a.yaml' }, body: 'x' },
      ...Array.from({ length: 4 }, (_, i) => ({ header: { name: `l${i}`, type: 'symlink' as const, linkname: 'a.yaml' } })),
    ];
    const e = await failure(unpackTar(chunked(await buildTar(items)), dest, { limits: { maxLinks: 3 } }));
    expect(e.code).toBe('too-many-links');
    expect(e.message).toBe('archive has more than 3 symlinks (the limit per tree), at "l3"');
    const r = await unpackTar(chunked(await buildTar(items.slice(0, 4))), join(work, 'links'), { limits: { maxLinks: 3 } });
    expect(r.links).toBe(3);
  });

  it('bounds the links followed over all chains when the archive ends (maxLinkHops), naming the limit', async () => {
    // c0 -> c1 -> c2 -> a.yaml, twice: 3 + 2 + 1 hops per chain, 12 in all
    const items = [
      { header: { name: 'a.yaml' }, body: 'x' },
      ...['p', 'q'].flatMap((c) =>
        [0, 1, 2].map((j) => ({ header: { name: `${c}${j}`, type: 'symlink' as const, linkname: j < 2 ? `${c}${j + 1}` : 'a.yaml' } })),
      ),
    ];
    const e = await failure(unpackTar(chunked(await buildTar(items)), dest, { limits: { maxLinkHops: 11 } }));
    expect(e).toMatchObject({ code: 'too-many-links', stage: 'fetch', reason: 'UnpackFailed', terminal: true });
    expect(e.message).toBe('resolving the symlinks of the content tree took more than 11 link hops (the limit per tree: chains too long or too many), at "q2"');
    const r = await unpackTar(chunked(await buildTar(items)), join(work, 'hops'), { limits: { maxLinkHops: 12 } });
    expect(r.links).toBe(6);
  });

  it('enforces the single-file size from the header, before reading data', async () => {
    const e = await failure(
      unpackTar(chunked(await buildTar([{ header: { name: 'big' }, body: 'x'.repeat(2000) }])), dest, { limits: { maxFileBytes: 1000 } }),
    );
    expect(e.code).toBe('too-large');
    expect(e.message).toContain('"big"');
    await expect(lstat(join(dest, 'big'))).rejects.toThrow();
  });

  it('enforces the total size', async () => {
    const items = Array.from({ length: 5 }, (_, i) => ({ header: { name: `f${i}` }, body: 'x'.repeat(300) }));
    const e = await failure(unpackTar(chunked(await buildTar(items)), dest, { limits: { maxTotalBytes: 1000 } }));
    expect(e.code).toBe('too-large');
    expect(e.message).toContain('"f3"');
  });
});

describe('unpackTar: decompression bombs stop early with bounded reads', () => {
  const MiB = 1024 * 1024;
  // gzip members concatenate: a lazily generated stream of small members decompresses to gigabytes
  const zeroMember = gzipSync(Buffer.alloc(MiB), { level: 9 });

  /** yields gzip members lazily and counts what the unpacker actually pulled */
  function meter(members: () => Generator<Buffer>): { stream: AsyncGenerator<Buffer>; read: () => number } {
    let read = 0;
    async function* stream(): AsyncGenerator<Buffer> {
      for (const m of members()) {
        read += m.length;
        yield m;
      }
    }
    return { stream: stream(), read: () => read };
  }

  it('10 GiB of zeros in 16 MiB files: stops at the total limit', async () => {
    const files = 640; // 640 × 16 MiB = 10 GiB
    const totalCompressed = files * (16 * zeroMember.length);
    const m = meter(function* () {
      for (let i = 0; i < files; i++) {
        // header member, then 16 × 1 MiB of zeros (the file's data, already block aligned)
        yield gzipSync(fileHeader(`zeros-${i}`, 16 * MiB));
        for (let j = 0; j < 16; j++) yield zeroMember;
      }
    });
    const e = await failure(unpackTar(m.stream, dest, { limits: { maxTotalBytes: 64 * MiB } }));
    expect(e.code).toBe('too-large');
    expect(m.read()).toBeLessThan(totalCompressed / 50);
  });

  it('a single 8 GiB file is refused from its header', async () => {
    const m = meter(function* () {
      yield gzipSync(fileHeader('huge', 8 * 1024 * MiB - 1));
      for (let j = 0; j < 8 * 1024; j++) yield zeroMember;
    });
    const e = await failure(unpackTar(m.stream, dest));
    expect(e.code).toBe('too-large');
    expect(e.message).toContain('"huge"');
    expect(m.read()).toBeLessThan(100 * zeroMember.length);
  });

  it('10 GiB of zero blocks (no entries at all) is cut off by the archive byte limit', async () => {
    const m = meter(function* () {
      for (let j = 0; j < 10 * 1024; j++) yield zeroMember;
    });
    const e = await failure(unpackTar(m.stream, dest, { limits: { maxTotalBytes: 8 * MiB, maxFiles: 100 } }));
    expect(e.code).toBe('too-large');
    expect(e.message).toMatch(/decompressed archive exceeds/);
    expect(m.read()).toBeLessThan(100 * zeroMember.length);
  });
});

describe('unpackTar: OCI whiteouts', () => {
  it('removes earlier content for .wh. files and opaque dirs, only when enabled', async () => {
    await unpackTar(
      chunked(
        await buildTar([
          { header: { name: 'keep.yaml' }, body: 'k' },
          { header: { name: 'gone.yaml' }, body: 'g' },
          { header: { name: 'dir/old.yaml' }, body: 'o' },
        ]),
      ),
      dest,
    );
    const layer2 = await buildTar([
      { header: { name: 'dir/new.yaml' }, body: 'n' }, // same layer: survives the opaque marker below
      { header: { name: 'dir/.wh..wh..opq' } },
      { header: { name: '.wh.gone.yaml' } },
    ]);
    await unpackTar(chunked(layer2), dest, { whiteouts: true });
    expect(await tree(dest)).toEqual(['dir/', 'dir/new.yaml', 'keep.yaml']);

    const plainDest = join(work, 'plain');
    await unpackTar(chunked(layer2), plainDest);
    expect(await tree(plainDest)).toEqual(['.wh.gone.yaml', 'dir/', 'dir/.wh..wh..opq', 'dir/new.yaml']);
  });

  for (const entry of ['.wh..', '.wh...', 'dir/.wh...', 'dir/.wh..']) {
    it(`refuses the whiteout ${entry}, which would name a directory instead of an entry, and removes nothing`, async () => {
      const outside = join(work, 'outside.yaml');
      await writeFile(outside, 'x');
      await unpackTar(
        chunked(
          await buildTar([
            { header: { name: 'dir/keep.yaml' }, body: 'k' },
            { header: { name: 'top.yaml' }, body: 't' },
          ]),
        ),
        dest,
      );
      const e = await failure(unpackTar(chunked(await buildTar([{ header: { name: entry } }])), dest, { whiteouts: true, subject: 'layer' }));
      expect(e).toMatchObject({ code: 'bad-archive', subject: 'layer', terminal: true });
      expect(e.message).toMatch(/^whiteout ".*" names "\.\.?", not an entry of its directory$/);
      expect(await tree(dest)).toEqual(['dir/', 'dir/keep.yaml', 'top.yaml']);
      expect(await readFile(outside, 'utf8')).toBe('x');
    });
  }
});

describe('unpackTar: archives that may hold no links (Helm chart archives)', () => {
  for (const [type, code] of [
    ['symlink', 'link-refused'],
    ['link', 'link-refused'],
  ] as const) {
    it(`refuses a ${type} entry, naming it`, async () => {
      const archive = await buildTar([
        { header: { name: 'chart/Chart.yaml' }, body: 'name: c\n' },
        { header: { name: 'chart/files/p', type, linkname: type === 'link' ? 'chart/Chart.yaml' : '../Chart.yaml' } },
      ]);
      const e = await failure(unpackTar(chunked(archive), dest, { allowLinks: false, subject: 'chart.tgz' }));
      expect(e).toMatchObject({ code, subject: 'chart.tgz', terminal: true });
      expect(e.message).toMatch(/^entry "chart\/files\/p" is a (symlink|hard link); this archive may hold regular files and directories only$/);
    });
  }
});
