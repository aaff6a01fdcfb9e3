/**
 * Bounded work in the git source (issue 23), against a real `git http-backend`: every hostile
 * repository here is refused with a terminal HoistError naming the limit, and the work done before
 * the refusal is bounded (asserted by counts and heap, never by time).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../../src/cache/fs-content-store.ts';
import { GitCommandError, runGit } from '../../../../src/sources/git/git-cli.ts';
import { GitSource, type GitSourceOptions } from '../../../../src/sources/git/git-source.ts';
import { fetchRefAdvertisement } from '../../../../src/sources/git/ref-advertisement.ts';
import { HttpTransport } from '../../../../src/sources/transport/transport.ts';
import { createHostileRepos, REFS, type HostileRepos } from '../../../support/git-hostile.ts';
import { startGitServer, type GitServer } from '../../../support/git-server.ts';
import { failure } from '../../../support/failure.ts';

let root: string;
let repos: string;
let server: GitServer;
let tips: HostileRepos['tips'];
let bigBlob: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hoist-git-bounds-'));
  ({ repos, tips, bigBlob } = await createHostileRepos(root));
  server = await startGitServer({ projectRoot: repos });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

function spec(repo: string, ref: { branch?: string; commit?: string }): SourceSpec {
  return { kind: 'git', git: { repository: `${server.url}/${repo}`, ref } };
}

async function fetchBranch(branch: keyof HostileRepos['tips'], opts: GitSourceOptions = {}): Promise<string> {
  const source = new GitSource({ workRoot: root, ...opts });
  const store = new FsContentStore({ root: join(root, `store-${Math.random().toString(36).slice(2)}`) });
  try {
    const s = spec('bounds.git', { commit: tips[branch] });
    return await source.fetch(s, await source.resolve(s, {}), store, {});
  } finally {
    await source.close();
  }
}

describe('git checkout: the listing is streamed and bounded', () => {
  it('a tree of 10⁹ paths from a tiny pack stops at the entry limit, with bounded heap', async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    const e = await failure(fetchBranch('bomb'));
    expect(e).toMatchObject({ stage: 'fetch', code: 'too-many-files', terminal: true });
    expect(e.message).toBe('directory has more than 100000 entries (the limit)');
    expect(e.subject).toContain(`bounds.git commit ${tips.bomb}`);
    // the old path buffered the whole listing (~60 GB) before counting
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
  });

  it('with no entry limit to stop it, the fetch deadline kills the listing; heap stays bounded', async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    const e = await failure(fetchBranch('bomb', { limits: { maxFiles: 2_000_000_000 }, fetchTimeoutMs: 3_000 }));
    expect(e).toMatchObject({ stage: 'fetch', code: 'deadline-exceeded', terminal: false });
    expect(e.message).toBe('fetch exceeded its deadline of 3s');
    // streamed: entries are counted and dropped, not kept
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
  });

  it('a symlink blob of 1 MiB is refused by the per-link cap, not read whole', async () => {
    const e = await failure(fetchBranch('biglink'));
    expect(e).toMatchObject({ stage: 'fetch', code: 'symlink-target-too-large', terminal: true });
    expect(e.message).toBe('symlink link: its target is 1048576 bytes, more than the limit of 4096 bytes per link');
  });

  it('more symlinks than the budget per tree are refused', async () => {
    const e = await failure(fetchBranch('links', { limits: { maxLinks: 10 } }));
    expect(e).toMatchObject({ stage: 'fetch', code: 'too-many-links', terminal: true });
    expect(e.message).toBe('directory has more than 10 symlinks (the limit per tree), at "l10"');
    // within the budget the same tree is fetched: every link checked, none refused
    expect(await fetchBranch('links', { limits: { maxLinks: 30 } })).toBeTruthy();
  });
});

describe('git fetch: the pack is bounded', () => {
  it('a fetch whose objects exceed maxPackBytes is refused naming the limit', async () => {
    const e = await failure(fetchBranch('big', { maxPackBytes: 1024 * 1024 }));
    expect(e).toMatchObject({ stage: 'fetch', code: 'pack-too-large', terminal: true });
    expect(e.message).toMatch(/^the fetched objects take \d+ bytes, more than the limit of 1 MiB per fetch \(git packs\)$/);
    // the default (1 GiB) lets it through
    expect(await fetchBranch('big')).toBeTruthy();
  });
});

describe('runGit: stdout is capped per command', () => {
  it('git writing more than the cap is killed and the call fails naming the cap', async () => {
    const home = await mkdtemp(join(root, 'home-'));
    const gitDir = join(repos, 'bounds.git');
    const e = await runGit(['--git-dir', gitDir, 'cat-file', 'blob', bigBlob], { home, timeoutMs: 60_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(GitCommandError);
    expect((e as GitCommandError).outputLimit).toBe(1024 * 1024);
    expect((e as GitCommandError).message).toBe('git cat-file wrote more than 1048576 bytes');
    const ok = await runGit(['--git-dir', gitDir, 'cat-file', 'blob', bigBlob], { home, timeoutMs: 60_000, maxOutputBytes: 8 * 1024 * 1024 });
    expect(ok.stdout.length).toBe(5 * 1024 * 1024);
  });
});

describe('ref advertisement: streamed, small cap, only the refs asked for', () => {
  it('an advertisement over 8 MiB is refused naming the limit', async () => {
    const source = new GitSource({ workRoot: root });
    try {
      const e = await failure(source.resolve(spec('refs.git', { branch: 'main' }), {}));
      expect(e).toMatchObject({ stage: 'resolve', code: 'too-large', terminal: true });
      expect(e.message).toBe('ref advertisement is larger than the 8388608 bytes allowed');
    } finally {
      await source.close();
    }
  });

  it('keeps only the refs asked for out of 150 000', async () => {
    const transport = new HttpTransport({});
    try {
      const adv = await fetchRefAdvertisement(`${server.url}/refs.git`, {
        auth: { secrets: [] },
        transport,
        stage: 'resolve',
        subject: 'refs.git',
        maxBytes: 64 * 1024 * 1024,
        wants: { names: ['refs/heads/main', 'refs/heads/branch-149999'] },
      });
      expect([...adv.refs.keys()].sort()).toEqual(['refs/heads/branch-149999', 'refs/heads/main']);
      expect(adv.refs.get('refs/heads/main')?.oid).toBe(tips.main);
      // and by commit: every ref pointing at it, here all of them
      const all = await fetchRefAdvertisement(`${server.url}/refs.git`, {
        auth: { secrets: [] },
        transport,
        stage: 'fetch',
        subject: 'refs.git',
        maxBytes: 64 * 1024 * 1024,
        wants: { commit: tips.main },
      });
      expect(all.refs.size).toBe(REFS + 1);
    } finally {
      await transport.close();
    }
  });
});
