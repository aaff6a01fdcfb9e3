/**
 * Authenticated pulls against real registries over TLS (generated CA): docker-registry with
 * htpasswd (Basic) auth, and with token auth backed by the test's JWT issuer. Counting proxies
 * (plain HTTP on loopback, listed in insecureHosts) sit in front where requests are counted.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../../src/cache/fs-content-store.ts';
import { RegistryClient } from '../../../../src/sources/image/client.ts';
import { ImageSource, type ImageSourceOptions } from '../../../../src/sources/image/image-source.ts';
import { pushImage, writeLayer, type BuiltLayer } from '../../../../src/sources/image/push.ts';
import { parseReference } from '../../../../src/sources/image/reference.ts';
import { HoistError } from '../../../../src/util/errors.ts';
import { freePort, skopeo, startCountingProxy, startRegistry, type CountingProxy, type TestRegistry } from '../../../support/registry.ts';
import { failure } from '../../../support/failure.ts';
import { sleep } from '../../../support/wait.ts';

const PASSWORD = 'p4ss-w0rd-never-shown';
const USERS = { alice: PASSWORD, bob: 'bobs-secret' };

let work: string;
const cleanups: (() => Promise<void>)[] = [];

function spec(ref: string): SourceSpec {
  return { kind: 'image', image: { ref, auth: { secretRef: { name: 'pull' } } } };
}

async function store(): Promise<FsContentStore> {
  return new FsContentStore({ root: await mkdtemp(join(work, 'store-')) });
}

function expectNoSecret(e: HoistError): void {
  const all = `${e.message} ${e.describe()} ${String(e.subject)} ${JSON.stringify(e)}`;
  for (const p of Object.values(USERS)) expect(all).not.toContain(p);
  expect(all).not.toContain(Buffer.from(`alice:${PASSWORD}`).toString('base64'));
}

async function pushSample(reg: TestRegistry, name: string, text: string): Promise<{ digest: string; layer: BuiltLayer }> {
  const client = new RegistryClient({ ca: reg.pki!.caCert });
  try {
    const layer = await writeLayer([{ name: 'hello.yaml', data: text }], join(work, `layer-${Math.random().toString(36).slice(2)}`));
    const pushed = await pushImage(client, parseReference(`${reg.host}/${name}`), [layer], {
      stage: 'fetch',
      credential: { username: 'alice', password: PASSWORD },
    });
    return { digest: pushed.digest, layer };
  } finally {
    await client.close();
  }
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-image-auth-'));
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('htpasswd (Basic) registry over TLS', () => {
  let reg: TestRegistry;
  let proxy: CountingProxy;
  const made: ImageSource[] = [];
  const source = (opts: ImageSourceOptions = {}): ImageSource => {
    const s = new ImageSource({ ca: reg.pki!.caCert, insecureHosts: [proxy.host], retry: { attempts: 2, baseDelayMs: 5 }, ...opts });
    made.push(s);
    return s;
  };

  beforeAll(async () => {
    reg = await startRegistry({ auth: 'htpasswd', users: USERS });
    proxy = await startCountingProxy(reg.url, reg.pki!.caCert);
    cleanups.push(async () => {
      for (const s of made) await s.close();
      await proxy.stop();
      await reg.stop();
    });
    await pushSample(reg, 'private/app:v1', 'basic: true\n');
  });

  it('pulls with dockerconfigjson credentials, verifying TLS against the custom CA', async () => {
    const src = source();
    const ref = `${reg.host}/private/app:v1`;
    const ctx = { credentials: { data: reg.dockerConfig('alice') } };
    const resolved = await src.resolve(spec(ref), ctx);
    const dir = await src.fetch(spec(ref), resolved, await store(), ctx);
    expect(await readFile(join(dir, 'hello.yaml'), 'utf8')).toBe('basic: true\n');
    const info = JSON.parse(await skopeo(['inspect', `--cert-dir=${reg.pki!.certDir}`, '--creds', `alice:${PASSWORD}`, `docker://${ref}`])) as {
      Digest: string;
    };
    expect(info.Digest).toBe(resolved.status.digest);
  });

  it('refuses a registry whose certificate is not trusted', async () => {
    const src = new ImageSource({ retry: { attempts: 1 } });
    made.push(src);
    const e = await failure(src.resolve(spec(`${reg.host}/private/app:v1`), { credentials: { data: reg.dockerConfig('alice') } }));
    expect(e).toMatchObject({ stage: 'resolve', code: 'tls-verify-failed', terminal: true });
    expect(e.message).toMatch(/certificate|unable_to_verify|self.signed/i);
  });

  it('wrong credentials', async () => {
    const e = await failure(source().resolve(spec(`${reg.host}/private/app:v1`), { credentials: { data: reg.dockerConfig('alice', 'wrong-password') } }));
    expect(e).toMatchObject({ stage: 'resolve', reason: 'ResolveFailed', code: 'unauthorized', terminal: true, subject: `${reg.host}/private/app:v1` });
    expectNoSecret(e);
  });

  it('missing credentials, and credentials for another registry are never sent', async () => {
    const none = await failure(source().resolve(spec(`${reg.host}/private/app:v1`), {}));
    expect(none).toMatchObject({ stage: 'resolve', code: 'credentials-required', terminal: true });
    expect(none.message).toContain('auth');

    proxy.reset();
    const other = { '.dockerconfigjson': JSON.stringify({ auths: { 'quay.io': { auth: Buffer.from(`alice:${PASSWORD}`).toString('base64') } } }) };
    const e = await failure(source().resolve(spec(`${proxy.host}/private/app:v1`), { credentials: { data: other } }));
    expect(e).toMatchObject({ code: 'credentials-required' });
    expect(proxy.requests.every((r) => !r.authorized)).toBe(true);
  });

  it('authorizes cache hits: another BD must prove access before content is served', async () => {
    const ref = `${proxy.host}/private/app:v1`;
    const st = await store();
    const good = { credentials: { data: reg.dockerConfig('alice', PASSWORD, proxy.host) } };
    const src = source();
    const resolved = await src.resolve(spec(ref), good);
    await src.fetch(spec(ref), resolved, st, good);

    proxy.reset();
    await src.fetch(spec(ref), resolved, st, good);
    expect(proxy.requests).toEqual([]); // same identity: zero requests

    const anonymous = await failure(src.fetch(spec(ref), resolved, st, {}));
    expect(anonymous).toMatchObject({ stage: 'fetch', code: 'credentials-required' });
    const wrong = await failure(src.fetch(spec(ref), resolved, st, { credentials: { data: reg.dockerConfig('alice', 'nope', proxy.host) } }));
    expect(wrong).toMatchObject({ stage: 'fetch', code: 'unauthorized' });
    expectNoSecret(wrong);

    proxy.reset();
    const bob = { credentials: { data: reg.dockerConfig('bob', USERS.bob, proxy.host) } };
    await src.fetch(spec(ref), resolved, st, bob);
    // one authenticated HEAD by digest (after the 401 that names the scheme, when not yet known)
    expect(proxy.requests.filter((r) => r.status === 200).map((r) => `${r.method} ${r.path}`)).toEqual([
      `HEAD /v2/private/app/manifests/${resolved.status.digest}`,
    ]);
    expect(proxy.count(/\/blobs\//)).toBe(0);
    proxy.reset();
    await src.fetch(spec(ref), resolved, st, bob);
    expect(proxy.requests).toEqual([]);

    // the proofs are in the store: a restarted controller (fresh source, store reopened) serves
    // both identities with zero requests and still refuses the anonymous caller
    const fresh = source();
    const reopened = new FsContentStore({ root: st.root });
    proxy.reset();
    await fresh.fetch(spec(ref), resolved, reopened, bob);
    await fresh.fetch(spec(ref), resolved, reopened, good);
    expect(proxy.requests).toEqual([]);
    await expect(fresh.fetch(spec(ref), resolved, reopened, {})).rejects.toMatchObject({ code: 'credentials-required' });
    // the explicit proof the store hit uses
    await expect(fresh.authorize(spec(ref), resolved, bob)).resolves.toBeUndefined();
    await expect(fresh.authorize(spec(ref), resolved, {})).rejects.toMatchObject({ code: 'credentials-required' });
  });
});

describe('token-auth registry over TLS', () => {
  let reg: TestRegistry;
  let proxy: CountingProxy;
  let privateSample: { digest: string; layer: BuiltLayer };
  const made: ImageSource[] = [];
  const source = (opts: ImageSourceOptions = {}): ImageSource => {
    const s = new ImageSource({ ca: reg.pki!.caCert, insecureHosts: [proxy.host], retry: { attempts: 2, baseDelayMs: 5 }, ...opts });
    made.push(s);
    return s;
  };

  beforeAll(async () => {
    reg = await startRegistry({ auth: 'token', users: USERS });
    proxy = await startCountingProxy(reg.url, reg.pki!.caCert);
    cleanups.push(async () => {
      for (const s of made) await s.close();
      await proxy.stop();
      await reg.stop();
    });
    await pushSample(reg, 'public/app:v1', 'public: true\n');
    privateSample = await pushSample(reg, 'private/app:v1', 'private: true\n');
  });

  it('pulls a public repository anonymously with an anonymous token', async () => {
    const src = source();
    const ref = `${reg.host}/public/app:v1`;
    const dir = await src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {});
    expect(await readFile(join(dir, 'hello.yaml'), 'utf8')).toBe('public: true\n');
  });

  it('pulls a private repository with credentials, one token per scope for resolve and fetch', async () => {
    const src = source();
    const ref = `${reg.host}/private/app:v1`;
    const ctx = { credentials: { data: reg.dockerConfig('alice') } };
    const before = reg.issuer!.counts.issued;
    const resolved = await src.resolve(spec(ref), ctx);
    const dir = await src.fetch(spec(ref), resolved, await store(), ctx);
    expect(await readFile(join(dir, 'hello.yaml'), 'utf8')).toBe('private: true\n');
    expect(reg.issuer!.counts.issued - before).toBe(1);
  });

  it('wrong credentials are refused by the token service; missing ones by the registry', async () => {
    const ref = `${reg.host}/private/app:v1`;
    const wrong = await failure(source().resolve(spec(ref), { credentials: { data: reg.dockerConfig('alice', 'wrong') } }));
    expect(wrong).toMatchObject({ stage: 'resolve', code: 'unauthorized', terminal: true, subject: ref });
    expect(wrong.message).toContain('token service rejected the credentials');
    expectNoSecret(wrong);
    const missing = await failure(source().resolve(spec(ref), {}));
    expect(missing).toMatchObject({ stage: 'resolve', code: 'credentials-required', terminal: true, subject: ref });
  });

  it('follows a cross-host redirect to blob storage without Authorization', async () => {
    // "blob storage": another origin that serves the layer file and records what it was sent
    const seen: (string | undefined)[] = [];
    const storage = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      createReadStream(privateSample.layer.path).pipe(res);
    });
    const port = await freePort();
    await new Promise<void>((r) => storage.listen(port, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => storage.close(() => r())));
    const ref = `${proxy.host}/private/app@${privateSample.digest}`;
    const ctx = { credentials: { data: reg.dockerConfig('alice', PASSWORD, proxy.host) } };
    const src = source({ insecureHosts: [proxy.host, `127.0.0.1:${port}`] });
    proxy.reset();
    proxy.tamper = (m, p) =>
      m === 'GET' && p.includes('/blobs/') ? { kind: 'redirect', location: `http://127.0.0.1:${port}/blob?X-Signature=abc` } : undefined;
    try {
      const dir = await src.fetch(spec(ref), await src.resolve(spec(ref), ctx), await store(), ctx);
      expect(await readFile(join(dir, 'hello.yaml'), 'utf8')).toBe('private: true\n');
    } finally {
      proxy.tamper = undefined;
    }
    expect(seen).toEqual([undefined]);
    const blobReq = proxy.requests.filter((r) => r.path.includes('/blobs/'));
    expect(blobReq.map((r) => [r.status, r.authorized])).toEqual([[307, true]]);
  });
});

describe('token refresh', () => {
  it('refreshes a cached token the registry rejects (401) once, then succeeds', async () => {
    const reg = await startRegistry({ auth: 'token', users: USERS });
    const src = new ImageSource({ ca: reg.pki!.caCert });
    cleanups.push(async () => {
      await src.close();
      await reg.stop();
    });
    const sample = await pushSample(reg, 'private/refresh:v1', 'refresh: true\n');
    const issuer = reg.issuer!;
    const ctx = { credentials: { data: reg.dockerConfig('alice') } };
    const ref = `${reg.host}/private/refresh@${sample.digest}`;
    const before = issuer.counts.issued;
    // the registry allows 60 s of clock skew: this token is good for about 2 s, though the
    // issuer tells the client it lives for 5 minutes, so the client keeps it cached
    issuer.nextLifetime = -58;
    const resolved = await src.resolve(spec(ref), ctx);
    const dir = await src.fetch(spec(ref), resolved, await store(), ctx);
    expect(await readFile(join(dir, 'hello.yaml'), 'utf8')).toBe('refresh: true\n');
    expect(issuer.counts.issued - before).toBe(1);
    await sleep(2500);
    await src.authorize(spec(ref), resolved, ctx);
    expect(issuer.counts.issued - before).toBe(2);
  });
});
