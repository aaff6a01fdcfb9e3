/**
 * Hoist beside Flux (issue 26): the same N apps of bench/scale.ts's 4-object shape (ServiceAccount,
 * headless Service, Deployment with 0 replicas, Ingress; the shape of Flux's published benchmark),
 * each pushed untimed as a Flux OCI artifact (bench/flux.ts) to one local docker-registry, then
 * installed by each tool on its own fresh control plane (etcd, kube-apiserver with an audit log,
 * kube-controller-manager, kube-scheduler, kwok), one after the other:
 *   - Hoist, compiled and run as the image runs it (bench/controller-process.ts) with the chart's
 *     `hoist run` flags (test/support/as-deployed.ts chartRunFlags, its cache budget among them), one
 *     BundleDeployment per app, its image source pinned by digest reading the Flux artifact;
 *   - Flux: source-controller (one OCIRepository per app, tag `latest`, insecure) and
 *     kustomize-controller (one Kustomization per app: wait, prune, targetNamespace, impersonating
 *     a namespace-admin ServiceAccount), as fluxcd/flux-benchmark's timoni module writes them,
 *     run as processes with their default flags plus the benchmark's --concurrent (10 / 20).
 * Measured per tool: first object created → every app ready (Hoist: every BD Installed=True,
 * Healthy=True and Progressing=False Succeeded at its generation, bench/scale.ts rolledOut; Flux:
 * every Kustomization Ready=True at its generation), with p50/p95 per app; peak RSS (VmHWM) and CPU seconds of each controller
 * process; its API requests per app by verb/resource from the audit log (by User-Agent); and the
 * requests the registry answered. Then a quiet window of the same length for each: API requests
 * (no watches), writes, registry requests and CPU, Flux at the benchmark's 60m interval and Hoist
 * with every source pinned.
 *
 * `npx tsx bench/peers.ts [--steady-seconds S] [N ...]` (defaults: $HOIST_PEERS_N or 100,500,1000;
 * $HOIST_PEERS_STEADY_SECONDS or 300 s for N ≥ 1000 and 60 s below). Writes bench/results/peers.json.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { API_VERSION, KIND, type BundleDeployment } from '../api/v1alpha2/types.ts';
import { startControlPlane, type ControlPlane } from '../src/devcluster/control-plane.ts';
import { toolPath, toolVersions } from '../src/devcluster/tools.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../src/kube/client.ts';
import { Informer } from '../src/kube/informer.ts';
import type { KubeObject } from '../src/kube/types.ts';
import { chartRunFlags, imageNodeFlags } from '../test/support/as-deployed.ts';
import { auditEvents, auditOffset, type AuditEvent } from '../test/support/audit.ts';
import { startRegistry, type TestRegistry } from '../test/support/registry.ts';
import { exec, repoRoot, runWhenMain, writeResult } from './common.ts';
import { buildController, procStat, startController } from './controller-process.ts';
import {
  ensureFlux,
  FLUX_CONCURRENCY,
  FLUX_INTERVALS,
  FLUX_ORIGIN,
  FLUX_VERSIONS,
  fluxApp,
  fluxCrdFiles,
  pushFluxArtifacts,
  startFlux,
  type FluxBinaries,
} from './flux.ts';
import { bundleObjects, countByKey, isWrite, rolledOut, toYaml } from './scale.ts';
import { pool, registryRequests } from './scale-sources.ts';

const resultsFile = path.join(repoRoot, 'bench', 'results', 'peers.json');
const BENCH_UA = 'hoist-peers-bench';
const HOIST_UA = 'hoist';

/** Flux's published figure this table sits beside (fluxcd/flux-benchmark/RESULTS.md, Flux v2.9.0) */
const FLUX_PUBLISHED = {
  source: 'https://github.com/fluxcd/flux-benchmark/blob/main/RESULTS.md (Flux v2.9.0)',
  setup:
    'GitHub ubuntu-latest-16-cores runner, kind (3 nodes); source-controller 1 CPU / 1Gi / --concurrent=10, kustomize-controller 2 CPU / 1Gi / --concurrent=20',
  kustomizations: [
    { n: 100, duration: '26s', kustomizeControllerMaxMemory: '134Mi', sourceControllerMaxMemory: '49Mi' },
    { n: 500, duration: '2m0s', kustomizeControllerMaxMemory: '183Mi', sourceControllerMaxMemory: '98Mi' },
    { n: 1000, duration: '4m13s', kustomizeControllerMaxMemory: '223Mi', sourceControllerMaxMemory: '128Mi' },
  ],
};

export interface ProcessFigures {
  name: string;
  idleRssMiB: number;
  peakRssMiB: number;
  cpuSeconds: number;
}

export interface ToolRun {
  tool: 'hoist' | 'flux';
  /** first object created → every app ready */
  seconds: number;
  /** when each app became ready, from the first object created */
  p50Seconds: number;
  p95Seconds: number;
  processes: ProcessFigures[];
  /** the sum of the processes' peak RSS (VmHWM) */
  peakRssMiB: number;
  /** the highest sum of the processes' RSS sampled every ~100 ms during the wave */
  peakConcurrentRssMiB: number;
  /** all processes' CPU (user + system) during the wave */
  cpuSeconds: number;
  requestsPerApp: number;
  requestsPerAppByVerb: Record<string, number>;
  /** requests the registry answered during the wave */
  registryRequests: number;
  /** a quiet window after the wave: API requests other than watches, writes, registry requests, CPU */
  steady: { seconds: number; requests: number; writes: number; registryRequests: number; cpuPercent: number; byVerb: Record<string, number> };
  loadAverage: number[];
}

export interface PeersRun {
  n: number;
  hoist: ToolRun;
  flux: ToolRun;
  /** Hoist / Flux: below 1, Hoist is faster or smaller */
  ratios: { time: number; peakRss: number; peakRssVsKustomizeController: number; cpu: number; requests: number };
}

export interface PeersResult {
  benchmark: 'peers';
  date: string;
  nproc: number;
  node: string;
  kubernetes: string;
  flux: {
    versions: typeof FLUX_VERSIONS;
    origin: typeof FLUX_ORIGIN;
    concurrency: typeof FLUX_CONCURRENCY;
    flags: Record<string, string[]>;
    objects: { interval: string; retryInterval: string; timeout: string; ref: string; wait: boolean; prune: boolean; serviceAccountName: string };
    published: typeof FLUX_PUBLISHED;
  };
  hoist: { nodeFlags: string[]; args: string[]; source: string };
  /** the headline ratios, for bench/run.ts's summary */
  cases: Array<{ name: string; ratio: number }>;
  runs: PeersRun[];
}

const round = (x: number, d = 2) => Number(x.toFixed(d));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
};

interface Wave {
  client: RestKubeClient;
  cp: ControlPlane;
  /** the pids whose RSS and CPU are measured */
  pids: Array<{ name: string; pid: number }>;
  /** is this request the tool's (by User-Agent, or by the identity it impersonates) */
  owns: (e: AuditEvent) => boolean;
  /** creates every app's objects; resolves when all are created */
  create(): Promise<void>;
  /** the apps that are ready now */
  ready(): readonly string[];
  /** throws when a process died */
  check(): void;
}

/** times the wave and measures it, then the quiet window */
async function measure(tool: ToolRun['tool'], n: number, w: Wave, registry: TestRegistry, steadySeconds: number, log: (l: string) => void): Promise<ToolRun> {
  const tag = `N=${n} ${tool}`;
  await sleep(5000);
  const idle = new Map(w.pids.map((p) => [p.name, procStat(p.pid)]));
  log(`${tag}: idle RSS ${[...idle].map(([k, v]) => `${k} ${v.rssMiB.toFixed(1)} MiB`).join(', ')}`);
  const from = await auditOffset(w.cp.auditLogPath!);
  const cpu0 = new Map(w.pids.map((p) => [p.name, procStat(p.pid).cpuSeconds]));
  const reg0 = await registryRequests(registry);
  const readyAt = new Map<string, number>();
  let peakConcurrent = 0;
  const t0 = performance.now();
  const created = w.create();
  let failed: unknown;
  created.catch((e: unknown) => (failed = e));
  let lastReport = t0;
  for (;;) {
    const now = (performance.now() - t0) / 1000;
    for (const name of w.ready()) if (!readyAt.has(name)) readyAt.set(name, now);
    peakConcurrent = Math.max(
      peakConcurrent,
      w.pids.reduce((s, p) => s + procStat(p.pid).rssMiB, 0),
    );
    if (readyAt.size === n) break;
    if (failed) throw failed;
    w.check();
    if (performance.now() - lastReport > 15_000) {
      lastReport = performance.now();
      log(`${tag}: ${readyAt.size}/${n} ready after ${now.toFixed(0)} s`);
    }
    if (now > 1800) throw new Error(`${tag}: timed out, ${readyAt.size}/${n} ready after 1800 s`);
    await sleep(100);
  }
  await created;
  const seconds = Math.max(...readyAt.values());
  const stats = w.pids.map((p) => ({ name: p.name, ...procStat(p.pid) }));
  const cpuSeconds = stats.reduce((s, p) => s + p.cpuSeconds - cpu0.get(p.name)!, 0);
  // requests still in flight when the last app turned ready belong to the wave
  await sleep(1000);
  const waveEnd = await auditOffset(w.cp.auditLogPath!);
  const all = await auditEvents(w.cp.auditLogPath!, from, () => true, waveEnd);
  const events = all.filter(w.owns);
  const registryWave = (await registryRequests(registry)) - reg0;
  // every client's requests in the wave, so that one of the tool's under another User-Agent shows
  const agents: Record<string, number> = {};
  for (const e of all) {
    const ua = `${(e.userAgent ?? '-').split(' ')[0]}${w.owns(e) ? ' (counted)' : ''}`;
    agents[ua] = (agents[ua] ?? 0) + 1;
  }
  log(`${tag}: requests in the wave by User-Agent: ${JSON.stringify(agents)}`);
  const byVerb = Object.fromEntries(
    Object.entries(countByKey(events))
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => [k, round(v / n)]),
  );
  const processes = stats.map((p) => ({
    name: p.name,
    idleRssMiB: round(idle.get(p.name)!.rssMiB, 1),
    peakRssMiB: round(p.hwmMiB, 1),
    cpuSeconds: round(p.cpuSeconds - cpu0.get(p.name)!),
  }));
  log(
    `${tag}: all ${n} ready in ${seconds.toFixed(1)} s (p50 ${percentile([...readyAt.values()], 50).toFixed(1)} s); ${processes.map((p) => `${p.name} peak ${p.peakRssMiB} MiB, CPU ${p.cpuSeconds} s`).join('; ')}; ${(events.length / n).toFixed(1)} requests per app ${JSON.stringify(byVerb)}; ${registryWave} registry requests`,
  );

  // ---- the quiet window
  const steadyFrom = await auditOffset(w.cp.auditLogPath!);
  const steadyReg0 = await registryRequests(registry);
  const steadyCpu0 = w.pids.reduce((s, p) => s + procStat(p.pid).cpuSeconds, 0);
  log(`${tag}: steady state: watching ${steadySeconds} s…`);
  await sleep(steadySeconds * 1000);
  w.check();
  const steadyCpu = w.pids.reduce((s, p) => s + procStat(p.pid).cpuSeconds, 0) - steadyCpu0;
  await sleep(500);
  const quiet = (await auditEvents(w.cp.auditLogPath!, steadyFrom)).filter((e) => w.owns(e) && e.verb !== 'watch');
  const steady = {
    seconds: steadySeconds,
    requests: quiet.length,
    writes: quiet.filter(isWrite).length,
    registryRequests: (await registryRequests(registry)) - steadyReg0,
    cpuPercent: round((steadyCpu / Math.max(steadySeconds, 1)) * 100),
    byVerb: countByKey(quiet),
  };
  log(
    `${tag}: steady over ${steadySeconds} s: ${steady.requests} requests (${steady.writes} writes) ${JSON.stringify(steady.byVerb)}, ${steady.registryRequests} registry requests, CPU ${steady.cpuPercent} %`,
  );
  const times = [...readyAt.values()];
  return {
    tool,
    seconds: round(seconds),
    p50Seconds: round(percentile(times, 50)),
    p95Seconds: round(percentile(times, 95)),
    processes,
    peakRssMiB: round(
      processes.reduce((s, p) => s + p.peakRssMiB, 0),
      1,
    ),
    peakConcurrentRssMiB: round(peakConcurrent, 1),
    cpuSeconds: round(cpuSeconds),
    requestsPerApp: round(events.length / n),
    requestsPerAppByVerb: byVerb,
    registryRequests: registryWave,
    steady,
    loadAverage: loadavg().map((l) => round(l)),
  };
}

const adminClient = (cp: ControlPlane): RestKubeClient => createKubeClient(loadKubeConfig(cp.kubeconfigPath), { userAgent: BENCH_UA });

export interface HoistSetup {
  main: string;
  registriesConf: string;
  nodeFlags: string[];
  args: (work: string) => string[];
}

export async function runHoist(
  n: number,
  hoist: HoistSetup,
  refs: readonly string[],
  registry: TestRegistry,
  steady: number,
  log: (l: string) => void,
): Promise<ToolRun> {
  const work = await mkdtemp(path.join(tmpdir(), `hoist-bench-peers-h${n}-`));
  log(`N=${n} hoist: starting a control plane…`);
  const cp = await startControlPlane({ workloads: true, auditLog: true });
  const client = adminClient(cp);
  const watched = new Informer<BundleDeployment & KubeObject>({ client, type: { apiVersion: API_VERSION, kind: KIND } });
  const ctl = await startController(hoist.main, { kubeconfig: cp.kubeconfigPath, work, nodeFlags: hoist.nodeFlags, args: hoist.args(work) }).catch(
    async (e: unknown) => {
      await client.close();
      await cp.stop();
      throw e;
    },
  );
  try {
    const ns = 'peers-hoist';
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    watched.start();
    await watched.waitForSync();
    const names = refs.map((_, i) => `app-${i}`);
    const done = rolledOut;
    return await measure(
      'hoist',
      n,
      {
        client,
        cp,
        pids: [{ name: 'hoist', pid: ctl.child.pid! }],
        owns: (e) => e.userAgent === HOIST_UA,
        create: () =>
          pool(refs, 50, async (ref, i) => {
            await client.create({
              apiVersion: API_VERSION,
              kind: KIND,
              metadata: { name: names[i]! },
              spec: { installNamespace: ns, format: 'plain', sources: [{ kind: 'image', image: { ref } }] },
            } as unknown as KubeObject);
          }),
        ready: () => names.filter((x) => done(watched.getByName(x))),
        check: () => {
          if (ctl.child.exitCode !== null) throw new Error(`the controller exited (${ctl.child.exitCode}); see ${ctl.logFile}`);
        },
      },
      registry,
      steady,
      log,
    );
  } finally {
    await watched.stop();
    await ctl.stop();
    await client.close();
    await cp.stop();
    if (!process.env.HOIST_KEEP_CONTROL_PLANE) await rm(work, { recursive: true, force: true });
    else log(`kept ${work}`);
  }
}

async function kubectl(cp: ControlPlane, work: string, args: readonly string[]): Promise<string> {
  return exec(toolPath('kubectl'), args, { PATH: process.env.PATH, HOME: work, KUBECONFIG: cp.kubeconfigPath });
}

export async function runFlux(
  n: number,
  bins: FluxBinaries,
  artifacts: ReadonlyArray<{ repository: string }>,
  registry: TestRegistry,
  steady: number,
  log: (l: string) => void,
  flags: Record<string, string[]>,
): Promise<ToolRun> {
  const work = await mkdtemp(path.join(tmpdir(), `hoist-bench-peers-f${n}-`));
  log(`N=${n} flux: starting a control plane, installing Flux's CRDs…`);
  const cp = await startControlPlane({ workloads: true, auditLog: true });
  let procs: Awaited<ReturnType<typeof startFlux>> = [];
  let client: RestKubeClient | undefined;
  let watched: Informer | undefined;
  try {
    for (const f of await fluxCrdFiles()) await kubectl(cp, work, ['apply', '--server-side', '-f', f]);
    await kubectl(cp, work, ['wait', '--for=condition=Established', '--timeout=120s', 'crd', '--all']);
    client = adminClient(cp);
    const c = client;
    // the benchmark's tenant: a namespace, a ServiceAccount the Kustomizations impersonate, bound to the admin ClusterRole there
    const ns = 'peers-flux';
    const sa = 'flux';
    await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await c.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: ns } });
    await c.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: sa, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }],
    } as unknown as KubeObject);
    procs = await startFlux(bins, cp.kubeconfigPath, work);
    for (const p of procs)
      flags[p.name] = p.args.filter((a) => !a.startsWith('--metrics-addr') && !a.startsWith('--health-addr') && !a.startsWith('--storage'));
    flags['source-controller']!.push('--storage-path=<temp dir>', '--storage-addr=<free loopback port>', '--storage-adv-addr=<the same>');
    flags.both = [
      '--metrics-addr=<free loopback port>',
      '--health-addr=<free loopback port>',
      'env GOMEMLIMIT=1GiB',
      'kustomize-controller: env TMPDIR=<tmpfs dir>',
    ];
    const w = new Informer({ client: c, type: { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization' }, namespace: ns });
    watched = w;
    w.start();
    await w.waitForSync();
    const names = artifacts.map((_, i) => `app-${i}`);
    const ready = (k: KubeObject | undefined) => {
      const s = k?.status as { observedGeneration?: number; conditions?: Array<{ type: string; status: string }> } | undefined;
      return !!k && s?.observedGeneration === k.metadata.generation && s?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') === true;
    };
    const agents = ['source-controller', 'kustomize-controller'];
    return await measure(
      'flux',
      n,
      {
        client: c,
        cp,
        pids: procs.map((p) => ({ name: p.name, pid: p.child.pid! })),
        // kustomize-controller's per-reconcile discovery (a fresh REST mapper for the impersonating client) goes out as Go-http-client
        owns: (e) => agents.some((a) => e.userAgent?.startsWith(a)) || e.impersonatedUser?.username === `system:serviceaccount:${ns}:${sa}`,
        create: () =>
          pool(artifacts, 50, async (a, i) => {
            for (const o of fluxApp(names[i]!, ns, a.repository, sa)) await c.create(o as unknown as KubeObject);
          }),
        ready: () => names.filter((x) => ready(w.getByName(x, ns))),
        check: () => {
          for (const p of procs) if (p.child.exitCode !== null) throw new Error(`${p.name} exited (${p.child.exitCode}); see ${p.logFile}`);
        },
      },
      registry,
      steady,
      log,
    );
  } finally {
    await watched?.stop();
    for (const p of procs) await p.stop();
    await client?.close();
    await cp.stop();
    await rm(path.join('/dev/shm', path.basename(work)), { recursive: true, force: true });
    if (!process.env.HOIST_KEEP_CONTROL_PLANE) await rm(work, { recursive: true, force: true });
    else log(`kept ${work}`);
  }
}

/** the quiet window: `--steady-seconds`, else $HOIST_PEERS_STEADY_SECONDS, else 5 minutes at N ≥ 1000 and 60 s below */
function defaultSteadySeconds(n: number): number {
  return process.env.HOIST_PEERS_STEADY_SECONDS ? Number(process.env.HOIST_PEERS_STEADY_SECONDS) : n >= 1000 ? 300 : 60;
}

export interface PeersOptions {
  /** sizes, one after the other (default $HOIST_PEERS_N or 100,500,1000) */
  ns?: number[];
  steadySeconds?: number;
}

/** the results file's content for the runs so far */
function summary(runs: PeersRun[], flags: Record<string, string[]>): PeersResult {
  return {
    benchmark: 'peers',
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    node: process.version,
    kubernetes: toolVersions().K8S_VERSION ?? 'unknown',
    flux: {
      versions: FLUX_VERSIONS,
      origin: FLUX_ORIGIN,
      concurrency: FLUX_CONCURRENCY,
      flags,
      objects: { ...FLUX_INTERVALS, ref: 'tag latest', wait: true, prune: true, serviceAccountName: 'flux (RoleBinding to ClusterRole admin)' },
      published: FLUX_PUBLISHED,
    },
    hoist: {
      nodeFlags: imageNodeFlags(),
      args: [
        'run',
        ...chartRunFlags(),
        '--install-crd',
        '--cache-dir <temp dir>',
        '--registries-conf <the registry as insecure>',
        '--metrics-bind-address 127.0.0.1:0',
      ],
      source: 'image, pinned by digest, reading the Flux artifact unchanged',
    },
    cases: runs.flatMap((r) => [
      { name: `N=${r.n} time hoist/flux`, ratio: r.ratios.time },
      { name: `N=${r.n} peak RSS hoist/flux`, ratio: r.ratios.peakRss },
    ]),
    runs,
  };
}

export async function run(options: PeersOptions = {}): Promise<PeersResult> {
  const log = (l: string) => console.log(l);
  const sizes = options.ns?.length ? options.ns : (process.env.HOIST_PEERS_N ?? '100,500,1000').split(',').map(Number);
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-peers-'));
  const flags: Record<string, string[]> = {};
  const runs: PeersRun[] = [];
  let registry: TestRegistry | undefined;
  let result: PeersResult | undefined;
  try {
    const bins = await ensureFlux(log);
    const main = await buildController(log);
    registry = await startRegistry({ auth: 'none', dir: path.join(work, 'registry') });
    const registriesConf = path.join(work, 'registries.conf');
    await writeFile(registriesConf, `[[registry]]\nlocation = "${registry.host}"\ninsecure = true\n`);
    const hoist: HoistSetup = {
      main,
      registriesConf,
      nodeFlags: imageNodeFlags(),
      args: (w) => [...chartRunFlags(), '--install-crd', '--cache-dir', path.join(w, 'cache'), '--registries-conf', registriesConf],
    };
    let pushed: Array<{ repository: string; digest: string }> = [];
    for (const n of sizes) {
      if (pushed.length < n) {
        const p0 = performance.now();
        const apps = Array.from({ length: n }, (_, i) => ({ 'objects.yaml': toYaml(bundleObjects(i)) }));
        pushed = await pushFluxArtifacts(registry, work, apps);
        log(`pushed ${n} Flux OCI artifacts (untimed) in ${((performance.now() - p0) / 1000).toFixed(1)} s`);
      }
      const artifacts = pushed.slice(0, n);
      const steady = options.steadySeconds ?? defaultSteadySeconds(n);
      const h = await runHoist(
        n,
        hoist,
        artifacts.map((a) => `${a.repository}@${a.digest}`),
        registry,
        steady,
        log,
      );
      const f = await runFlux(n, bins, artifacts, registry, steady, log, flags);
      const kc = f.processes.find((p) => p.name === 'kustomize-controller')!;
      const r: PeersRun = {
        n,
        hoist: h,
        flux: f,
        ratios: {
          time: round(h.seconds / f.seconds, 3),
          peakRss: round(h.peakRssMiB / f.peakRssMiB, 3),
          peakRssVsKustomizeController: round(h.peakRssMiB / kc.peakRssMiB, 3),
          cpu: round(h.cpuSeconds / f.cpuSeconds, 3),
          requests: round(h.requestsPerApp / f.requestsPerApp, 3),
        },
      };
      log(
        `N=${n}: Hoist ${h.seconds} s / Flux ${f.seconds} s (${r.ratios.time}); peak RSS ${h.peakRssMiB} / ${f.peakRssMiB} MiB (${r.ratios.peakRss}); CPU ${h.cpuSeconds} / ${f.cpuSeconds} s; requests per app ${h.requestsPerApp} / ${f.requestsPerApp}`,
      );
      runs.push(r);
      // after each N, so a later failure keeps what was measured
      result = summary(runs, flags);
      await writeResult(resultsFile, result, log);
    }
  } finally {
    await registry?.stop();
    await rm(work, { recursive: true, force: true });
  }
  return result!;
}

/** `[--steady-seconds S] [N ...]` */
function parseArgs(argv: readonly string[]): PeersOptions {
  const out: PeersOptions = { ns: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--steady-seconds' || a.startsWith('--steady-seconds=')) {
      out.steadySeconds = Number(a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i]);
      if (!Number.isFinite(out.steadySeconds) || out.steadySeconds < 0) throw new Error(`--steady-seconds: "${a}" is not a number of seconds`);
    } else if (Number.isInteger(Number(a)) && Number(a) > 0) out.ns!.push(Number(a));
    else throw new Error(`bench/peers.ts: unknown argument "${a}" (usage: [--steady-seconds S] [N ...])`);
  }
  return out;
}

runWhenMain(import.meta.url, () => run(parseArgs(process.argv.slice(2))));
