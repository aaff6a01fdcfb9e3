/**
 * Isolation benchmark (issue 23): what a hostile BundleDeployment costs the others. For every
 * hostile input of test/support/hostile-bundles.ts (YAML alias bomb and huge document, CEL and
 * JSONPath health checks, hostile git repositories, symlink count and chains, a revision over
 * --max-revision-size, pollInterval 1ms, an OCI whiteout escape) a fresh controller runs as the
 * image and the chart run it (bench/controller-process.ts: compiled, the image's node flags, a V8
 * heap limit equal to the chart's memory limit, the chart's `hoist run` flags) and reconciles only
 * that case's BundleDeployments. After one healthy BD installed untimed (warm-up), each round
 * times healthy BDs (50 ConfigMaps of 256 bytes from a pinned tarball, content unique to each: an
 * install of about a second, long enough that scheduling noise of tens of milliseconds does not
 * decide a ratio; three created at once, their mean) from create to Installed=True, seen through
 * a watch:
 *
 * - `reference`: with no hostile BD in flight (the previous round's was refused), 5 s after the
 *   last one, as `later` comes 5 s after the hostile one (an idle controller is a little slower:
 *   connections kept alive for 5 s are closed); in even rounds before the hostile BD, in odd ones
 *   after it was refused, so load that drifts within a round hits both sides alike;
 * - `together`: created at once after the hostile BD, so both are in flight;
 * - `later`: created 5 s after the hostile BD, as issue 23 measured (a crash loop or a blocked
 *   event loop shows here; a hostile input refused within 5 s does not).
 *
 * and waits until the hostile BD is refused naming its limit; at the end it deletes the case's
 * BDs and waits for their uninstall (uninstallCase). Per case: the medians; per round
 * the paired ratios later / reference and together / reference (the reference of the same
 * controller in the same round, so machine load drifting during the run hits both); ratio =
 * their median, with the spread (quartiles, min, max); the controller's peak RSS (VmHWM) and CPU,
 * the CPU the hostile BDs cost (the case's CPU minus that of the reference controllers, per
 * hostile BD), and rssRatio = peak RSS / that of a controller that saw no hostile BD (the same
 * rounds without one, run first and again last: `reference`). The targets (issue 23): every
 * ratio ≤ 1.5 and peak RSS < 300 MiB. Results go to bench/results/isolation.json.
 *
 * `npx tsx bench/isolation.ts [ROUNDS] [CASE ...]` (default 9 rounds, every case);
 * $HOIST_SCALE_NO_BUILD=1 reuses dist/.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { API_VERSION, KIND, type BundleDeployment } from '../api/v1alpha2/types.ts';
import { installCRD } from '../src/cli/controller.ts';
import { startControlPlane } from '../src/devcluster/control-plane.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../src/kube/client.ts';
import { Informer } from '../src/kube/informer.ts';
import type { KubeObject } from '../src/kube/types.ts';
import { RegistryClient } from '../src/sources/image/client.ts';
import { chartMemoryLimitMiB, chartRunFlags, deployedNodeFlags } from '../test/support/as-deployed.ts';
import { createHostileRepos } from '../test/support/git-hostile.ts';
import { startGitServer } from '../test/support/git-server.ts';
import { healthySpec, hostileInputs, type HostileInput, type HostileServers } from '../test/support/hostile-bundles.ts';
import { startFileServer } from '../test/support/http-files.ts';
import { startRegistry } from '../test/support/registry.ts';
import { median, quantile, repoRoot, runWhenMain, writeResult } from './common.ts';
import { buildController, procStat, startController, type Controller } from './controller-process.ts';

const resultsFile = path.join(repoRoot, 'bench', 'results', 'isolation.json');
const BD = { apiVersion: API_VERSION, kind: KIND } as const;
const CASE_LABEL = 'hoist.bench/case';
const WAIT_MS = 300_000;
const RATIO_TARGET = 1.5;
const PEAK_TARGET_MIB = 300;
/** healthy BDs created at once for one sample (its figure is their mean): less noise than one */
const HEALTHY_PER_SAMPLE = 3;
/** ConfigMaps in each healthy BD: an install of about a second (module comment) */
const HEALTHY_OBJECTS = 50;
/** issue 23's setup: the healthy BD created 5 s after the hostile one */
const LATER_MS = 5_000;

type Bd = BundleDeployment & KubeObject;

interface Timings {
  /** healthy BDs' create → Installed=True, one per round */
  seconds: number[];
  median: number;
}

interface ControllerFigures {
  /** the controller's VmHWM over the case (start-up, warm-up and rounds) */
  peakRssMiB: number;
  cpuSeconds: number;
  /** the controller process was the one started for the case until the end */
  controllerSurvived: boolean;
}

interface Measured extends ControllerFigures {
  reference: Timings;
  together?: Timings;
  later?: Timings;
  /** per round: later / reference of that round */
  ratios?: number[];
  /** per round: together / reference of that round */
  togetherRatios?: number[];
  /** the hostile BD's create → refused, one per round */
  refusedSeconds: number[];
  /** how it was refused: the condition (type/status/reason: message) or the API server's answer */
  refusal: string;
}

/** how the per-round ratios spread: quartiles and extremes */
interface Spread {
  p25: number;
  p75: number;
  min: number;
  max: number;
}

export interface IsolationCase extends Partial<Measured> {
  name: string;
  what: string;
  /** median of the per-round later / reference: the target */
  ratio: number;
  ratioSpread?: Spread;
  /** median of the per-round together / reference */
  togetherRatio: number;
  togetherSpread?: Spread;
  /** controller CPU seconds per hostile BD: the case's CPU minus the reference controllers' mean, over the rounds */
  hostileCpuSeconds?: number;
  /** peakRssMiB / the peak of a controller that saw no hostile BD */
  rssRatio: number;
  withinTargets: boolean;
  /** why the case could not be measured */
  error?: string;
  /** when this case was measured: a run of some cases only keeps the others from the file, with their date */
  measuredAt?: string;
}

export interface IsolationResult {
  benchmark: 'isolation';
  date: string;
  nproc: number;
  node: string;
  loadAverage: number[];
  rounds: number;
  /** ConfigMaps per healthy BD */
  healthyObjects: number;
  /** healthy BDs per sample */
  healthyPerSample: number;
  laterSeconds: number;
  heapLimitMiB: number;
  nodeFlags: string[];
  runFlags: string[];
  targets: { ratio: number; peakRssMiB: number };
  /** controllers that saw no hostile BD, first and last */
  reference: { first: Measured; last: Measured; peakRssMiB: number };
  cases: IsolationCase[];
}

const cond = (bd: Bd | undefined, type: string) => bd?.status?.conditions?.find((c) => c.type === type);

/** resolves with the time a BD watched by `informer` first satisfies `ok` */
function whenSeen(informer: Informer<Bd>, name: string, ok: (bd: Bd) => boolean, what: string): Promise<number> {
  const seen = new Promise<number>((resolve, reject) => {
    let done = false;
    const finish = () => {
      done = true;
      clearTimeout(timer);
      // after addHandler has returned, also when it delivered the match itself
      queueMicrotask(() => stop());
    };
    const check = (bd: Bd) => {
      if (done || bd.metadata.name !== name || !ok(bd)) return;
      const at = performance.now();
      finish();
      resolve(at);
    };
    const timer = setTimeout(() => {
      finish();
      reject(
        new Error(`timed out after ${WAIT_MS / 1000} s: ${name} ${what}; conditions: ${JSON.stringify(informer.getByName(name)?.status?.conditions ?? [])}`),
      );
    }, WAIT_MS);
    // cached objects are delivered at once, as adds
    const stop = informer.addHandler({ onAdd: check, onUpdate: (_o, n) => check(n) });
  });
  // awaited later; a rejection meanwhile is not unhandled
  seen.catch(() => undefined);
  return seen;
}

interface Env {
  main: string;
  kubeconfig: string;
  client: RestKubeClient;
  informer: Informer<Bd>;
  servers: HostileServers;
  work: string;
  registriesConf: string;
  rounds: number;
  laterMs: number;
  log: (l: string) => void;
}

const timings = (xs: number[]): Timings => ({ seconds: xs.map((x) => Number(x.toFixed(3))), median: Number(median(xs).toFixed(3)) });
const round2 = (x: number): number => Number(x.toFixed(2));
const spreadOf = (xs: readonly number[]): Spread => ({
  p25: round2(quantile(xs, 0.25)),
  p75: round2(quantile(xs, 0.75)),
  min: round2(Math.min(...xs)),
  max: round2(Math.max(...xs)),
});

/**
 * Deletes the case's BDs and waits until its controller has uninstalled them: the next case's
 * controller starts on a cluster without them (every controller caches all objects that carry
 * the owner label, so the objects of earlier cases would add to its memory).
 */
async function uninstallCase(env: Env, caseId: string): Promise<void> {
  const mine = () => env.informer.list().filter((bd) => bd.metadata.labels?.[CASE_LABEL] === caseId);
  for (const bd of mine()) await env.client.delete(BD, bd.metadata.name, undefined);
  const deadline = performance.now() + WAIT_MS;
  while (mine().length > 0) {
    if (performance.now() > deadline) throw new Error(`${caseId}: ${mine().length} BundleDeployments not uninstalled after ${WAIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** one controller process for `caseId`: a warm-up BD, then `rounds` rounds (module comment) */
async function measure(env: Env, caseId: string, input: HostileInput | undefined): Promise<Measured> {
  const work = await mkdtemp(path.join(env.work, `${caseId}-`));
  const ctl: Controller = await startController(env.main, {
    kubeconfig: env.kubeconfig,
    work,
    nodeFlags: deployedNodeFlags(),
    args: [
      '--namespace',
      'hoist-bench-iso',
      '--selector',
      `${CASE_LABEL}=${caseId}`,
      '--cache-dir',
      path.join(work, 'cache'),
      '--registries-conf',
      env.registriesConf,
      ...chartRunFlags(),
    ],
  });
  const pid = ctl.child.pid!;
  const create = (name: string, spec: object) =>
    env.client.create({ ...BD, metadata: { name, labels: { [CASE_LABEL]: caseId } }, spec: { installNamespace: name, ...spec } } as unknown as KubeObject);
  /** creates healthy BDs of content made beforehand, at once; resolves with their mean seconds to Installed=True */
  const timeHealthy = async (bds: ReadonlyArray<{ name: string; spec: object }>): Promise<number> => {
    const times = bds.map(async ({ name, spec }) => {
      const seen = whenSeen(env.informer, name, (bd) => cond(bd, 'Installed')?.status === 'True', 'Installed=True');
      const t0 = performance.now();
      await create(name, spec);
      return ((await seen) - t0) / 1000;
    });
    return (await Promise.all(times)).reduce((a, b) => a + b, 0) / bds.length;
  };
  const reference: number[] = [];
  const together: number[] = [];
  const later: number[] = [];
  const refusedSeconds: number[] = [];
  let refusal = '';
  try {
    await timeHealthy([{ name: `${caseId}-warm`, spec: await healthySpec(env.servers.files, `${caseId}-warm`, HEALTHY_OBJECTS) }]);
    for (let r = 0; r < env.rounds; r++) {
      const content = async (what: string) => {
        const names = Array.from({ length: HEALTHY_PER_SAMPLE }, (_, i) => `${caseId}-${what}-${r}-${i}`);
        return Promise.all(names.map(async (name) => ({ name, spec: await healthySpec(env.servers.files, name, HEALTHY_OBJECTS) })));
      };
      const [ref, now, then] = [await content('ref'), await content('now'), await content('later')];
      // after the same idle time as `later` (connections kept alive for 5 s close meanwhile)
      const timeReference = async () => {
        await new Promise((resolve) => setTimeout(resolve, env.laterMs));
        reference.push(await timeHealthy(ref));
      };
      const referenceFirst = !input || r % 2 === 0;
      if (referenceFirst) await timeReference();
      if (!input) continue;
      const hostile = `${caseId}-hostile-${r}`;
      const hostileSpec = await input.spec(`${caseId}-${r}`);
      const want = input.refusal;
      const t0 = performance.now();
      let refused: Promise<number> | undefined;
      if ('admission' in want) {
        const e = await create(hostile, hostileSpec).then(
          () => new Error(`${hostile}: the API server accepted it`),
          (err: unknown) => err,
        );
        const message = e instanceof Error ? e.message : String(e);
        if (!want.admission.test(message)) throw new Error(`${hostile}: not refused as expected: ${message}`);
        refusedSeconds.push((performance.now() - t0) / 1000);
        refusal = `admission: ${message.slice(0, 300)}`;
      } else {
        refused = whenSeen(
          env.informer,
          hostile,
          (bd) => {
            const c = cond(bd, want.condition);
            if (c?.status !== want.status || c.reason !== want.reason || !want.message.test(c.message ?? '')) return false;
            refusal = `${want.condition}=${c.status}/${c.reason}: ${c.message}`;
            return true;
          },
          `refused (${want.condition}=${want.status} ${want.reason} ${want.message})`,
        );
        await create(hostile, hostileSpec);
      }
      const nowDone = timeHealthy(now);
      nowDone.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, t0 + env.laterMs - performance.now())));
      later.push(await timeHealthy(then));
      together.push(await nowDone);
      if (refused) refusedSeconds.push(((await refused) - t0) / 1000);
      if (!referenceFirst) await timeReference();
      env.log(
        `  ${caseId} round ${r + 1}: healthy Installed after ${reference[r]!.toFixed(2)} s alone, ${together[r]!.toFixed(2)} s together, ${later[r]!.toFixed(2)} s ${env.laterMs / 1000} s later; hostile refused after ${refusedSeconds[r]!.toFixed(2)} s`,
      );
    }
    const alive = ctl.child.exitCode === null && ctl.child.signalCode === null && ctl.child.pid === pid;
    const stat = alive ? procStat(pid) : { hwmMiB: Number.NaN, cpuSeconds: Number.NaN };
    if (alive) await uninstallCase(env, caseId);
    const paired = (xs: number[]) => xs.map((x, i) => round2(x / reference[i]!));
    return {
      reference: timings(reference),
      ...(input ? { together: timings(together), later: timings(later), ratios: paired(later), togetherRatios: paired(together) } : {}),
      peakRssMiB: Number(stat.hwmMiB.toFixed(1)),
      cpuSeconds: Number(stat.cpuSeconds.toFixed(2)),
      controllerSurvived: alive,
      refusedSeconds: refusedSeconds.map((x) => Number(x.toFixed(3))),
      refusal,
    };
  } catch (e) {
    throw new Error(
      `${caseId}: ${e instanceof Error ? e.message : String(e)}; controller ${ctl.child.exitCode ?? ctl.child.signalCode ?? 'running'}, log ${ctl.logFile}`,
      { cause: e },
    );
  } finally {
    await ctl.stop();
  }
}

export async function run(options: { rounds?: number; only?: string[] } = {}): Promise<IsolationResult> {
  const log = (l: string) => console.log(l);
  const rounds = options.rounds ?? 9;
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-isolation-'));
  const main = await buildController(log);
  log('starting a control plane (etcd, kube-apiserver)…');
  const cp = await startControlPlane({});
  const client = createKubeClient(loadKubeConfig(cp.kubeconfigPath), { userAgent: 'hoist-isolation-bench' });
  const informer = new Informer<Bd>({ client, type: BD });
  const repos = await createHostileRepos(work);
  const git = await startGitServer({ projectRoot: repos.repos });
  const registry = await startRegistry({ auth: 'none', dir: path.join(work, 'registry') });
  const registryClient = new RegistryClient({ insecureHosts: [registry.host] });
  const files = await startFileServer();
  try {
    await installCRD(client, pino({ level: 'silent' }));
    informer.start();
    await informer.waitForSync();
    const registriesConf = path.join(work, 'registries.conf');
    await writeFile(registriesConf, `[[registry]]\nlocation = "${registry.host}"\ninsecure = true\n`);
    const servers: HostileServers = { files, git: { url: git.url, tips: repos.tips }, registry: { host: registry.host, client: registryClient }, work };
    const env: Env = { main, kubeconfig: cp.kubeconfigPath, client, informer, servers, work, registriesConf, rounds, laterMs: LATER_MS, log };
    const inputs = hostileInputs(servers).filter((i) => !options.only?.length || options.only.includes(i.name));

    log(`reference: a controller that sees no hostile BD, ${rounds} rounds…`);
    const first = await measure(env, 'ref-a', undefined);
    const cases: IsolationCase[] = [];
    for (const input of inputs) {
      log(`${input.name}: ${input.what}`);
      cases.push(
        await measure(env, input.name, input).then(
          (m) => ({ name: input.name, what: input.what, ...m, ratio: 0, togetherRatio: 0, rssRatio: 0, withinTargets: false }),
          (e: unknown) => {
            const error = e instanceof Error ? e.message : String(e);
            log(`  FAILED: ${error}`);
            return { name: input.name, what: input.what, ratio: Number.NaN, togetherRatio: Number.NaN, rssRatio: Number.NaN, withinTargets: false, error };
          },
        ),
      );
    }
    log(`reference again, ${rounds} rounds…`);
    const last = await measure(env, 'ref-b', undefined);
    const referencePeak = Math.max(first.peakRssMiB, last.peakRssMiB);
    const ratioOf = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? Number.NaN : Number((a / b).toFixed(2)));
    const referenceCpu = (first.cpuSeconds + last.cpuSeconds) / 2;
    for (const c of cases) {
      if (c.error) continue;
      c.ratio = round2(median(c.ratios ?? [Number.NaN]));
      c.ratioSpread = spreadOf(c.ratios ?? []);
      c.togetherRatio = round2(median(c.togetherRatios ?? [Number.NaN]));
      c.togetherSpread = spreadOf(c.togetherRatios ?? []);
      c.hostileCpuSeconds = round2(((c.cpuSeconds ?? Number.NaN) - referenceCpu) / rounds);
      c.rssRatio = ratioOf(c.peakRssMiB, referencePeak);
      c.withinTargets = c.controllerSurvived === true && c.ratio <= RATIO_TARGET && (c.peakRssMiB ?? Infinity) < PEAK_TARGET_MIB;
    }
    log(
      `\nhealthy BD (${HEALTHY_OBJECTS} ConfigMaps), create → Installed (medians of ${rounds}): alone, together with the hostile BD, ${LATER_MS / 1000} s after it (× median of the rounds' ratios [quartiles]); controller peak RSS and CPU per hostile BD (a controller that saw no hostile BD: ${referencePeak} MiB, ${referenceCpu.toFixed(1)} s CPU, healthy ${first.reference.median}/${last.reference.median} s)`,
    );
    for (const c of cases) {
      if (c.error) log(`MISS ${c.name.padEnd(22)} not measured: ${c.error}`);
      else
        log(
          `${c.withinTargets ? 'ok  ' : 'MISS'} ${c.name.padEnd(22)} ${c.reference!.median.toFixed(2)} / ${c.together!.median.toFixed(2)} (×${c.togetherRatio}) / ${c.later!.median.toFixed(2)} s (×${c.ratio} [${c.ratioSpread!.p25}–${c.ratioSpread!.p75}]), peak ${c.peakRssMiB} MiB (×${c.rssRatio}), CPU ${c.cpuSeconds} s (${c.hostileCpuSeconds} s per hostile BD), refused after ${c.refusedSeconds!.map((x) => x.toFixed(1)).join('/')} s`,
        );
    }
    const date = new Date().toISOString();
    const result: IsolationResult = {
      benchmark: 'isolation',
      date,
      nproc: availableParallelism(),
      node: process.version,
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      rounds,
      healthyObjects: HEALTHY_OBJECTS,
      healthyPerSample: HEALTHY_PER_SAMPLE,
      laterSeconds: LATER_MS / 1000,
      heapLimitMiB: chartMemoryLimitMiB(),
      nodeFlags: deployedNodeFlags(),
      runFlags: chartRunFlags(),
      targets: { ratio: RATIO_TARGET, peakRssMiB: PEAK_TARGET_MIB },
      reference: { first, last, peakRssMiB: referencePeak },
      cases: await withEarlierCases(cases, date),
    };
    await writeResult(resultsFile, result, log);
    return result;
  } finally {
    await informer.stop();
    await registryClient.close();
    await files.close();
    await git.close();
    await registry.stop();
    await client.close();
    await cp.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * The cases measured now (dated), and, when only some were, the others as the results file has
 * them (each with the date it was measured), in the order of the hostile inputs.
 */
async function withEarlierCases(measured: IsolationCase[], date: string): Promise<IsolationCase[]> {
  const now = measured.map((c) => ({ ...c, measuredAt: date }));
  let earlier: IsolationResult | undefined;
  try {
    earlier = JSON.parse(await readFile(resultsFile, 'utf8')) as IsolationResult;
  } catch {
    return now;
  }
  const names = new Set(now.map((c) => c.name));
  const kept = earlier.cases.filter((c) => !names.has(c.name)).map((c) => ({ ...c, measuredAt: c.measuredAt ?? earlier.date }));
  const order = [...earlier.cases.map((c) => c.name), ...now.map((c) => c.name)];
  return [...kept, ...now].sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
}

/** `[ROUNDS] [CASE ...]` */
function parseArgs(argv: readonly string[]): { rounds?: number; only: string[] } {
  const out: { rounds?: number; only: string[] } = { only: [] };
  for (const a of argv) {
    if (/^\d+$/.test(a)) out.rounds = Number(a);
    else out.only.push(a);
  }
  return out;
}

runWhenMain(import.meta.url, () => run(parseArgs(process.argv.slice(2))));
