/**
 * Chaos (issue 10, the short run): an upgrade wave over several BundleDeployments while `hoist run`
 * (a child process) is SIGKILLed at random points and restarted. At the end every BD is done at
 * revision 2, every object of both revisions kept its UID, the new objects exist, no revision
 * Secret is orphaned (each names an existing BD and a revision in its status), and no object is
 * owned by two BDs (one owner label, at most one Hoist field manager). The report lists each fault
 * and what the controller had done by then. Longer: HOIST_CHAOS_BDS=100 HOIST_CHAOS_KILLS=10.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND, LABEL_OWNER_NAME, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { LABEL_REVISION, LABEL_REVISION_OF } from '../../src/apply/revision-store.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { BD_TYPE, describeStatus, isDone, TEST_LABEL } from '../support/controller.ts';
import { kubeconfigPath } from '../support/env.ts';
import { startFileServer, type FileServer } from '../support/http-files.ts';
import { sigkill as kill } from '../support/hoist-process.ts';
import { cm, ownedUids, servePinned } from '../support/upgrade-fixtures.ts';

const BDS = Number(process.env.HOIST_CHAOS_BDS ?? 20);
const KILLS = Number(process.env.HOIST_CHAOS_KILLS ?? 5);
const MAX_KILL_DELAY_MS = 800;
const KINDS = [
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
] as const;

const run = randomBytes(4).toString('hex');
const controllerNs = `hoist-chaos-${run}`;
const installNs = `chaos-${run}`;
const names = Array.from({ length: BDS }, (_, i) => `chaos-${run}-${i}`);
let client: RestKubeClient;
let files: FileServer;
let cacheDir: string;
let child: ChildProcess | undefined;
const report: Array<{ fault: string; afterMs: number; doneBefore: number; reconcilesBefore: number }> = [];

function startHoist(): { child: ChildProcess; output: () => string } {
  const c = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'run',
      '--kubeconfig',
      kubeconfigPath(),
      '--namespace',
      controllerNs,
      '--selector',
      `${TEST_LABEL}=${run}`,
      '--cache-dir',
      cacheDir,
      '--metrics-bind-address',
      '0',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOIST_LOG_LEVEL: 'info' },
    },
  );
  child = c;
  let out = '';
  c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  c.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child: c, output: () => out };
}

async function bds(): Promise<BundleDeployment[]> {
  const list = await client.list(BD_TYPE, { labelSelector: `${TEST_LABEL}=${run}` });
  return list.items as unknown as BundleDeployment[];
}

const doneAt = (bd: BundleDeployment, revision: number) => isDone(bd) && bd.status?.activeRevision?.number === revision;

/** starts the controller, waits until every BD is done at `revision`, kills it */
async function converge(revision: number): Promise<BundleDeployment[]> {
  const h = startHoist();
  const deadline = Date.now() + 180_000;
  for (;;) {
    const all = await bds();
    if (all.length === BDS && all.every((bd) => doneAt(bd, revision))) {
      await kill(h.child);
      return all;
    }
    if (Date.now() > deadline) {
      const late = all.filter((bd) => !doneAt(bd, revision));
      throw new Error(`${late.length} BDs not done at revision ${revision}:\n${late.map(describeStatus).join('\n')}\n${h.output().slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const bundle = (i: number, v: string): Record<string, string> => ({
  'objects.yaml': [
    cm(`c-${i}`, { v }),
    stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: `sa-${i}` } }),
    ...(v === '2' ? [cm(`d-${i}`, { v })] : []),
  ].join('---\n'),
});

async function allUids(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of names) for (const [id, uid] of await ownedUids(client, name, KINDS)) out.set(id, uid);
  return out;
}

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await installCRD(client, pino({ level: 'silent' }));
  files = await startFileServer();
  cacheDir = await mkdtemp(join(tmpdir(), 'hoist-chaos-cache-'));
});

afterAll(async () => {
  if (child) await kill(child);
  for (const name of names) await client.delete(BD_TYPE, name, undefined).catch(() => undefined);
  // the finalizers are removed by a controller
  const h = startHoist();
  const deadline = Date.now() + 60_000;
  while ((await bds().catch(() => [])).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  await kill(h.child);
  for (const ns of [installNs, controllerNs]) await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
  await files?.close();
  await client?.close();
  await rm(cacheDir, { recursive: true, force: true });
  console.log(
    `chaos report (${BDS} BDs):\n${report.map((r) => `  ${r.fault} ${r.afterMs} ms after start-up: ${r.doneBefore}/${BDS} done at revision 2, ${r.reconcilesBefore} reconciles logged`).join('\n')}`,
  );
});

describe('chaos: an upgrade wave while the controller is SIGKILLed', () => {
  it(
    `${BDS} BDs upgraded with ${KILLS} kills: all done at revision 2, UIDs kept, no orphaned revision Secret, no object owned twice`,
    { timeout: 600_000 },
    async () => {
      for (const [i, name] of names.entries()) {
        const sources = await servePinned(files, `/${name}-v1.tgz`, bundle(i, '1'));
        await client.create({
          apiVersion: API_VERSION,
          kind: KIND,
          metadata: { name, labels: { [TEST_LABEL]: run } },
          spec: { installNamespace: installNs, format: 'plain', sources },
        } as unknown as KubeObject);
      }
      await converge(1);
      const before = await allUids();
      expect(before.size).toBe(2 * BDS);

      // the wave: every BD gets revision 2 at once, then the controller dies at random points
      for (const [i, name] of names.entries()) {
        const sources = await servePinned(files, `/${name}-v2.tgz`, bundle(i, '2'));
        await client.patch(BD_TYPE, name, undefined, { spec: { sources } }, 'merge');
      }
      for (let k = 0; k < KILLS; k++) {
        const afterMs = Math.floor(Math.random() * MAX_KILL_DELAY_MS);
        const h = startHoist();
        // the delay counts from the start of reconciling, so the kills land in the wave, not in start-up
        for (let w = 0; w < 600 && !h.output().includes('"controller started"') && h.child.exitCode === null; w++) await new Promise((r) => setTimeout(r, 25));
        await new Promise((r) => setTimeout(r, afterMs));
        await kill(h.child);
        report.push({
          fault: `SIGKILL ${k + 1}`,
          afterMs,
          doneBefore: (await bds()).filter((bd) => doneAt(bd, 2)).length,
          reconcilesBefore: h.output().split('"msg":"reconciled"').length - 1,
        });
      }
      const final = await converge(2);

      // every object of both revisions kept its UID; the new ones exist
      const after = await allUids();
      for (const [id, uid] of before) expect(after.get(id), `${id} keeps its uid`).toBe(uid);
      expect(after.size).toBe(3 * BDS);
      // revisions 1 and 2 in status, one digest each; every revision Secret belongs to a BD and a revision in its status
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
      expect(report).toHaveLength(KILLS);
    },
  );
});
