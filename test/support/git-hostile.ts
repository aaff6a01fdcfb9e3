/**
 * Hostile git repositories for the bounded-work tests (issue 23), written with git's plumbing
 * straight into bare repositories under `<root>/repos`, to be served by `startGitServer`:
 *
 * - bounds.git, branch `bomb`: a tree of 1000 entries whose every level repeats the one below,
 *   three levels deep — 10⁹ paths in a pack of a few KiB;
 * - `biglink`: a symlink whose blob is 1 MiB (`a/a/a/…`, inside the tree lexically);
 * - `links`: 30 symlinks (l00…l29) to cm.yaml;
 * - `big`: one 5 MiB file of random bytes (a pack that does not compress);
 * - `main`: one ConfigMap (cm.yaml), the healthy content;
 * - refs.git: `main` plus REFS branches, a ref advertisement of about 10 MiB.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { git } from './git-server.ts';

export const REFS = 150_000;
export const HEALTHY_CM = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: git-healthy\ndata:\n  a: "1"\n';

export interface HostileRepos {
  /** the project root to serve */
  repos: string;
  /** commit of each branch of bounds.git: bomb, biglink, links, big, main */
  tips: Record<'bomb' | 'biglink' | 'links' | 'big' | 'main', string>;
  /** the 5 MiB blob of `big` */
  bigBlob: string;
}

export async function createHostileRepos(root: string): Promise<HostileRepos> {
  const repos = join(root, 'repos');
  await mkdir(repos, { recursive: true });
  git(repos, ['init', '-q', '--bare', 'bounds.git']);
  const plumb = (args: readonly string[], input: string | Buffer): string =>
    execFileSync('git', args, {
      cwd: join(repos, 'bounds.git'),
      input,
      env: {
        PATH: process.env.PATH,
        HOME: root,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@hoist.invalid',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@hoist.invalid',
      },
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    }).trim();
  const blob = (content: string | Buffer): string => plumb(['hash-object', '-w', '--stdin'], content);
  const mktree = (entries: readonly string[]): string => plumb(['mktree'], entries.join('\n') + '\n');
  const commit = (branch: string, tree: string): string => {
    const c = plumb(['commit-tree', tree, '-m', branch], '');
    plumb(['update-ref', `refs/heads/${branch}`, c], '');
    return c;
  };
  const file = blob(HEALTHY_CM);
  let tree = mktree(Array.from({ length: 1000 }, (_, i) => `100644 blob ${file}\tf${i}.yaml`));
  for (let level = 0; level < 2; level++) tree = mktree(Array.from({ length: 1000 }, (_, i) => `040000 tree ${tree}\td${i}`));
  const bomb = commit('bomb', tree);
  const biglink = commit('biglink', mktree([`100644 blob ${file}\tcm.yaml`, `120000 blob ${blob('a/'.repeat(512 * 1024))}\tlink`]));
  const target = blob('cm.yaml');
  const links = commit(
    'links',
    mktree([`100644 blob ${file}\tcm.yaml`, ...Array.from({ length: 30 }, (_, i) => `120000 blob ${target}\tl${String(i).padStart(2, '0')}`)]),
  );
  const bigBlob = blob(randomBytes(5 * 1024 * 1024));
  const big = commit('big', mktree([`100644 blob ${bigBlob}\tbig.bin`]));
  const main = commit('main', mktree([`100644 blob ${file}\tcm.yaml`]));
  git(repos, ['init', '-q', '--bare', 'refs.git']);
  const refsDir = join(repos, 'refs.git');
  git(refsDir, ['fetch', '-q', join(repos, 'bounds.git'), 'main:refs/heads/main']);
  const lines = Array.from({ length: REFS }, (_, i) => `${main} refs/heads/branch-${String(i).padStart(6, '0')}`);
  await writeFile(join(refsDir, 'packed-refs'), lines.join('\n') + '\n');
  return { repos, tips: { bomb, biglink, links, big, main }, bigBlob };
}
