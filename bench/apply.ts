/**
 * Apply benchmark (issue 5): the argo-rollouts bundle (15 objects, 5 CRDs) on a control plane
 * this benchmark starts itself, Hoist against `kubectl apply --server-side` in the same run:
 *   - cold install: Hoist = BundleDeployment created → Installed=True (observed through a watch;
 *     Installed implies the CRDs are Established, which is checked); kubectl = `kubectl apply --server-side -f` then
 *     `kubectl wait --for condition=established` on the 5 CRDs;
 *   - upgrade v1.8.4 → v1.9.1: Hoist = spec patched → Installed=True at revision 2; kubectl = the
 *     same two commands with the new file;
 *   - a no-change reconcile: reconciler.reconcile() timed directly (target < 50 ms).
 * Fairness: every round uses a fresh namespace (created untimed for both) and its own copy of the
 * bundle with a unique API group and ClusterRole names, so neither side finds the other's CRDs;
 * nothing is deleted between rounds (CRD teardown is heavy background work for the API server
 * that landed on whichever side ran next, and once never finished). Hoist fetches its bundle as a tarball from a
 * local HTTP server and renders it (work kubectl doesn't do: it reads a local file); kubectl pays
 * process start-up and discovery on each invocation (work Hoist, a long-running controller, does
 * once). Hoist and kubectl alternate within each round; one warm-up round is not counted; medians.
 * ratio = hoist / kubectl (below 1: Hoist is faster). Results: bench/results/apply.json.
 *
 * Runnable alone: `npx tsx bench/apply.ts`; `run()` is used by bench/run.ts.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parseAllDocuments } from 'yaml';
import { API_VERSION, KIND, type BundleDeployment } from '../api/v1alpha2/types.ts';
import { startController } from '../src/cli/controller.ts';
import { startControlPlane } from '../src/devcluster/control-plane.ts';
import { toolPath, toolVersions } from '../src/devcluster/tools.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../src/kube/client.ts';
import { Informer } from '../src/kube/informer.ts';
import type { KubeObject } from '../src/kube/types.ts';
import { sha256, startFileServer, tarGz } from '../test/support/http-files.ts';
import { isolatePlain } from '../test/support/upgrade-fixtures.ts';
import { exec, median, runWhenMain, writeResult } from './common.ts';

const repo = fileURLToPath(new URL('../', import.meta.url));
const fixtures = path.resolve(repo, 'testdata/fixtures/plain');
const resultsFile = path.join(repo, 'bench', 'results', 'apply.json');
const BD = { apiVersion: API_VERSION, kind: KIND } as const;
const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;

export interface ApplyBenchCase {
  name: string;
  hoistMs: number;
  kubectlMs: number;
  /** hoistMs / kubectlMs */
  ratio: number;
  hoistRoundsMs: number[];
  kubectlRoundsMs: number[];
}

export interface ApplyBenchResult {
  benchmark: 'apply';
  date: string;
  nproc: number;
  node: string;
  kubectl: string;
  /** 1/5/15-minute load average at the end: other work on the machine makes the numbers noisy */
  loadAverage: number[];
  rounds: number;
  objects: number;
  cases: ApplyBenchCase[];
  noChangeReconcile: { medianMs: number; p90Ms: number; samples: number; targetMs: 50 };
}

export interface ApplyBenchOptions {
  /** measured rounds after one warm-up; default 5 */
  rounds?: number;
  /** write bench/results/apply.json; default true */
  write?: boolean;
  log?: (line: string) => void;
}

const crdNames = (yaml: string): string[] =>
  parseAllDocuments(yaml)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o?.kind === 'CustomResourceDefinition')
    .map((o) => o.metadata.name);

async function until(f: () => Promise<boolean>, what: string, timeoutMs = 120_000, everyMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await f())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function run(options: ApplyBenchOptions = {}): Promise<ApplyBenchResult> {
  const log = options.log ?? ((l: string) => console.log(l));
  const rounds = options.rounds ?? Number(process.env.HOIST_BENCH_ROUNDS ?? 5);
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-apply-'));
  log('starting a control plane (etcd, kube-apiserver)…');
  const cp = await startControlPlane();
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: work, KUBECONFIG: cp.kubeconfigPath };
  const kubectl = toolPath('kubectl');
  const admin: RestKubeClient = createKubeClient(loadKubeConfig(cp.kubeconfigPath));
  const files = await startFileServer();
  const ctl = await startController({
    kubeconfig: cp.kubeconfigPath,
    namespace: 'hoist-system',
    installCRD: true,
    cacheDir: path.join(work, 'cache'),
    log: pino({ level: process.env.HOIST_BENCH_LOG ?? 'silent' }),
    workers: 4,
  });
  const v1Text = readFileSync(path.join(fixtures, 'argo-rollouts-v1.8.4/install.yaml'), 'utf8');
  const v2Text = readFileSync(path.join(fixtures, 'argo-rollouts-v1.9.1/install.yaml'), 'utf8');
  const samples = { hoistInstall: [] as number[], kubectlInstall: [] as number[], hoistUpgrade: [] as number[], kubectlUpgrade: [] as number[] };
  const noChange: number[] = [];

  const namespace = async (name: string) => {
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  };
  // Hoist's progress is observed through a watch (an informer), as `kubectl wait` observes CRDs:
  // polling the API server every few ms would load it during Hoist's runs only.
  const watched = new Informer<BundleDeployment & KubeObject>({ client: admin, type: BD });
  watched.start();
  await watched.waitForSync();
  const installedAt = (rev: number) => async (name: string) => {
    const bd = watched.getByName(name);
    const c = bd?.status?.conditions?.find((x) => x.type === 'Installed');
    return bd?.status?.observedGeneration === bd?.metadata.generation && c?.status === 'True' && bd?.status?.activeRevision?.number === rev;
  };
  const established = async (names: readonly string[]) => {
    for (const n of names) {
      const crd = await admin.get(CRD, n);
      const conds = (crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions ?? [];
      if (!conds.some((c) => c.type === 'Established' && c.status === 'True')) return false;
    }
    return true;
  };

  try {
    for (let round = 0; round <= rounds; round++) {
      const id = `r${round}${Math.random().toString(36).slice(2, 6)}`;
      // ---- Hoist
      const hid = `h${id}`;
      const h1 = await tarGz({ 'install.yaml': isolatePlain(v1Text, hid) });
      const h2Yaml = isolatePlain(v2Text, hid);
      const h2 = await tarGz({ 'install.yaml': h2Yaml });
      files.set(`/${hid}-v1.tgz`, h1);
      files.set(`/${hid}-v2.tgz`, h2);
      const hns = `bench-${hid}`;
      await namespace(hns);
      const bdName = `bench-${hid}`;
      let t0 = performance.now();
      if (process.env.HOIST_BENCH_LOG) console.log(JSON.stringify({ time: Date.now(), msg: 'bench: creating the BundleDeployment' }));
      // kubectl checks no CRD compatibility either; v1.9.1's CRDs would be refused under Enforce
      await admin.create({
        ...BD,
        metadata: { name: bdName },
        spec: {
          installNamespace: hns,
          format: 'plain',
          upgrade: { crdSafety: 'None' },
          sources: [{ kind: 'http', http: { url: files.url(`/${hid}-v1.tgz`), sha256: sha256(h1) } }],
        },
      } as unknown as KubeObject);
      await until(() => installedAt(1)(bdName), `${bdName} installed`);
      const hInstall = performance.now() - t0;
      if (!(await established(crdNames(h2Yaml)))) throw new Error('hoist reported Installed before its CRDs were Established');

      // a no-change reconcile, timed directly (after the self-inflicted watch events settled)
      await until(async () => ctl.manager.controller.queue.length === 0 && ctl.manager.controller.queue.inFlight === 0, 'queue idle');
      for (let i = 0; i < 10; i++) {
        const s = performance.now();
        await ctl.manager.reconciler.reconcile(bdName);
        if (round > 0) noChange.push(performance.now() - s);
      }

      t0 = performance.now();
      await admin.patch(
        BD,
        bdName,
        undefined,
        { spec: { sources: [{ kind: 'http', http: { url: files.url(`/${hid}-v2.tgz`), sha256: sha256(h2) } }] } },
        'merge',
      );
      await until(() => installedAt(2)(bdName), `${bdName} upgraded`);
      const hUpgrade = performance.now() - t0;

      // ---- kubectl
      const kid = `k${id}`;
      const k1 = path.join(work, `${kid}-v1.yaml`);
      const k2 = path.join(work, `${kid}-v2.yaml`);
      await writeFile(k1, isolatePlain(v1Text, kid));
      await writeFile(k2, isolatePlain(v2Text, kid));
      const kns = `bench-${kid}`;
      await namespace(kns);
      const kCrds = crdNames(isolatePlain(v1Text, kid)).map((n) => `crd/${n}`);
      t0 = performance.now();
      await exec(kubectl, ['apply', '--server-side', '-f', k1, '-n', kns], env);
      await exec(kubectl, ['wait', '--for', 'condition=established', '--timeout=120s', ...kCrds], env);
      const kInstall = performance.now() - t0;
      t0 = performance.now();
      await exec(kubectl, ['apply', '--server-side', '-f', k2, '-n', kns], env);
      await exec(kubectl, ['wait', '--for', 'condition=established', '--timeout=120s', ...kCrds], env);
      const kUpgrade = performance.now() - t0;

      log(
        `round ${round}${round === 0 ? ' (warm-up)' : ''}: install hoist ${hInstall.toFixed(0)} ms / kubectl ${kInstall.toFixed(0)} ms; upgrade hoist ${hUpgrade.toFixed(0)} ms / kubectl ${kUpgrade.toFixed(0)} ms`,
      );
      if (round > 0) {
        samples.hoistInstall.push(hInstall);
        samples.kubectlInstall.push(kInstall);
        samples.hoistUpgrade.push(hUpgrade);
        samples.kubectlUpgrade.push(kUpgrade);
      }

      // nothing is deleted between rounds: every round's names are unique, and tearing CRDs down
      // made the API server re-initialise storage under the next round (and once never finished)
    }
  } finally {
    await watched.stop();
    await ctl.stop();
    await admin.close();
    await files.close();
    await cp.stop();
    await rm(work, { recursive: true, force: true });
  }

  const mk = (name: string, h: number[], k: number[]): ApplyBenchCase => {
    const hoistMs = median(h);
    const kubectlMs = median(k);
    return {
      name,
      hoistMs: Math.round(hoistMs),
      kubectlMs: Math.round(kubectlMs),
      ratio: Number((hoistMs / kubectlMs).toFixed(3)),
      hoistRoundsMs: h.map(Math.round),
      kubectlRoundsMs: k.map(Math.round),
    };
  };
  const cases = [
    mk('cold install argo-rollouts v1.8.4 (15 objects, CRDs Established)', samples.hoistInstall, samples.kubectlInstall),
    mk('upgrade v1.8.4 → v1.9.1', samples.hoistUpgrade, samples.kubectlUpgrade),
  ];
  const sorted = [...noChange].sort((a, b) => a - b);
  const result: ApplyBenchResult = {
    benchmark: 'apply',
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    node: process.version,
    kubectl: toolVersions().K8S_VERSION ?? 'unknown',
    loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
    rounds,
    objects: 15,
    cases,
    noChangeReconcile: {
      medianMs: Number(median(noChange).toFixed(2)),
      p90Ms: Number((sorted[Math.floor(sorted.length * 0.9)] ?? 0).toFixed(2)),
      samples: noChange.length,
      targetMs: 50,
    },
  };
  for (const c of cases) log(`${c.name}: hoist ${c.hoistMs} ms, kubectl ${c.kubectlMs} ms, ratio ${c.ratio}`);
  log(`no-change reconcile: median ${result.noChangeReconcile.medianMs} ms, p90 ${result.noChangeReconcile.p90Ms} ms (target < 50 ms)`);
  if (options.write ?? true) await writeResult(resultsFile, result, log);
  return result;
}

runWhenMain(import.meta.url, run);
