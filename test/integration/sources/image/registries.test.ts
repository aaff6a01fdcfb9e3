/**
 * Private and air-gapped registries (issue 16) against real docker-registry instances:
 * a registry signed by a private CA trusted through a `--ca-dir`-style directory, and
 * registries.conf mirrors for digest references (request logs from counting proxies prove which
 * location served the content; a tampering mirror is refused and the next one used).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../../src/cache/fs-content-store.ts';
import { readCaDir } from '../../../../src/sources/transport/ca-dir.ts';
import { RegistryClient } from '../../../../src/sources/image/client.ts';
import { ImageSource, type ImageSourceOptions } from '../../../../src/sources/image/image-source.ts';
import { pushImage, writeLayer } from '../../../../src/sources/image/push.ts';
import { parseReference } from '../../../../src/sources/image/reference.ts';
import { parseRegistriesConf } from '../../../../src/sources/image/registries-conf.ts';
import { freePort, startCountingProxy, startRegistry, type CountingProxy, type TestRegistry } from '../../../support/registry.ts';
import { failure } from '../../../support/failure.ts';

let work: string;
let tlsReg: TestRegistry;
let plainReg: TestRegistry;
let mirror: CountingProxy;
let badMirror: CountingProxy;
let tlsDigest: string;
let digest: string;
let closedPort: number;
const sources: ImageSource[] = [];

function source(opts: ImageSourceOptions): ImageSource {
  const s = new ImageSource({ retry: { attempts: 1, baseDelayMs: 10 }, ...opts });
  sources.push(s);
  return s;
}

function spec(ref: string): SourceSpec {
  return { kind: 'image', image: { ref } };
}

async function store(): Promise<FsContentStore> {
  return new FsContentStore({ root: await mkdtemp(join(work, 'store-')) });
}

async function pushTo(client: RegistryClient, ref: string, text: string): Promise<string> {
  const layer = await writeLayer([{ name: 'cm.yaml', data: text }], join(work, `layer-${Math.random().toString(36).slice(2)}`));
  return (await pushImage(client, parseReference(ref), [layer], { stage: 'fetch' })).digest;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-registries-it-'));
  tlsReg = await startRegistry({ auth: 'none', tls: true });
  plainReg = await startRegistry({ auth: 'none' });
  const tlsPusher = new RegistryClient({ ca: tlsReg.pki!.caCert });
  const plainPusher = new RegistryClient({ insecureHosts: [plainReg.host] });
  try {
    tlsDigest = await pushTo(tlsPusher, `${tlsReg.host}/acme/private:v1`, 'kind: ConfigMap\nmetadata: {name: private}\n');
    digest = await pushTo(plainPusher, `${plainReg.host}/quay/acme/op:v1`, 'kind: ConfigMap\nmetadata: {name: mirrored}\n');
  } finally {
    await tlsPusher.close();
    await plainPusher.close();
  }
  mirror = await startCountingProxy(plainReg.url);
  badMirror = await startCountingProxy(plainReg.url);
  // a mirror serving other bytes for the requested digest
  badMirror.tamper = (m, p) => (m === 'GET' && p.includes('/manifests/') ? { kind: 'flip-byte' } : undefined);
  closedPort = await freePort();
});

afterAll(async () => {
  for (const s of sources) await s.close();
  await mirror?.stop();
  await badMirror?.stop();
  await tlsReg?.stop();
  await plainReg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('a registry signed by a private CA', () => {
  it('works once its CA is in the CA directory (host:port.crt)', async () => {
    const dir = await mkdtemp(join(work, 'certs-'));
    await writeFile(join(dir, `${tlsReg.host}.crt`), tlsReg.pki!.caCert);
    const src = source({ hostCAs: await readCaDir(dir) });
    const ref = `${tlsReg.host}/acme/private@${tlsDigest}`;
    const resolved = await src.resolve(spec(ref), {});
    const out = await src.fetch(spec(ref), resolved, await store(), {});
    expect(await readFile(join(out, 'cm.yaml'), 'utf8')).toContain('name: private');
  });

  it('a CA filed for another host is not trusted for this one', async () => {
    const dir = await mkdtemp(join(work, 'certs-'));
    await writeFile(join(dir, 'other.example.crt'), tlsReg.pki!.caCert);
    const src = source({ hostCAs: await readCaDir(dir) });
    const ref = `${tlsReg.host}/acme/private@${tlsDigest}`;
    const e = await failure(src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {}));
    expect(e.code).toBe('tls-verify-failed');
    expect(e.message).toContain('unknown authority');
  });

  it('fails clearly without it, naming the host and the certificate problem', async () => {
    const src = source({});
    const ref = `${tlsReg.host}/acme/private:v1`;
    const e = await failure(src.resolve(spec(ref), {}));
    expect(e.code).toBe('tls-verify-failed');
    expect(e.terminal).toBe(true);
    expect(e.describe()).toContain(tlsReg.host);
    expect(e.message).toContain('certificate signed by unknown authority');
  });
});

describe('registries.conf mirrors for digest references', () => {
  function conf(mirrors: string[], extra = ''): ImageSourceOptions['registries'] {
    const m = mirrors.map((h) => `[[registry.mirror]]\nlocation = "${h}/quay"\ninsecure = true\n`).join('');
    return parseRegistriesConf(`[[registry]]\nlocation = "127.0.0.1:${closedPort}"\n${m}${extra}`);
  }

  it('pulls an image on an unreachable host from the mirror, digest unchanged, and records where', async () => {
    mirror.reset();
    const src = source({ registries: conf([mirror.host]) });
    const ref = `127.0.0.1:${closedPort}/acme/op@${digest}`;
    const resolved = await src.resolve(spec(ref), {});
    expect(resolved.status).toEqual({ kind: 'image', digest, ref: `${mirror.host}/quay/acme/op@${digest}` });
    const st = await store();
    const out = await src.fetch(spec(ref), resolved, st, {});
    expect(await readFile(join(out, 'cm.yaml'), 'utf8')).toContain('name: mirrored');
    expect(mirror.count(new RegExp(`/v2/quay/acme/op/manifests/${digest}`), 'GET')).toBeGreaterThan(0);
    expect(mirror.count(/\/v2\/quay\/acme\/op\/blobs\//, 'GET')).toBe(1);
    // the store records the location actually used: the mirror, never the unreachable original
    expect(await st.access(resolved.key, { location: `${mirror.host}/quay/acme/op`, credential: undefined, display: '' })).toBe('proven');
    expect(await st.access(resolved.key, { location: `127.0.0.1:${closedPort}/acme/op`, credential: undefined, display: '' })).not.toBe('proven');
  });

  it('refuses a mirror serving different content for the digest and uses the next one', async () => {
    mirror.reset();
    badMirror.reset();
    const src = source({ registries: conf([badMirror.host, mirror.host]) });
    const ref = `127.0.0.1:${closedPort}/acme/op@${digest}`;
    const resolved = await src.resolve(spec(ref), {});
    expect(badMirror.count(/\/manifests\//, 'GET')).toBe(1);
    expect(resolved.status.ref).toBe(`${mirror.host}/quay/acme/op@${digest}`);
    const out = await src.fetch(spec(ref), resolved, await store(), {});
    expect(await readFile(join(out, 'cm.yaml'), 'utf8')).toContain('name: mirrored');
    expect(badMirror.count(/\/blobs\//)).toBe(0);
  });

  it('with only a tampering mirror and an unreachable origin, fails naming both and the digest mismatch', async () => {
    const src = source({ registries: conf([badMirror.host]) });
    const ref = `127.0.0.1:${closedPort}/acme/op@${digest}`;
    const e = await failure(src.resolve(spec(ref), {}));
    expect(e.message).toContain(badMirror.host);
    expect(e.message).toContain(`127.0.0.1:${closedPort}`);
    expect(e.message).toMatch(/digest/);
  });

  it('a tag is never looked up on a mirror', async () => {
    mirror.reset();
    const src = source({ registries: conf([mirror.host]) });
    const e = await failure(src.resolve(spec(`127.0.0.1:${closedPort}/acme/op:v1`), {}));
    expect(e.code).toBe('network');
    expect(mirror.requests).toEqual([]);
  });

  it('a blocked registry is refused before any request', async () => {
    mirror.reset();
    const src = source({ registries: parseRegistriesConf(`[[registry]]\nlocation = "${mirror.host}"\nblocked = true\n`), insecureHosts: [mirror.host] });
    const e = await failure(src.resolve(spec(`${mirror.host}/quay/acme/op@${digest}`), {}));
    expect(e.code).toBe('registry-blocked');
    expect(e.terminal).toBe(true);
    expect(mirror.requests).toEqual([]);
  });

  it('a plain-http registry is used only when listed as insecure', async () => {
    const ref = `${plainReg.host}/quay/acme/op:v1`;
    const e = await failure(source({}).resolve(spec(ref), {}));
    // https to a plain-http server: no TLS handshake, nothing resolved
    expect(['network', 'tls-verify-failed']).toContain(e.code);
    expect(e.describe()).toContain(`https://${plainReg.host}/`);
    const ok = await source({ registries: parseRegistriesConf(`[[registry]]\nlocation = "${plainReg.host}"\ninsecure = true\n`) }).resolve(spec(ref), {});
    expect(ok.status.digest).toBe(digest);
  });
});
