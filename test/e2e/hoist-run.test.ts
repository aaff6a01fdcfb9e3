/**
 * `hoist run` as a real process: it serves /healthz, /readyz and /metrics, reconciles, takes part
 * in leader election on a Lease (one leader at a time, a standby takes over), and exits cleanly
 * on SIGTERM.
 */
import type { ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { pino } from 'pino';
import { cond } from '../support/controller.ts';
import { until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { startHoistRun, type HoistProcess } from '../support/hoist-process.ts';
import { startFileServer, tarGz, type FileServer } from '../support/http-files.ts';

const run = randomBytes(4).toString('hex');
const ns = `hoist-run-${run}`;
const selector = `hoist.test/run=${run}`;
let client: RestKubeClient;
let files: FileServer;
let cacheDir: string;
const procs: ChildProcess[] = [];

function startHoist(extra: string[] = []): HoistProcess {
  const p = startHoistRun([
    '--kubeconfig',
    kubeconfigPath(),
    '--namespace',
    ns,
    '--selector',
    selector,
    '--cache-dir',
    cacheDir,
    '--cache-max-size',
    '256Mi',
    '--fetch-timeout',
    '2m',
    ...extra,
  ]);
  procs.push(p.child);
  return p;
}

async function http(port: number, path: string): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: r.status, body: await r.text() };
}

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await installCRD(client, pino({ level: 'silent' }));
  files = await startFileServer();
  cacheDir = await mkdtemp(join(tmpdir(), 'hoist-run-cache-'));
});
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await files?.close();
  await client?.close();
  await rm(cacheDir, { recursive: true, force: true });
});

describe('hoist run', () => {
  it('serves health and metrics, leads one at a time, reconciles, and drains on SIGTERM', async () => {
    files.set('/app.tgz', await tarGz({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-run\ndata:\n  a: "1"\n' }));
    const a = startHoist(['--leader-elect']);
    const portA = await a.port;
    expect((await http(portA, '/healthz')).status).toBe(200);
    await until(async () => (await http(portA, '/readyz')).status === 200, 'first replica ready');
    const lease = await until(() => client.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'hoist-controller', ns), 'lease acquired');
    const leaderA = (lease.spec as { holderIdentity?: string }).holderIdentity;
    expect(leaderA).toBeTruthy();

    // a standby: ready (standing by is healthy), not leading
    const b = startHoist(['--leader-elect']);
    const portB = await b.port;
    expect((await http(portB, '/healthz')).status).toBe(200);

    const bd = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: `run-${run}`, labels: { 'hoist.test/run': run } },
      spec: { installNamespace: ns, format: 'plain', sources: [{ kind: 'http', http: { url: files.url('/app.tgz') } }] },
    };
    await client.create(bd as unknown as KubeObject);
    await until(async () => {
      const live = (await client.get({ apiVersion: API_VERSION, kind: KIND }, `run-${run}`)) as unknown as BundleDeployment | undefined;
      return cond(live, 'Installed')?.status === 'True';
    }, 'installed by the leader');
    // Installed can be written by a reconcile that still waits for health (counted as requeue_after)
    const metrics = await until(async () => {
      const body = (await http(portA, '/metrics')).body;
      return /controller_runtime_reconcile_total\{controller="bundledeployment",result="success"\} [1-9]/.test(body) && body;
    }, 'a successful reconcile counted');
    expect(metrics).toContain('workqueue_depth');

    // SIGTERM: the leader drains, releases the lease, exits 0; the standby takes over
    a.child.kill('SIGTERM');
    expect(await a.exit).toBe(0);
    await until(
      async () => {
        const l = await client.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'hoist-controller', ns);
        const holder = (l?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
        return holder && holder !== leaderA;
      },
      'standby took over',
      30_000,
    );
    await until(async () => (await http(portB, '/readyz')).status === 200, 'standby ready');

    // the new leader reconciles: a drifted object is put back
    await client.delete({ apiVersion: 'v1', kind: 'ConfigMap' }, 'from-run', ns);
    await until(() => client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'from-run', ns), 'new leader corrected drift');

    b.child.kill('SIGTERM');
    expect(await b.exit).toBe(0);
  });

  it('--webhook-bind-address serves the push receiver: refused until its Secret exists, then accepted; counted in /metrics; SIGTERM closes it', async () => {
    const secret = 'run-hook-secret-never-logged';
    const p = startHoist(['--webhook-bind-address', '127.0.0.1:0']);
    const metricsPort = await p.port;
    const hookPort = await until(async () => Number(/"port":(\d+)[^\n]*serving webhooks/.exec(p.output())?.[1]) || undefined, 'webhook port logged', 30_000);
    const body = JSON.stringify({ ref: 'refs/heads/main', repository: { clone_url: 'https://git.example/none.git' } });
    const deliver = async (id: string) => {
      const sig = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
      const r = await fetch(`http://127.0.0.1:${hookPort}/hooks/github`, {
        method: 'POST',
        body,
        headers: { 'x-github-event': 'push', 'x-github-delivery': id, 'x-hub-signature-256': sig },
      });
      return r.status;
    };
    expect(await deliver('before-secret')).toBe(401);
    await client.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'hoist-webhook', namespace: ns },
      stringData: { github: secret },
    } as unknown as KubeObject);
    let n = 0;
    await until(async () => (await deliver(`after-secret-${n++}`)) === 202, 'delivery accepted once the Secret exists', 30_000);
    const metrics = (await http(metricsPort, '/metrics')).body;
    expect(metrics).toContain('hoist_webhook_deliveries_total{provider="github",result="accepted"} 1');
    expect(metrics).toMatch(/hoist_webhook_deliveries_total\{provider="github",result="unauthorized"\} \d+/);
    expect(p.output()).not.toContain(secret);
    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
    await expect(fetch(`http://127.0.0.1:${hookPort}/hooks/github`, { method: 'POST', body })).rejects.toThrow();
  });
});
