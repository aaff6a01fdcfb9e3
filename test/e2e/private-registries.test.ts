/**
 * `hoist run --ca-dir --registries-conf` as a real process (issue 16): a registry signed by a
 * private CA installs once its CA is in the CA directory, and fails clearly (host, unknown
 * authority) when another registry's CA is not; an image referenced by digest on an unreachable
 * host is installed from the registries.conf mirror, whose request log proves it.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { installCRD } from '../../src/cli/controller.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { RegistryClient } from '../../src/sources/image/client.ts';
import { pushImage, writeLayer } from '../../src/sources/image/push.ts';
import { parseReference } from '../../src/sources/image/reference.ts';
import { pino } from 'pino';
import { cond } from '../support/controller.ts';
import { until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { startHoistRun } from '../support/hoist-process.ts';
import { freePort, startCountingProxy, startRegistry, type CountingProxy, type TestRegistry } from '../support/registry.ts';

const run = randomBytes(4).toString('hex');
const ns = `hoist-reg-${run}`;
const selector = `hoist.test/run=${run}`;
let client: RestKubeClient;
let work: string;
let trusted: TestRegistry;
let untrusted: TestRegistry;
let plain: TestRegistry;
let mirror: CountingProxy;
const procs: ChildProcess[] = [];

async function push(ca: string | undefined, insecure: string[], ref: string, name: string): Promise<string> {
  const c = new RegistryClient({ ...(ca ? { ca } : {}), insecureHosts: insecure });
  try {
    const layer = await writeLayer(
      [{ name: 'cm.yaml', data: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  a: "1"\n` }],
      join(work, `layer-${name}`),
    );
    return (await pushImage(c, parseReference(ref), [layer], { stage: 'fetch' })).digest;
  } finally {
    await c.close();
  }
}

async function createBD(name: string, ref: string): Promise<void> {
  const bd = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, labels: { 'hoist.test/run': run } },
    spec: { installNamespace: ns, format: 'plain', sources: [{ kind: 'image', image: { ref } }] },
  };
  await client.create(bd as unknown as KubeObject);
}

const get = async (name: string) => (await client.get({ apiVersion: API_VERSION, kind: KIND }, name)) as unknown as BundleDeployment | undefined;

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await installCRD(client, pino({ level: 'silent' }));
  work = await mkdtemp(join(tmpdir(), 'hoist-reg-e2e-'));
  trusted = await startRegistry({ auth: 'none', tls: true });
  untrusted = await startRegistry({ auth: 'none', tls: true });
  plain = await startRegistry({ auth: 'none' });
  mirror = await startCountingProxy(plain.url);
});
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await mirror?.stop();
  for (const r of [trusted, untrusted, plain]) await r?.stop();
  await client?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('hoist run with --ca-dir and --registries-conf', () => {
  it('trusts per-host CAs, names an unknown authority, and pulls digests from a mirror', async () => {
    await push(trusted.pki!.caCert, [], `${trusted.host}/acme/private:v1`, `private-${run}`);
    await push(untrusted.pki!.caCert, [], `${untrusted.host}/acme/private:v1`, `untrusted-${run}`);
    const digest = await push(undefined, [plain.host], `${plain.host}/quay/acme/op:v1`, `mirrored-${run}`);
    const closed = await freePort();

    const certs = join(work, 'certs.d');
    await mkdir(certs);
    await writeFile(join(certs, `${trusted.host}.crt`), trusted.pki!.caCert);
    const conf = join(work, 'registries.conf');
    await writeFile(conf, `[[registry]]\nlocation = "127.0.0.1:${closed}"\n[[registry.mirror]]\nlocation = "${mirror.host}/quay"\ninsecure = true\n`);

    const p = startHoistRun([
      '--kubeconfig',
      kubeconfigPath(),
      '--namespace',
      ns,
      '--selector',
      selector,
      '--cache-dir',
      join(work, 'cache'),
      '--ca-dir',
      certs,
      '--registries-conf',
      conf,
    ]);
    procs.push(p.child);
    await p.port;

    await createBD(`private-${run}`, `${trusted.host}/acme/private:v1`);
    await createBD(`untrusted-${run}`, `${untrusted.host}/acme/private:v1`);
    await createBD(`mirrored-${run}`, `127.0.0.1:${closed}/acme/op@${digest}`);

    await until(async () => cond(await get(`private-${run}`), 'Installed')?.status === 'True', 'private-CA registry installed');
    expect(await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, `private-${run}`, ns)).toBeTruthy();

    const mirrored = await until(async () => {
      const bd = await get(`mirrored-${run}`);
      return cond(bd, 'Installed')?.status === 'True' && bd;
    }, 'mirrored image installed');
    expect(mirrored.status?.resolvedSources?.[0]?.ref).toBe(`${mirror.host}/quay/acme/op@${digest}`);
    expect(mirror.count(/\/v2\/quay\/acme\/op\/blobs\//, 'GET')).toBe(1);

    const message = await until(async () => {
      const bd = await get(`untrusted-${run}`);
      return (bd?.status?.conditions ?? []).map((c) => c.message ?? '').find((m) => m.includes('unknown authority'));
    }, 'unknown authority reported');
    expect(message).toContain(untrusted.host);

    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
  });
});
