/**
 * The verifier on what the real cosign writes (built from its Go module by
 * scripts/ensure-tools.sh), without a controller: ImageSource.resolve against a real
 * docker-registry over TLS with the test CA, signatures made here by `cosign sign --key` with a
 * generated ECDSA key pair and with RSA and ed25519 keys imported into cosign, in cosign's tag
 * scheme and in OCI 1.1 referrers mode (stored in the referrers tag schema: distribution v2 has no
 * referrers API). test/e2e/image-verify.test.ts covers the same through the controller.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { RegistryClient } from '../../../../src/sources/image/client.ts';
import { ImageSource } from '../../../../src/sources/image/image-source.ts';
import { pushImage, pushManifest, writeLayer } from '../../../../src/sources/image/push.ts';
import { parseReference } from '../../../../src/sources/image/reference.ts';
import type { PublicKeySet } from '../../../../src/sources/source.ts';
import { cosignCli, type Cosign, type CosignKey } from '../../../support/cosign.ts';
import { failure } from '../../../support/failure.ts';
import { startRegistry, type TestRegistry } from '../../../support/registry.ts';

let work: string;
let reg: TestRegistry;
let client: RegistryClient;
let src: ImageSource;
let cosign: Cosign;
const keys = {} as Record<'ecdsa' | 'stranger' | 'rsa' | 'ed25519', CosignKey>;

const sign = (key: keyof typeof keys, ref: string, extra: string[] = [], env: Record<string, string> = {}): Promise<void> =>
  cosign.sign(keys[key], ref, extra, env);

let seq = 0;
async function pushApp(repo: string): Promise<string> {
  const layer = await writeLayer([{ name: 'cm.yaml', data: `kind: ConfigMap\nmetadata: {name: app-${seq}}\n` }], join(work, `layer-${seq++}`));
  return (await pushImage(client, parseReference(`${reg.host}/${repo}:v1`), [layer], { stage: 'fetch' })).digest;
}

const trusting =
  (...names: (keyof typeof keys)[]) =>
  async (): Promise<PublicKeySet> => ({ from: 'Secret hoist/keys', entries: names.map((n) => ({ name: `${n}.pub`, pem: keys[n].pub })) });
const spec = (ref: string): SourceSpec => ({ kind: 'image', image: { ref, verify: { publicKeys: { secretRef: { name: 'keys' } } } } });

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-cosign-it-'));
  reg = await startRegistry({ auth: 'none', tls: true });
  client = new RegistryClient({ ca: reg.pki!.caCert });
  src = new ImageSource({ ca: reg.pki!.caCert, retry: { attempts: 1, baseDelayMs: 5 } });
  cosign = cosignCli(work, reg.pki!.caCertPath);
  keys.ecdsa = await cosign.generate('ecdsa');
  keys.stranger = await cosign.generate('stranger');
  keys.rsa = await cosign.imported('rsa', 'rsa');
  keys.ed25519 = await cosign.imported('ed25519', 'ed25519');
}, 1_800_000);

afterAll(async () => {
  await src?.close();
  await client?.close();
  await reg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('image.verify on signatures made by the real cosign', () => {
  for (const name of ['ecdsa', 'rsa', 'ed25519'] as const) {
    it(`verifies a ${name} signature found by cosign's .sig tag`, async () => {
      const digest = await pushApp(`app/${name}`);
      await sign(name, `${reg.host}/app/${name}@${digest}`);
      const r = await src.resolve(spec(`${reg.host}/app/${name}:v1`), { publicKeys: trusting('stranger', name) });
      expect(r.status.verification).toMatchObject({ result: 'Verified', digest, via: 'tag', key: `Secret hoist/keys key ${name}.pub` });
    });
  }

  it('verifies a signature written in OCI 1.1 referrers mode', async () => {
    const digest = await pushApp('app/referred');
    await sign('ecdsa', `${reg.host}/app/referred@${digest}`, ['--registry-referrers-mode=oci-1-1'], { COSIGN_EXPERIMENTAL: '1' });
    const r = await src.resolve(spec(`${reg.host}/app/referred:v1`), { publicKeys: trusting('ecdsa') });
    expect(r.status.verification).toMatchObject({ result: 'Verified', digest, via: 'referrers' });
  });

  it('refuses another key, an unsigned image, and a signature moved to other content', async () => {
    const digest = await pushApp('app/stranger');
    await sign('stranger', `${reg.host}/app/stranger@${digest}`);
    expect(await failure(src.resolve(spec(`${reg.host}/app/stranger:v1`), { publicKeys: trusting('ecdsa') }))).toMatchObject({
      reason: 'VerificationFailed',
      code: 'signature-untrusted',
    });

    const a = await pushApp('app/moved');
    await sign('ecdsa', `${reg.host}/app/moved@${a}`);
    const b = await pushApp('app/moved');
    expect(await failure(src.resolve(spec(`${reg.host}/app/moved:v1`), { publicKeys: trusting('ecdsa') }))).toMatchObject({ code: 'signature-not-found' });
    const sigA = await client.getManifest(parseReference(`${reg.host}/app/moved:${a.replace(':', '-')}.sig`), { stage: 'resolve' });
    await pushManifest(client, parseReference(`${reg.host}/app/moved:${b.replace(':', '-')}.sig`), sigA.bytes, sigA.mediaType, { stage: 'fetch' });
    const moved = await failure(src.resolve(spec(`${reg.host}/app/moved:v1`), { publicKeys: trusting('ecdsa') }));
    expect(moved).toMatchObject({ code: 'signature-digest-mismatch', terminal: true });
    expect(moved.message).toContain(a);
  });
});
