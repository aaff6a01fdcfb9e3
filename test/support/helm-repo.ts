/**
 * A Helm chart repository as `helm package` and `helm repo index` make it: a directory of chart
 * tarballs and an index.yaml, built with the real helm binary (cached by scripts/ensure-tools.sh)
 * and published through a test file server. Also `helm template` of a chart from that
 * repository after `helm repo add`, as a user would run it, for comparisons. Every helm run gets
 * its own HELM_CONFIG_HOME, HELM_CACHE_HOME, HELM_DATA_HOME and HELM_REPOSITORY_CONFIG.
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { toolPath } from '../../src/devcluster/tools.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { tarGz, type FileServer } from './http-files.ts';

/** the hand-made chart every object of which names the chart version (testdata/helm/README.md) */
export const GREETER_CHART = new URL('../../testdata/helm/greeter', import.meta.url).pathname;

/** what a Chart.yaml holds: a name and a version, and whatever else */
export type ChartMetadata = { name: string; version: string } & Record<string, unknown>;

export interface ChartRepo {
  /** the directory holding the tarballs and index.yaml */
  dir: string;
  /** `helm package <chart> --version <version> -d <dir>`; returns the tarball's file name */
  package(version: string, chart?: string): string;
  /**
   * A chart tarball of just a Chart.yaml with this metadata (written as JSON, which YAML reads,
   * so every name stays a string), made without `helm package`: thousands of charts in seconds.
   * Returns the tarball's file name.
   */
  writeChart(metadata: ChartMetadata): Promise<string>;
  /** `helm repo index <dir> [--url <url>] [--json]`: the index of every tarball in the directory */
  index(url?: string, opts?: { json?: boolean }): void;
  /** index.yaml as helm wrote it */
  indexText(): string;
  /** every file of the directory, at `<prefix>/<name>` on `server` */
  publish(server: FileServer, prefix: string): void;
}

/** the environment of one helm run: nothing from the user's or the machine's helm configuration */
function helmEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_DATA_HOME: join(home, 'data'),
    HELM_REPOSITORY_CONFIG: join(home, 'config', 'repositories.yaml'),
    HELM_REPOSITORY_CACHE: join(home, 'cache', 'repository'),
  };
}

/** helm on local files only (package, repo index): run synchronously */
function helm(args: string[], home: string): string {
  const r = spawnSync(toolPath('helm'), args, { encoding: 'utf8', env: helmEnv(home), maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`helm ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** helm that talks to a server, which may be this process's own test server: never blocks the event loop */
async function helmAsync(args: string[], home: string): Promise<string> {
  try {
    return (await promisify(execFile)(toolPath('helm'), args, { encoding: 'utf8', env: helmEnv(home), maxBuffer: 64 << 20 })).stdout;
  } catch (e) {
    throw new Error(`helm ${args[0]} ${args[1]} failed: ${(e as { stderr?: string }).stderr ?? String(e)}`);
  }
}

export function makeChartRepo(dir: string): ChartRepo {
  mkdirSync(dir, { recursive: true });
  // beside the repository, so removing the test's work directory removes it too
  const home = `${dir}.helm-home`;
  mkdirSync(home, { recursive: true });
  return {
    dir,
    package(version, chart = GREETER_CHART) {
      const out = helm(['package', chart, '--version', version, '-d', dir], home);
      const m = /saved it to: (.+)$/m.exec(out);
      if (!m) throw new Error(`helm package said: ${out}`);
      return m[1]!.trim().split('/').at(-1)!;
    },
    async writeChart(metadata) {
      const file = `${metadata.name.replace(/[^A-Za-z0-9._-]/g, '_')}-${metadata.version}.tgz`;
      writeFileSync(join(dir, file), await tarGz({ 'chart/Chart.yaml': JSON.stringify({ apiVersion: 'v2', ...metadata }) }));
      return file;
    },
    index(url, opts = {}) {
      helm(['repo', 'index', dir, ...(url ? ['--url', url] : []), ...(opts.json ? ['--json'] : [])], home);
    },
    indexText: () => readFileSync(join(dir, 'index.yaml'), 'utf8'),
    publish(server, prefix) {
      for (const name of readdirSync(dir)) server.set(`${prefix}/${name}`, readFileSync(join(dir, name)));
    },
  };
}

export interface RepoAdd {
  url: string;
  username?: string;
  password?: string;
  caFile?: string;
}

/**
 * `helm repo add r <url>` then `helm template <release> r/<chart> --version <version>
 * --namespace <ns>`, in a fresh helm home: the objects in output order, parsed with the `yaml`
 * package (not Hoist's reader).
 */
export async function helmTemplateFromRepo(repo: RepoAdd, chart: string, version: string, release: string, namespace: string): Promise<KubeObject[]> {
  const home = mkdtempSync(join(tmpdir(), 'hoist-helm-template-home-'));
  try {
    const auth = repo.username !== undefined ? ['--username', repo.username, '--password', repo.password ?? ''] : [];
    await helmAsync(['repo', 'add', 'r', repo.url, ...auth, ...(repo.caFile ? ['--ca-file', repo.caFile] : [])], home);
    const out = await helmAsync(['template', release, `r/${chart}`, '--version', version, '--namespace', namespace], home);
    return parseAllDocuments(out)
      .map((d) => {
        if (d.errors.length > 0) throw d.errors[0];
        return d.toJS() as unknown;
      })
      .filter((v): v is KubeObject => v !== null && v !== undefined);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
