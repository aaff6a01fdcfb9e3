/**
 * Flux for bench/peers.ts: source-controller and kustomize-controller built from their Go modules
 * by bench/tools/ensure-flux.sh (cached in ~/.cache/hoist/bench-bin, never for npm test), their
 * CRDs read from the same module versions in the Go module cache (nothing of Flux is committed
 * here; Flux is Apache-2.0), both run as processes against a control plane with the flags of
 * Flux's published benchmark (fluxcd/flux-benchmark, manifests/install) where they differ from
 * the defaults, and apps published as Flux OCI artifacts (the format `flux push artifact` writes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { RegistryClient } from '../src/sources/image/client.ts';
import { MEDIA_TYPES } from '../src/sources/image/manifest.ts';
import { pushImage, writeLayer } from '../src/sources/image/push.ts';
import { parseReference } from '../src/sources/image/reference.ts';
import { freePort, type TestRegistry } from '../test/support/registry.ts';
import { exec, repoRoot } from './common.ts';
import { stopProcess } from './controller-process.ts';
import { pool } from './scale-sources.ts';

/** Flux v2.9 releases (see bench/tools/ensure-flux.sh for why source-controller is v1.9.0) */
export const FLUX_VERSIONS = { sourceController: 'v1.9.0', kustomizeController: 'v1.9.6' } as const;
export const FLUX_ORIGIN = {
  sourceController: `github.com/fluxcd/source-controller@${FLUX_VERSIONS.sourceController} (Go module, Apache-2.0)`,
  kustomizeController: `github.com/fluxcd/kustomize-controller@${FLUX_VERSIONS.kustomizeController} (Go module, Apache-2.0)`,
};
/** --concurrent of fluxcd/flux-benchmark's manifests/install: source 10, kustomize 20 (defaults 2 and 4) */
export const FLUX_CONCURRENCY = { sourceController: 10, kustomizeController: 20 } as const;
/** the benchmark's spec.interval (both kinds) and the Kustomizations' retryInterval / timeout */
export const FLUX_INTERVALS = { interval: '60m', retryInterval: '2m', timeout: '1m' } as const;
/** the benchmark's pods run with GOMEMLIMIT from their 1Gi memory limit */
const GOMEMLIMIT = '1GiB';

export interface FluxBinaries {
  sourceController: string;
  kustomizeController: string;
}

/** builds (once, cached) and returns the two controllers' binaries */
export async function ensureFlux(log: (l: string) => void): Promise<FluxBinaries> {
  const t0 = performance.now();
  const out = await exec('bash', [path.join(repoRoot, 'bench/tools/ensure-flux.sh')], {
    ...process.env,
    SOURCE_CONTROLLER_VERSION: FLUX_VERSIONS.sourceController,
    KUSTOMIZE_CONTROLLER_VERSION: FLUX_VERSIONS.kustomizeController,
  });
  const bin = out.trim().split('\n').pop()!;
  log(`Flux binaries in ${bin} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  return {
    sourceController: path.join(bin, `source-controller-${FLUX_VERSIONS.sourceController}`),
    kustomizeController: path.join(bin, `kustomize-controller-${FLUX_VERSIONS.kustomizeController}`),
  };
}

/** every CRD file of the two modules (config/crd/bases), from the Go module cache */
export async function fluxCrdFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const [mod, version] of [
    ['github.com/fluxcd/source-controller', FLUX_VERSIONS.sourceController],
    ['github.com/fluxcd/kustomize-controller', FLUX_VERSIONS.kustomizeController],
  ] as const) {
    const info = JSON.parse(await exec('go', ['mod', 'download', '-json', `${mod}@${version}`], { ...process.env, GOFLAGS: '-mod=mod' })) as { Dir: string };
    const dir = path.join(info.Dir, 'config/crd/bases');
    for (const f of (await readdir(dir)).sort()) if (f.endsWith('.yaml')) files.push(path.join(dir, f));
  }
  return files;
}

export interface FluxProcess {
  name: 'source-controller' | 'kustomize-controller';
  child: ChildProcess;
  args: string[];
  logFile: string;
  stop(): Promise<void>;
}

/** starts one controller with `args` plus free metrics/health ports and waits for its /readyz */
async function startFluxProcess(
  name: FluxProcess['name'],
  bin: string,
  args: readonly string[],
  opts: { kubeconfig: string; work: string; env?: Record<string, string> },
): Promise<FluxProcess> {
  const health = await freePort();
  const all = [...args, `--metrics-addr=127.0.0.1:${await freePort()}`, `--health-addr=127.0.0.1:${health}`];
  const logFile = path.join(opts.work, `${name}.log`);
  const child = spawn(bin, all, {
    cwd: opts.work,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: opts.work, KUBECONFIG: opts.kubeconfig, RUNTIME_NAMESPACE: 'flux-system', GOMEMLIMIT, ...opts.env },
  });
  const out = createWriteStream(logFile);
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const deadline = performance.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited ${child.exitCode}: ${(await readFile(logFile, 'utf8')).slice(-2000)}`);
    const ok = await fetch(`http://127.0.0.1:${health}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (performance.now() > deadline) throw new Error(`${name} not ready after 60 s; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    name,
    child,
    args: all,
    logFile,
    stop: () => stopProcess(child, exited),
  };
}

/**
 * source-controller (artifact storage in `work`, served on a free loopback port and advertised
 * there so kustomize-controller can download) and kustomize-controller (kustomize builds in a
 * tmpfs TMPDIR, as the benchmark mounts /tmp from memory), leader election off (its default)
 */
export async function startFlux(bins: FluxBinaries, kubeconfig: string, work: string): Promise<FluxProcess[]> {
  const storage = path.join(work, 'storage');
  await mkdir(storage, { recursive: true });
  const shm = path.join('/dev/shm', path.basename(work));
  await mkdir(shm, { recursive: true });
  const storageAddr = `127.0.0.1:${await freePort()}`;
  const source = await startFluxProcess(
    'source-controller',
    bins.sourceController,
    [`--concurrent=${FLUX_CONCURRENCY.sourceController}`, `--storage-path=${storage}`, `--storage-addr=${storageAddr}`, `--storage-adv-addr=${storageAddr}`],
    { kubeconfig, work },
  );
  try {
    const kustomize = await startFluxProcess('kustomize-controller', bins.kustomizeController, [`--concurrent=${FLUX_CONCURRENCY.kustomizeController}`], {
      kubeconfig,
      work,
      env: { TMPDIR: shm },
    });
    return [source, kustomize];
  } catch (e) {
    await source.stop();
    throw e;
  }
}

/**
 * pushes each app's files as a Flux OCI artifact, `flux push artifact`'s format: one
 * application/vnd.cncf.flux.content.v1.tar+gzip layer, go-containerregistry's empty config under
 * application/vnd.cncf.flux.config.v1+json, source and revision annotations; tag `latest` (the
 * benchmark's). Returns each artifact's repository and digest, in order.
 */
export async function pushFluxArtifacts(
  registry: TestRegistry,
  work: string,
  apps: ReadonlyArray<Record<string, string>>,
): Promise<Array<{ repository: string; digest: string }>> {
  const client = new RegistryClient({ insecureHosts: [registry.host] });
  const out = new Array<{ repository: string; digest: string }>(apps.length);
  try {
    await pool(apps, 8, async (files, i) => {
      const built = await writeLayer(
        Object.entries(files).map(([name, data]) => ({ name, data })),
        path.join(work, `artifact-${i}.tgz`),
      );
      const layer = { ...built, mediaType: MEDIA_TYPES.fluxContent };
      const config = Buffer.from(
        JSON.stringify({ architecture: '', created: '0001-01-01T00:00:00Z', os: '', rootfs: { type: 'layers', diff_ids: [built.digest] }, config: {} }),
      );
      const repository = `${registry.host}/peers/app-${i}`;
      const pushed = await pushImage(
        client,
        parseReference(`${repository}:latest`),
        [layer],
        { stage: 'fetch' },
        {
          configMediaType: MEDIA_TYPES.fluxConfig,
          config,
          annotations: {
            'org.opencontainers.image.created': new Date(0).toISOString(),
            'org.opencontainers.image.source': 'https://git.example.com/apps.git',
            'org.opencontainers.image.revision': `main@sha1:${built.digest.slice(7, 47)}`,
          },
        },
      );
      out[i] = { repository, digest: pushed.digest };
    });
  } finally {
    await client.close();
  }
  return out;
}

/** the benchmark's OCIRepository and Kustomization for app `name` (flux-benchmark timoni/modules/flux-ks-bench) */
export function fluxApp(name: string, namespace: string, repository: string, serviceAccount: string): [Record<string, unknown>, Record<string, unknown>] {
  return [
    {
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'OCIRepository',
      metadata: { name, namespace },
      spec: { interval: FLUX_INTERVALS.interval, insecure: true, url: `oci://${repository}`, ref: { tag: 'latest' } },
    },
    {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name, namespace },
      spec: {
        sourceRef: { kind: 'OCIRepository', name },
        interval: FLUX_INTERVALS.interval,
        retryInterval: FLUX_INTERVALS.retryInterval,
        timeout: FLUX_INTERVALS.timeout,
        path: './',
        prune: true,
        wait: true,
        serviceAccountName: serviceAccount,
        targetNamespace: namespace,
      },
    },
  ];
}
