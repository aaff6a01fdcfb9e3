/**
 * Issue 23 through `hoist run` as a separate process: hostile git repositories — a tree of 10⁹
 * paths from a pack of a few KiB, a 1 MiB symlink blob, a ref advertisement of about 10 MiB —
 * are each refused with a condition naming the limit that stopped them; a healthy git
 * BundleDeployment created 5 s later still installs, and the controller process survives.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { API_VERSION, KIND, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, describeStatus } from '../support/controller.ts';
import { until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { createHostileRepos, type HostileRepos } from '../support/git-hostile.ts';
import { startGitServer, type GitServer } from '../support/git-server.ts';
import { startHoistRun } from '../support/hoist-process.ts';
import { sleep } from '../support/wait.ts';

/** this run's BDs carry its label; the controller started here reconciles only those */
const run = randomBytes(4).toString('hex');
const procs: ChildProcess[] = [];
let server: GitServer;
let tips: HostileRepos['tips'];
const ns = `hoist-gitb-${run}`;
let client: RestKubeClient;
let work: string;

async function createBD(name: string, repo: string, ref: { commit?: string; branch?: string }): Promise<void> {
  const bd = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, labels: { 'hoist.test/run': run } },
    spec: { installNamespace: ns, format: 'plain', sources: [{ kind: 'git', git: { repository: `${server.url}/${repo}`, ref } }] },
  };
  await client.create(bd as unknown as KubeObject);
}

const get = async (name: string) => (await client.get({ apiVersion: API_VERSION, kind: KIND }, name)) as unknown as BundleDeployment | undefined;

/** the first condition message of `name` that contains `text` */
async function refusedWith(name: string, text: string): Promise<string> {
  return until(async () => (((await get(name))?.status?.conditions ?? []).map((c) => c.message ?? '').find((m) => m.includes(text))), `${name}: ${text}`, 120_000);
}

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await installCRD(client, pino({ level: 'silent' }));
  work = await mkdtemp(join(tmpdir(), 'hoist-gitb-e2e-'));
  const hostile = await createHostileRepos(work);
  tips = hostile.tips;
  server = await startGitServer({ projectRoot: hostile.repos });
}, 120_000);
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await server?.close();
  await client?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('hostile git repositories cannot stop other BundleDeployments', () => {
  it('each is refused naming its limit; a healthy BD created 5 s later installs; the controller survives', async () => {
    const p = startHoistRun(['--kubeconfig', kubeconfigPath(), '--namespace', ns, '--selector', `hoist.test/run=${run}`, '--cache-dir', join(work, 'cache')]);
    procs.push(p.child);
    await p.port;

    await createBD(`bomb-${run}`, 'bounds.git', { commit: tips.bomb });
    await createBD(`biglink-${run}`, 'bounds.git', { commit: tips.biglink });
    await createBD(`refs-${run}`, 'refs.git', { branch: 'main' });
    await sleep(5_000);
    await createBD(`healthy-${run}`, 'bounds.git', { commit: tips.main });

    const healthy = await until(async () => {
      const bd = await get(`healthy-${run}`);
      return cond(bd, 'Installed')?.status === 'True' && bd;
    }, 'healthy git BD installed', 120_000);
    expect(cond(healthy, 'Installed')?.status, describeStatus(healthy)).toBe('True');
    expect(await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'git-healthy', ns)).toBeTruthy();

    expect(await refusedWith(`bomb-${run}`, 'directory has more than 100000 entries (the limit)')).toBeTruthy();
    expect(await refusedWith(`biglink-${run}`, 'symlink link: its target is 1048576 bytes, more than the limit of 4096 bytes per link')).toBeTruthy();
    expect(await refusedWith(`refs-${run}`, 'ref advertisement is larger than the 8388608 bytes allowed')).toBeTruthy();

    expect(p.child.exitCode).toBeNull();
    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
  }, 300_000);
});
