/**
 * Crash safety (issue 5): `hoist run` as a child process, SIGKILLed 20 times at random points
 * while it installs argo-rollouts v1.8.4 and then upgrades it to v1.9.1, restarted each time.
 * Every time it converges (Installed=True, Progressing=False at the current generation), no object
 * is lost (all 15 exist with Hoist's labels and the active revision's annotation), no object is
 * ever deleted and re-created (UIDs never change), and no duplicate revision appears (revision
 * numbers in status and in the revision Secrets are unique, contiguous, one per content digest).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_REVISION, API_VERSION, KIND, LABEL_LINEAGE, LABEL_OWNER_NAME, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { LABEL_REVISION, LABEL_REVISION_OF } from '../../src/revisions/revision-store.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { BD_TYPE, describeStatus, isDone, TEST_LABEL } from '../support/controller.ts';
import { kubeconfigPath } from '../support/env.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../support/http-files.ts';
import { sigkill as kill } from '../support/hoist-process.ts';
import { FIXTURES, isolatePlain, ownedUids } from '../support/upgrade-fixtures.ts';
import { sleep } from '../support/wait.ts';

const KILLS_PER_PHASE = 10;
const MAX_KILL_DELAY_MS = 1500;

const run = randomBytes(4).toString('hex');
const controllerNs = `hoist-crash-${run}`;
const installNs = `crash-${run}`;
const bdName = `crash-${run}`;
const selector = `${TEST_LABEL}=${run}`;
let client: RestKubeClient;
let files: FileServer;
let cacheDir: string;
let child: ChildProcess | undefined;
/** every identity → uid ever observed: a uid that changes means deleted and re-created */
const seenUids = new Map<string, string>();
const kills: Array<{ phase: string; delayMs: number; appliedBeforeKill: number; reconciledBeforeKill: boolean }> = [];

/** starts `hoist run` (node itself runs tsx's loader, so SIGKILL hits the controller, not a wrapper) */
async function startHoist(): Promise<{ child: ChildProcess; output: () => string }> {
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
      selector,
      '--cache-dir',
      cacheDir,
      '--metrics-bind-address',
      '0',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOIST_LOG_LEVEL: 'debug' },
    },
  );
  child = c;
  let out = '';
  c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  c.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes('"controller started"')) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
    c.once('exit', (code, signal) => {
      clearInterval(timer);
      reject(new Error(`hoist run exited (${code ?? signal}) before starting: ${out.slice(-2000)}`));
    });
  });
  return { child: c, output: () => out };
}

/** starts the controller and SIGKILLs it after a random 0–1500 ms of reconciling */
async function crashOnce(phase: string): Promise<void> {
  const delayMs = Math.floor(Math.random() * MAX_KILL_DELAY_MS);
  const h = await startHoist();
  await sleep(delayMs);
  const out = h.output();
  kills.push({ phase, delayMs, appliedBeforeKill: out.split('"msg":"applied"').length - 1, reconciledBeforeKill: out.includes('"msg":"reconciled"') });
  await kill(h.child);
  await recordUids();
}

async function recordUids(): Promise<void> {
  for (const [id, uid] of await ownedUids(client, bdName)) {
    const before = seenUids.get(id);
    expect(before === undefined || before === uid, `${id} was deleted and re-created (uid ${before} → ${uid})`).toBe(true);
    seenUids.set(id, uid);
  }
}

async function getBD(): Promise<BundleDeployment | undefined> {
  return (await client.get(BD_TYPE, bdName)) as unknown as BundleDeployment | undefined;
}

/** starts the controller once more and waits until the BD is done at `generation`; leaves it running */
async function converge(generation: number): Promise<BundleDeployment> {
  const h = await startHoist();
  const deadline = Date.now() + 90_000;
  for (;;) {
    const bd = await getBD();
    if (bd && bd.metadata.generation === generation && isDone(bd)) {
      await kill(h.child);
      return bd;
    }
    if (Date.now() > deadline) throw new Error(`never converged at generation ${generation}:\n${describeStatus(bd)}\n${h.output().slice(-3000)}`);
    await sleep(200);
  }
}

/** all 15 objects exist with Hoist's labels and the active revision's annotation; uids never changed */
async function expectObjects(revision: number): Promise<Map<string, string>> {
  const uids = await ownedUids(client, bdName);
  expect(uids.size).toBe(15);
  await recordUids();
  const docs = isolatePlain(readFileSync(new URL('plain/argo-rollouts-v1.8.4/install.yaml', FIXTURES), 'utf8'), run).split(/^---$/m);
  expect(docs.length).toBe(15);
  for (const [id] of uids) {
    const [kind, ref] = id.split(' ') as [string, string];
    const [ns, name] = ref.includes('/') ? (ref.split('/') as [string, string]) : [undefined, ref];
    const apiVersion =
      {
        CustomResourceDefinition: 'apiextensions.k8s.io/v1',
        ClusterRole: 'rbac.authorization.k8s.io/v1',
        ClusterRoleBinding: 'rbac.authorization.k8s.io/v1',
        Deployment: 'apps/v1',
      }[kind] ?? 'v1';
    const live = await client.get({ apiVersion, kind }, name, ns);
    expect(live?.metadata.labels, id).toMatchObject({ [LABEL_OWNER_NAME]: bdName, [LABEL_LINEAGE]: bdName });
    expect(live?.metadata.annotations?.[ANNOTATION_REVISION], id).toBe(String(revision));
  }
  return uids;
}

/** revision numbers in status and in the Secrets: unique, contiguous from 1, one per content digest */
async function expectRevisions(bd: BundleDeployment, expected: number): Promise<void> {
  const numbers = (bd.status?.revisions ?? []).map((r) => r.number);
  expect(numbers).toEqual([...Array(expected).keys()].map((i) => i + 1));
  const statusDigests = new Set((bd.status?.revisions ?? []).map((r) => r.contentDigest));
  expect(statusDigests.size).toBe(expected);
  const secrets = await client.list({ apiVersion: 'v1', kind: 'Secret' }, { namespace: controllerNs, labelSelector: `${LABEL_REVISION_OF}=${bdName}` });
  const digestOf = new Map<number, Set<string>>();
  const numberOf = new Map<string, Set<number>>();
  for (const s of secrets.items) {
    const n = Number(s.metadata.labels?.[LABEL_REVISION]);
    const d = s.metadata.annotations?.['core.rukpak.io/content-digest'] ?? '';
    digestOf.set(n, (digestOf.get(n) ?? new Set()).add(d));
    numberOf.set(d, (numberOf.get(d) ?? new Set()).add(n));
  }
  expect([...digestOf.keys()].sort()).toEqual(numbers);
  for (const [n, ds] of digestOf) expect(ds.size, `revision ${n} stored with ${ds.size} digests`).toBe(1);
  for (const [d, ns] of numberOf) expect(ns.size, `digest ${d} stored as revisions ${[...ns].join(', ')}`).toBe(1);
  for (const r of bd.status?.revisions ?? []) expect([...(numberOf.get(r.contentDigest) ?? [])]).toEqual([r.number]);
}

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await installCRD(client, pino({ level: 'silent' }));
  files = await startFileServer();
  cacheDir = await mkdtemp(join(tmpdir(), 'hoist-crash-cache-'));
});

afterAll(async () => {
  if (child) await kill(child);
  // uninstall through a controller: the finalizer removes what the BD installed
  const bd = await getBD().catch(() => undefined);
  if (bd) {
    await client.delete(BD_TYPE, bdName, undefined).catch(() => undefined);
    const h = await startHoist().catch(() => undefined);
    const deadline = Date.now() + 30_000;
    while (h && (await getBD().catch(() => undefined)) && Date.now() < deadline) await sleep(200);
    if (h) await kill(h.child);
  }
  for (const ns of [installNs, controllerNs]) await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
  await files?.close();
  await client?.close();
  await rm(cacheDir, { recursive: true, force: true });
  console.log('crash-safety kills', JSON.stringify(kills));
});

describe('SIGKILL at random points during install and upgrade', () => {
  it(
    `install v1.8.4 then upgrade to v1.9.1 with ${2 * KILLS_PER_PHASE} kills: converges, nothing lost, uids kept, no duplicate revision`,
    { timeout: 240_000 },
    async () => {
      const read = (v: string) => isolatePlain(readFileSync(new URL(`plain/argo-rollouts-${v}/install.yaml`, FIXTURES), 'utf8'), run);
      const v1 = await tarGz({ 'install.yaml': read('v1.8.4') });
      const v2 = await tarGz({ 'install.yaml': read('v1.9.1') });
      files.set('/v1.tgz', v1);
      files.set('/v2.tgz', v2);

      // v1.9.1's CRDs change fields of the PodSpec they embed, which upgrade.crdSafety Enforce refuses
      const bd = {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: bdName, labels: { [TEST_LABEL]: run } },
        spec: {
          installNamespace: installNs,
          format: 'plain',
          upgrade: { crdSafety: 'None' },
          sources: [{ kind: 'http', http: { url: files.url('/v1.tgz'), sha256: sha256(v1) } }],
        },
      };
      await client.create(bd as unknown as KubeObject);
      for (let i = 0; i < KILLS_PER_PHASE; i++) await crashOnce('install');
      const installed = await converge(1);
      expect(installed.status?.activeRevision?.number).toBe(1);
      const v1Uids = await expectObjects(1);
      await expectRevisions(installed, 1);

      const patched = await client.patch(
        BD_TYPE,
        bdName,
        undefined,
        { spec: { sources: [{ kind: 'http', http: { url: files.url('/v2.tgz'), sha256: sha256(v2) } }] } },
        'merge',
      );
      for (let i = 0; i < KILLS_PER_PHASE; i++) await crashOnce('upgrade');
      const upgraded = await converge(patched.metadata.generation!);
      expect(upgraded.status?.activeRevision?.number).toBe(2);
      const v2Uids = await expectObjects(2);
      for (const [id, uid] of v1Uids) expect(v2Uids.get(id), `${id} keeps its uid across the upgrade`).toBe(uid);
      await expectRevisions(upgraded, 2);
      expect(kills).toHaveLength(2 * KILLS_PER_PHASE);
    },
  );
});
