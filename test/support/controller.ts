/**
 * Runs a real Hoist controller in the test process against the test run's API server, scoped by
 * a label selector to the BundleDeployments this test file creates (test files run in parallel
 * on one control plane).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { API_VERSION, KIND, type BundleDeployment, type BundleDeploymentSpec, type Condition } from '../../api/v1alpha2/types.ts';
import { installCRD, startController, type ControllerOptions, type RunningController } from '../../src/cli/controller.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { LogCapture, reconciledSince, settledAfterChange, type LogRecord, type ReconciledRecord } from './controller-log.ts';
import { kubeconfigPath } from './env.ts';
import { sleep } from './wait.ts';

export const BD_TYPE = { apiVersion: API_VERSION, kind: KIND } as const;
export const TEST_LABEL = 'hoist.test/run';

export interface TestController {
  /** an admin client of the test's own (not the controller's), for setup and assertions */
  client: RestKubeClient;
  ctl: RunningController;
  runId: string;
  namespace: string;
  /** root of the controller's content store */
  cacheDir: string;
  /** creates a BundleDeployment labelled for this controller */
  create(name: string, spec: BundleDeploymentSpec, labels?: Record<string, string>): Promise<BundleDeployment>;
  get(name: string): Promise<BundleDeployment | undefined>;
  /** merge-patches the spec and returns the new generation */
  patchSpec(name: string, spec: Partial<BundleDeploymentSpec> | Record<string, unknown>): Promise<number>;
  /** waits until `pred` holds for the BD's status at its current generation */
  waitFor(name: string, pred: (bd: BundleDeployment) => boolean, what: string, timeoutMs?: number): Promise<BundleDeployment>;
  /** the controller's log lines (debug and up), for waiting on what it did instead of sleeping */
  log: LogCapture;
  /**
   * Waits until the controller has seen `changes` (default 1) watch events of objects of BD `name`
   * after `mark` (`t.log.mark()` taken before the edits) and reached the fixed point: a reconcile
   * that started after the last event changed nothing. Returns the lines since `mark`.
   */
  settled(name: string, mark: number, what: string, opts?: { changes?: number; timeoutMs?: number }): Promise<LogRecord[]>;
  /** Waits for a reconcile of BD `name` that started at or after `at` (epoch ms, taken before the change that should cause it) to finish. */
  reconciled(name: string, at: number, what: string, timeoutMs?: number): Promise<ReconciledRecord>;
  /**
   * Waits until no BD is queued or being reconciled (requeues scheduled for later do not count),
   * and has stayed so for `quietMs` (default 0: a watch event already delivered is queued at once;
   * a quiet window is for events still on the wire, e.g. of the controller's own last write).
   */
  idle(opts?: { quietMs?: number; timeoutMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

export function cond(bd: BundleDeployment | undefined, type: string): Condition | undefined {
  return bd?.status?.conditions?.find((c) => c.type === type);
}

export function describeStatus(bd: BundleDeployment | undefined): string {
  return (bd?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}: ${c.message}`).join('\n');
}

/** done per the status contract: Installed=True, Progressing=False, observedGeneration current */
export function isDone(bd: BundleDeployment): boolean {
  return bd.status?.observedGeneration === bd.metadata.generation && cond(bd, 'Installed')?.status === 'True' && cond(bd, 'Progressing')?.status === 'False';
}

/** done with Progressing reason Succeeded and every object healthy */
export function isSucceeded(bd: BundleDeployment | undefined): boolean {
  return !!bd && isDone(bd) && cond(bd, 'Progressing')?.reason === 'Succeeded' && cond(bd, 'Healthy')?.status === 'True';
}

/** failed per the status contract: Progressing=False with Blocked or RolledBack, observedGeneration current */
export function isFailed(bd: BundleDeployment | undefined): boolean {
  const p = cond(bd, 'Progressing');
  return !!bd && current(bd) && p?.status === 'False' && (p.reason === 'Blocked' || p.reason === 'RolledBack');
}

export function current(bd: BundleDeployment): boolean {
  return bd.status?.observedGeneration === bd.metadata.generation;
}

export async function startTestController(
  opts: { workers?: number; kubeconfig?: string; /** the run of a stopped controller: a restart of the same controller */ runId?: string } & Pick<
    ControllerOptions,
    'sources' | 'gcIntervalMs' | 'cacheMaxBytes' | 'defaultServiceAccount' | 'maxRevisionBytes' | 'reconcileTimeoutMs' | 'budgetClock' | 'notifications'
  > = {},
): Promise<TestController> {
  const runId = opts.runId ?? randomBytes(4).toString('hex');
  const namespace = `hoist-test-${runId}`;
  const kubeconfig = opts.kubeconfig ?? kubeconfigPath();
  const client = createKubeClient(loadKubeConfig(kubeconfig));
  const logs = new LogCapture();
  // captured from debug up whatever HOIST_TEST_LOG says (tests wait on debug lines); printed from its level
  const echo = process.env.HOIST_TEST_LOG;
  const log = pino({ level: 'debug' }, logs.stream(echo ? (pino.levels.values[echo] ?? 0) : undefined));
  await installCRD(client, log);
  const cacheDir = await mkdtemp(join(tmpdir(), 'hoist-test-cache-'));
  const ctl = await startController({
    kubeconfig,
    namespace,
    cacheDir,
    log,
    selector: `${TEST_LABEL}=${runId}`,
    userAgent: `hoist/test-${runId}`,
    workers: opts.workers ?? 4,
    sources: opts.sources,
    gcIntervalMs: opts.gcIntervalMs,
    cacheMaxBytes: opts.cacheMaxBytes,
    defaultServiceAccount: opts.defaultServiceAccount,
    maxRevisionBytes: opts.maxRevisionBytes,
    reconcileTimeoutMs: opts.reconcileTimeoutMs,
    budgetClock: opts.budgetClock,
    notifications: opts.notifications,
  });
  // a test that stops the controller itself (a restart) and the file's afterAll stop it once
  const stopController = ctl.stop.bind(ctl);
  let stopped: Promise<void> | undefined;
  ctl.stop = () => (stopped ??= stopController());

  const get = async (name: string) => (await client.get(BD_TYPE, name)) as unknown as BundleDeployment | undefined;
  return {
    client,
    ctl,
    runId,
    namespace,
    cacheDir,
    async create(name, spec, labels = {}) {
      const bd = { apiVersion: API_VERSION, kind: KIND, metadata: { name, labels: { ...labels, [TEST_LABEL]: runId } }, spec };
      return (await client.create(bd as unknown as KubeObject)) as unknown as BundleDeployment;
    },
    get,
    async patchSpec(name, spec) {
      const r = await client.patch(BD_TYPE, name, undefined, { spec }, 'merge');
      return r.metadata.generation ?? 0;
    },
    async waitFor(name, pred, what, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      let bd: BundleDeployment | undefined;
      for (;;) {
        bd = await get(name);
        if (bd && current(bd) && pred(bd)) return bd;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${name}: ${what}\n${describeStatus(bd)}\n${recentLines(logs, name)}`);
        await sleep(100);
      }
    },
    log: logs,
    settled(name, mark, what, opts = {}) {
      return logs.waitFor(mark, (lines) => settledAfterChange(lines, name, opts.changes), `${name}: ${what}`, opts.timeoutMs);
    },
    async reconciled(name, at, what, timeoutMs) {
      const lines = await logs.waitFor(0, (l) => reconciledSince(l, name, at) !== undefined, `${name}: ${what}`, timeoutMs);
      return reconciledSince(lines, name, at)!;
    },
    async idle({ quietMs = 0, timeoutMs = 60_000 } = {}) {
      const q = ctl.manager.controller.queue;
      const deadline = Date.now() + timeoutMs;
      let quietSince = Date.now();
      for (;;) {
        if (q.length > 0 || q.inFlight > 0) quietSince = Date.now();
        else if (Date.now() - quietSince >= quietMs) return;
        if (Date.now() > deadline) throw new Error(`controller not idle after ${timeoutMs} ms`);
        await sleep(20);
      }
    },
    async stop() {
      await ctl.stop();
      await client.close();
      await rm(cacheDir, { recursive: true, force: true });
    },
  };
}

/**
 * Resolves once the clock has left the second of the object's creationTimestamp (which has
 * second precision), so an object created next is strictly newer. Same clock as the API server's:
 * the test control plane runs on this machine.
 */
export async function pastSecondOf(client: RestKubeClient, type: { apiVersion: string; kind: string }, name: string, namespace?: string): Promise<void> {
  const created = (await client.get(type, name, namespace))?.metadata.creationTimestamp;
  if (!created) throw new Error(`${type.kind} ${name} has no creationTimestamp`);
  const wait = Date.parse(created) + 1000 - Date.now();
  if (wait > 0) await sleep(wait + 5);
}

/** the controller's last log lines about BD `name` (and unattributed ones), for a timeout's message */
function recentLines(logs: LogCapture, name: string, n = 25): string {
  const omit = new Set(['level', 'time', 'pid', 'hostname']);
  const lines = logs.records.filter((r) => r.bd === name || r.bd === undefined).slice(-n);
  const shown = lines.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).filter(([k]) => !omit.has(k)))).slice(0, 600));
  return `controller log (last ${shown.length} lines of ${name} or of no BD):\n${shown.join('\n')}`;
}
