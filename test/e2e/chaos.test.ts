/**
 * Chaos (issue 10): an upgrade wave over many BundleDeployments whose content comes from the local
 * OCI registry, pinned by digest (revision 1 → revision 2), while
 *  - `hoist run` (a child process) is SIGKILLed at random points and restarted: half of the kills
 *    during the registry outage, the rest while the BDs catch up after it,
 *  - the registry is down for a while, taken down as soon as the first BD has finished revision 2;
 *    the wave's second half gets revision 2 then, so its fetches meet the outage (asserted),
 *  - kube-apiserver is stopped and started once, 0..1 s after the registry is back (while the BDs
 *    start fetching revision 2 again), under a running controller process (etcd keeps the data).
 * The test starts its own control plane and registry: restarting the shared API server would break
 * the test files running beside it.
 *
 * Throughout, no BD may go `Blocked` or `RolledBack` and `Installed` stays `True` (the installed
 * revision is intact while revision 2 cannot be fetched). At the end every BD is done at revision
 * 2, every object of both revisions kept its UID, the new objects exist, no revision Secret is
 * orphaned, and no object is owned by two BDs. The report lists each fault with its time and what
 * the controller did around it (from its own log).
 *
 * Short run (the default, part of `npm test`): 20 BDs, 5 SIGKILLs, 1 API server restart, registry
 * down 10 s (30 s would add half a minute of waiting to every test run). The long run is
 * `npm run chaos`: 100 BDs, 10 SIGKILLs, registry down 30 s, report written to
 * bench/results/chaos.json (HOIST_CHAOS_BDS, HOIST_CHAOS_KILLS, HOIST_CHAOS_REGISTRY_DOWN_S,
 * HOIST_CHAOS_REPORT).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND, LABEL_OWNER_NAME, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { LABEL_REVISION, LABEL_REVISION_OF } from '../../src/revisions/revision-store.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { startControlPlane, type ControlPlane } from '../../src/devcluster/control-plane.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { RegistryClient } from '../../src/sources/image/client.ts';
import { pushImage, writeLayer } from '../../src/sources/image/push.ts';
import { parseReference } from '../../src/sources/image/reference.ts';
import { parseControllerLog, summarize, type ControllerLine, type WindowSummary } from '../support/chaos-log.ts';
import { BD_TYPE, cond, describeStatus, isDone, TEST_LABEL } from '../support/controller.ts';
import { sigkill as kill } from '../support/hoist-process.ts';
import { startRegistry, type TestRegistry } from '../support/registry.ts';
import { cm, ownedUids } from '../support/upgrade-fixtures.ts';
import { sleep } from '../support/wait.ts';

const BDS = Number(process.env.HOIST_CHAOS_BDS ?? 20);
const KILLS = Number(process.env.HOIST_CHAOS_KILLS ?? 5);
const REGISTRY_DOWN_MS = Number(process.env.HOIST_CHAOS_REGISTRY_DOWN_S ?? 10) * 1000;
const REPORT_FILE = process.env.HOIST_CHAOS_REPORT;
/**
 * The kills: the first half land while the registry is down, each controller process living a
 * random 0..OUTAGE_LIFE_MS after start-up; the last of them lives until the registry is back, and
 * 0..1 s later, while the BDs start fetching revision 2 again, kube-apiserver is restarted under
 * it. The rest land while the BDs catch up, 0..RECOVERY_LIFE_MS after start-up.
 */
const OUTAGE_KILLS = Math.ceil(KILLS / 2);
const OUTAGE_LIFE_MS = REGISTRY_DOWN_MS / OUTAGE_KILLS;
const RECOVERY_LIFE_MS = 1500;
const API_RESTART_LIFE = OUTAGE_KILLS - 1;
if (KILLS < 2) throw new Error('HOIST_CHAOS_KILLS must be at least 2: one during the registry outage, one with the API server restart');
const KINDS = [
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
] as const;

const run = randomBytes(4).toString('hex');
const controllerNs = `hoist-chaos-${run}`;
const installNs = `chaos-${run}`;
const names = Array.from({ length: BDS }, (_, i) => `chaos-${run}-${i}`);
let cp: ControlPlane;
let registry: TestRegistry;
let client: RestKubeClient;
let workDir: string;
let child: ChildProcess | undefined;

/** every controller process's log, parsed, and how many processes were started */
const lines: ControllerLine[] = [];
let lives = 0;

interface Sample {
  t: number;
  done2: number;
}
/** status as polled through the wave: done counts, and every BD ever seen Blocked, RolledBack or not Installed */
const samples: Sample[] = [];
const violations = new Map<string, string>();
/** BDs seen `Progressing=True/Retrying`, and what their first False condition said (a few distinct messages) */
const retrying = new Set<string>();
const retryingMessages = new Set<string>();

interface FaultRecord {
  fault: string;
  /** ms since the wave started (its first half patched to revision 2) */
  atMs: number;
  durationMs?: number;
  doneAtRevision2Before: number;
  doneAtRevision2After?: number;
  controllerProcessesSoFar: number;
  /** what the controller logged while the fault lasted (kills: during the life it ended) */
  controller: WindowSummary;
  note?: string;
}
const faults: FaultRecord[] = [];
let waveStart = 0;
let result: Record<string, unknown> = {};

function startHoist(): { child: ChildProcess; output: () => string; startedAt: number } {
  const c = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'run',
      '--kubeconfig',
      cp.kubeconfigPath,
      '--namespace',
      controllerNs,
      '--selector',
      `${TEST_LABEL}=${run}`,
      '--cache-dir',
      join(workDir, 'cache'),
      '--metrics-bind-address',
      '0',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      // the registry's TLS certificate is signed by its test CA
      env: { ...process.env, HOIST_LOG_LEVEL: 'info', NODE_EXTRA_CA_CERTS: registry.pki!.caCertPath },
    },
  );
  child = c;
  const life = lives++;
  let out = '';
  c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  c.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // after 'exit', once stdout and stderr are drained
  c.once('close', () => {
    lines.push(...parseControllerLog(out, life));
    if (process.env.HOIST_CHAOS_LOG_DIR) writeFileSync(join(process.env.HOIST_CHAOS_LOG_DIR, `life-${life}.log`), out);
  });
  return { child: c, output: () => out, startedAt: Date.now() };
}

async function bds(): Promise<BundleDeployment[]> {
  const list = await client.list(BD_TYPE, { labelSelector: `${TEST_LABEL}=${run}` });
  return list.items as unknown as BundleDeployment[];
}

const doneAt = (bd: BundleDeployment, revision: number) => isDone(bd) && bd.status?.activeRevision?.number === revision;
const sinceWave = (t: number) => t - waveStart;
const doneNow = () => samples.at(-1)?.done2 ?? 0;

/** polls the BDs until stopped: done counts, and anything the controller must never do */
function watchStatus(): () => Promise<void> {
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const all = await bds().catch(() => undefined); // the API server may be restarting
      if (all) {
        samples.push({ t: Date.now(), done2: all.filter((bd) => doneAt(bd, 2)).length });
        for (const bd of all) {
          const progressing = cond(bd, 'Progressing')?.reason;
          const name = bd.metadata.name;
          if (progressing === 'Blocked' || progressing === 'RolledBack') violations.set(name, `Progressing ${progressing}: ${describeStatus(bd)}`);
          else if (cond(bd, 'Installed')?.status !== 'True') violations.set(name, `Installed not True: ${describeStatus(bd)}`);
          if (progressing === 'Retrying') {
            retrying.add(name);
            const failed = ['Resolved', 'Unpacked', 'Installed'].map((t) => cond(bd, t)).find((c) => c?.status === 'False');
            const said = failed ? `${failed.type}=False/${failed.reason}: ${failed.message}` : `Progressing=True/Retrying: ${cond(bd, 'Progressing')?.message}`;
            if (retryingMessages.size < 3)
              retryingMessages.add(
                said
                  .replace(/127\.0\.0\.1:\d+/g, '<host>')
                  .replace(/sha256:[0-9a-f]{64}/g, '<digest>')
                  .replace(/chaos-[0-9a-f]+-\d+/g, '<bd>')
                  .replace(/b\d+@/g, 'b<i>@'),
              );
          }
        }
      }
      await sleep(300);
    }
  })();
  return async () => {
    stop = true;
    await loop;
  };
}

/** starts the controller, waits until every BD is done at `revision`, kills it */
async function converge(revision: number, timeoutMs: number): Promise<BundleDeployment[]> {
  const h = startHoist();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await bds();
    if (all.length === BDS && all.every((bd) => doneAt(bd, revision))) {
      await kill(h.child);
      return all;
    }
    if (Date.now() > deadline) {
      const late = all.filter((bd) => !doneAt(bd, revision));
      throw new Error(`${late.length} BDs not done at revision ${revision}:\n${late.slice(0, 5).map(describeStatus).join('\n')}\n${h.output().slice(-3000)}`);
    }
    await sleep(250);
  }
}

/** the BD's content, pushed as a one-layer image; returns its digest reference */
async function pushBundle(reg: RegistryClient, i: number, v: string): Promise<string> {
  const manifests = [
    cm(`c-${i}`, { v }),
    stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: `sa-${i}` } }),
    ...(v === '2' ? [cm(`d-${i}`, { v })] : []),
  ].join('---\n');
  const layer = await writeLayer([{ name: 'manifests/objects.yaml', data: manifests }], join(workDir, `layer-${i}-${v}.tgz`));
  const repo = `${registry.host}/chaos/b${i}`;
  const pushed = await pushImage(reg, parseReference(`${repo}:v${v}`), [layer], { stage: 'fetch' });
  return `${repo}@${pushed.digest}`;
}

async function allUids(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of names) for (const [id, uid] of await ownedUids(client, name, KINDS)) out.set(id, uid);
  return out;
}

beforeAll(async () => {
  cp = await startControlPlane();
  registry = await startRegistry({ auth: 'none', tls: true });
  client = createKubeClient(loadKubeConfig(cp.kubeconfigPath));
  await installCRD(client, pino({ level: 'silent' }));
  workDir = await mkdtemp(join(tmpdir(), 'hoist-chaos-'));
});

afterAll(async () => {
  if (child) await kill(child);
  await client?.close();
  await registry?.stop();
  await cp?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
  const fmt = (f: FaultRecord) =>
    `  ${(f.atMs / 1000).toFixed(1).padStart(6)} s  ${f.fault}${f.durationMs !== undefined ? ` (${(f.durationMs / 1000).toFixed(1)} s)` : ''}: ` +
    `${f.doneAtRevision2Before}/${BDS} done at revision 2 before${f.doneAtRevision2After !== undefined ? `, ${f.doneAtRevision2After} after` : ''}; ` +
    `controller: ${f.controller.reconciles} reconciles, ${f.controller.failedReconciles} failed${f.controller.failures.length ? ` (${f.controller.failures.map((x) => `${x.count}× ${x.what}`).join('; ')})` : ''}${f.note ? `; ${f.note}` : ''}`;
  console.log(
    `chaos report (${BDS} BDs, ${KILLS} SIGKILLs, 1 API server restart, registry down ${REGISTRY_DOWN_MS / 1000} s):\n${faults.map(fmt).join('\n')}\n${JSON.stringify(result)}`,
  );
  if (REPORT_FILE) {
    await mkdir(dirname(REPORT_FILE), { recursive: true });
    const report = {
      benchmark: 'chaos',
      date: new Date().toISOString(),
      nproc: availableParallelism(),
      node: process.version,
      loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
      bds: BDS,
      kills: KILLS,
      apiServerRestarts: 1,
      registryDownSeconds: REGISTRY_DOWN_MS / 1000,
      ...result,
      faults,
    };
    await writeFile(REPORT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  }
});

describe('chaos: an upgrade wave through SIGKILLs, an API server restart and a registry outage', () => {
  it(
    `${BDS} BDs from the registry upgraded through ${KILLS} kills, 1 API server restart and ${REGISTRY_DOWN_MS / 1000} s without the registry: all done at revision 2, never Blocked or rolled back, UIDs kept, no orphaned revision Secret, no object owned twice`,
    { timeout: 900_000 },
    async () => {
      const reg = new RegistryClient({ ca: registry.pki!.caCert });
      const v1: string[] = [];
      const v2: string[] = [];
      try {
        for (let i = 0; i < BDS; i++) {
          v1.push(await pushBundle(reg, i, '1'));
          v2.push(await pushBundle(reg, i, '2'));
        }
      } finally {
        await reg.close();
      }
      for (const [i, name] of names.entries()) {
        await client.create({
          apiVersion: API_VERSION,
          kind: KIND,
          metadata: { name, labels: { [TEST_LABEL]: run } },
          spec: { installNamespace: installNs, format: 'plain', sources: [{ kind: 'image', image: { ref: v1[i]! } }] },
        } as unknown as KubeObject);
      }
      await converge(1, 300_000);
      const before = await allUids();
      expect(before.size).toBe(2 * BDS);
      const firstLife = lives;

      // the wave: half of the BDs get revision 2 at once; the other half when the registry goes
      // down, so their fetches meet the outage (a BD not done yet may well have fetched already)
      const upgrade = (i: number) => client.patch(BD_TYPE, names[i]!, undefined, { spec: { sources: [{ kind: 'image', image: { ref: v2[i]! } }] } }, 'merge');
      const firstHalf = Math.ceil(BDS / 2);
      for (let i = 0; i < firstHalf; i++) await upgrade(i);
      waveStart = Date.now();
      const stopWatching = watchStatus();
      let registryBack: Promise<void> | undefined;
      try {
        for (let k = 0; k < KILLS; k++) {
          const h = startHoist();
          // the delays count from the start of reconciling, so the kills land in the wave, not in start-up
          for (let w = 0; w < 1200 && !h.output().includes('"controller started"') && h.child.exitCode === null; w++) await sleep(25);
          const doneAtStart = doneNow();
          if (k === 0) {
            // the outage starts once one BD has fetched and installed revision 2: the rest still have to
            for (let w = 0; w < 600 && doneNow() === 0; w++) await sleep(50);
            const downAt = Date.now();
            const doneBefore = doneNow();
            expect(doneBefore, 'the registry goes down after the first BD is done at revision 2').toBeGreaterThan(0);
            await registry.down();
            for (let i = firstHalf; i < BDS; i++) await upgrade(i);
            registryBack = (async () => {
              await sleep(REGISTRY_DOWN_MS - (Date.now() - downAt));
              await registry.up();
              const upAt = Date.now();
              faults.push({
                fault: 'registry down',
                atMs: sinceWave(downAt),
                durationMs: upAt - downAt,
                doneAtRevision2Before: doneBefore,
                doneAtRevision2After: doneNow(),
                controllerProcessesSoFar: lives - firstLife,
                controller: { reconciles: 0, failedReconciles: 0, failures: [] }, // filled in from the log at the end
                note: `${BDS - doneNow()} BDs still to fetch revision 2 when it came back`,
              });
            })();
          }
          if (k === API_RESTART_LIFE) {
            await registryBack;
            await sleep(Math.floor(Math.random() * 1000));
            const at = Date.now();
            const doneBefore = doneNow();
            await cp.restartApiServer();
            faults.push({
              fault: 'kube-apiserver restart',
              atMs: sinceWave(at),
              durationMs: Date.now() - at,
              doneAtRevision2Before: doneBefore,
              controllerProcessesSoFar: lives - firstLife,
              controller: { reconciles: 0, failedReconciles: 0, failures: [] },
              note: '',
            });
            // the controller rides through: it is still running, and once a reconcile failed on the
            // restart, one succeeds again before it is killed (asserted from the log at the end)
            await sleep(2000);
            for (const until = Date.now() + 60_000; Date.now() < until; await sleep(100)) {
              const own = parseControllerLog(h.output(), API_RESTART_LIFE).filter((l) => l.time >= at);
              const firstFailure = own.find((l) => l.msg === 'reconcile failed');
              if (!firstFailure || own.some((l) => l.time > firstFailure.time && l.msg === 'reconciled')) break;
            }
            expect(h.child.exitCode, 'hoist run survives the API server restart').toBeNull();
          }
          await sleep(Math.floor(Math.random() * (k < API_RESTART_LIFE ? OUTAGE_LIFE_MS : RECOVERY_LIFE_MS)));
          const killedAt = Date.now();
          await kill(h.child);
          faults.push({
            fault: `SIGKILL ${k + 1}`,
            atMs: sinceWave(killedAt),
            doneAtRevision2Before: doneNow(),
            controllerProcessesSoFar: lives - firstLife,
            controller: { reconciles: 0, failedReconciles: 0, failures: [] },
            note: `lived ${killedAt - h.startedAt} ms (${doneNow() - doneAtStart} BDs finished revision 2 meanwhile)`,
          });
        }
        await registryBack;
        const final = await converge(2, 300_000);
        // the first poll that saw every BD done (kills may land after that: the controller is then killed in its steady state)
        const allDoneMs = sinceWave(samples.find((x) => x.done2 === BDS)?.t ?? Date.now());
        const ends = faults.map((f) => f.atMs + (f.durationMs ?? 0));
        const lastFaultEnd = Math.max(...ends);
        const lastFaultEndBeforeDone = Math.max(0, ...ends.filter((e) => e <= allDoneMs));
        const registryFault = faults.find((f) => f.fault === 'registry down')!;

        // what the controller did during each fault, from its log (once every process's output is drained)
        for (let w = 0; w < 40 && new Set(lines.map((l) => l.life)).size < lives; w++) await sleep(50);
        const byLife = (life: number) => lines.filter((l) => l.life === life);
        let restartRecovery = { failed: 0, recovered: 0 };
        for (const f of faults) {
          const from = waveStart + f.atMs;
          if (f.fault.startsWith('SIGKILL')) {
            const life = firstLife + Number(f.fault.split(' ')[1]) - 1;
            const own = byLife(life);
            f.controller = summarize(own, own[0]?.time ?? from, from);
          } else f.controller = summarize(lines, from, from + (f.durationMs ?? 0));
          if (f.fault === 'kube-apiserver restart') {
            // the same process recovered: after its first failed reconcile, reconciles succeed again
            const own = byLife(firstLife + API_RESTART_LIFE);
            const failed = own.filter((l) => l.time >= from && l.msg === 'reconcile failed');
            const firstFailure = failed[0]?.time ?? from;
            const recovered = own.filter((l) => l.time > firstFailure && l.msg === 'reconciled').length;
            f.note = `the same hoist run process kept running: ${failed.length} reconciles failed from the restart on (first after ${firstFailure - from} ms), ${recovered} succeeded after the first failure`;
            restartRecovery = { failed: failed.length, recovered };
          }
        }
        faults.sort((a, b) => a.atMs - b.atMs);
        const total = summarize(
          lines.filter((l) => l.life >= firstLife),
          waveStart,
          Date.now(),
        );
        result = {
          passed: false,
          allDoneSeconds: allDoneMs / 1000,
          lastFaultEndSeconds: lastFaultEnd / 1000,
          faultsAfterAllDone: ends.filter((e) => e > allDoneMs).length,
          /** from the end of the last fault that came before all were done */
          allDoneAfterLastFaultSeconds: (allDoneMs - lastFaultEndBeforeDone) / 1000,
          allDoneAfterRegistryBackSeconds: (allDoneMs - registryFault.atMs - registryFault.durationMs!) / 1000,
          controllerProcesses: lives - firstLife,
          reconciles: total.reconciles,
          failedReconciles: total.failedReconciles,
          failures: total.failures,
          blockedOrRolledBack: [...violations.values()].filter((v) => v.startsWith('Progressing')).length,
          installedNotTrue: [...violations.values()].filter((v) => v.startsWith('Installed')).length,
          bdsSeenRetrying: retrying.size,
          retryingSaid: [...retryingMessages],
        };
        // the outage was felt: fetches failed while it lasted, and were retried (never Blocked, below)
        expect(registryFault.controller.failures.some((f) => f.what.startsWith('fetch: registry request failed'))).toBe(true);

        // a revision Secret that could not be created while the API server was down is the apply
        // stage's failure (a revision is stored before it is applied), not a catch-all's
        const restartFault = faults.find((f) => f.fault === 'kube-apiserver restart')!;
        expect(restartFault.controller.failures.filter((f) => f.what.includes('create v1 Secret') && !f.what.startsWith('apply: ')).map((f) => f.what)).toEqual(
          [],
        );
        // the process that saw the API server restart recovered by itself (when it had anything to do then)
        if (restartRecovery.failed > 0) expect(restartRecovery.recovered, 'reconciles succeed again after the API server restart').toBeGreaterThan(0);
        // never Blocked or RolledBack, the installed revision intact throughout
        expect([...violations].map(([n, v]) => `${n}: ${v}`)).toEqual([]);
        // every object of both revisions kept its UID; the new ones exist
        const after = await allUids();
        for (const [id, uid] of before) expect(after.get(id), `${id} keeps its uid`).toBe(uid);
        expect(after.size).toBe(3 * BDS);
        // revisions 1 and 2 in status; every revision Secret belongs to a BD and a revision in its status
        const byName = new Map(final.map((bd) => [bd.metadata.name, bd]));
        for (const bd of final) expect((bd.status?.revisions ?? []).map((r) => r.number)).toEqual([1, 2]);
        const secrets = await client.list({ apiVersion: 'v1', kind: 'Secret' }, { namespace: controllerNs, labelSelector: LABEL_REVISION_OF });
        for (const s of secrets.items) {
          const owner = byName.get(s.metadata.labels?.[LABEL_REVISION_OF] ?? '');
          expect(owner, `${s.metadata.name} names no BD`).toBeDefined();
          expect(
            owner?.status?.revisions?.map((r) => String(r.number)),
            `${s.metadata.name} is an orphaned revision`,
          ).toContain(s.metadata.labels?.[LABEL_REVISION]);
        }
        // no object owned by two BDs: one owner label (the right one), at most one Hoist apply manager
        for (const type of KINDS) {
          const objects = await client.list(type, { namespace: installNs });
          for (const o of objects.items) {
            const managers = (o.metadata.managedFields as Array<{ manager?: string; operation?: string }> | undefined) ?? [];
            const hoist = managers.filter((m) => m.operation === 'Apply' && m.manager?.startsWith('hoist-'));
            expect(hoist.length, `${type.kind} ${o.metadata.name} has ${hoist.length} Hoist managers`).toBeLessThanOrEqual(1);
            const i = /-(\d+)$/.exec(o.metadata.name)?.[1];
            if (i !== undefined) expect(o.metadata.labels?.[LABEL_OWNER_NAME], `${type.kind} ${o.metadata.name}`).toBe(names[Number(i)]);
          }
        }
        expect(faults.filter((f) => f.fault.startsWith('SIGKILL'))).toHaveLength(KILLS);
        expect(faults.map((f) => f.fault)).toEqual(expect.arrayContaining(['registry down', 'kube-apiserver restart']));
        result.passed = true;
      } finally {
        await stopWatching();
        await registryBack?.catch(() => undefined);
      }
    },
  );
});
