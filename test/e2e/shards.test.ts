/**
 * Shards across processes (as Flux's sharding): two real `hoist run` processes, `--shard a` and
 * `--shard b`, each authenticated as its own ServiceAccount so the API server's audit log tells
 * their requests apart. They split 100 BundleDeployments (one ConfigMap each, pinned http
 * tarballs) by the core.rukpak.io/shard label with none touched by both, leave unlabelled ones to
 * the default shard, elect leaders on their own Leases, and a relabelled BundleDeployment moves to
 * the other shard without a write to its object when nothing changed.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { SHARD_LABEL } from '../../src/cli/shard.ts';
import { toolPath } from '../../src/devcluster/tools.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { AuditReader, type AuditEvent as AnyAuditEvent } from '../support/audit.ts';
import { BD_TYPE, isDone } from '../support/controller.ts';
import { CM, configMap, deleteBundleDeployment, serveBundle } from '../support/e2e-bundles.ts';
import { auditLogPath, kubeconfigPath } from '../support/env.ts';
import { startHoistRun, type HoistProcess } from '../support/hoist-process.ts';
import { startFileServer, type FileServer } from '../support/http-files.ts';
import { waitUntil } from '../support/wait.ts';

const exec = promisify(execFile);
type AuditEvent = AnyAuditEvent & { user?: { username?: string } };
const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
const writesOf = (events: readonly AuditEvent[]) => events.filter((e) => WRITES.has(e.verb));
const runId = randomBytes(4).toString('hex');
const ns = `shards-${runId}`;
const TEST = 'hoist.test/shards';
const COUNT = 100;
const bdName = (i: number) => `shard-${runId}-${i}`;
const shardOf = (i: number) => (i % 2 === 0 ? 'a' : 'b');
const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' } as const;

let admin: RestKubeClient;
let files: FileServer;
const procs: HoistProcess[] = [];
const dirs: string[] = [];
const userOf = (shard: string) => `system:serviceaccount:${ns}:shard-${shard}`;

/** a kubeconfig for a ServiceAccount bound to cluster-admin, with a TokenRequest token */
async function shardKubeconfig(shard: string): Promise<string> {
  const sa = `shard-${shard}`;
  await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: ns } });
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `${ns}-${sa}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }],
  } as KubeObject);
  const { stdout: token } = await exec(toolPath('kubectl'), ['--kubeconfig', kubeconfigPath(), '-n', ns, 'create', 'token', sa, '--duration=1h']);
  const kc = parse(readFileSync(kubeconfigPath(), 'utf8')) as { clusters: Array<{ name: string }> };
  const dir = await mkdtemp(join(tmpdir(), `hoist-shard-${shard}-`));
  dirs.push(dir);
  const path = join(dir, 'kubeconfig');
  await writeFile(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: kc.clusters,
      users: [{ name: sa, user: { token: token.trim() } }],
      contexts: [{ name: sa, context: { cluster: kc.clusters[0]!.name, user: sa } }],
      'current-context': sa,
    }),
    { mode: 0o600 },
  );
  return path;
}

async function reconciles(port: number): Promise<number> {
  // bounded: a shard that stopped answering fails the wait with its log (shardsReport), not the test timeout
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  return [...text.matchAll(/^controller_runtime_reconcile_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

/** each shard process's state and last log lines, for a failed wait's message */
/** what each shard said: its lifecycle lines (serving, leadership, cache sync) and its last lines, so a slow wave says where the time went */
function shardsReport(): string {
  const LIFECYCLE = /became leader|leading|leadership|lease|synced|serving|failed/i;
  return procs
    .map((p, i) => {
      const lines = p.output().trimEnd().split('\n');
      const cut = (ls: string[]) => ls.map((l) => l.slice(0, 400)).join('\n');
      const lifecycle = lines
        .slice(0, -15)
        .filter((l) => LIFECYCLE.test(l))
        .slice(0, 40);
      return `shard ${'ab'[i]}: exit ${p.child.exitCode ?? 'none'}${p.child.signalCode ? ` (${p.child.signalCode})` : ''}, ${lines.length} lines; lifecycle:\n${cut(lifecycle)}\nlast lines:\n${cut(lines.slice(-15))}`;
    })
    .join('\n');
}

/** waitUntil, with the shards' state in its error */
async function waitForShards(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  await waitUntil(what, check, timeoutMs).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}\n${shardsReport()}`);
  });
}

/** the BundleDeployment index a request was about: its BD, or the ConfigMap it installed */
function indexOf(e: AuditEvent): number | undefined {
  const name = e.objectRef?.name ?? '';
  const m = /^(?:shard-[0-9a-f]+-|cm-)(\d+)$/.exec(name);
  if (!m) return undefined;
  if (e.objectRef?.resource === 'bundledeployments' && name.startsWith(`shard-${runId}-`)) return Number(m[1]);
  if (e.objectRef?.resource === 'configmaps' && e.objectRef.namespace === ns && name.startsWith('cm-')) return Number(m[1]);
  return undefined;
}

// runs on the suite's own control plane, which writes an audit log; against an existing cluster or
// K3s (USE_EXISTING_CLUSTER, HOIST_TEST_K3S) there is no audit log to count requests in
const run = auditLogPath() !== '';

beforeAll(async () => {
  if (!run) return;
  admin = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await installCRD(admin, pino({ level: 'silent' }));
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  files = await startFileServer();
  for (const shard of ['a', 'b']) {
    const cacheDir = await mkdtemp(join(tmpdir(), `hoist-shard-cache-${shard}-`));
    dirs.push(cacheDir);
    const p = startHoistRun(
      [
        '--kubeconfig',
        await shardKubeconfig(shard),
        '--namespace',
        ns,
        '--leader-elect',
        '--shard',
        shard,
        '--selector',
        `${TEST}=${runId}`,
        '--cache-dir',
        cacheDir,
        '--workers',
        '4',
      ],
      { HOIST_LOG_LEVEL: 'debug' },
    );
    procs.push(p);
  }
  await Promise.all(procs.map((p) => p.port));
});

afterAll(async () => {
  if (!run) return;
  for (let i = 0; i < COUNT + 2; i++) await admin.delete(BD_TYPE, bdName(i), undefined).catch(() => undefined);
  // the shards remove their finalizers; then stop them
  await waitUntil(
    'test BundleDeployments are gone',
    async () => (await admin.list(BD_TYPE, { labelSelector: `${TEST}=${runId}` })).items.length === 0,
    60_000,
  ).catch(() => undefined);
  for (const p of procs) {
    if (p.child.exitCode === null) p.child.kill('SIGTERM');
    await p.exit;
  }
  for (const s of ['a', 'b'])
    await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' }, `${ns}-shard-${s}`, undefined).catch(() => undefined);
  await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
  await files?.close();
  await admin?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

// needs the audit log of the suite's own control plane to tell the shards' requests apart; skipped against an external cluster
describe.runIf(run)('shards (two hoist run --shard processes)', () => {
  // `hoist run` sends User-Agent "hoist"; the two shards are told apart by their ServiceAccounts
  const audit = () => {
    const reader = new AuditReader(auditLogPath(), 'hoist');
    return {
      offset: () => reader.offset(),
      since: async (from: number) =>
        ((await reader.since(from)) as AuditEvent[]).filter((e) => e.user?.username === userOf('a') || e.user?.username === userOf('b')),
    };
  };

  it('split 100 BundleDeployments by label, none touched by both; unlabelled ones are left to the default shard', async () => {
    const reader = audit();
    const from = await reader.offset();
    const create = async (i: number, shard: string | undefined) => {
      const source = await serveBundle(files, `/cm-${i}.tgz`, [configMap(`cm-${i}`, { index: String(i) })]);
      const labels: Record<string, string> = { [TEST]: runId, ...(shard ? { [SHARD_LABEL]: shard } : {}) };
      await admin.create({
        ...BD_TYPE,
        metadata: { name: bdName(i), labels },
        spec: { installNamespace: ns, format: 'plain', sources: [source] },
      } as unknown as KubeObject);
    };
    for (let i = 0; i < COUNT; i++) await create(i, shardOf(i));
    // neither shard's: no --shard process runs in this test
    await create(COUNT, undefined);
    await create(COUNT + 1, '');

    await waitForShards(
      `all ${COUNT} BundleDeployments installed`,
      async () => {
        const list = (await admin.list(BD_TYPE, { labelSelector: `${TEST}=${runId},${SHARD_LABEL}` })).items as unknown as BundleDeployment[];
        return list.length === COUNT && list.every(isDone);
      },
      240_000,
    );
    const events = await reader.since(from);
    const touchedBy = new Map<number, Set<string>>();
    for (const e of events) {
      const i = indexOf(e);
      if (i === undefined) continue;
      const shard = e.user!.username!.slice(-1);
      if (!touchedBy.has(i)) touchedBy.set(i, new Set());
      touchedBy.get(i)!.add(shard);
    }
    const both = [...touchedBy].filter(([, s]) => s.size > 1).map(([i]) => i);
    const wrongShard = [...touchedBy].filter(([i, s]) => i < COUNT && !s.has(shardOf(i))).map(([i]) => i);
    expect(both, 'BundleDeployments touched by both shards').toEqual([]);
    expect(wrongShard, 'BundleDeployments touched by the other shard').toEqual([]);
    // every BD of a shard was written by that shard (finalizer, status, its ConfigMap)
    for (let i = 0; i < COUNT; i++) expect([...(touchedBy.get(i) ?? [])], `BD ${i}`).toEqual([shardOf(i)]);
    // the unlabelled and empty-labelled ones belong to the default shard, which does not run here
    expect(touchedBy.get(COUNT)).toBeUndefined();
    expect(touchedBy.get(COUNT + 1)).toBeUndefined();
    for (const i of [COUNT, COUNT + 1]) expect(((await admin.get(BD_TYPE, bdName(i))) as unknown as BundleDeployment).status).toBeUndefined();
    // each shard also watches the other's objects; their changes are not looked at by this one
    for (const [k, shard] of ['a', 'b'].entries()) {
      const changed = procs[k]!.output()
        .split('\n')
        .filter((l) => l.includes('"managed object changed"'))
        .map((l) => (JSON.parse(l) as { bd: string }).bd);
      expect(changed.length, `shard ${shard} saw its own objects change`).toBeGreaterThan(0);
      const foreign = changed.filter((bd) => !bd.startsWith(`shard-${runId}-`) || shardOf(Number(bd.slice(`shard-${runId}-`.length))) !== shard);
      expect([...new Set(foreign)], `shard ${shard} looked at other shards' BundleDeployments`).toEqual([]);
    }
    const writes = writesOf(events);
    console.log(
      `shards: ${events.length} requests, ${writes.length} writes for ${COUNT} BundleDeployments (a: ${writes.filter((e) => e.user?.username === userOf('a')).length}, b: ${writes.filter((e) => e.user?.username === userOf('b')).length})`,
    );

    // each shard leads on its own Lease
    const holders = await Promise.all(
      ['hoist-controller-a', 'hoist-controller-b'].map(
        async (l) => ((await admin.get(LEASE, l, ns))?.spec as { holderIdentity?: string } | undefined)?.holderIdentity,
      ),
    );
    expect(holders.every(Boolean)).toBe(true);
    expect(holders[0]).not.toBe(holders[1]);
    expect(await admin.get(LEASE, 'hoist-controller', ns)).toBeUndefined();
  }, 300_000); // the wait above allows 240 s

  it('a relabelled BundleDeployment moves to the other shard with no write to its object; the new shard then owns it', async () => {
    const i = 0; // shard a's
    const before = await admin.get(CM, `cm-${i}`, ns);
    const [portA, portB] = await Promise.all(procs.map((p) => p.port));
    const reconcilesB = await reconciles(portB!);
    const reader = audit();
    const from = await reader.offset();

    await admin.patch(BD_TYPE, bdName(i), undefined, { metadata: { labels: { [SHARD_LABEL]: 'b' } } }, 'merge');
    await waitForShards('shard b reconciled the moved BundleDeployment', async () => (await reconciles(portB!)) > reconcilesB, 30_000);
    const moved = await reader.since(from);
    const aboutIt = moved.filter((e) => indexOf(e) === i);
    const objectWrites = writesOf(aboutIt).filter((e) => e.objectRef?.resource === 'configmaps');
    console.log(
      `handover: ${aboutIt.length} requests about BD ${i}: ${aboutIt.map((e) => `${e.user?.username?.slice(-1)} ${e.verb} ${e.requestURI}`).join('; ')}`,
    );
    expect(
      aboutIt.filter((e) => e.user?.username === userOf('a')),
      'shard a let go without a request',
    ).toEqual([]);
    expect(objectWrites, "writes to the moved BundleDeployment's ConfigMap").toEqual([]);
    expect((await admin.get(CM, `cm-${i}`, ns))?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expect(await reconciles(portA!)).toBeGreaterThan(0);

    // drift on the moved BD's object is now corrected by shard b alone
    const from2 = await reader.offset();
    await admin.delete(CM, `cm-${i}`, ns);
    await waitForShards('shard b re-created the ConfigMap', async () => (await admin.get(CM, `cm-${i}`, ns)) !== undefined, 30_000);
    const drift = writesOf(await reader.since(from2)).filter((e) => indexOf(e) === i && e.objectRef?.resource === 'configmaps');
    expect(drift.map((e) => e.user?.username)).toEqual([userOf('b')]);

    // and deleting it is shard b's job too (its finalizer)
    await deleteBundleDeployment(admin, bdName(i));
    expect(await admin.get(CM, `cm-${i}`, ns)).toBeUndefined();
  }, 120_000); // three waits of up to 30 s
});
