/**
 * Issue 23, "one BundleDeployment cannot stop the others", against the real controller as a
 * separate process: `hoist run` with the image's node flags and a V8 heap limit equal to the
 * chart's memory limit (test/support/as-deployed.ts), so a budget that does not hold ends the
 * process as the kubelet's OOM kill would. For each hostile input of test/support/hostile-bundles.ts
 * — a YAML alias bomb and a huge document, a CEL check of nested comprehensions, JSONPath
 * recursive descent and a result flood, git repositories with 10⁹ paths, a 1 MiB symlink blob and
 * a 10 MiB ref advertisement, a chain of 10,001 symlinks, a revision over --max-revision-size, a
 * pollInterval of 1ms, an OCI whiteout naming the unpack directory's parent — the hostile
 * BundleDeployment is created, a healthy one 5 s later: the healthy one installs, the hostile one
 * is refused with a condition naming the limit that stopped it (or by the API server), and the
 * controller is still the process it was, exiting 0 on SIGTERM at the end.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { API_VERSION, KIND, type BundleDeployment, type Condition } from '../../api/v1alpha2/types.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { RegistryClient } from '../../src/sources/image/client.ts';
import { chartRunFlags, deployedNodeFlags, imageEnv } from '../support/as-deployed.ts';
import { cond, describeStatus, TEST_LABEL } from '../support/controller.ts';
import { expectNoControllerPaths } from '../support/controller-paths.ts';
import { until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { createHostileRepos } from '../support/git-hostile.ts';
import { startGitServer, type GitServer } from '../support/git-server.ts';
import { healthySpec, hostileInputs, type HostileServers } from '../support/hostile-bundles.ts';
import { startHoistRun, type HoistProcess } from '../support/hoist-process.ts';
import { startFileServer } from '../support/http-files.ts';
import { startRegistry, type TestRegistry } from '../support/registry.ts';

/** this run's BDs carry its label; the controller started here reconciles only those */
const run = randomBytes(4).toString('hex');
const ns = `hoist-iso-${run}`;
let client: RestKubeClient;
let work: string;
let gitServer: GitServer | undefined;
let registry: TestRegistry | undefined;
let hoist: HoistProcess;
let pid: number;
/** filled in beforeAll; hostileInputs reads it only when a spec is made */
const servers = {} as HostileServers;

const get = async (name: string) => (await client.get({ apiVersion: API_VERSION, kind: KIND }, name)) as unknown as BundleDeployment | undefined;

async function create(name: string, spec: object): Promise<void> {
  await client.create({ apiVersion: API_VERSION, kind: KIND, metadata: { name, labels: { [TEST_LABEL]: run } }, spec } as unknown as KubeObject);
}

/**
 * Polls BD `name` until `ok` holds; fails at once, with the controller's last output, if the
 * controller exits meanwhile, and with the BD's conditions after `ms`.
 */
async function waitFor(name: string, ok: (bd: BundleDeployment | undefined) => boolean, what: string, ms = 180_000): Promise<BundleDeployment> {
  const exited = hoist.exit.then((code) => {
    throw new Error(`the controller exited (${code ?? hoist.child.signalCode}) while ${name} waited to be ${what}: ${hoist.output().slice(-3000)}`);
  });
  const found = until(
    async () => {
      const bd = await get(name);
      return ok(bd) && bd;
    },
    `${name}: ${what}`,
    ms,
  ).catch(async (e: unknown) => {
    throw new Error(`${String(e)}: ${describeStatus(await get(name))}`);
  });
  return Promise.race([found, exited]);
}

/** the controller is the process started in beforeAll, still running */
function expectSameController(): void {
  expect(hoist.child.exitCode, hoist.output().slice(-3000)).toBeNull();
  expect(hoist.child.signalCode).toBeNull();
  expect(hoist.child.pid).toBe(pid);
}

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await installCRD(client, pino({ level: 'silent' }));
  work = await mkdtemp(join(tmpdir(), 'hoist-iso-e2e-'));
  const repos = await createHostileRepos(work);
  gitServer = await startGitServer({ projectRoot: repos.repos });
  registry = await startRegistry({ auth: 'none', dir: join(work, 'registry') });
  const conf = join(work, 'registries.conf');
  await writeFile(conf, `[[registry]]\nlocation = "${registry.host}"\ninsecure = true\n`);
  Object.assign(servers, {
    files: await startFileServer(),
    git: { url: gitServer.url, tips: repos.tips },
    registry: { host: registry.host, client: new RegistryClient({ insecureHosts: [registry.host] }) },
    work,
  } satisfies HostileServers);
  hoist = startHoistRun(
    [
      '--kubeconfig',
      kubeconfigPath(),
      '--namespace',
      ns,
      '--selector',
      `${TEST_LABEL}=${run}`,
      '--cache-dir',
      join(work, 'cache'),
      '--registries-conf',
      conf,
      ...chartRunFlags(),
    ],
    imageEnv(),
    deployedNodeFlags(),
  );
  await hoist.port;
  pid = hoist.child.pid!;
}, 180_000);

afterAll(async () => {
  if (hoist && hoist.child.exitCode === null) hoist.child.kill('SIGKILL');
  await servers.registry?.client.close();
  await registry?.stop();
  await gitServer?.close();
  await servers.files?.close();
  await client?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('one BundleDeployment cannot stop the others (controller as a process, the chart heap limit)', () => {
  for (const input of hostileInputs(servers)) {
    it(`${input.name} (${input.what}): refused naming its limit; a healthy BD created 5 s later installs; the controller survives`, async () => {
      const hostile = `iso-${input.name}-${run}`;
      const spec = { installNamespace: hostile, ...(await input.spec(run)) };
      if ('admission' in input.refusal) await expect(create(hostile, spec)).rejects.toThrow(input.refusal.admission);
      else await create(hostile, spec);

      await new Promise((r) => setTimeout(r, 5_000));
      const healthy = `iso-healthy-${input.name}-${run}`;
      await create(healthy, { installNamespace: healthy, ...(await healthySpec(servers.files, `${input.name}-${run}`)) });
      const installed = await waitFor(healthy, (bd) => cond(bd, 'Installed')?.status === 'True', 'installed');
      expect(cond(installed, 'Installed')?.reason).toBe('Installed');
      expect(await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, `healthy-${input.name}-${run}`, healthy)).toBeTruthy();

      if (!('admission' in input.refusal)) {
        const want = input.refusal;
        const matches = (c: Condition | undefined) => c?.status === want.status && c.reason === want.reason && want.message.test(c.message ?? '');
        const refused = await waitFor(hostile, (bd) => matches(cond(bd, want.condition)), `${want.condition}=${want.status} ${want.reason} ${want.message}`);
        expectNoControllerPaths(cond(refused, want.condition)!.message ?? '');
      } else {
        expect(await get(hostile)).toBeUndefined();
      }
      expectSameController();
    }, 420_000);
  }

  it('the controller exits 0 on SIGTERM after all of them', async () => {
    expectSameController();
    hoist.child.kill('SIGTERM');
    expect(await hoist.exit).toBe(0);
  }, 60_000);
});
