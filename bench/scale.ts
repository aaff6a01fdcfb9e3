/**
 * Scale benchmark (issue 10): N BundleDeployments created at once, each a pinned http tarball of
 * 4 objects (ServiceAccount, headless Service, Deployment with 0 replicas, Ingress; the shape of
 * Flux's published benchmark), all installed into one namespace, against a local control plane
 * with kube-controller-manager, kube-scheduler and kwok (so the Deployments roll out).
 *
 * The controller runs as the image runs it: compiled with `tsc` to dist/ (as scripts/image.sh
 * compiles it) and started as `node <the Dockerfile ENTRYPOINT's node flags> dist/src/cli/main.js
 * run`, a child process whose RSS and CPU
 * are read from /proc: idle (CRD installed, no BDs), peak (VmHWM) and CPU seconds during the wave.
 * Hoist's time = first BD created → every BD Installed=True, Progressing=False at its generation,
 * observed through a watch. Its requests come from the API server's audit log (the controller's
 * User-Agent "hoist"; this process uses another), per BD and by verb/resource; after the wave a
 * quiet window counts the steady state's requests.
 * Reference in the same run, before Hoist's wave: one `kubectl apply --server-side` of the same
 * 4N objects into another fresh namespace; then the benchmark waits until kube-controller-manager
 * has observed all of kubectl's Deployments, so its background work does not land on Hoist.
 * Nothing is deleted: every N gets a fresh control plane and each side its own namespace.
 *
 * `npx tsx bench/scale.ts [N ...]` (default: $HOIST_SCALE_N or 1000); several N run one after the
 * other and are all kept in bench/results/scale.json as `runs` (the top-level figures are the last
 * run's). $HOIST_SCALE_WORKERS passes --workers; $HOIST_SCALE_NODE_FLAGS adds node flags (e.g.
 * "--cpu-prof --cpu-prof-dir=/tmp/prof"); $HOIST_SCALE_STEADY_SECONDS sets the quiet window
 * (default 30); $HOIST_SCALE_NO_BUILD=1 reuses dist/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { API_VERSION, KIND, type BundleDeployment } from '../api/v1alpha2/types.ts';
import { startControlPlane, type ControlPlane } from '../src/devcluster/control-plane.ts';
import { toolPath, toolVersions } from '../src/devcluster/tools.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../src/kube/client.ts';
import { Informer } from '../src/kube/informer.ts';
import type { KubeObject } from '../src/kube/types.ts';
import { AuditReader, type AuditEvent } from '../test/support/audit.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../test/support/http-files.ts';
import { exec, repoRoot, runWhenMain, writeResult } from './common.ts';

const resultsFile = path.join(repoRoot, 'bench', 'results', 'scale.json');
const BD = { apiVersion: API_VERSION, kind: KIND } as const;
const HOIST_UA = 'hoist';
const BENCH_UA = 'hoist-scale-bench';
const MiB = 1024 * 1024;

export interface ScaleRun {
  n: number;
  hoistSeconds: number;
  /** first BD created → every BD Installed=True (applied; before kube-controller-manager observed the Deployments) */
  hoistInstalledSeconds: number;
  kubectlSeconds: number;
  /** hoistSeconds / kubectlSeconds: below 1, Hoist is faster */
  ratio: number;
  workers: string;
  peakRssMiB: number;
  idleRssMiB: number;
  /** controller CPU (user + system) from the first BD created to the last one done */
  cpuSeconds: number;
  requestsPerBd: number;
  requestsPerBdByVerb: Record<string, number>;
  /** the controller's requests in a quiet window after the wave (all verbs, writes) */
  steady: { seconds: number; requests: number; writes: number; fetches: number };
  loadAverage: number[];
}

export interface ScaleResult extends ScaleRun {
  benchmark: 'scale';
  date: string;
  nproc: number;
  node: string;
  kubectl: string;
  runs: ScaleRun[];
}

/** the 4 objects of bundle i (no namespace: Hoist defaults it to installNamespace, kubectl to -n) */
function bundleObjects(i: number): KubeObject[] {
  const name = `app-${i}`;
  const labels = { app: name };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name },
      spec: { clusterIP: 'None', selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name },
      spec: {
        replicas: 0,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { serviceAccountName: name, containers: [{ name: 'app', image: 'registry.example/app:1.0.0', ports: [{ containerPort: 8080 }] }] },
        },
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name },
      spec: {
        rules: [{ host: `${name}.example.com`, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } }] } }],
      },
    },
  ] as KubeObject[];
}

const toYaml = (objs: readonly KubeObject[]): string => objs.map((o) => `---\n${stringify(o)}`).join('');

/** compiles api/ and src/ into dist/ as scripts/image.sh does (no type check, no tests) */
async function build(log: (l: string) => void): Promise<string> {
  const dist = path.join(repoRoot, 'dist');
  if (process.env.HOIST_SCALE_NO_BUILD !== '1') {
    const t0 = performance.now();
    // inside the repository, as scripts/image.sh does: type libraries resolve from node_modules there
    mkdirSync(path.join(repoRoot, '.tmp'), { recursive: true });
    const cfg = path.join(repoRoot, '.tmp', 'scale-tsconfig.json');
    writeFileSync(
      cfg,
      JSON.stringify({
        extends: path.join(repoRoot, 'tsconfig.json'),
        include: [path.join(repoRoot, 'api'), path.join(repoRoot, 'src')],
        exclude: [path.join(repoRoot, '**/*.test.ts')],
        compilerOptions: { outDir: dist, rootDir: repoRoot, sourceMap: false, noCheck: true },
      }),
    );
    await exec(process.execPath, [path.join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', cfg], process.env);
    copyFileSync(path.join(repoRoot, 'api/v1alpha2/bundledeployment-crd.yaml'), path.join(dist, 'api/v1alpha2/bundledeployment-crd.yaml'));
    mkdirSync(path.join(dist, 'scripts'), { recursive: true });
    copyFileSync(path.join(repoRoot, 'scripts/tool-versions.env'), path.join(dist, 'scripts/tool-versions.env'));
    log(`compiled the controller into dist/ in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  return path.join(dist, 'src/cli/main.js');
}

interface ProcStat {
  rssMiB: number;
  hwmMiB: number;
  cpuSeconds: number;
}

/** VmRSS, VmHWM and user+system CPU of a process (clock ticks are 100 Hz on Linux) */
function procStat(pid: number): ProcStat {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is the state (field 3): utime and stime are fields 14 and 15
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssMiB: kb('VmRSS') / MiB, hwmMiB: kb('VmHWM') / MiB, cpuSeconds: ticks / 100 };
}

interface Controller {
  child: ChildProcess;
  stop(): Promise<void>;
}

/** the node flags of the image's ENTRYPOINT (between node and main.js), so the controller runs as the image runs it */
function imageNodeFlags(): string[] {
  const line = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'))?.[1];
  const argv = line ? (JSON.parse(line) as string[]) : [];
  return argv.slice(1).filter((a) => a.startsWith('--'));
}

async function startHoist(main: string, cp: ControlPlane, work: string): Promise<Controller> {
  const flags = [...imageNodeFlags(), ...(process.env.HOIST_SCALE_NODE_FLAGS ?? '').split(' ').filter(Boolean)];
  const workers = process.env.HOIST_SCALE_WORKERS ? ['--workers', process.env.HOIST_SCALE_WORKERS] : [];
  const args = [
    ...flags,
    main,
    'run',
    '--kubeconfig',
    cp.kubeconfigPath,
    '--install-crd',
    '--metrics-bind-address',
    '127.0.0.1:0',
    '--cache-dir',
    path.join(work, 'cache'),
    ...workers,
  ];
  const child = spawn(process.execPath, args, {
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: work, NODE_ENV: 'production', HOIST_LOG_LEVEL: process.env.HOIST_LOG_LEVEL ?? 'info' },
  });
  const logFile = path.join(work, 'controller.log');
  let head = '';
  const port = new Promise<number>((resolve, reject) => {
    const onData = (c: Buffer) => {
      if (head.length < 100_000) head += c.toString();
      const m = /"port":(\d+).*serving \/healthz/.exec(head);
      if (m) resolve(Number(m[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`hoist run exited ${code} before serving: ${head.slice(-2000)}`)));
  });
  const { createWriteStream } = await import('node:fs');
  const out = createWriteStream(logFile);
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const p = await port;
  // ready = the BundleDeployment informer has synced
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${p}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    child,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

const key = (e: AuditEvent) =>
  `${e.verb} ${e.objectRef?.resource ?? e.requestURI.split('?')[0]}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
const isWrite = (e: AuditEvent) => ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb);

/** runs `f` over `items` with at most `limit` in flight */
async function pool<T>(items: readonly T[], limit: number, f: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await f(items[next++]!);
    }),
  );
}

async function runOne(n: number, main: string, files: FileServer, log: (l: string) => void): Promise<ScaleRun> {
  const work = await mkdtemp(path.join(tmpdir(), `hoist-bench-scale-${n}-`));
  log(`N=${n}: starting a control plane (etcd, kube-apiserver, kcm, scheduler, kwok; audit log)…`);
  const cp = await startControlPlane({ workloads: true, auditLog: true });
  const admin: RestKubeClient = createKubeClient(loadKubeConfig(cp.kubeconfigPath), { userAgent: BENCH_UA });
  const audit = new AuditReader(cp.auditLogPath!, HOIST_UA);
  const id = Math.random().toString(36).slice(2, 6);
  let ctl: Controller | undefined;
  const watched = new Informer<BundleDeployment & KubeObject>({ client: admin, type: BD });
  try {
    ctl = await startHoist(main, cp, work);
    await new Promise((r) => setTimeout(r, 5000));
    const idle = procStat(ctl.child.pid!);
    log(`N=${n}: controller idle RSS ${idle.rssMiB.toFixed(1)} MiB`);

    // ---- kubectl: one server-side apply of the 4N objects
    const kns = `scale-k-${id}`;
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: kns } });
    const kfile = path.join(work, 'all.yaml');
    await writeFile(kfile, Array.from({ length: n }, (_, i) => toYaml(bundleObjects(i))).join(''));
    let t0 = performance.now();
    await exec(toolPath('kubectl'), ['apply', '--server-side', '-f', kfile, '-n', kns], { PATH: process.env.PATH, HOME: work, KUBECONFIG: cp.kubeconfigPath });
    const kubectlSeconds = (performance.now() - t0) / 1000;
    log(`N=${n}: kubectl apply --server-side of ${4 * n} objects: ${kubectlSeconds.toFixed(1)} s`);
    // let kube-controller-manager catch up with kubectl's Deployments before Hoist starts
    for (;;) {
      const deps = await admin.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: kns });
      if (
        deps.items.length === n &&
        deps.items.every((d) => (d.status as { observedGeneration?: number } | undefined)?.observedGeneration === d.metadata.generation)
      )
        break;
      await new Promise((r) => setTimeout(r, 1000));
    }

    // ---- Hoist: N BundleDeployments created at once
    const hns = `scale-h-${id}`;
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: hns } });
    const bds: Array<{ name: string; url: string; digest: string }> = [];
    for (let i = 0; i < n; i++) {
      const tgz = await tarGz({ 'objects.yaml': toYaml(bundleObjects(i)) });
      files.set(`/${id}/app-${i}.tgz`, tgz);
      bds.push({ name: `scale-${id}-${i}`, url: files.url(`/${id}/app-${i}.tgz`), digest: sha256(tgz) });
    }
    watched.start();
    await watched.waitForSync();
    const done = (bd: (BundleDeployment & KubeObject) | undefined) => {
      const c = (t: string) => bd?.status?.conditions?.find((x) => x.type === t)?.status;
      return !!bd && bd.status?.observedGeneration === bd.metadata.generation && c('Installed') === 'True' && c('Progressing') === 'False';
    };
    const auditFrom = await audit.offset();
    const cpu0 = procStat(ctl.child.pid!).cpuSeconds;
    const fetches0 = files.requests;
    t0 = performance.now();
    await pool(bds, 50, async (b) => {
      await admin.create({
        ...BD,
        metadata: { name: b.name },
        spec: { installNamespace: hns, format: 'plain', sources: [{ kind: 'http', http: { url: b.url, sha256: b.digest } }] },
      } as unknown as KubeObject);
    });
    const names = bds.map((b) => b.name);
    let lastReport = performance.now();
    let installedSeconds: number | undefined;
    const installed = (bd: (BundleDeployment & KubeObject) | undefined) =>
      bd?.status?.conditions?.some((x) => x.type === 'Installed' && x.status === 'True') ?? false;
    for (;;) {
      if (installedSeconds === undefined && names.every((x) => installed(watched.getByName(x)))) installedSeconds = (performance.now() - t0) / 1000;
      const finished = names.filter((x) => done(watched.getByName(x))).length;
      if (finished === n) break;
      if (performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        log(`N=${n}: ${finished}/${n} done after ${((lastReport - t0) / 1000).toFixed(0)} s`);
      }
      if (ctl.child.exitCode !== null) throw new Error(`the controller exited (${ctl.child.exitCode}); see ${work}/controller.log`);
      if (performance.now() - t0 > 900_000) throw new Error(`timed out: ${finished}/${n} done after 900 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const hoistSeconds = (performance.now() - t0) / 1000;
    const after = procStat(ctl.child.pid!);
    log(
      `N=${n}: Hoist: all ${n} installed after ${(installedSeconds ?? hoistSeconds).toFixed(1)} s, done in ${hoistSeconds.toFixed(1)} s (kubectl ${kubectlSeconds.toFixed(1)} s, ratio ${(hoistSeconds / kubectlSeconds).toFixed(2)}); peak RSS ${after.hwmMiB.toFixed(1)} MiB, CPU ${(after.cpuSeconds - cpu0).toFixed(1)} s`,
    );
    const events = await audit.since(auditFrom);
    const byVerb: Record<string, number> = {};
    for (const e of events) byVerb[key(e)] = (byVerb[key(e)] ?? 0) + 1;
    const perBd = Object.fromEntries(
      Object.entries(byVerb)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => [k, Number((v / n).toFixed(2))]),
    );
    log(`N=${n}: ${(events.length / n).toFixed(1)} requests per BD: ${JSON.stringify(perBd)}`);

    // ---- steady state: the controller's requests in a quiet window
    const steadySeconds = Number(process.env.HOIST_SCALE_STEADY_SECONDS ?? 30);
    const steadyFrom = await audit.offset();
    const steadyFetches0 = files.requests;
    await new Promise((r) => setTimeout(r, steadySeconds * 1000));
    const quiet = (await audit.since(steadyFrom)).filter((e) => e.verb !== 'watch');
    const steady = { seconds: steadySeconds, requests: quiet.length, writes: quiet.filter(isWrite).length, fetches: files.requests - steadyFetches0 };
    log(
      `N=${n}: steady state over ${steadySeconds} s: ${steady.requests} requests (${steady.writes} writes), ${steady.fetches} fetches; wave fetched ${steadyFetches0 - fetches0} tarballs`,
    );
    return {
      n,
      hoistSeconds: Number(hoistSeconds.toFixed(2)),
      hoistInstalledSeconds: Number((installedSeconds ?? hoistSeconds).toFixed(2)),
      kubectlSeconds: Number(kubectlSeconds.toFixed(2)),
      ratio: Number((hoistSeconds / kubectlSeconds).toFixed(3)),
      workers: process.env.HOIST_SCALE_WORKERS ?? 'default',
      peakRssMiB: Number(procStat(ctl.child.pid!).hwmMiB.toFixed(1)),
      idleRssMiB: Number(idle.rssMiB.toFixed(1)),
      cpuSeconds: Number((after.cpuSeconds - cpu0).toFixed(2)),
      requestsPerBd: Number((events.length / n).toFixed(2)),
      requestsPerBdByVerb: perBd,
      steady,
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
    };
  } finally {
    await watched.stop();
    await ctl?.stop();
    await admin.close();
    await cp.stop();
    if (!process.env.HOIST_KEEP_CONTROL_PLANE) await rm(work, { recursive: true, force: true });
    else log(`kept ${work}`);
  }
}

export async function run(ns?: number[]): Promise<ScaleResult> {
  const log = (l: string) => console.log(l);
  const sizes = ns?.length ? ns : [Number(process.env.HOIST_SCALE_N ?? 1000)];
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-scale-'));
  const files = await startFileServer();
  const runs: ScaleRun[] = [];
  try {
    const main = await build(log);
    for (const n of sizes) runs.push(await runOne(n, main, files, log));
  } finally {
    await files.close();
    await rm(work, { recursive: true, force: true });
  }
  const last = runs[runs.length - 1]!;
  const result: ScaleResult = {
    benchmark: 'scale',
    ...last,
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    node: process.version,
    kubectl: toolVersions().K8S_VERSION ?? 'unknown',
    runs,
  };
  for (const r of runs)
    log(
      `N=${r.n}: hoist ${r.hoistSeconds} s, kubectl ${r.kubectlSeconds} s, ratio ${r.ratio}; RSS idle ${r.idleRssMiB} / peak ${r.peakRssMiB} MiB; ${r.requestsPerBd} requests per BD; CPU ${r.cpuSeconds} s`,
    );
  await writeResult(resultsFile, result, log);
  return result;
}

runWhenMain(import.meta.url, () =>
  run(
    process.argv
      .slice(2)
      .map(Number)
      .filter((x) => Number.isInteger(x) && x > 0),
  ),
);
