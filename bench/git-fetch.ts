/**
 * Git fetch benchmark: Hoist's git source fetching a pinned commit into a cold content store,
 * against `git clone --depth 1 --single-branch` of the same commit (the branch tip) from the same
 * local `git http-backend` server, in the same run, rounds interleaved so machine noise hits both.
 *
 * The repository is generated (test/support/git-server.ts `generateRepo`): 4 000 files in nested
 * directories, 400 commits. Cases: the whole tree (same work as the clone) and one subdirectory
 * (what a BundleDeployment usually asks for). Medians are reported; ratio = hoist / clone, so
 * below 1 means Hoist is faster. Results go to bench/results/git-fetch.json.
 *
 * Run alone: `npm exec -- tsx bench/git-fetch.ts`.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FsContentStore } from '../src/cache/fs-content-store.ts';
import { GitSource } from '../src/sources/git/git-source.ts';
import type { SourceSpec } from '../api/v1alpha2/types.ts';
import { generateRepo, git, startGitServer } from '../test/support/git-server.ts';
import { exec, median, runWhenMain, writeResult } from './common.ts';

const repo = fileURLToPath(new URL('../', import.meta.url));
const resultsFile = path.join(repo, 'bench', 'results', 'git-fetch.json');

export interface GitFetchBenchCase {
  name: string;
  /** directory fetched by Hoist ("" = whole tree) */
  directory: string;
  hoistMs: number;
  /** `git clone --depth 1` of the whole tree */
  referenceMs: number;
  /** hoistMs / referenceMs */
  ratio: number;
  rounds: number;
}

export interface GitFetchBenchResult {
  benchmark: 'git-fetch';
  date: string;
  nproc: number;
  node: string;
  git: string;
  repo: { files: number; commits: number; packBytes: number };
  cases: GitFetchBenchCase[];
}

export interface GitFetchBenchOptions {
  /** measured rounds per case after one warm-up; default 5 */
  rounds?: number;
  files?: number;
  commits?: number;
  /** write bench/results/git-fetch.json; default true */
  write?: boolean;
  log?: (line: string) => void;
}

export async function run(options: GitFetchBenchOptions = {}): Promise<GitFetchBenchResult> {
  const log = options.log ?? ((l: string) => console.log(l));
  const rounds = options.rounds ?? 5;
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-git-'));
  const projectRoot = path.join(work, 'repos');
  await mkdir(projectRoot);
  const files = options.files ?? 4000;
  const commits = options.commits ?? 400;
  log(`generating a repository with ${files} files and ${commits} commits…`);
  const generated = await generateRepo(path.join(projectRoot, 'big.git'), { files, commits });
  git(generated.dir, ['repack', '-a', '-d', '-q']);
  const packBytes = Number((await exec('du', ['-sb', path.join(generated.dir, 'objects', 'pack')], { PATH: process.env.PATH })).split('\t')[0]);
  const server = await startGitServer({ projectRoot });
  const url = `${server.url}/big.git`;
  const cloneEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: work,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
  };
  const cases: GitFetchBenchCase[] = [];
  try {
    for (const [name, directory] of [
      ['whole tree', ''],
      ['one directory (src/pkg3, ~4% of files)', 'src/pkg3'],
    ] as const) {
      const hoist: number[] = [];
      const reference: number[] = [];
      for (let round = 0; round <= rounds; round++) {
        // cold cache: a fresh store and a fresh source each round
        const storeRoot = await mkdtemp(path.join(work, 'store-'));
        const store = new FsContentStore({ root: storeRoot });
        const source = new GitSource({ workRoot: work });
        const spec: SourceSpec = { kind: 'git', git: { repository: url, ref: { commit: generated.head }, directory } };
        let t0 = performance.now();
        await source.fetch(spec, await source.resolve(spec, {}), store, {});
        const h = performance.now() - t0;
        await rm(storeRoot, { recursive: true, force: true });

        const cloneDir = path.join(work, `clone-${round}`);
        t0 = performance.now();
        await exec('git', ['clone', '--quiet', '--depth', '1', '--single-branch', '--no-tags', url, cloneDir], cloneEnv);
        const c = performance.now() - t0;
        await rm(cloneDir, { recursive: true, force: true });
        if (round === 0) continue; // warm-up: page cache, first spawn of git binaries
        hoist.push(h);
        reference.push(c);
      }
      const hoistMs = median(hoist);
      const referenceMs = median(reference);
      const c: GitFetchBenchCase = {
        name,
        directory,
        hoistMs: Math.round(hoistMs),
        referenceMs: Math.round(referenceMs),
        ratio: Number((hoistMs / referenceMs).toFixed(3)),
        rounds,
      };
      cases.push(c);
      log(`${name}: hoist ${c.hoistMs} ms, git clone --depth 1 ${c.referenceMs} ms, ratio ${c.ratio}`);
    }
  } finally {
    await server.close();
    await rm(work, { recursive: true, force: true });
  }
  const result: GitFetchBenchResult = {
    benchmark: 'git-fetch',
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    node: process.version,
    git: (await exec('git', ['--version'], { PATH: process.env.PATH })).trim(),
    repo: { files, commits, packBytes },
    cases,
  };
  if (options.write ?? true) await writeResult(resultsFile, result, log);
  return result;
}

runWhenMain(import.meta.url, run);
