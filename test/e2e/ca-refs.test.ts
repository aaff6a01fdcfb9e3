/**
 * Issue 16 through the real controller: http and git sources behind a private CA (real https file
 * server and git http-backend, CA generated with openssl) fail naming the host and the unknown
 * authority without a CA reference, install with `caSecretRef` and with `caConfigMapRef`, and a
 * bad reference (missing object, missing key, a PEM that does not parse) is Resolved=False naming
 * the reference while the installed revision stays. A rotated CA Secret or ConfigMap is picked up
 * without a spec change (their watches). Every condition message and event of the failures is
 * checked for the controller's directories.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BundleDeployment, SourceSpec } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { expectNoControllerPaths } from '../support/controller-paths.ts';
import { git, startGitServer, type GitServer } from '../support/git-server.ts';
import { startFileServer, tarGz, type FileServer } from '../support/http-files.ts';
import { makePki, type TestPki } from '../support/registry.ts';

let t: TestController;
let work: string;
let pki: TestPki;
let other: TestPki;
let files: FileServer;
let gitServer: GitServer;
let commit: string;
const failed = new Set<string>();

const cmYaml = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  a: "1"\n`;

beforeAll(async () => {
  t = await startTestController();
  work = await mkdtemp(join(tmpdir(), 'hoist-ca-refs-e2e-'));
  pki = await makePki(join(work, 'pki'));
  other = await makePki(join(work, 'other'));
  files = await startFileServer({ tls: pki });
  files.set('/app.tgz', await tarGz({ 'cm.yaml': cmYaml('from-http') }));
  const src = join(work, 'src');
  await mkdir(src);
  git(src, ['init', '-q', '-b', 'main']);
  await writeFile(join(src, 'cm.yaml'), cmYaml('from-git'));
  git(src, ['add', '.']);
  git(src, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'one']);
  commit = git(src, ['rev-parse', 'HEAD']);
  const repos = join(work, 'repos');
  await mkdir(repos);
  git(work, ['clone', '-q', '--bare', src, join(repos, 'app.git')]);
  gitServer = await startGitServer({ projectRoot: repos, tls: pki });
});
afterAll(async () => {
  await t?.stop();
  await files?.close();
  await gitServer?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

const secret = (name: string, data: Record<string, string>): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: t.namespace },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  }) as KubeObject;
const configMap = (name: string, data: Record<string, string>): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: t.namespace }, data }) as KubeObject;

const httpSource = (ca: Record<string, unknown> = {}): SourceSpec => ({ kind: 'http', http: { url: files.url('/app.tgz'), ...ca } });
const gitSource = (ref: { branch: string } | { commit: string }, ca: Record<string, unknown> = {}): SourceSpec => ({
  kind: 'git',
  git: { repository: `${gitServer.url}/app.git`, ref, ...ca },
});

async function create(name: string, source: SourceSpec): Promise<void> {
  await t.create(name, { installNamespace: `ca-${t.runId}-${name.slice(0, 20)}`, format: 'plain', sources: [source] });
}

async function failsWith(name: string, type: 'Resolved' | 'Unpacked', ...parts: string[]): Promise<BundleDeployment> {
  const bd = await t.waitFor(name, (b) => cond(b, type)?.status === 'False', `${name}: ${type}=False`);
  for (const p of parts) expect(cond(bd, type)?.message, describeStatus(bd)).toContain(p);
  failed.add(name);
  return bd;
}

describe('caSecretRef and caConfigMapRef on http and git sources', () => {
  it('without a reference the host and the unknown authority are named; with either reference both sources install', async () => {
    const host = new URL(files.url('/')).host;
    const gitHost = new URL(gitServer.url).host;
    await t.client.create(secret('corp-ca', { 'ca.crt': pki.caCert }));
    await t.client.create(configMap('corp-ca-cm', { 'bundle.pem': pki.caCert }));

    await create('http-noca', httpSource());
    // a pinned commit makes no request at resolve: the git CLI meets the server first
    await create('git-noca', gitSource({ commit }));
    await create('http-secret', httpSource({ caSecretRef: { name: 'corp-ca' } }));
    await create('http-cm', httpSource({ caConfigMapRef: { name: 'corp-ca-cm', key: 'bundle.pem' } }));
    await create('git-secret', gitSource({ branch: 'main' }, { caSecretRef: { name: 'corp-ca' } }));
    await create('git-cm', gitSource({ commit }, { caConfigMapRef: { name: 'corp-ca-cm', key: 'bundle.pem' } }));

    await failsWith('http-noca', 'Resolved', host, 'certificate signed by unknown authority', 'caSecretRef');
    await failsWith('git-noca', 'Unpacked', gitHost, 'certificate signed by unknown authority', 'caSecretRef');
    for (const name of ['http-secret', 'http-cm', 'git-secret', 'git-cm']) {
      const bd = await t.waitFor(name, isDone, `${name} installed`, 40_000);
      const ns = `ca-${t.runId}-${name}`;
      expect(
        await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, name.startsWith('http') ? 'from-http' : 'from-git', ns),
        describeStatus(bd),
      ).toBeTruthy();
    }
    // the default key is ca.crt; the CRD defaulted it
    expect((await t.get('http-secret'))?.spec.sources[0]?.http?.caSecretRef).toEqual({ name: 'corp-ca', key: 'ca.crt' });
  }, 180_000);

  it('a bad reference is Resolved=False naming it; the installed revision stays', async () => {
    await t.client.create(secret('no-key', { 'other.crt': pki.caCert }));
    await t.client.create(configMap('not-pem', { 'ca.crt': 'this is not a certificate' }));
    await t.client.create(secret('broken-pem', { 'ca.crt': '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' }));
    const ns = t.namespace;
    await create('bad-missing', httpSource({ caSecretRef: { name: 'absent-ca' } }));
    await create('bad-key', gitSource({ branch: 'main' }, { caSecretRef: { name: 'no-key' } }));
    await create('bad-notpem', httpSource({ caConfigMapRef: { name: 'not-pem' } }));
    await failsWith('bad-missing', 'Resolved', `caSecretRef secret ${ns}/absent-ca key ca.crt`, 'not found');
    await failsWith('bad-key', 'Resolved', `secret ${ns}/no-key has no key "ca.crt"`);
    await failsWith('bad-notpem', 'Resolved', `caConfigMapRef configmap ${ns}/not-pem key ca.crt`, 'holds no PEM certificate');

    // an installed BD pointed at a CA that does not parse: nothing it installed moves
    const before = await t.get('http-secret');
    await t.patchSpec('http-secret', { sources: [httpSource({ caSecretRef: { name: 'broken-pem' } })] });
    const bd = await failsWith('http-secret', 'Resolved', `secret ${ns}/broken-pem`, 'does not parse as X.509');
    expect(cond(bd, 'Installed')?.status).toBe('True');
    expect(bd.status?.activeRevision).toEqual(before?.status?.activeRevision);
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'from-http', `ca-${t.runId}-http-secret`)).toBeTruthy();
  });

  it('a rotated CA Secret or ConfigMap is used without a spec change', async () => {
    // both start with another CA's certificate: a valid PEM the servers' chains do not end at
    await t.client.create(secret('rotating-ca', { 'ca.crt': other.caCert }));
    await t.client.create(configMap('rotating-ca-cm', { 'ca.crt': other.caCert }));
    await create('rot-secret', gitSource({ branch: 'main' }, { caSecretRef: { name: 'rotating-ca' } }));
    await create('rot-cm', httpSource({ caConfigMapRef: { name: 'rotating-ca-cm' } }));
    await failsWith('rot-secret', 'Resolved', 'unknown authority');
    await failsWith('rot-cm', 'Resolved', 'unknown authority');
    await t.client.apply(secret('rotating-ca', { 'ca.crt': pki.caCert }), { fieldManager: 'test', force: true });
    await t.client.apply(configMap('rotating-ca-cm', { 'ca.crt': pki.caCert }), { fieldManager: 'test', force: true });
    for (const name of ['rot-secret', 'rot-cm']) await t.waitFor(name, isDone, `${name} installed after the rotation`, 40_000);

    // installed and resolved: a rotation re-checks the floating url with the new CA, which no longer fits
    await t.client.apply(configMap('rotating-ca-cm', { 'ca.crt': other.caCert }), { fieldManager: 'test', force: true });
    const bd = await failsWith('rot-cm', 'Resolved', 'unknown authority');
    expect(cond(bd, 'Installed')?.status).toBe('True');
  }, 180_000);

  it("no condition message or event of these failures names the controller's directories", async () => {
    const events = (await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items as unknown as Array<{
      involvedObject?: { name?: string };
      message?: string;
    }>;
    let checked = 0;
    for (const name of failed) {
      for (const c of (await t.get(name))?.status?.conditions ?? []) {
        expectNoControllerPaths(c.message ?? '', [t.cacheDir, work]);
        checked++;
      }
      for (const e of events.filter((e) => e.involvedObject?.name === name)) {
        expectNoControllerPaths(e.message ?? '', [t.cacheDir, work]);
        checked++;
      }
    }
    expect(failed.size).toBe(8);
    expect(checked).toBeGreaterThan(failed.size * 3);
  });
});
