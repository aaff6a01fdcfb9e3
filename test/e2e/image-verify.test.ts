/**
 * Issue 13, signed content: `spec.sources[].image.verify` through the real controller against the
 * real local registry (TLS with the test CA), with key pairs made and images signed in the test by
 * the real cosign binary (built from its Go module by scripts/ensure-tools.sh; Hoist verifies in
 * node:crypto and never runs it). Signed with the trusted key installs and records the
 * verification; unsigned, signed by another key, and tampered (the signature of digest A served
 * for digest B) are refused at resolve with Resolved=False/VerificationFailed naming the image and
 * the reason, nothing of them reaches the cluster and an installed revision stays; policy Warn
 * installs and records the failure; OCI 1.1 referrers (cosign's --registry-referrers-mode=oci-1-1,
 * stored in the referrers tag schema because distribution v2 has no referrers API) and a Helm OCI
 * chart pushed by the real helm are verified the same way.
 */
import { execFile } from 'node:child_process';
import { createHash, createPublicKey } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BundleDeployment, ImageVerification, SourceSpec } from '../../api/v1alpha2/types.ts';
import { toolPath } from '../../src/devcluster/tools.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { RegistryClient } from '../../src/sources/image/client.ts';
import { pushImage, pushManifest, writeLayer } from '../../src/sources/image/push.ts';
import { parseReference } from '../../src/sources/image/reference.ts';
import { cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { cosignCli, type Cosign, type CosignKey } from '../support/cosign.ts';
import { CM } from '../support/e2e-bundles.ts';
import { startRegistry, type TestRegistry } from '../support/registry.ts';

const exec = promisify(execFile);
let reg: TestRegistry;
let t: TestController;
let work: string;
let client: RegistryClient;
let cosign: Cosign;
let trusted: CosignKey;
let stranger: CosignKey;
const ns = (n: string): string => `hoist-verify-${n}-${t.runId}`;
const sign = (key: CosignKey, ref: string, extra: string[] = [], env: Record<string, string> = {}): Promise<void> => cosign.sign(key, ref, extra, env);

let layerSeq = 0;
/** pushes a one-ConfigMap bundle to `repo:tag`; returns its digest */
async function pushApp(repo: string, tag: string, name: string, value: string): Promise<string> {
  const cm = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;
  const layer = await writeLayer([{ name: 'cm.yaml', data: cm }], join(work, `layer-${layerSeq++}.tgz`));
  return (await pushImage(client, parseReference(`${reg.host}/${repo}:${tag}`), [layer], { stage: 'fetch' })).digest;
}

function source(ref: string, verify: Partial<ImageVerification> = {}): SourceSpec[] {
  return [{ kind: 'image', image: { ref, verify: { publicKeys: { secretRef: { name: 'keys' } }, ...verify } } }];
}

async function configMap(name: string, namespace: string): Promise<(KubeObject & { data?: Record<string, string> }) | undefined> {
  return (await t.client.get(CM, name, namespace)) as (KubeObject & { data?: Record<string, string> }) | undefined;
}

async function refused(name: string): Promise<{ bd: BundleDeployment; message: string }> {
  const bd = await t.waitFor(name, (b) => cond(b, 'Resolved')?.status === 'False', 'verification refused');
  const c = cond(bd, 'Resolved')!;
  expect(c.reason, describeStatus(bd)).toBe('VerificationFailed');
  // terminal: blocked until the spec or the keys change, not retried with backoff
  expect(cond(bd, 'Progressing')?.reason, describeStatus(bd)).toBe('Blocked');
  expect(cond(bd, 'Progressing')?.message).toMatch(/retried when the spec or a Secret or ConfigMap it references changes$/);
  return { bd, message: c.message };
}

const fingerprint = (pem: string): string =>
  `sha256:${createHash('sha256')
    .update(createPublicKey(pem).export({ type: 'spki', format: 'der' }))
    .digest('hex')}`;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-verify-'));
  reg = await startRegistry({ auth: 'none', tls: true });
  client = new RegistryClient({ ca: reg.pki!.caCert });
  t = await startTestController({ sources: { ca: reg.pki!.caCert } });
  cosign = cosignCli(work, reg.pki!.caCertPath);
  trusted = await cosign.generate('trusted');
  stranger = await cosign.generate('stranger');
  await t.client.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'keys', namespace: t.namespace },
    type: 'Opaque',
    stringData: { 'cosign.pub': trusted.pub, 'notes.txt': 'not a key' },
  } as unknown as KubeObject);
  // any of several keys may match; a ConfigMap works as well as a Secret
  await t.client.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'keys-cm', namespace: t.namespace },
    data: { 'other.pub': stranger.pub, 'team.pub': trusted.pub },
  } as unknown as KubeObject);
}, 180_000);

afterAll(async () => {
  await t?.stop();
  await client?.close();
  await reg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('image.verify with cosign', () => {
  it('installs an image signed with the trusted key and records the verification', async () => {
    const digest = await pushApp('bundles/signed', 'v1', 'signed', 'signed-1');
    await sign(trusted, `${reg.host}/bundles/signed@${digest}`);
    const sig = await client.headManifest(parseReference(`${reg.host}/bundles/signed:${digest.replace(':', '-')}.sig`), { stage: 'resolve' });
    await t.create('signed', { installNamespace: ns('signed'), format: 'plain', sources: source(`${reg.host}/bundles/signed:v1`) });
    const bd = await t.waitFor('signed', isDone, 'installed');
    expect(bd.status?.resolvedSources?.[0]?.verification).toEqual({
      provider: 'cosign',
      policy: 'Enforce',
      result: 'Verified',
      digest,
      key: `Secret ${t.namespace}/keys key cosign.pub`,
      keyFingerprint: fingerprint(trusted.pub),
      signature: sig.digest,
      via: 'tag',
    });
    expect(cond(bd, 'Resolved')?.message).toBe(`image ${digest} (signature verified)`);
    expect((await configMap('signed', ns('signed')))?.data?.value).toBe('signed-1');
  });

  it('finds a signature stored as an OCI 1.1 referrer, with keys from a ConfigMap', async () => {
    const digest = await pushApp('bundles/referred', 'v1', 'referred', 'referred-1');
    await sign(trusted, `${reg.host}/bundles/referred@${digest}`, ['--registry-referrers-mode=oci-1-1'], { COSIGN_EXPERIMENTAL: '1' });
    // distribution v2 has no referrers API: cosign kept the referrers tag schema's index instead
    const index = await client.getManifest(parseReference(`${reg.host}/bundles/referred:${digest.replace(':', '-')}`), { stage: 'resolve' });
    expect(index.manifest.kind).toBe('index');
    await expect(client.headManifest(parseReference(`${reg.host}/bundles/referred:${digest.replace(':', '-')}.sig`), { stage: 'resolve' })).rejects.toThrow(
      /not found/,
    );
    await t.create('referred', {
      installNamespace: ns('referred'),
      format: 'plain',
      sources: source(`${reg.host}/bundles/referred@${digest}`, { publicKeys: { configMapRef: { name: 'keys-cm' } } }),
    });
    const bd = await t.waitFor('referred', isDone, 'installed');
    expect(bd.status?.resolvedSources?.[0]?.verification).toMatchObject({
      result: 'Verified',
      via: 'referrers',
      key: `ConfigMap ${t.namespace}/keys-cm key team.pub`,
      keyFingerprint: fingerprint(trusted.pub),
    });
  });

  it('refuses an unsigned image before unpacking it: nothing reaches the cluster', async () => {
    await pushApp('bundles/unsigned', 'v1', 'unsigned', 'unsigned-1');
    await t.create('unsigned', { installNamespace: ns('unsigned'), format: 'plain', sources: source(`${reg.host}/bundles/unsigned:v1`) });
    const { bd, message } = await refused('unsigned');
    expect(message).toContain(`${reg.host}/bundles/unsigned:v1@sha256:`);
    expect(message).toContain('signature-not-found');
    expect(cond(bd, 'Installed')).toMatchObject({ status: 'False', reason: 'Pending' });
    expect(bd.status?.activeRevision).toBeUndefined();
    expect(await configMap('unsigned', ns('unsigned'))).toBeUndefined();
  });

  it('refuses an image signed by another key', async () => {
    const digest = await pushApp('bundles/stranger', 'v1', 'stranger', 'stranger-1');
    await sign(stranger, `${reg.host}/bundles/stranger@${digest}`);
    await t.create('stranger', { installNamespace: ns('stranger'), format: 'plain', sources: source(`${reg.host}/bundles/stranger:v1`) });
    const { message } = await refused('stranger');
    expect(message).toContain(`${reg.host}/bundles/stranger:v1`);
    expect(message).toContain('signature-untrusted');
    expect(message).toContain(`Secret ${t.namespace}/keys key cosign.pub`);
    expect(await configMap('stranger', ns('stranger'))).toBeUndefined();
  });

  it('a key added to the keys Secret retries a refused verification, without a spec change', async () => {
    const digest = await pushApp('bundles/rotated', 'v1', 'rotated', 'rotated-1');
    await sign(stranger, `${reg.host}/bundles/rotated@${digest}`);
    const keys = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'keys-rotated', namespace: t.namespace },
      type: 'Opaque',
      stringData: { 'cosign.pub': trusted.pub },
    };
    await t.client.create(keys as unknown as KubeObject);
    const created = await t.create('rotated', {
      installNamespace: ns('rotated'),
      format: 'plain',
      sources: source(`${reg.host}/bundles/rotated:v1`, { publicKeys: { secretRef: { name: 'keys-rotated' } } }),
    });
    expect((await refused('rotated')).message).toContain('signature-untrusted');
    // settled on the refusal (a follow-up reconcile of our own status write would read the keys anyway)
    await t.idle({ quietMs: 1000 });
    // the signer's key is trusted from now on: the Secret's watch re-queues the BD, which verifies again
    await t.client.patch(keys as unknown as KubeObject, 'keys-rotated', t.namespace, { stringData: { 'signer.pub': stranger.pub } }, 'merge');
    const bd = await t.waitFor('rotated', isDone, 'installed after the key was added');
    expect(bd.metadata.generation).toBe(created.metadata.generation);
    expect(bd.status?.resolvedSources?.[0]?.verification).toMatchObject({
      result: 'Verified',
      key: `Secret ${t.namespace}/keys-rotated key signer.pub`,
      keyFingerprint: fingerprint(stranger.pub),
    });
    expect((await configMap('rotated', ns('rotated')))?.data?.value).toBe('rotated-1');
  });

  it('refuses tampered content (a signature of digest A served for digest B) and keeps the installed revision', async () => {
    const a = await pushApp('bundles/tampered', 'v1', 'tampered', 'original');
    await sign(trusted, `${reg.host}/bundles/tampered@${a}`);
    await t.create('tampered', { installNamespace: ns('tampered'), format: 'plain', sources: source(`${reg.host}/bundles/tampered:v1`) });
    await t.waitFor('tampered', isDone, 'original installed');
    // the manifest changed after signing: new content under the same tag, and A's signature
    // manifest copied to B's signature tag (what an attacker with push access would try)
    const b = await pushApp('bundles/tampered', 'v1', 'tampered', 'evil');
    const sigA = await client.getManifest(parseReference(`${reg.host}/bundles/tampered:${a.replace(':', '-')}.sig`), { stage: 'resolve' });
    await pushManifest(client, parseReference(`${reg.host}/bundles/tampered:${b.replace(':', '-')}.sig`), sigA.bytes, sigA.mediaType, { stage: 'fetch' });
    await t.patchSpec('tampered', { sources: source(`${reg.host}/bundles/tampered@${b}`) });
    const { bd, message } = await refused('tampered');
    expect(message).toContain(`${reg.host}/bundles/tampered@${b}`);
    expect(message).toContain('signature-digest-mismatch');
    expect(message).toContain(a);
    expect(bd.status?.activeRevision?.number).toBe(1);
    expect(cond(bd, 'Installed')?.status).toBe('True');
    expect((await configMap('tampered', ns('tampered')))?.data?.value).toBe('original');
  });

  it('policy Warn installs unverified content and records why it failed', async () => {
    const digest = await pushApp('bundles/warned', 'v1', 'warned', 'warned-1');
    await t.create('warned', { installNamespace: ns('warned'), format: 'plain', sources: source(`${reg.host}/bundles/warned:v1`, { policy: 'Warn' }) });
    const bd = await t.waitFor('warned', isDone, 'installed despite no signature');
    expect(bd.status?.resolvedSources?.[0]?.verification).toMatchObject({
      provider: 'cosign',
      policy: 'Warn',
      result: 'Failed',
      digest,
      reason: 'signature-not-found',
    });
    expect(cond(bd, 'Resolved')).toMatchObject({ status: 'True', message: `image ${digest} (signature NOT verified, policy Warn: signature-not-found)` });
    expect((await configMap('warned', ns('warned')))?.data?.value).toBe('warned-1');
  });

  it('verifies a Helm OCI chart pushed by helm and signed by cosign; an unsigned chart version is refused', async () => {
    const chart = join(work, 'chart');
    await mkdir(join(chart, 'templates'), { recursive: true });
    const writeChart = async (version: string): Promise<string> => {
      await writeFile(join(chart, 'Chart.yaml'), `apiVersion: v2\nname: signed-chart\nversion: ${version}\n`);
      await writeFile(join(chart, 'templates', 'cm.yaml'), `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-chart\ndata:\n  version: "${version}"\n`);
      await exec(toolPath('helm'), ['package', chart, '--destination', work], { env: { ...process.env, HOME: work } });
      const { stderr, stdout } = await exec(
        toolPath('helm'),
        ['push', join(work, `signed-chart-${version}.tgz`), `oci://${reg.host}/charts`, '--ca-file', reg.pki!.caCertPath],
        { env: { ...process.env, HOME: work } },
      );
      const m = /Digest: (sha256:[a-f0-9]{64})/.exec(`${stdout}\n${stderr}`);
      if (!m) throw new Error(`helm push printed no digest: ${stdout}${stderr}`);
      return m[1]!;
    };
    const signed = await writeChart('0.1.0');
    await sign(trusted, `${reg.host}/charts/signed-chart@${signed}`);
    await t.create('chart', { installNamespace: ns('chart'), format: 'helm', sources: source(`${reg.host}/charts/signed-chart:0.1.0`) });
    const bd = await t.waitFor('chart', isDone, 'chart installed');
    expect(bd.status?.resolvedSources?.[0]?.verification).toMatchObject({ result: 'Verified', digest: signed, via: 'tag' });
    expect((await configMap('from-chart', ns('chart')))?.data?.version).toBe('0.1.0');

    await writeChart('0.2.0');
    await t.patchSpec('chart', { sources: source(`${reg.host}/charts/signed-chart:0.2.0`) });
    const { bd: after, message } = await refused('chart');
    expect(message).toContain(`${reg.host}/charts/signed-chart:0.2.0`);
    expect(message).toContain('signature-not-found');
    expect(after.status?.activeRevision?.number).toBe(1);
    expect((await configMap('from-chart', ns('chart')))?.data?.version).toBe('0.1.0');
  });
});
