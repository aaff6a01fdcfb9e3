/**
 * spec.decryption on the real API server (issue 36): a plain bundle, served as an HTTP tarball,
 * holds a Secret (data and stringData) encrypted by the real `sops -e` for an age key made by the
 * real `age-keygen`; the key Secret lives in the tenant's namespace and is read as the
 * BundleDeployment's ServiceAccount. The Secret installs decrypted, and its plaintext appears
 * nowhere else: not in the status, the Events, the controller's log, its content store on disk,
 * the stored revision, `hoist render`'s or `hoist diff`'s output (redacted, said so). A wrong key
 * (after a key rotation) fails the render naming the file and the key tried, the installed
 * revision stays, and putting the right key back recovers without a spec change (the key Secret
 * is watched). A tampered file is refused by its MAC; a key Secret the ServiceAccount may not
 * read fails the resolve naming spec.decryption.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { API_VERSION, KIND, type BundleDeployment, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { render } from '../../src/cli/render.ts';
import { diff } from '../../src/cli/verbs/diff.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { runVerb } from '../support/cli-verb.ts';
import { cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../support/http-files.ts';
import { sopsCli, type AgeKey, type Sops } from '../support/sops.ts';

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const NS = { apiVersion: 'v1', kind: 'Namespace' } as const;

let t: TestController;
let files: FileServer;
let work: string;
let sops: Sops;
let key: AgeKey;
let other: AgeKey;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  t = await startTestController();
  files = await startFileServer();
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-sops-'));
  sops = sopsCli(work);
  [key, other] = await Promise.all([sops.keygen('cluster'), sops.keygen('other')]);
});
afterAll(async () => {
  await t?.stop();
  await files?.close();
  for (const f of cleanup.reverse()) await f().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
});

/** a tenant namespace whose ServiceAccount `installer` may do anything there, Secrets included unless `noSecrets` */
async function tenant(name: string, noSecrets = false): Promise<void> {
  await t.client.create({ ...NS, metadata: { name } } as KubeObject);
  cleanup.push(() => t.client.delete(NS, name, undefined));
  await t.client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'installer', namespace: name } } as KubeObject);
  await t.client.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'installer', namespace: name },
    rules: noSecrets ? [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }] : [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  } as KubeObject);
  await t.client.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'installer', namespace: name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'installer' },
    subjects: [{ kind: 'ServiceAccount', name: 'installer', namespace: name }],
  } as KubeObject);
}

/** the age key Secret `sops-age` (entry age.agekey, as Flux's docs create it) */
async function writeKeySecret(namespace: string, k: AgeKey): Promise<void> {
  const body = { ...SECRET, metadata: { name: 'sops-age', namespace }, stringData: { 'age.agekey': k.text } };
  const live = await t.client.get(SECRET, 'sops-age', namespace);
  if (live) await t.client.update({ ...body, metadata: { ...body.metadata, resourceVersion: live.metadata.resourceVersion } } as unknown as KubeObject);
  else await t.client.create(body as unknown as KubeObject);
}

/** a tarball of the files, served at `path`; the http source that pins it */
async function serve(path: string, tree: Record<string, string>): Promise<BundleDeploymentSpec['sources'][number]> {
  const body = await tarGz(tree);
  files.set(path, body);
  return { kind: 'http', http: { url: files.url(path), sha256: sha256(body) } };
}

async function eventsOf(name: string): Promise<string> {
  const list = await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return JSON.stringify(list.items);
}

/** every file under the controller's content store, as text */
async function cacheText(): Promise<string> {
  let out = '';
  for (const e of await readdir(t.cacheDir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out += await readFile(join(e.parentPath, e.name), 'latin1');
  }
  return out;
}

async function installedSecret(namespace: string): Promise<Record<string, string> | undefined> {
  const s = (await t.client.get(SECRET, 'db', namespace)) as (KubeObject & { data?: Record<string, string> }) | undefined;
  return s?.data && Object.fromEntries(Object.entries(s.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** `hoist render -f`, its stdout and stderr (it writes to the process's streams) */
async function hoistRender(file: string): Promise<{ code: number; out: string }> {
  let out = '';
  const spies = [process.stdout, process.stderr].map((s) =>
    vi.spyOn(s, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    }),
  );
  try {
    const code = await render({ file, kubeconfig: kubeconfigPath(), namespace: t.namespace, output: 'yaml' });
    return { code, out };
  } finally {
    for (const s of spies) s.mockRestore();
  }
}

const manifest = (password: string, token: string, user: string): string => `apiVersion: v1
kind: Secret
metadata:
  name: db
  labels:
    app: shop
type: Opaque
data:
  password: ${Buffer.from(password).toString('base64')}
stringData:
  token: ${token}
  user: ${user}
`;
const CONFIG = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: production\n';
const REGEX = ['--encrypted-regex', '^(data|stringData)$'];

describe('SOPS-encrypted manifests', () => {
  it('install decrypted as the ServiceAccount, and the plaintext appears nowhere else', async () => {
    const ns = `sops-${t.runId}`;
    await tenant(ns);
    await writeKeySecret(ns, key);
    const password = `pw-${t.runId}-never-shown`;
    const token = `tok-${t.runId}-never-shown`;
    const user = `user-${t.runId}-never-shown`;
    const encrypted = await sops.encrypt(manifest(password, token, user), [key], { flags: REGEX });
    expect(encrypted).not.toContain(token);
    const source = await serve(`/sops-${t.runId}.tgz`, { 'app/secret.yaml': encrypted, 'app/config.yaml': CONFIG });
    const name = `sops-${t.runId}`;
    const spec: BundleDeploymentSpec = {
      installNamespace: ns,
      serviceAccount: { name: 'installer' },
      format: 'plain',
      sources: [source],
      decryption: { provider: 'sops', secretRef: { name: 'sops-age' } },
    };
    await t.create(name, spec);
    const done = await t.waitFor(name, isDone, 'installed decrypted', 90_000);
    expect(cond(done, 'Progressing')?.reason, describeStatus(done)).toBe('Succeeded');
    expect(await installedSecret(ns)).toEqual({ password, token, user });
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'settings', ns)).toBeDefined();

    // the revision is stored in Secrets of the controller's namespace; no ConfigMap there holds it
    const revisionSecrets = await t.client.list(SECRET, { namespace: t.namespace, labelSelector: `core.rukpak.io/revision-of=${name}` });
    expect(revisionSecrets.items.length).toBeGreaterThan(0);
    const configMaps = await t.client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: t.namespace });

    // the preview and the diff, as the user: redacted, and saying so
    const bd: BundleDeployment = { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec };
    const bdFile = join(work, `${name}.yaml`);
    await writeFile(bdFile, stringify(bd));
    const rendered = await hoistRender(bdFile);
    expect(rendered.code, rendered.out).toBe(0);
    expect(rendered.out).toContain('shown redacted');
    expect(rendered.out).toContain(`content digest ${done.status?.contentDigest}`);
    expect(rendered.out).toMatch(/token: "?\*\*\*"?/);
    // a diff against a new token: the change shows, masked (kubectl diff's *** (before) / (after))
    const newToken = `tok2-${t.runId}-never-shown`;
    const changed = await sops.encrypt(manifest(password, newToken, user), [key], { flags: REGEX });
    const next = { ...spec, sources: [await serve(`/sops-next-${t.runId}.tgz`, { 'app/secret.yaml': changed, 'app/config.yaml': CONFIG })] };
    const nextFile = join(work, `${name}-next.yaml`);
    await writeFile(nextFile, stringify({ ...bd, spec: next }));
    const diffed = await runVerb(diff, ['-f', nextFile], t.namespace);
    expect(diffed.code, diffed.stderr).toBe(1);
    expect(diffed.stderr).toContain('shown redacted');
    expect(diffed.stdout).toContain('*** (before)');
    expect(diffed.stdout).toContain('*** (after)');
    expect(diffed.stdout + diffed.stderr).not.toContain(newToken);

    const after = await t.get(name);
    const cache = await cacheText();
    expect(cache).toContain('ENC[AES256_GCM'); // the store keeps the encrypted source
    for (const secret of [password, token, user, Buffer.from(password).toString('base64')]) {
      expect(JSON.stringify(after?.status), 'status').not.toContain(secret);
      expect(await eventsOf(name), 'events').not.toContain(secret);
      expect(JSON.stringify(t.log.records), 'controller log').not.toContain(secret);
      expect(cache, 'content store').not.toContain(secret);
      expect(JSON.stringify(configMaps.items), 'configmaps of the controller namespace').not.toContain(secret);
      expect(rendered.out, 'hoist render').not.toContain(secret);
      expect(diffed.stdout + diffed.stderr, 'hoist diff').not.toContain(secret);
    }
  }, 240_000);

  it('a rotated key that does not open the file fails naming the file and key, the revision stays; the right key recovers it', async () => {
    const ns = `sops-rot-${t.runId}`;
    await tenant(ns);
    await writeKeySecret(ns, key);
    const token = `tok-${t.runId}-rotation`;
    const encrypted = await sops.encrypt(manifest('p4ssword', token, 'someone'), [key], { flags: REGEX });
    const name = `sops-rot-${t.runId}`;
    await t.create(name, {
      installNamespace: ns,
      serviceAccount: { name: 'installer' },
      format: 'plain',
      sources: [await serve(`/sops-rot-${t.runId}.tgz`, { 'secret.yaml': encrypted })],
      decryption: { provider: 'sops', secretRef: { name: 'sops-age' } },
    });
    const done = await t.waitFor(name, isDone, 'installed', 90_000);
    const revision = done.status?.activeRevision?.number;

    // the key Secret now holds another key: the render input changed, the file cannot be decrypted
    await writeKeySecret(ns, other);
    const failed = await t.waitFor(name, (b) => cond(b, 'Unpacked')?.status === 'False', 'decryption failed', 30_000);
    const unpacked = cond(failed, 'Unpacked')!;
    expect(unpacked.reason).toBe('ProcessFailed');
    expect(unpacked.message).toContain('process secret.yaml: plain processor: sops: no age identity of secret');
    expect(unpacked.message).toContain(other.recipient);
    expect(unpacked.message).toContain(key.recipient);
    expect(cond(failed, 'Installed')).toMatchObject({ status: 'True' });
    expect(failed.status?.activeRevision?.number).toBe(revision);
    expect((await installedSecret(ns))?.['token']).toBe(token);

    // the right key back: re-rendered without a spec change, the same content, the same revision
    await writeKeySecret(ns, key);
    const back = await t.waitFor(name, (b) => isDone(b) && cond(b, 'Unpacked')?.status === 'True', 'recovered', 30_000);
    expect(back.status?.activeRevision?.number).toBe(revision);
    expect(back.metadata.generation).toBe(done.metadata.generation);

    // a tampered file (a new source: a spec change) is refused by its MAC; the revision stays
    const tampered = encrypted.replace('app: shop', 'app: evil');
    expect(tampered).not.toBe(encrypted);
    await t.patchSpec(name, { sources: [await serve(`/sops-tampered-${t.runId}.tgz`, { 'secret.yaml': tampered })] });
    const refused = await t.waitFor(name, (b) => cond(b, 'Unpacked')?.status === 'False', 'tampered refused', 60_000);
    expect(cond(refused, 'Unpacked')?.message).toMatch(/process secret\.yaml: plain processor: sops: MAC mismatch/);
    expect(refused.status?.activeRevision?.number).toBe(revision);
    expect(JSON.stringify(refused.status)).not.toContain(token);
  }, 240_000);

  it('a key Secret the ServiceAccount may not read fails the resolve naming spec.decryption; nothing is applied', async () => {
    const ns = `sops-forbidden-${t.runId}`;
    await tenant(ns, true);
    await writeKeySecret(ns, key);
    const name = `sops-forbidden-${t.runId}`;
    await t.create(name, {
      installNamespace: ns,
      serviceAccount: { name: 'installer' },
      format: 'plain',
      sources: [
        await serve(`/sops-forbidden-${t.runId}.tgz`, { 'secret.yaml': await sops.encrypt(manifest('a-pass', 'b-token', 'c-user'), [key], { flags: REGEX }) }),
      ],
      decryption: { provider: 'sops', secretRef: { name: 'sops-age' } },
    });
    const failed = await t.waitFor(name, (b) => cond(b, 'Resolved')?.status === 'False', 'resolve failed', 60_000);
    expect(cond(failed, 'Resolved')?.message).toContain(`spec.decryption.secretRef secret ${ns}/sops-age`);
    expect(cond(failed, 'Resolved')?.message).toContain(`service account ${ns}/installer may not read secret ${ns}/sops-age`);
    await until(async () => (await t.client.get(SECRET, 'db', ns)) === undefined, 'nothing applied', 1_000);
  }, 120_000);
});
