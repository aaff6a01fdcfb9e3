/**
 * Remote-clusters benchmark (issue 37): K remote control planes (etcd + kube-apiserver each, an
 * audit log each) beside a management control plane; 10 BundleDeployments per remote cluster,
 * each with spec.kubeConfig naming that cluster's kubeconfig Secret (Cluster API's shape, key
 * `value`), against the same K × 10 BDs installed into the management cluster itself, in the same
 * run. Each side gets a fresh controller process, run as the image runs it
 * (bench/controller-process.ts: compiled dist/, the Dockerfile's node flags, the chart's run
 * flags), so its idle RSS, peak RSS (VmHWM) and CPU are its own.
 *
 * Each bundle is 4 objects that are ready as soon as they exist (ServiceAccount, headless Service,
 * ConfigMap, Role: the remote control planes have no kube-controller-manager), from a pinned http
 * tarball. Measured per side: the wave's time (first BD created → every BD done, seen through a
 * watch), the controller's CPU and peak RSS, and its requests per BD from the audit logs: on the
 * management cluster (finalizer, revision Secret, status, Events, the kubeconfig Secret reads)
 * and, for the remote side, on the K remote clusters together (the applies and the watches'
 * LISTs). `rssPerRemoteMiB` is the remote side's peak RSS above the local side's, per remote
 * cluster: what a cluster's client, discovery and watches cost.
 *
 * `npx tsx bench/remote.ts [K]` (default $HOIST_REMOTE_CLUSTERS or 20). The remote control planes
 * start one after the other; if one fails to start (the machine is out of room), the run goes on
 * with those that started and says so (`clustersStarted`, `startFailure`).
 * Writes bench/results/remote.json.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, freemem, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { API_VERSION, KIND, type BundleDeployment, type BundleDeploymentSpec } from '../api/v1alpha2/types.ts';
import { startControlPlane, type ControlPlane } from '../src/devcluster/control-plane.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../src/kube/client.ts';
import { Informer } from '../src/kube/informer.ts';
import type { KubeObject } from '../src/kube/types.ts';
import { chartRunFlags, deployedNodeFlags } from '../test/support/as-deployed.ts';
import { AuditReader, type AuditEvent } from '../test/support/audit.ts';
import { repoRoot, runWhenMain, writeResult } from './common.ts';
import { buildController, diffThreads, procStat, startController, threadCpu, type Controller, type ThreadCpu } from './controller-process.ts';
import { countByKey, rolledOut, toYaml } from './scale.ts';
import { pool, startHttpSource, type PinnedSource } from './scale-sources.ts';

const resultsFile = path.join(repoRoot, 'bench', 'results', 'remote.json');
const BD = { apiVersion: API_VERSION, kind: KIND } as const;
const HOIST_UA = 'hoist';
const BENCH_UA = 'hoist-remote-bench';
const PER_CLUSTER = 10;
/** where the kubeconfig Secrets live on the management cluster */
const SECRETS_NS = 'hoist-remote-bench';

export interface Side {
  bds: number;
  seconds: number;
  idleRssMiB: number;
  peakRssMiB: number;
  cpuSeconds: number;
  cpuMsPerBd: number;
  cpuByThread: ThreadCpu;
  /** the controller's requests per BD on the management cluster, and by verb/resource */
  managementRequestsPerBd: number;
  managementByVerb: Record<string, number>;
  /** the controller's requests per BD on the remote clusters together (0 for the local side) */
  remoteRequestsPerBd: number;
  remoteByVerb: Record<string, number>;
  /** per BD: creation → done, seconds */
  timeToDoneSeconds: { p50: number; p95: number; max: number };
}

export interface RemoteResult {
  benchmark: 'remote';
  date: string;
  nproc: number;
  node: string;
  clustersAsked: number;
  clustersStarted: number;
  startFailure?: string;
  /** seconds to start each remote control plane (the machine's room, not Hoist) */
  controlPlaneStartSeconds: { p50: number; max: number };
  bdsPerCluster: number;
  local: Side;
  remote: Side;
  /** remote.seconds / local.seconds: below 1, the remote side is faster */
  ratio: number;
  cpuRatio: number;
  /** (remote peak RSS - local peak RSS) / clusters */
  rssPerRemoteMiB: number;
  /** the remote side's requests per BD on both clusters together over the local side's */
  requestsRatio: number;
  /** the machine while the remote control planes ran */
  memoryUsedGiB: number;
  loadAverage: number[];
}

/** the 4 objects of bundle i, ready as soon as they exist (no kube-controller-manager on the remotes) */
function bundleObjects(i: number): KubeObject[] {
  const name = `app-${i}`;
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { clusterIP: 'None', selector: { app: name }, ports: [{ name: 'http', port: 80 }] } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { 'app.properties': `name=${name}\nreplicas=1\n` } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name },
      rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: [name], verbs: ['get', 'watch'] }],
    },
  ] as KubeObject[];
}

function nearestRank(sorted: readonly number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]! : NaN;
}

/** requests per BD by verb/resource, most first */
function perBd(events: readonly AuditEvent[], n: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(countByKey(events))
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => [k, Number((v / n).toFixed(2))]),
  );
}

const round = (x: number, d = 2) => Number(x.toFixed(d));

async function startHoist(main: string, kubeconfig: string, work: string): Promise<Controller> {
  return startController(main, {
    kubeconfig,
    work,
    nodeFlags: deployedNodeFlags(),
    // the remote control planes listen on 127.0.0.1 beside the management one: loopback is not a
    // restricted address, and each port is another API server, so no opt-in flag is needed
    args: [...chartRunFlags(), '--install-crd', '--cache-dir', path.join(work, 'cache')],
  });
}

interface Wave {
  name: string;
  admin: RestKubeClient;
  mgmtAudit: AuditReader;
  remoteAudits: AuditReader[];
  bds: Array<{ name: string; spec: BundleDeploymentSpec }>;
  log: (l: string) => void;
}

/** one side: a fresh controller, the BDs created at once, waited for, measured; the controller stopped */
async function runSide(main: string, kubeconfig: string, w: Wave): Promise<Side> {
  const work = await mkdtemp(path.join(tmpdir(), `hoist-bench-remote-${w.name}-`));
  const ctl = await startHoist(main, kubeconfig, work);
  const watched = new Informer<BundleDeployment & KubeObject>({ client: w.admin, type: BD });
  const createdAt = new Map<string, number>();
  const doneAt = new Map<string, number>();
  const done = rolledOut;
  const seen = (bd: BundleDeployment & KubeObject) => {
    if (!doneAt.has(bd.metadata.name) && done(bd)) doneAt.set(bd.metadata.name, performance.now());
  };
  watched.addHandler({ onAdd: seen, onUpdate: (_, bd) => seen(bd) });
  try {
    watched.start();
    await watched.waitForSync();
    await new Promise((r) => setTimeout(r, 5000));
    const pid = ctl.child.pid!;
    const idle = procStat(pid);
    const mgmtFrom = await w.mgmtAudit.offset();
    const remoteFrom = await Promise.all(w.remoteAudits.map((a) => a.offset()));
    const threads0 = threadCpu(pid);
    const t0 = performance.now();
    await pool(w.bds, 20, async (b) => {
      await w.admin.create({ ...BD, metadata: { name: b.name }, spec: b.spec } as unknown as KubeObject);
      createdAt.set(b.name, performance.now());
    });
    const names = w.bds.map((b) => b.name);
    let lastReport = t0;
    const limitMs = Math.max(900, 2 * names.length) * 1000;
    for (;;) {
      const finished = names.filter((n) => done(watched.getByName(n))).length;
      if (finished === names.length) break;
      if (performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        const stuck = names.map((n) => watched.getByName(n)).find((b) => b && !done(b));
        const p = stuck?.status?.conditions?.find((x) => x.type === 'Progressing');
        w.log(
          `${w.name}: ${finished}/${names.length} done after ${((lastReport - t0) / 1000).toFixed(0)} s (e.g. ${stuck?.metadata.name}: ${p?.reason} ${p?.message ?? ''})`,
        );
      }
      if (ctl.child.exitCode !== null) throw new Error(`the controller exited (${ctl.child.exitCode}); see ${ctl.logFile}`);
      if (performance.now() - t0 > limitMs) throw new Error(`${w.name}: timed out, ${finished}/${names.length} done after ${limitMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (performance.now() - t0) / 1000;
    const end = procStat(pid);
    const cpuByThread = diffThreads(threadCpu(pid), threads0);
    const cpuSeconds = end.cpuSeconds - idle.cpuSeconds;
    const mgmtEvents = await w.mgmtAudit.since(mgmtFrom);
    const remoteEvents = (await Promise.all(w.remoteAudits.map((a, k) => a.since(remoteFrom[k]!)))).flat();
    const xs = names.map((n) => (doneAt.get(n)! - createdAt.get(n)!) / 1000).sort((a, b) => a - b);
    const n = names.length;
    const side: Side = {
      bds: n,
      seconds: round(seconds, 1),
      idleRssMiB: round(idle.rssMiB, 1),
      peakRssMiB: round(end.hwmMiB, 1),
      cpuSeconds: round(cpuSeconds),
      cpuMsPerBd: round((cpuSeconds * 1000) / n, 1),
      cpuByThread,
      managementRequestsPerBd: round(mgmtEvents.length / n),
      managementByVerb: perBd(mgmtEvents, n),
      remoteRequestsPerBd: round(remoteEvents.length / n),
      remoteByVerb: perBd(remoteEvents, n),
      timeToDoneSeconds: { p50: round(nearestRank(xs, 0.5)), p95: round(nearestRank(xs, 0.95)), max: round(nearestRank(xs, 1)) },
    };
    w.log(
      `${w.name}: ${n} BDs done in ${side.seconds} s; idle RSS ${side.idleRssMiB} MiB, peak ${side.peakRssMiB} MiB; CPU ${side.cpuSeconds} s (${side.cpuMsPerBd} ms per BD); requests per BD: management ${side.managementRequestsPerBd} ${JSON.stringify(side.managementByVerb)}, remote ${side.remoteRequestsPerBd} ${JSON.stringify(side.remoteByVerb)}`,
    );
    return side;
  } finally {
    await watched.stop();
    await ctl.stop();
    await rm(work, { recursive: true, force: true });
  }
}

export async function run(): Promise<RemoteResult> {
  const log = (l: string) => console.log(`[remote] ${l}`);
  const asked = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? process.env.HOIST_REMOTE_CLUSTERS ?? 20);
  const main = await buildController(log);
  log('starting the management control plane (etcd, kube-apiserver; audit log)…');
  const mgmt = await startControlPlane({ auditLog: true });
  const admin = createKubeClient(loadKubeConfig(mgmt.kubeconfigPath), { userAgent: BENCH_UA });
  const remotes: ControlPlane[] = [];
  const startSeconds: number[] = [];
  let startFailure: string | undefined;
  const files = await startHttpSource();
  let memoryUsedGiB = 0;
  try {
    for (let k = 0; k < asked; k++) {
      const t0 = performance.now();
      try {
        remotes.push(await startControlPlane({ auditLog: true }));
      } catch (e) {
        startFailure = `remote control plane ${k + 1} did not start: ${e instanceof Error ? e.message.slice(0, 300) : String(e)}`;
        log(startFailure);
        break;
      }
      startSeconds.push((performance.now() - t0) / 1000);
      log(`remote control plane ${k + 1}/${asked} up in ${startSeconds.at(-1)!.toFixed(1)} s (${remotes.at(-1)!.server})`);
    }
    if (remotes.length === 0) throw new Error(startFailure ?? 'no remote control plane started');
    memoryUsedGiB = round((totalmem() - freemem()) / 2 ** 30, 1);
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: SECRETS_NS } } as KubeObject);
    for (const [k, cp] of remotes.entries()) {
      const value = Buffer.from(await readFile(cp.kubeconfigPath, 'utf8')).toString('base64');
      await admin.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `cluster-${k}-kubeconfig`, namespace: SECRETS_NS },
        data: { value },
      } as KubeObject);
    }
    const n = remotes.length * PER_CLUSTER;
    const id = Math.random().toString(36).slice(2, 6);
    const bundles = Array.from({ length: n }, (_, i) => ({ 'objects.yaml': toYaml(bundleObjects(i)) }));
    // the same pinned content for both sides: each controller starts with an empty cache
    const pinned: PinnedSource[] = await files.publish(id, bundles);
    const mgmtAudit = new AuditReader(mgmt.auditLogPath!, HOIST_UA);
    const remoteAudits = remotes.map((cp) => new AuditReader(cp.auditLogPath!, HOIST_UA));
    const common = { admin, mgmtAudit, remoteAudits, log };

    // the reference: the same BDs installed into the management cluster
    const local = await runSide(main, mgmt.kubeconfigPath, {
      ...common,
      name: 'local',
      bds: pinned.map((source, i) => ({
        name: `local-${id}-${i}`,
        spec: { installNamespace: `remote-bench-l-${id}`, format: 'plain', sources: [source] },
      })),
    });
    const remote = await runSide(main, mgmt.kubeconfigPath, {
      ...common,
      name: 'remote',
      bds: pinned.map((source, i) => ({
        name: `remote-${id}-${i}`,
        spec: {
          installNamespace: `remote-bench-r-${id}`,
          format: 'plain',
          sources: [source],
          kubeConfig: { secretRef: { name: `cluster-${i % remotes.length}-kubeconfig`, namespace: SECRETS_NS } },
        },
      })),
    });
    const sorted = [...startSeconds].sort((a, b) => a - b);
    const result: RemoteResult = {
      benchmark: 'remote',
      date: new Date().toISOString(),
      nproc: availableParallelism(),
      node: process.version,
      clustersAsked: asked,
      clustersStarted: remotes.length,
      ...(startFailure ? { startFailure } : {}),
      controlPlaneStartSeconds: { p50: round(nearestRank(sorted, 0.5), 1), max: round(nearestRank(sorted, 1), 1) },
      bdsPerCluster: PER_CLUSTER,
      local,
      remote,
      ratio: round(remote.seconds / local.seconds),
      cpuRatio: round(remote.cpuSeconds / local.cpuSeconds),
      rssPerRemoteMiB: round((remote.peakRssMiB - local.peakRssMiB) / remotes.length, 1),
      requestsRatio: round((remote.managementRequestsPerBd + remote.remoteRequestsPerBd) / local.managementRequestsPerBd),
      memoryUsedGiB,
      loadAverage: loadavg().map((x) => round(x)),
    };
    log(
      `${remotes.length} remote clusters × ${PER_CLUSTER} BDs: ${remote.seconds} s against ${local.seconds} s locally (ratio ${result.ratio}), CPU ratio ${result.cpuRatio}, ${result.rssPerRemoteMiB} MiB peak RSS per remote cluster, requests per BD ${remote.managementRequestsPerBd} + ${remote.remoteRequestsPerBd} against ${local.managementRequestsPerBd} (ratio ${result.requestsRatio})`,
    );
    await writeResult(resultsFile, result, log);
    return result;
  } finally {
    await admin.close();
    await files.close();
    for (const cp of remotes) await cp.stop().catch(() => {});
    await mgmt.stop();
  }
}

runWhenMain(import.meta.url, run);
