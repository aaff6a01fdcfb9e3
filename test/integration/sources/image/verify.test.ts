/**
 * ImageSource with `image.verify` against a real docker-registry (distribution v2), behind a
 * counting proxy, with signature manifests pushed here in cosign's layout and signed with
 * node:crypto (the real cosign's output is covered by test/e2e/image-verify.test.ts): cosign's
 * `sha256-<hex>.sig` tag, the OCI 1.1 referrers tag schema a registry without the referrers API
 * gets, what verification costs in requests, and that a refused image downloads no layer.
 */
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImageVerification, ResolvedSourceStatus, SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { RegistryClient } from '../../../../src/sources/image/client.ts';
import { ImageSource } from '../../../../src/sources/image/image-source.ts';
import { MEDIA_TYPES } from '../../../../src/sources/image/manifest.ts';
import { pushBlob, pushImage, pushManifest, writeLayer } from '../../../../src/sources/image/push.ts';
import { parseReference } from '../../../../src/sources/image/reference.ts';
import { COSIGN_ARTIFACT_TYPE } from '../../../../src/sources/image/verify/signatures.ts';
import type { PublicKeySet } from '../../../../src/sources/source.ts';
import { failure } from '../../../support/failure.ts';
import { startCountingProxy, startRegistry, type CountingProxy, type TestRegistry } from '../../../support/registry.ts';

let work: string;
let reg: TestRegistry;
let proxy: CountingProxy;
let pusher: RegistryClient;
let src: ImageSource;
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const keys: PublicKeySet = { from: 'Secret hoist/keys', entries: [{ name: 'cosign.pub', pem: publicKey.export({ type: 'spki', format: 'pem' }).toString() }] };
let keyReads = 0;
const publicKeys = async (): Promise<PublicKeySet> => {
  keyReads++;
  return keys;
};
const ctx = { stage: 'fetch' as const };

async function pushApp(repo: string, value: string): Promise<string> {
  const layer = await writeLayer([{ name: 'cm.yaml', data: `kind: ConfigMap\nmetadata: {name: ${value}}\n` }], join(work, `layer-${value}`));
  return (await pushImage(pusher, parseReference(`${proxy.host}/${repo}:v1`), [layer], ctx)).digest;
}

/** a signature manifest as cosign writes it; with `subject`, as an OCI 1.1 referrer */
async function pushSignature(repo: string, signed: string, target: { tag?: string; subject?: { digest: string; size: number } }): Promise<string> {
  const ref = parseReference(`${proxy.host}/${repo}:x`);
  const payload = Buffer.from(
    JSON.stringify({
      critical: {
        identity: { 'docker-reference': `${proxy.host}/${repo}` },
        image: { 'docker-manifest-digest': signed },
        type: 'cosign container image signature',
      },
      optional: null,
    }),
  );
  const layer = await pushBlob(pusher, ref, payload, ctx);
  const config = await pushBlob(pusher, ref, Buffer.from('{}'), ctx);
  const manifest: Record<string, unknown> = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociManifest,
    config: { mediaType: target.subject ? 'application/vnd.oci.empty.v1+json' : MEDIA_TYPES.ociConfig, ...config },
    layers: [
      {
        mediaType: 'application/vnd.dev.cosign.simplesigning.v1+json',
        ...layer,
        annotations: { 'dev.cosignproject.cosign/signature': sign('sha256', payload, privateKey).toString('base64') },
      },
    ],
  };
  if (target.subject) {
    manifest.artifactType = COSIGN_ARTIFACT_TYPE;
    manifest.subject = { mediaType: MEDIA_TYPES.ociManifest, ...target.subject };
  }
  const bytes = Buffer.from(JSON.stringify(manifest));
  const digest = await pushManifest(pusher, { ...ref, tag: target.tag ?? `sig-${Date.now()}` }, bytes, MEDIA_TYPES.ociManifest, ctx);
  if (target.subject) {
    // the referrers tag schema: an index of referrers at tag sha256-<hex> of the subject
    const index = {
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.ociIndex,
      manifests: [{ mediaType: MEDIA_TYPES.ociManifest, digest, size: bytes.length, artifactType: COSIGN_ARTIFACT_TYPE }],
    };
    await pushManifest(pusher, { ...ref, tag: target.subject.digest.replace(':', '-') }, Buffer.from(JSON.stringify(index)), MEDIA_TYPES.ociIndex, ctx);
  }
  return digest;
}

function spec(ref: string, verify: Partial<ImageVerification> = {}): SourceSpec {
  return { kind: 'image', image: { ref, verify: { publicKeys: { secretRef: { name: 'keys' } }, ...verify } } };
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-verify-it-'));
  reg = await startRegistry({ auth: 'none' });
  proxy = await startCountingProxy(reg.url);
  pusher = new RegistryClient({ insecureHosts: [proxy.host] });
  src = new ImageSource({ insecureHosts: [proxy.host], retry: { attempts: 1, baseDelayMs: 5 } });
});

afterAll(async () => {
  await src?.close();
  await pusher?.close();
  await proxy?.stop();
  await reg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('image.verify against a real registry', () => {
  it('verifies by the .sig tag; a recorded verification costs nothing, a re-check only the HEAD', async () => {
    const digest = await pushApp('app/tagged', 'tagged');
    const sig = await pushSignature('app/tagged', digest, { tag: `${digest.replace(':', '-')}.sig` });
    proxy.reset();
    keyReads = 0;
    const r = await src.resolve(spec(`${proxy.host}/app/tagged:v1`), { publicKeys });
    expect(r.status.verification).toMatchObject({
      provider: 'cosign',
      policy: 'Enforce',
      result: 'Verified',
      digest,
      signature: sig,
      via: 'tag',
      key: 'Secret hoist/keys key cosign.pub',
    });
    expect(r.status.verification?.keyFingerprint).toBe(
      `sha256:${createHash('sha256')
        .update(publicKey.export({ type: 'spki', format: 'der' }))
        .digest('hex')}`,
    );
    // HEAD of the tag, the .sig manifest, the referrers API (404) and its fallback tag (404), the payload
    expect(proxy.count(/\/blobs\//)).toBe(1);
    expect(proxy.count(/\/referrers\//)).toBe(1);
    expect(keyReads).toBe(1);

    proxy.reset();
    const again = await src.resolve(spec(`${proxy.host}/app/tagged:v1`), { publicKeys, previous: r.status });
    expect(again.status.verification).toEqual(r.status.verification);
    expect(proxy.requests).toHaveLength(0);
    const recheck = await src.resolve(spec(`${proxy.host}/app/tagged:v1`), { publicKeys, previous: r.status, recheck: true });
    expect(recheck.status.verification).toEqual(r.status.verification);
    expect(proxy.requests.map((q) => q.method)).toEqual(['HEAD']);
    expect(keyReads).toBe(1);
  });

  it('verifies a referrer found through the referrers tag schema (no referrers API on distribution v2)', async () => {
    const digest = await pushApp('app/referred', 'referred');
    const head = await pusher.headManifest(parseReference(`${proxy.host}/app/referred@${digest}`), ctx);
    const sig = await pushSignature('app/referred', digest, { subject: { digest, size: head.size } });
    proxy.reset();
    const r = await src.resolve(spec(`${proxy.host}/app/referred@${digest}`), { publicKeys });
    expect(r.status.verification).toMatchObject({ result: 'Verified', via: 'referrers', signature: sig });
    expect(proxy.requests.find((q) => q.path.includes('/referrers/'))?.status).toBe(404);
  });

  it('refuses at resolve, before any layer is downloaded, and Warn records instead', async () => {
    const unsigned = await pushApp('app/unsigned', 'unsigned');
    proxy.reset();
    const e = await failure(src.resolve(spec(`${proxy.host}/app/unsigned:v1`), { publicKeys }));
    expect(e).toMatchObject({ stage: 'resolve', reason: 'VerificationFailed', code: 'signature-not-found', terminal: true });
    expect(e.describe()).toContain(`${proxy.host}/app/unsigned:v1@${unsigned}`);
    expect(proxy.count(/\/blobs\//)).toBe(0);

    const warned = await src.resolve(spec(`${proxy.host}/app/unsigned:v1`, { policy: 'Warn' }), { publicKeys });
    expect(warned.status.verification).toMatchObject({ policy: 'Warn', result: 'Failed', reason: 'signature-not-found', digest: unsigned });
    // a Warn failure is looked at again on a re-check
    proxy.reset();
    await src.resolve(spec(`${proxy.host}/app/unsigned:v1`, { policy: 'Warn' }), {
      publicKeys,
      previous: warned.status as ResolvedSourceStatus,
      recheck: true,
    });
    expect(proxy.count(/\.sig$/)).toBe(1);
  });

  it('refuses a signature moved next to other content, and keys that are not keys', async () => {
    const a = await pushApp('app/moved', 'moved-a');
    const b = await pushApp('app/moved', 'moved-b');
    await pushSignature('app/moved', a, { tag: `${b.replace(':', '-')}.sig` });
    const e = await failure(src.resolve(spec(`${proxy.host}/app/moved@${b}`), { publicKeys }));
    expect(e).toMatchObject({ reason: 'VerificationFailed', code: 'signature-digest-mismatch' });
    expect(e.message).toContain(a);

    const bad = await failure(
      src.resolve(spec(`${proxy.host}/app/moved@${b}`), {
        publicKeys: async () => ({ from: 'ConfigMap hoist/keys', entries: [{ name: 'k.pub', pem: 'nope' }] }),
      }),
    );
    expect(bad).toMatchObject({ stage: 'spec', code: 'bad-public-key', terminal: true });
    expect(bad.message).toContain('ConfigMap hoist/keys key k.pub');
    const none = await failure(src.resolve(spec(`${proxy.host}/app/moved@${b}`), { publicKeys: async () => ({ from: 'ConfigMap hoist/keys', entries: [] }) }));
    expect(none.message).toContain('no *.pub entry');
  });
});
