/**
 * Scale benchmark (issue 10): N BundleDeployments created at once, each 4 objects (ServiceAccount,
 * headless Service, Deployment with 0 replicas, Ingress; the shape of Flux's published benchmark)
 * from pinned content, all installed into one namespace, against a local control plane with
 * kube-controller-manager, kube-scheduler and kwok (so the Deployments roll out). Two sources of
 * the same objects: `http` (one tarball per BD from a local file server, pinned by sha256) and
 * `image` (one OCI image per BD, pushed untimed to a local docker-registry and pinned by digest;
 * the controller reaches it through --registries-conf as an insecure registry).
 *
 * The controller runs as the image runs it: compiled with `tsc` to dist/ (as scripts/image.sh
 * compiles it) and started as `node <the Dockerfile ENTRYPOINT's node flags> --max-old-space-size=<the
 * chart's memory limit> dist/src/cli/main.js run <the chart's run flags>` (test/support/as-deployed.ts
 * deployedNodeFlags, chartRunFlags: its workers, renders, cache budget, fetch deadline, revision
 * cap) with the Dockerfile ENV's MALLOC_* and NODE_* variables, a child process whose RSS and CPU
 * are read from /proc: idle (CRD installed, no BDs), peak (VmHWM) and CPU seconds during the wave
 * (also per BD, in ms).
 * Hoist's time = first BD created → every BD Installed=True, Healthy=True, Progressing=False
 * Succeeded at its generation (rolledOut), observed through a watch; per BD, the time from its creation to its done condition (p50, p95,
 * max), beside the wave's. Its requests come from the API server's audit log (the controller's
 * User-Agent "hoist"; this process uses another), per BD and by verb/resource, against the floor
 * the design needs per BD (REQUEST_FLOOR) with every request above it named; after the wave a
 * quiet window counts the steady state's requests, writes and content fetches (requests to the
 * file server or registry) and the controller's CPU.
 * Reference in the same run, before Hoist's wave: one `kubectl apply --server-side` of the same
 * 4N objects into another fresh namespace; then the benchmark waits until kube-controller-manager
 * has observed all of kubectl's Deployments, so its background work does not land on Hoist.
 * Second reference, http sources, one process and N ≤ 2,000 only: the request floor (bench/scale-floor.ts),
 * the same N bundles through a client that makes only the floor's 9 requests per app and holds the
 * same kinds of watches, with Hoist's kube client and libraries and the image's node flags; its CPU
 * per app is what the requests, watch events, download, unpack and YAML parse cost in Node, and
 * `cpuOverFloor` is Hoist's wave CPU over it. Both record their CPU by thread group (JavaScript,
 * V8's GC and compiler helpers, libuv's pool).
 * Nothing is deleted: every N gets a fresh control plane and each side its own namespace.
 *
 * `npx tsx bench/scale.ts [--source http|image|both] [--steady-seconds S] [N[xP] ...]` (defaults:
 * $HOIST_SCALE_SOURCE or both; $HOIST_SCALE_STEADY_SECONDS or 300 s for 1000 ≤ N < 10000, 120 s
 * from 10000 (the wave is long enough there) and 30 s below; $HOIST_SCALE_N or 1000). `NxP` runs
 * N BundleDeployments over P `hoist run --shard` processes (bench/scale-shards.ts), e.g. 10000x2.
 * Several N run one after the other (http first, then image) and are kept as `runs` in
 * bench/results/scale.json (http) and bench/results/scale-image.json (image); the top-level
 * figures are the last run's, and `growth` compares each run with the smallest single-process N
 * of the same invocation (time, CPU, peak, idle and steady RSS).
 * At N = 10,000 (40,000 objects a side): kubectl's reference applies 1,000 bundles' objects per
 * `kubectl apply --server-side` in turn (one process's memory stays bounded; the requests are the
 * same, one object after the other), the audit log is streamed, and etcd's quota is raised. $HOIST_SCALE_WORKERS passes --workers;
 * $HOIST_SCALE_RENDER_THREADS passes --render-threads (their CPU is `cpuByThread.renderThreads`);
 * $HOIST_SCALE_NODE_FLAGS adds node flags (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof");
 * $HOIST_SCALE_NO_BUILD=1 reuses dist/.
 * $HOIST_SCALE_WARMUP=W: before each measured wave, the controller and the floor client each first
 * handle a warm-up wave of W more apps (their own bundles, same shape), untimed and not counted, so
 * the N measured are handled by code V8 has already compiled and optimized — a long-running
 * controller's cost per BD rather than a freshly started one's (`warmUp` in the results).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { API_VERSION, FINALIZER, KIND, type BundleDeployment } from '../api/v1alpha2/types.ts';
import { startControlPlane, type ControlPlane } from '../src/devcluster/control-plane.ts';
import { toolPath, toolVersions } from '../src/devcluster/tools.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../src/kube/client.ts';
import { Informer } from '../src/kube/informer.ts';
import type { KubeObject } from '../src/kube/types.ts';
import { chartRunFlags, deployedNodeFlags } from '../test/support/as-deployed.ts';
import { AuditReader, type AuditEvent } from '../test/support/audit.ts';
import { exec, repoRoot, runWhenMain, writeResult } from './common.ts';
import { buildController, diffThreads, startController, sumThreads, threadCpu, type Controller, type ThreadCpu } from './controller-process.ts';
import { measureFloor, type FloorRun } from './scale-floor.ts';
import { round1, scaleGrowth, startControllerGroup, type ControllerGroup, type ProcessFigures, type ScaleGrowth } from './scale-shards.ts';
import { pool, startHttpSource, startImageSource, type PinnedSource, type ScaleSource, type ScaleSourceKind } from './scale-sources.ts';

const resultsFiles: Record<ScaleSourceKind, string> = {
  http: path.join(repoRoot, 'bench', 'results', 'scale.json'),
  image: path.join(repoRoot, 'bench', 'results', 'scale-image.json'),
};
const BD = { apiVersion: API_VERSION, kind: KIND } as const;
/**
 * the floor reference runs up to this N: its 4N objects would add to kube-controller-manager's
 * load during Hoist's wave, and larger runs compare growth with earlier series that had none
 */
const FLOOR_MAX_N = 2000;
/** $HOIST_SCALE_WARMUP: the warm-up wave's size (0: none) */
function warmUpCount(): number {
  const w = Number(process.env.HOIST_SCALE_WARMUP ?? 0);
  if (!Number.isInteger(w) || w < 0) throw new Error(`HOIST_SCALE_WARMUP must be a whole number, not ${process.env.HOIST_SCALE_WARMUP}`);
  return w;
}

/** the controller's workers: $HOIST_SCALE_WORKERS, else the chart's --workers; the floor client runs as many */
function controllerWorkers(): number {
  const flags = chartRunFlags();
  return Number(process.env.HOIST_SCALE_WORKERS ?? flags[flags.indexOf('--workers') + 1]);
}
const HOIST_UA = 'hoist';
const BENCH_UA = 'hoist-scale-bench';

export interface ScaleRun {
  n: number;
  /** where each BD's content comes from: a pinned http tarball or a pinned OCI image */
  source: ScaleSourceKind;
  hoistSeconds: number;
  /** first BD created → every BD Installed=True (applied; before kube-controller-manager observed the Deployments) */
  hoistInstalledSeconds: number;
  kubectlSeconds: number;
  /** hoistSeconds / kubectlSeconds: below 1, Hoist is faster */
  ratio: number;
  workers: string;
  /** hoist run --render-threads (0: renders on the controller's thread) */
  renderThreads: number;
  /** controller processes: 1, or that many `--shard` processes splitting the N BDs */
  processes: number;
  /** the largest of the processes' */
  peakRssMiB: number;
  idleRssMiB: number;
  /** controller CPU (user + system) from the first BD created to the last one done, summed over the processes */
  cpuSeconds: number;
  /** cpuSeconds per BD, in ms */
  cpuMsPerBd: number;
  /** the wave's CPU seconds by thread group (all processes together) */
  cpuByThread: ThreadCpu;
  /** per BD: its creation (the create call answered) → its done condition seen by this process's watch */
  timeToDoneSeconds: { p50: number; p95: number; max: number };
  /**
   * per BD: its first status (the controller's first reconcile of it ended) → done: how long a BD
   * takes once the controller has started on it, without its wait for a first turn in the queue
   */
  firstStatusToDoneSeconds: { p50: number; p95: number; max: number };
  /**
   * per BD: the controller picked it up (its finalizer, the first write of its first reconcile, was
   * seen) → done: the BD's own latency once a worker took it, including its fetch, render and apply
   */
  pickedUpToDoneSeconds: { p50: number; p95: number; max: number };
  /** the 5 BDs slowest from first status to done */
  slowest?: { name: string; seconds: number }[];
  /** BDs whose Progressing turned False for a reason other than Succeeded during the wave (Blocked: past progressDeadline), by reason */
  stoppedShort?: Record<string, number>;
  /** each process's own figures (one entry when unsharded) */
  perProcess: ProcessFigures[];
  requestsPerBd: number;
  requestsPerBdByVerb: Record<string, number>;
  /** the requests per BD the design needs for this bundle (REQUEST_FLOOR), their total, and what was measured above it by verb */
  requestFloor: { perBd: number; byVerb: Record<string, number>; aboveFloorByVerb: Record<string, number> };
  /** requests the content server (file server or registry) answered during the wave */
  waveFetches: number;
  /**
   * the request-floor reference (bench/scale-floor.ts; http sources, one process): the same N
   * bundles through a client that makes only the floor's requests and holds the same watches
   */
  floor?: FloorRun;
  /** Hoist's wave CPU / the floor client's: how much Hoist's own logic adds */
  cpuOverFloor?: number;
  /**
   * A quiet window after the wave: the controller's API requests other than watches, writes among
   * them, requests to the content server, the controller's CPU, and the requests by verb/resource
   */
  steady: {
    seconds: number;
    requests: number;
    writes: number;
    fetches: number;
    cpuPercent: number;
    byVerb: Record<string, number>;
    /** RSS at the end of the window (the largest of the processes'): idle, holding N BDs */
    rssMiB: number;
  };
  loadAverage: number[];
  /** BDs (and floor apps) handled before the measured wave, untimed ($HOIST_SCALE_WARMUP; 0: a fresh process) */
  warmUp: number;
}

export interface ScaleResult extends ScaleRun {
  benchmark: 'scale';
  date: string;
  nproc: number;
  node: string;
  kubectl: string;
  runs: ScaleRun[];
  growth: ScaleGrowth[];
}

/**
 * A BD done as its user means it: at its generation, installed, healthy and its rollout finished
 * (Progressing=False Succeeded). Progressing=False for another reason (Blocked at its
 * progressDeadline) is not done.
 */
export function rolledOut(bd: (BundleDeployment & KubeObject) | undefined): boolean {
  const c = (t: string) => bd?.status?.conditions?.find((x) => x.type === t);
  return (
    !!bd &&
    bd.status?.observedGeneration === bd.metadata.generation &&
    c('Installed')?.status === 'True' &&
    c('Healthy')?.status === 'True' &&
    c('Progressing')?.status === 'False' &&
    c('Progressing')?.reason === 'Succeeded'
  );
}

/** the 4 objects of bundle i (no namespace: Hoist defaults it to installNamespace, kubectl to -n) */
export function bundleObjects(i: number): KubeObject[] {
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

/**
 * The requests per BD that the design needs to install one of these bundles, by audit key:
 * - the finalizer, before anything is created for the BD (a metadata patch: status cannot carry it);
 * - the revision Secret, stored before anything of the revision is applied (one chunk: the
 *   revision is a few KiB compressed);
 * - one server-side apply per object; none is read first (the watches say they are new);
 * - two status writes: the first reconcile applies the ServiceAccount, Service and Deployment and
 *   records the transition with the phase that waits (the Ingress is in the `publish` phase,
 *   applied once the Deployment is ready; docs/status.md: bookkeeping such as `transition` and
 *   `observedGeneration` is written at once, not held back); the second, once the Deployment is
 *   ready, says the Ingress is applied and the revision installed and healthy (done). A bundle
 *   whose objects are ready by the end of its apply needs one;
 * - the `Installed` Event.
 */
const REQUEST_FLOOR: Readonly<Record<string, number>> = {
  'patch bundledeployments': 1,
  'create secrets': 1,
  'patch serviceaccounts': 1,
  'patch services': 1,
  'patch deployments': 1,
  'patch ingresses': 1,
  'update bundledeployments/status': 2,
  'create events': 1,
};

/** the value at quantile q (0..1) of ascending values, nearest rank */
function quantile(sorted: readonly number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]! : NaN;
}

export const toYaml = (objs: readonly KubeObject[]): string => objs.map((o) => `---\n${stringify(o)}`).join('');

/** objects per `kubectl apply` of the reference: 1,000 bundles' (at N = 1,000, one apply as before) */
const KUBECTL_CHUNK = 4000;

/** the image's node flags and $HOIST_SCALE_NODE_FLAGS: the controller's and the floor client's */
const nodeFlags = (): string[] => [...deployedNodeFlags(), ...(process.env.HOIST_SCALE_NODE_FLAGS ?? '').split(' ').filter(Boolean)];

async function startHoist(main: string, cp: ControlPlane, work: string, sourceArgs: readonly string[]): Promise<Controller> {
  const workers = process.env.HOIST_SCALE_WORKERS ? ['--workers', process.env.HOIST_SCALE_WORKERS] : [];
  const threads = process.env.HOIST_SCALE_RENDER_THREADS ? ['--render-threads', process.env.HOIST_SCALE_RENDER_THREADS] : [];
  return startController(main, {
    kubeconfig: cp.kubeconfigPath,
    work,
    nodeFlags: nodeFlags(),
    // the chart's `hoist run` flags (its cache budget among them), then this run's
    args: [...chartRunFlags(), '--install-crd', '--cache-dir', path.join(work, 'cache'), ...workers, ...threads, ...sourceArgs],
  });
}

const key = (e: AuditEvent) =>
  `${e.verb} ${e.objectRef?.resource ?? e.requestURI.split('?')[0]}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
export const isWrite = (e: AuditEvent) => ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb);

export const countByKey = (events: readonly AuditEvent[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const e of events) out[key(e)] = (out[key(e)] ?? 0) + 1;
  return out;
};

/**
 * the quiet window: `--steady-seconds`, else $HOIST_SCALE_STEADY_SECONDS, else 5 minutes at
 * 1000 ≤ N < 10000, 2 minutes from 10000 (a 5-minute window there adds little but time) and 30 s below
 */
function defaultSteadySeconds(n: number): number {
  if (process.env.HOIST_SCALE_STEADY_SECONDS) return Number(process.env.HOIST_SCALE_STEADY_SECONDS);
  return n >= 10_000 ? 120 : n >= 1000 ? 300 : 30;
}

async function runOne(n: number, main: string, content: ScaleSource, steadySeconds: number, log: (l: string) => void, processes = 1): Promise<ScaleRun> {
  const work = await mkdtemp(path.join(tmpdir(), `hoist-bench-scale-${n}-`));
  const tag = `N=${n}${processes > 1 ? `x${processes}` : ''} ${content.kind}`;
  log(`${tag}: starting a control plane (etcd, kube-apiserver, kcm, scheduler, kwok; audit log)…`);
  const cp = await startControlPlane({ workloads: true, auditLog: true });
  const admin: RestKubeClient = createKubeClient(loadKubeConfig(cp.kubeconfigPath), { userAgent: BENCH_UA });
  const audit = new AuditReader(cp.auditLogPath!, HOIST_UA);
  const id = Math.random().toString(36).slice(2, 6);
  let ctl: ControllerGroup | undefined;
  const watched = new Informer<BundleDeployment & KubeObject>({ client: admin, type: BD });
  /** per BD name: when its create was answered, and when this watch first saw it done (performance.now()) */
  const createdAt = new Map<string, number>();
  const doneAt = new Map<string, number>();
  const firstStatusAt = new Map<string, number>();
  const pickedUpAt = new Map<string, number>();
  try {
    ctl = await startControllerGroup(processes, work, (dir, args) => startHoist(main, cp, dir, [...content.hoistArgs, ...args]));
    await new Promise((r) => setTimeout(r, 5000));
    const idle = ctl.stats();
    log(`${tag}: controller idle RSS ${idle.map((s) => s.rssMiB.toFixed(1)).join(' / ')} MiB`);

    // ---- kubectl: server-side applies of the 4N objects, KUBECTL_CHUNK objects each, one after the other
    const kns = `scale-k-${id}`;
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: kns } });
    const kfiles: string[] = [];
    for (let from = 0; from < n; from += KUBECTL_CHUNK / 4) {
      kfiles.push(path.join(work, `all-${from}.yaml`));
      const to = Math.min(n, from + KUBECTL_CHUNK / 4);
      await writeFile(kfiles[kfiles.length - 1]!, Array.from({ length: to - from }, (_, i) => toYaml(bundleObjects(from + i))).join(''));
    }
    let t0 = performance.now();
    for (const kfile of kfiles)
      await exec(toolPath('kubectl'), ['apply', '--server-side', '-f', kfile, '-n', kns], {
        PATH: process.env.PATH,
        HOME: work,
        KUBECONFIG: cp.kubeconfigPath,
      });
    const kubectlSeconds = (performance.now() - t0) / 1000;
    log(`${tag}: kubectl apply --server-side of ${4 * n} objects (${kfiles.length} applies): ${kubectlSeconds.toFixed(1)} s`);
    // let kube-controller-manager catch up with kubectl's Deployments before Hoist starts
    for (;;) {
      const deps = await admin.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: kns });
      if (
        deps.items.length === n &&
        deps.items.every((d) => (d.status as { observedGeneration?: number } | undefined)?.observedGeneration === d.metadata.generation)
      )
        break;
      // a list of 10,000 Deployments is itself work for the API server: ask less often at large N
      await new Promise((r) => setTimeout(r, n > 2000 ? 5000 : 1000));
    }

    // the bundles, published once: the floor client and Hoist read the same pinned content
    const p0 = performance.now();
    const warmN = warmUpCount();
    const published = await content.publish(
      id,
      Array.from({ length: n + warmN }, (_, i) => ({ 'objects.yaml': toYaml(bundleObjects(i)) })),
    );
    // the warm-up waves' bundles come after the measured ones: their objects have names of their own
    const pinned = published.slice(0, n);
    const warmPinned = published.slice(n);
    log(
      `${tag}: published ${n + warmN} bundles (untimed${warmN ? `, ${warmN} of them for the warm-up waves` : ''}) in ${((performance.now() - p0) / 1000).toFixed(1)} s`,
    );

    // ---- the request floor: the same requests and watches without Hoist's logic (http sources, one process)
    let floorRun: FloorRun | undefined;
    if (content.kind === 'http' && processes === 1 && n <= FLOOR_MAX_N) {
      floorRun = await measureFloor({
        main,
        kubeconfig: cp.kubeconfigPath,
        auditLog: cp.auditLogPath!,
        admin,
        namespace: `scale-f-${id}`,
        sources: pinned,
        warmUp: warmPinned,
        nodeFlags: nodeFlags(),
        workers: controllerWorkers(),
        timeoutSeconds: Math.max(900, 0.6 * n),
      });
      log(
        `${tag}: request floor client: ${n} apps done in ${floorRun.seconds} s, CPU ${floorRun.cpuSeconds} s (${floorRun.cpuMsPerApp} ms per app), peak RSS ${floorRun.peakRssMiB} MiB, ${floorRun.requestsPerApp} requests per app; by thread ${JSON.stringify(floorRun.cpuByThread)}`,
      );
    }

    // ---- Hoist: N BundleDeployments created at once
    const hns = `scale-h-${id}`;
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: hns } });
    const bds = pinned.map((source, i) => ({ name: `scale-${id}-${i}`, source, labels: ctl!.labelsFor(i) }));
    watched.start();
    await watched.waitForSync();
    const done = rolledOut;
    /** BDs whose rollout stopped short of Succeeded on the way (reason → names) */
    const stoppedShort = new Map<string, Set<string>>();
    const seen = (bd: BundleDeployment & KubeObject) => {
      const name = bd.metadata.name;
      if (!pickedUpAt.has(name) && bd.metadata.finalizers?.includes(FINALIZER)) pickedUpAt.set(name, performance.now());
      if (!firstStatusAt.has(name) && bd.status?.conditions?.length) firstStatusAt.set(name, performance.now());
      const p = bd.status?.conditions?.find((x) => x.type === 'Progressing');
      if (p?.status === 'False' && p.reason !== 'Succeeded') {
        const names = stoppedShort.get(p.reason ?? '') ?? new Set<string>();
        stoppedShort.set(p.reason ?? '', names.add(name));
      }
      if (!doneAt.has(name) && done(bd)) doneAt.set(name, performance.now());
    };
    watched.addHandler({ onAdd: seen, onUpdate: (_, bd) => seen(bd) });
    watched.start();
    await watched.waitForSync();
    const createBd = async (b: { name: string; source: PinnedSource; labels: Record<string, string> | undefined }) => {
      await admin.create({
        ...BD,
        metadata: { name: b.name, ...(b.labels ? { labels: b.labels } : {}) },
        spec: { installNamespace: hns, format: 'plain', sources: [b.source] },
      } as unknown as KubeObject);
    };
    if (warmN > 0) {
      // the warm-up wave: created, waited for and left installed, before anything is measured
      const w0 = performance.now();
      const warm = warmPinned.map((source, i) => ({ name: `warm-${id}-${i}`, source, labels: ctl!.labelsFor(n + i) }));
      await pool(warm, 50, createBd);
      for (;;) {
        const finished = warm.filter((b) => done(watched.getByName(b.name))).length;
        if (finished === warmN) break;
        const exited = ctl.exited();
        if (exited) throw new Error(`a controller exited (${exited.code}) in the warm-up wave; see ${exited.logFile}`);
        if (performance.now() - w0 > Math.max(900, 0.6 * warmN) * 1000) throw new Error(`warm-up wave timed out: ${finished}/${warmN} done`);
        await new Promise((r) => setTimeout(r, 100));
      }
      log(`${tag}: warm-up wave of ${warmN} BDs done in ${((performance.now() - w0) / 1000).toFixed(1)} s (not measured)`);
    }
    const auditFrom = await audit.offset();
    const cpu0 = ctl.stats().map((s) => s.cpuSeconds);
    const threads0 = sumThreads(ctl.members.map((m) => threadCpu(m.ctl.child.pid!)));
    const fetches0 = await content.requests();
    t0 = performance.now();
    await pool(bds, 50, async (b) => {
      await createBd(b);
      createdAt.set(b.name, performance.now());
    });
    const names = bds.map((b) => b.name);
    let lastReport = performance.now();
    // 15 minutes, and 0.6 s per BD beyond 1,500: 0.3 s was too little for 10,000 BDs on a 2-core
    // machine shared with other work (load average 20-30: 7,500 done after 2,550 s)
    const waveLimitSeconds = Math.max(900, 0.6 * n);
    let installedSeconds: number | undefined;
    const installed = (bd: (BundleDeployment & KubeObject) | undefined) =>
      bd?.status?.conditions?.some((x) => x.type === 'Installed' && x.status === 'True') ?? false;
    for (;;) {
      if (installedSeconds === undefined && names.every((x) => installed(watched.getByName(x)))) installedSeconds = (performance.now() - t0) / 1000;
      const finished = names.filter((x) => done(watched.getByName(x))).length;
      if (finished === n) break;
      if (performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        log(`${tag}: ${finished}/${n} done after ${((lastReport - t0) / 1000).toFixed(0)} s`);
      }
      const exited = ctl.exited();
      if (exited) throw new Error(`a controller exited (${exited.code}); see ${exited.logFile}`);
      if (performance.now() - t0 > waveLimitSeconds * 1000) throw new Error(`timed out: ${finished}/${n} done after ${waveLimitSeconds} s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const hoistSeconds = (performance.now() - t0) / 1000;
    const after = ctl.stats();
    const threads1 = sumThreads(ctl.members.map((m) => threadCpu(m.ctl.child.pid!)));
    const cpuByThread = diffThreads(threads1, threads0);
    const waveCpu = after.map((s, k) => s.cpuSeconds - cpu0[k]!);
    const cpuSeconds = waveCpu.reduce((a, b) => a + b, 0);
    const spread = (from: Map<string, number>) => {
      const xs = names.map((x) => ((doneAt.get(x) ?? performance.now()) - (from.get(x) ?? t0)) / 1000).sort((a, b) => a - b);
      return { p50: Number(quantile(xs, 0.5).toFixed(2)), p95: Number(quantile(xs, 0.95).toFixed(2)), max: Number(quantile(xs, 1).toFixed(2)) };
    };
    // the tail by name, to look each up in the controller's log (HOIST_KEEP_CONTROL_PLANE keeps it)
    const slowest = names
      .map((x) => ({ name: x, seconds: Number((((doneAt.get(x) ?? performance.now()) - (firstStatusAt.get(x) ?? t0)) / 1000).toFixed(2)) }))
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, 5);
    const stopped = Object.fromEntries([...stoppedShort].map(([reason, xs]) => [reason, xs.size]));
    log(`${tag}: slowest first status → done: ${JSON.stringify(slowest)}; rollouts stopped short of Succeeded on the way: ${JSON.stringify(stopped)}`);
    const timeToDoneSeconds = spread(createdAt);
    const firstStatusToDoneSeconds = spread(firstStatusAt);
    const pickedUpToDoneSeconds = spread(pickedUpAt);
    log(
      `${tag}: time to done per BD (creation → done): p50 ${timeToDoneSeconds.p50} s, p95 ${timeToDoneSeconds.p95} s, max ${timeToDoneSeconds.max} s; picked up → done: p50 ${pickedUpToDoneSeconds.p50} s, p95 ${pickedUpToDoneSeconds.p95} s (wave ${hoistSeconds.toFixed(1)} s); first status → done: p50 ${firstStatusToDoneSeconds.p50} s, p95 ${firstStatusToDoneSeconds.p95} s`,
    );
    log(
      `${tag}: Hoist: all ${n} installed after ${(installedSeconds ?? hoistSeconds).toFixed(1)} s, done in ${hoistSeconds.toFixed(1)} s (kubectl ${kubectlSeconds.toFixed(1)} s, ratio ${(hoistSeconds / kubectlSeconds).toFixed(2)}); peak RSS ${after.map((s) => s.hwmMiB.toFixed(1)).join(' / ')} MiB, CPU ${waveCpu.map((c) => c.toFixed(1)).join(' + ')} s (${((cpuSeconds * 1000) / n).toFixed(1)} ms per BD; by thread ${JSON.stringify(cpuByThread)})`,
    );
    const events = await audit.since(auditFrom);
    const perBd = Object.fromEntries(
      Object.entries(countByKey(events))
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => [k, Number((v / n).toFixed(2))]),
    );
    log(`${tag}: ${(events.length / n).toFixed(1)} requests per BD: ${JSON.stringify(perBd)}`);
    const floor = Object.values(REQUEST_FLOOR).reduce((a, b) => a + b, 0);
    const aboveFloorByVerb = Object.fromEntries(
      Object.entries(perBd)
        .map(([k, v]) => [k, Number((v - (REQUEST_FLOOR[k] ?? 0)).toFixed(2))] as const)
        .filter(([, v]) => v > 0),
    );
    log(`${tag}: request floor ${floor} per BD, measured ${(events.length / n).toFixed(2)}; above it: ${JSON.stringify(aboveFloorByVerb)}`);

    // ---- steady state: the controller's requests in a quiet window
    const steadyFrom = await audit.offset();
    const steadyFetches0 = await content.requests();
    const steadyCpu0 = ctl.stats().reduce((a, s) => a + s.cpuSeconds, 0);
    // a done BD as the controller's cache holds it (less managedFields), to size what each costs
    if (process.env.HOIST_SCALE_DUMP_BD) writeFileSync(process.env.HOIST_SCALE_DUMP_BD, JSON.stringify(watched.getByName(names[0]!), null, 1));
    log(`${tag}: steady state: watching ${steadySeconds} s…`);
    await new Promise((r) => setTimeout(r, steadySeconds * 1000));
    const rested = ctl.stats();
    const steadyCpu = rested.reduce((a, s) => a + s.cpuSeconds, 0) - steadyCpu0;
    const quiet = (await audit.since(steadyFrom)).filter((e) => e.verb !== 'watch');
    const steady = {
      seconds: steadySeconds,
      requests: quiet.length,
      writes: quiet.filter(isWrite).length,
      fetches: (await content.requests()) - steadyFetches0,
      cpuPercent: Number(((steadyCpu / steadySeconds) * 100).toFixed(2)),
      byVerb: countByKey(quiet),
      rssMiB: round1(Math.max(...rested.map((s) => s.rssMiB))),
    };
    log(
      `${tag}: steady state over ${steadySeconds} s: RSS ${rested.map((s) => s.rssMiB.toFixed(1)).join(' / ')} MiB; ${steady.requests} requests (${steady.writes} writes) ${JSON.stringify(steady.byVerb)}, ${steady.fetches} fetches, CPU ${steady.cpuPercent} %; the wave made ${steadyFetches0 - fetches0} requests to the ${content.kind === 'http' ? 'file server' : 'registry'}`,
    );
    return {
      n,
      source: content.kind,
      hoistSeconds: Number(hoistSeconds.toFixed(2)),
      hoistInstalledSeconds: Number((installedSeconds ?? hoistSeconds).toFixed(2)),
      kubectlSeconds: Number(kubectlSeconds.toFixed(2)),
      ratio: Number((hoistSeconds / kubectlSeconds).toFixed(3)),
      workers: process.env.HOIST_SCALE_WORKERS ?? 'default',
      renderThreads: Number(process.env.HOIST_SCALE_RENDER_THREADS ?? 0),
      processes,
      warmUp: warmN,
      peakRssMiB: round1(Math.max(...rested.map((s) => s.hwmMiB))),
      idleRssMiB: round1(Math.max(...idle.map((s) => s.rssMiB))),
      cpuSeconds: Number(cpuSeconds.toFixed(2)),
      cpuMsPerBd: Number(((cpuSeconds * 1000) / n).toFixed(2)),
      cpuByThread,
      timeToDoneSeconds,
      firstStatusToDoneSeconds,
      pickedUpToDoneSeconds,
      slowest,
      stoppedShort: stopped,
      perProcess: ctl.members.map((m, k) => ({
        ...(m.shard ? { shard: m.shard } : {}),
        idleRssMiB: round1(idle[k]!.rssMiB),
        peakRssMiB: round1(rested[k]!.hwmMiB),
        cpuSeconds: Number(waveCpu[k]!.toFixed(2)),
        steadyRssMiB: round1(rested[k]!.rssMiB),
      })),
      requestsPerBd: Number((events.length / n).toFixed(2)),
      requestsPerBdByVerb: perBd,
      requestFloor: { perBd: floor, byVerb: { ...REQUEST_FLOOR }, aboveFloorByVerb },
      waveFetches: steadyFetches0 - fetches0,
      ...(floorRun ? { floor: floorRun, cpuOverFloor: Number((cpuSeconds / floorRun.cpuSeconds).toFixed(2)) } : {}),
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

/** N BundleDeployments over `processes` controller processes (more than one: `--shard` processes) */
export interface ScaleSize {
  n: number;
  processes: number;
}

export interface ScaleOptions {
  /** sizes, run one after the other (default $HOIST_SCALE_N or 1000, one process) */
  sizes?: ScaleSize[];
  /** default $HOIST_SCALE_SOURCE or both, http first */
  sources?: ScaleSourceKind[];
  /** the quiet window after each wave (default: see defaultSteadySeconds) */
  steadySeconds?: number;
}

const SOURCES: readonly ScaleSourceKind[] = ['http', 'image'];

function parseSources(v: string): ScaleSourceKind[] {
  if (v === 'both') return [...SOURCES];
  const out = v.split(',');
  for (const s of out) if (!SOURCES.includes(s as ScaleSourceKind)) throw new Error(`--source: "${s}" is not http, image or both`);
  return out as ScaleSourceKind[];
}

/** one result per source: bench/results/scale.json (http) and scale-image.json (image) */
export async function run(options: ScaleOptions = {}): Promise<ScaleResult[]> {
  const log = (l: string) => console.log(l);
  const sizes = options.sizes?.length ? options.sizes : [{ n: Number(process.env.HOIST_SCALE_N ?? 1000), processes: 1 }];
  const sources = options.sources ?? parseSources(process.env.HOIST_SCALE_SOURCE ?? 'both');
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-scale-'));
  const results: ScaleResult[] = [];
  try {
    const main = await buildController(log);
    for (const kind of sources) {
      const content = kind === 'http' ? await startHttpSource() : await startImageSource(work);
      const runs: ScaleRun[] = [];
      const resultOf = (): ScaleResult => ({
        benchmark: 'scale',
        ...runs[runs.length - 1]!,
        date: new Date().toISOString(),
        nproc: availableParallelism(),
        node: process.version,
        kubectl: toolVersions().K8S_VERSION ?? 'unknown',
        runs,
        growth: scaleGrowth(runs),
      });
      try {
        for (const { n, processes } of sizes) {
          runs.push(await runOne(n, main, content, options.steadySeconds ?? defaultSteadySeconds(n), log, processes));
          // after each run, so a long series that is stopped keeps the runs it finished
          if (runs.length < sizes.length) await writeResult(resultsFiles[kind], resultOf(), () => {});
        }
      } finally {
        await content.close();
      }
      const result = resultOf();
      for (const r of runs)
        log(
          `N=${r.n}${r.processes > 1 ? `x${r.processes}` : ''} ${r.source}: hoist ${r.hoistSeconds} s (per BD p50 ${r.timeToDoneSeconds.p50} s, p95 ${r.timeToDoneSeconds.p95} s), kubectl ${r.kubectlSeconds} s, ratio ${r.ratio}; RSS idle ${r.idleRssMiB} / peak ${r.peakRssMiB} MiB; ${r.requestsPerBd} requests per BD (floor ${r.requestFloor.perBd}); CPU ${r.cpuSeconds} s (${r.cpuMsPerBd} ms per BD); steady ${r.steady.seconds} s: ${r.steady.requests} requests, ${r.steady.writes} writes, ${r.steady.fetches} fetches`,
        );
      for (const g of result.growth)
        log(
          `growth ${g.baselineN} → ${g.n}${g.processes > 1 ? `x${g.processes}` : ''} (×${g.sizeFactor}): time ×${g.timeFactor} (bound ×${g.timeBound}${g.withinTimeBound ? '' : ', MISSED'}), kubectl ×${g.kubectlFactor}, CPU ×${g.cpuFactor} (${g.baselineCpuMsPerBd} → ${g.cpuMsPerBd} ms per BD), peak RSS ×${g.peakRssFactor}, idle ×${g.idleRssFactor}, steady ×${g.steadyRssFactor}`,
        );
      await writeResult(resultsFiles[kind], result, log);
      results.push(result);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return results;
}

/** `[--source http|image|both] [--steady-seconds S] [N[xP] ...]` */
function parseArgs(argv: readonly string[]): ScaleOptions {
  const out: ScaleOptions = { sizes: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => inline ?? argv[++i] ?? '';
    if (flag === '--source') out.sources = parseSources(value());
    else if (flag === '--steady-seconds') {
      out.steadySeconds = Number(value());
      if (!Number.isFinite(out.steadySeconds) || out.steadySeconds < 0) throw new Error(`--steady-seconds: "${a}" is not a number of seconds`);
    } else if (/^[1-9]\d*(x[1-9]\d*)?$/.test(a)) {
      const [n, processes] = a.split('x');
      out.sizes!.push({ n: Number(n), processes: Number(processes ?? 1) });
    } else throw new Error(`bench/scale.ts: unknown argument "${a}" (usage: [--source http|image|both] [--steady-seconds S] [N[xP] ...])`);
  }
  return out;
}

runWhenMain(import.meta.url, () => run(parseArgs(process.argv.slice(2))));
