/**
 * The image source against a real registry (Debian docker-registry, no auth, plain HTTP on
 * loopback) behind a counting, tampering proxy. Images are pushed with Hoist's own push code and
 * checked with skopeo; one image is re-published by skopeo in Docker v2 format.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../../src/cache/fs-content-store.ts';
import { RegistryClient, type OperationContext } from '../../../../src/sources/image/client.ts';
import { ImageSource, type ImageSourceOptions } from '../../../../src/sources/image/image-source.ts';
import { MEDIA_TYPES } from '../../../../src/sources/image/manifest.ts';
import { directoryEntries, fileLayer, pushImage, pushIndex, writeLayer, type LayerEntry } from '../../../../src/sources/image/push.ts';
import { parseReference } from '../../../../src/sources/image/reference.ts';
import { HoistError } from '../../../../src/util/errors.ts';
import { expectNoControllerPaths } from '../../../support/controller-paths.ts';
import { startCountingProxy, startRegistry, skopeo, type CountingProxy, type TestRegistry } from '../../../support/registry.ts';
import { FakeClock } from '../../../support/fake-clock.ts';
import { waitUntil } from '../../../support/wait.ts';

const CHART_DIR = join(import.meta.dirname, '../../../../testdata/fixtures/helm/argo-rollouts-2.40.10');

let reg: TestRegistry;
let proxy: CountingProxy;
let work: string;
let pusher: RegistryClient;
const pushCtx: OperationContext = { stage: 'fetch' };
const sources: ImageSource[] = [];

function source(opts: ImageSourceOptions = {}): ImageSource {
  const s = new ImageSource({ insecureHosts: [proxy.host, reg.host], retry: { baseDelayMs: 10 }, ...opts });
  sources.push(s);
  return s;
}

async function store(): Promise<FsContentStore> {
  return new FsContentStore({ root: await mkdtemp(join(work, 'store-')) });
}

function spec(ref: string): SourceSpec {
  return { kind: 'image', image: { ref } };
}

/** pushes one image made of `layers` (each a list of tar entries) to the real registry */
async function push(
  name: string,
  layers: LayerEntry[][],
  opts: { compression?: 'gzip' | 'zstd' | 'none'; platform?: { os: string; architecture: string } } = {},
) {
  const built = [];
  for (const entries of layers) built.push(await writeLayer(entries, join(work, `layer-${Math.random().toString(36).slice(2)}`), opts.compression ?? 'gzip'));
  return pushImage(pusher, parseReference(`${reg.host}/${name}`), built, pushCtx, opts.platform ? { platform: opts.platform } : {});
}

async function tree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of (await readdir(join(dir, prefix), { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(`${rel}/`, ...(await tree(dir, rel)));
    else out.push(rel);
  }
  return out;
}

async function rejection(p: Promise<unknown>): Promise<HoistError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof HoistError) {
      // a condition message: never the store's or any temp directory (issue 16)
      expectNoControllerPaths(e.describe(), [work]);
      return e;
    }
    throw e;
  }
  throw new Error('expected a HoistError');
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-image-it-'));
  reg = await startRegistry({ auth: 'none' });
  proxy = await startCountingProxy(reg.url);
  pusher = new RegistryClient({ insecureHosts: [reg.host] });
  await push('acme/app:v1', [
    [
      { name: 'manifests/', type: 'directory' },
      { name: 'manifests/cm.yaml', data: 'kind: ConfigMap\nmetadata: {name: a}\n' },
    ],
  ]);
});

afterAll(async () => {
  for (const s of sources) await s.close();
  await pusher?.close();
  await proxy?.stop();
  await reg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('image source against docker-registry', () => {
  it('pushes with its own code; skopeo reads back the same manifest', async () => {
    const pushed = await push('acme/check:v1', [[{ name: 'x.txt', data: 'x' }]]);
    const raw = await skopeo(['inspect', '--raw', '--tls-verify=false', `docker://${reg.host}/acme/check:v1`]);
    expect(raw).toBe(pushed.manifest.toString());
    const info = JSON.parse(await skopeo(['inspect', '--tls-verify=false', `docker://${reg.host}/acme/check:v1`])) as { Digest: string; Layers: string[] };
    expect(info.Digest).toBe(pushed.digest);
    expect(info.Layers).toHaveLength(1);
  });

  it('resolves a tag with one HEAD, fetches once, and a second fetch makes zero requests', async () => {
    const src = source();
    const st = await store();
    proxy.reset();
    const resolved = await src.resolve(spec(`${proxy.host}/acme/app:v1`), {});
    expect(proxy.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['HEAD /v2/acme/app/manifests/v1']);
    expect(resolved.pinned).toBe(false);
    expect(resolved.key).toBe(`oci:${resolved.status.digest}`);
    expect(resolved.status).toEqual({ kind: 'image', digest: expect.stringMatching(/^sha256:/), ref: `${proxy.host}/acme/app:v1@${resolved.status.digest}` });

    proxy.reset();
    const dir = await src.fetch(spec(`${proxy.host}/acme/app:v1`), resolved, st, {});
    expect(await tree(dir)).toEqual(['manifests/', 'manifests/cm.yaml']);
    expect(proxy.count(/\/manifests\//, 'GET')).toBe(1);
    expect(proxy.count(/\/blobs\//, 'GET')).toBe(1);

    proxy.reset();
    expect(await src.fetch(spec(`${proxy.host}/acme/app:v1`), resolved, st, {})).toBe(dir);
    expect(proxy.requests).toEqual([]);
  });

  it('pinned references resolve without the network and are served from the store with zero requests', async () => {
    const pushed = await push('acme/pinned:v1', [[{ name: 'a.yaml', data: 'a: 1\n' }]]);
    const ref = `${proxy.host}/acme/pinned@${pushed.digest}`;
    const st = await store();
    proxy.reset();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    expect(resolved).toMatchObject({ pinned: true, key: `oci:${pushed.digest}`, status: { kind: 'image', digest: pushed.digest, ref } });
    expect(proxy.requests).toEqual([]);
    await src.fetch(spec(ref), resolved, st, {});
    proxy.reset();
    // the same source again: the download proved this identity's access, so the hit is free
    const hit = await src.fetch(spec(ref), await src.resolve(spec(ref), {}), st, {});
    expect(proxy.requests).toEqual([]);
    expect(await readFile(join(hit, 'a.yaml'), 'utf8')).toBe('a: 1\n');
    // a fresh source and store on the same root (a restarted controller): the proof is on disk, also free
    const again = source();
    const dir = await again.fetch(spec(ref), await again.resolve(spec(ref), {}), new FsContentStore({ root: st.root }), {});
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe('a: 1\n');
    expect(proxy.requests).toEqual([]);
  });

  it('downloads once when two fetches of one digest run concurrently', async () => {
    const pushed = await push('acme/concurrent:v1', [[{ name: 'big.bin', data: Buffer.alloc(2 * 1024 * 1024, 7) }], [{ name: 'b.yaml', data: 'b: 2\n' }]]);
    const ref = `${proxy.host}/acme/concurrent@${pushed.digest}`;
    const st = await store();
    const a = source();
    const b = source();
    proxy.reset();
    const [da, db] = await Promise.all([
      a.fetch(spec(ref), await a.resolve(spec(ref), {}), st, {}),
      b.fetch(spec(ref), await b.resolve(spec(ref), {}), st, {}),
    ]);
    expect(da).toBe(db);
    expect(proxy.count(/\/blobs\//, 'GET')).toBe(2); // two layers, each once
    expect(proxy.count(/\/manifests\//, 'GET')).toBe(1);
    // b waited for a's download with the same (anonymous) identity: one HEAD proves its access
    expect(proxy.count(/\/manifests\//, 'HEAD')).toBeLessThanOrEqual(1);
    expect((await stat(join(da, 'big.bin'))).size).toBe(2 * 1024 * 1024);
  });

  it('selects the platform from an index (default linux/amd64, configurable) and records it', async () => {
    const amd = await push('acme/multi:amd64', [[{ name: 'arch.txt', data: 'amd64' }]], { platform: { os: 'linux', architecture: 'amd64' } });
    const arm = await push('acme/multi:arm64', [[{ name: 'arch.txt', data: 'arm64' }]], { platform: { os: 'linux', architecture: 'arm64' } });
    const index = await pushIndex(pusher, parseReference(`${reg.host}/acme/multi:v1`), [arm.descriptor, amd.descriptor], pushCtx);
    const ref = `${proxy.host}/acme/multi:v1`;

    proxy.reset();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    expect(resolved.status).toEqual({ kind: 'image', digest: index.digest, ref: `${ref}@${amd.digest}` });
    expect(resolved.key).toBe(`oci:${index.digest}`);
    expect(proxy.requests.map((r) => r.method)).toEqual(['HEAD', 'GET']);
    const dir = await src.fetch(spec(ref), resolved, await store(), {});
    expect(await readFile(join(dir, 'arch.txt'), 'utf8')).toBe('amd64');

    const armSrc = source({ platform: 'linux/arm64' });
    const armResolved = await armSrc.resolve(spec(ref), {});
    expect(armResolved.status.ref).toBe(`${ref}@${arm.digest}`);
    expect(armResolved.key).toBe(`oci:${index.digest}:linux-arm64`);
    const armDir = await armSrc.fetch(spec(ref), armResolved, await store(), {});
    expect(await readFile(join(armDir, 'arch.txt'), 'utf8')).toBe('arm64');

    const s390 = source({ platform: 'linux/s390x' });
    const e = await rejection(s390.resolve(spec(ref), {}));
    expect(e).toMatchObject({ stage: 'resolve', code: 'platform-not-found', terminal: true });
    expect(e.message).toContain('linux/amd64');
  });

  it('unpacks zstd and uncompressed layers', async () => {
    for (const compression of ['zstd', 'none'] as const) {
      const pushed = await push(`acme/${compression}:v1`, [[{ name: 'c.txt', data: compression }]], { compression });
      const m = JSON.parse(pushed.manifest.toString()) as { layers: { mediaType: string }[] };
      expect(m.layers[0]!.mediaType).toBe(compression === 'zstd' ? MEDIA_TYPES.ociLayerZstd : MEDIA_TYPES.ociLayerTar);
      const ref = `${proxy.host}/acme/${compression}@${pushed.digest}`;
      const src = source();
      const dir = await src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {});
      expect(await readFile(join(dir, 'c.txt'), 'utf8')).toBe(compression);
    }
  });

  it('applies layers in order with whiteouts and opaque directories', async () => {
    const pushed = await push('acme/whiteout:v1', [
      [
        { name: 'keep.yaml', data: 'keep' },
        { name: 'gone.yaml', data: 'gone' },
        { name: 'dir/', type: 'directory' },
        { name: 'dir/old.yaml', data: 'old' },
        { name: 'dir/sub/', type: 'directory' },
        { name: 'dir/sub/x.yaml', data: 'x' },
        { name: 'over.yaml', data: 'v1' },
      ],
      [
        { name: '.wh.gone.yaml', data: '' },
        { name: 'dir/', type: 'directory' },
        { name: 'dir/.wh..wh..opq', data: '' },
        { name: 'dir/new.yaml', data: 'new' },
        { name: 'over.yaml', data: 'v2' },
      ],
    ]);
    const ref = `${proxy.host}/acme/whiteout@${pushed.digest}`;
    const src = source();
    const dir = await src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {});
    expect(await tree(dir)).toEqual(['dir/', 'dir/new.yaml', 'keep.yaml', 'over.yaml']);
    expect(await readFile(join(dir, 'over.yaml'), 'utf8')).toBe('v2');
  });

  it('unpacks a Helm OCI chart artifact with Chart.yaml at the destination root', async () => {
    const entries = async function* (): AsyncGenerator<LayerEntry> {
      for await (const e of directoryEntries(CHART_DIR)) yield { ...e, name: `argo-rollouts/${e.name}` };
    };
    const tgz = await writeLayer(entries(), join(work, 'chart.tgz'), 'gzip');
    const layer = await fileLayer(tgz.path, MEDIA_TYPES.helmChart);
    const config = Buffer.from(JSON.stringify({ name: 'argo-rollouts', version: '2.40.10', apiVersion: 'v2' }));
    const pushed = await pushImage(pusher, parseReference(`${reg.host}/charts/argo-rollouts:2.40.10`), [layer], pushCtx, {
      configMediaType: MEDIA_TYPES.helmConfig,
      config,
    });
    const info = JSON.parse(await skopeo(['inspect', '--raw', '--tls-verify=false', `docker://${reg.host}/charts/argo-rollouts:2.40.10`])) as {
      config: { mediaType: string };
    };
    expect(info.config.mediaType).toBe(MEDIA_TYPES.helmConfig);

    let kind = '';
    const src = source({ onPull: (r) => (kind = r.kind) });
    const ref = `${proxy.host}/charts/argo-rollouts:2.40.10`;
    const dir = await src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {});
    expect(kind).toBe('helm-chart');
    expect(await readFile(join(dir, 'Chart.yaml'), 'utf8')).toBe(await readFile(join(CHART_DIR, 'Chart.yaml'), 'utf8'));
    expect((await readdir(join(dir, 'templates'))).length).toBeGreaterThan(5);
    expect(await readdir(dir)).not.toContain('argo-rollouts');
    expect(pushed.digest).toMatch(/^sha256:/);
  });

  it('pulls an image that skopeo re-published as Docker v2 schema 2', async () => {
    const oci = join(work, 'oci-layout');
    await skopeo(['copy', '--src-tls-verify=false', `docker://${reg.host}/acme/app:v1`, `oci:${oci}:v1`]);
    await skopeo(['copy', '--dest-tls-verify=false', '--format', 'v2s2', `oci:${oci}:v1`, `docker://${reg.host}/acme/docker-format:v1`]);
    const raw = JSON.parse(await skopeo(['inspect', '--raw', '--tls-verify=false', `docker://${reg.host}/acme/docker-format:v1`])) as { mediaType: string };
    expect(raw.mediaType).toBe(MEDIA_TYPES.dockerManifest);
    const src = source();
    const ref = `${proxy.host}/acme/docker-format:v1`;
    const dir = await src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {});
    expect(await tree(dir)).toEqual(['manifests/', 'manifests/cm.yaml']);
  });
});

describe('image source failures are condition-ready HoistErrors and publish nothing', () => {
  it('unknown tag', async () => {
    const e = await rejection(source().resolve(spec(`${proxy.host}/acme/app:nope`), {}));
    expect(e).toMatchObject({ stage: 'resolve', reason: 'ResolveFailed', code: 'not-found', subject: `${proxy.host}/acme/app:nope` });
    expect(e.describe()).toBe(`resolve ${proxy.host}/acme/app:nope: manifest nope not found (404)`);
  });

  it('blob digest mismatch (tampered blob)', async () => {
    const pushed = await push('acme/tamper:v1', [[{ name: 't.yaml', data: 't'.repeat(10_000) }]]);
    const ref = `${proxy.host}/acme/tamper@${pushed.digest}`;
    const st = await store();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    proxy.tamper = (m, p) => (m === 'GET' && p.includes('/blobs/') ? { kind: 'flip-byte' } : undefined);
    try {
      const e = await rejection(src.fetch(spec(ref), resolved, st, {}));
      // the decompressor trips over the flipped byte first; the blob is then hashed to the end so the
      // error names the real cause
      expect(e).toMatchObject({ stage: 'fetch', reason: 'FetchFailed', code: 'digest-mismatch', terminal: true, subject: ref });
      expect(await st.has(resolved.key)).toBe(false);
    } finally {
      proxy.tamper = undefined;
    }
  });

  it('blob digest mismatch on an uncompressed layer is reported as such', async () => {
    const pushed = await push('acme/tamper-tar:v1', [[{ name: 't.yaml', data: 't'.repeat(10_000) }]], { compression: 'none' });
    const ref = `${proxy.host}/acme/tamper-tar@${pushed.digest}`;
    const st = await store();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    proxy.tamper = (m, p) => (m === 'GET' && p.includes('/blobs/') ? { kind: 'flip-byte' } : undefined);
    try {
      const e = await rejection(src.fetch(spec(ref), resolved, st, {}));
      expect(e).toMatchObject({ stage: 'fetch', reason: 'FetchFailed', code: 'digest-mismatch', terminal: true, subject: ref });
      expect(e.message).toMatch(/^blob digest mismatch: expected sha256:[0-9a-f]{64}, got sha256:[0-9a-f]{64}$/);
      expect(await st.has(resolved.key)).toBe(false);
    } finally {
      proxy.tamper = undefined;
    }
  });

  it('truncated blob', async () => {
    const pushed = await push('acme/truncated:v1', [[{ name: 'big.bin', data: randomBytes(300_000) }]]);
    const ref = `${proxy.host}/acme/truncated@${pushed.digest}`;
    const st = await store();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    proxy.tamper = (m, p) => (m === 'GET' && p.includes('/blobs/') ? { kind: 'truncate', keep: 1000 } : undefined);
    try {
      const e = await rejection(src.fetch(spec(ref), resolved, st, {}));
      expect(e.stage).toBe('fetch');
      expect(e).toMatchObject({ code: 'truncated', terminal: false, subject: ref });
      expect(e.message).toMatch(/is truncated: 1000 of \d+ bytes/);
      expect(await st.has(resolved.key)).toBe(false);
    } finally {
      proxy.tamper = undefined;
    }
  });

  it('unsupported manifest media type', async () => {
    const schema1 = Buffer.from(JSON.stringify({ schemaVersion: 1, name: 'acme/old', tag: 'v1', fsLayers: [], history: [] }));
    const digest = `sha256:${(await import('node:crypto')).createHash('sha256').update(schema1).digest('hex')}`;
    const ref = `${proxy.host}/acme/old@${digest}`;
    proxy.tamper = (_m, p) =>
      p.startsWith('/v2/acme/old/manifests/')
        ? { kind: 'respond', status: 200, headers: { 'content-type': 'application/vnd.docker.distribution.manifest.v1+prettyjws' }, body: schema1 }
        : undefined;
    try {
      const src = source();
      const e = await rejection(src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {}));
      expect(e).toMatchObject({ stage: 'fetch', code: 'unsupported-media-type', terminal: true, subject: ref });
      expect(e.message).toContain('application/vnd.docker.distribution.manifest.v1+prettyjws');
    } finally {
      proxy.tamper = undefined;
    }
  });

  it('unsupported layer media type, refused before any blob is downloaded', async () => {
    const blob = await writeLayer([{ name: 'a', data: 'a' }], join(work, 'odd-layer'), 'none');
    const pushed = await pushImage(pusher, parseReference(`${reg.host}/acme/odd:v1`), [{ ...blob, mediaType: 'application/vnd.example.weird.layer' }], pushCtx);
    const ref = `${proxy.host}/acme/odd@${pushed.digest}`;
    const src = source();
    proxy.reset();
    const e = await rejection(src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {}));
    expect(e).toMatchObject({ stage: 'fetch', code: 'unsupported-media-type', terminal: true });
    expect(e.message).toContain('application/vnd.example.weird.layer');
    expect(proxy.count(/\/blobs\//)).toBe(0);
  });

  it('a layer with ../ entries', async () => {
    const pushed = await push('acme/traversal:v1', [
      [
        { name: 'ok.yaml', data: 'ok' },
        { name: '../../etc/evil', data: 'x' },
      ],
    ]);
    const ref = `${proxy.host}/acme/traversal@${pushed.digest}`;
    const st = await store();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    const e = await rejection(src.fetch(spec(ref), resolved, st, {}));
    expect(e).toMatchObject({ stage: 'fetch', code: 'path-traversal', terminal: true, subject: ref });
    expect(await st.has(resolved.key)).toBe(false);
  });

  it('a symlink escaping the tree', async () => {
    const pushed = await push('acme/symlink:v1', [
      [
        { name: 'link', type: 'symlink', linkname: '../../../../etc' },
        { name: 'link/passwd', data: 'x' },
      ],
    ]);
    const ref = `${proxy.host}/acme/symlink@${pushed.digest}`;
    const st = await store();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    const e = await rejection(src.fetch(spec(ref), resolved, st, {}));
    expect(e).toMatchObject({ stage: 'fetch', code: 'symlink-escape', terminal: true, subject: ref });
    expect(await st.has(resolved.key)).toBe(false);
  });

  it('retries 503 honouring Retry-After, and gives up fast on a long 429 Retry-After', async () => {
    const ref = `${proxy.host}/acme/app:v1`;
    proxy.reset();
    proxy.tamper = (m) => (m === 'HEAD' ? { kind: 'status', status: 503, headers: { 'retry-after': '1' }, times: 1 } : undefined);
    const clock = new FakeClock();
    try {
      const resolving = source({ clock }).resolve(spec(ref), {});
      // the retry waits on the client's clock for exactly what Retry-After asked, not its own backoff
      await waitUntil('the 503 answered and the retry scheduled', () => clock.pending > 0);
      expect(clock.nextDue()).toBe(1000);
      expect(proxy.requests).toHaveLength(1);
      await clock.advance(1000);
      const r = await resolving;
      expect(r.status.digest).toMatch(/^sha256:/);
      expect(proxy.requests.map((x) => x.status)).toEqual([503, 200]);
      proxy.reset();
      proxy.tamper = (m) => (m === 'HEAD' ? { kind: 'status', status: 429, headers: { 'retry-after': '3600' }, times: 5 } : undefined);
      const e = await rejection(source().resolve(spec(ref), {}));
      expect(e).toMatchObject({ stage: 'resolve', code: 'rate-limited', terminal: false });
      expect(proxy.requests).toHaveLength(1);
    } finally {
      proxy.tamper = undefined;
    }
  });

  it('keeps retries bounded', async () => {
    const ref = `${proxy.host}/acme/app:v1`;
    proxy.reset();
    proxy.tamper = (m) => (m === 'HEAD' ? { kind: 'status', status: 502, times: 100 } : undefined);
    try {
      const e = await rejection(source({ retry: { attempts: 3, baseDelayMs: 5 } }).resolve(spec(ref), {}));
      expect(e).toMatchObject({ stage: 'resolve', code: 'http-status', terminal: false });
      expect(proxy.requests).toHaveLength(3);
    } finally {
      proxy.tamper = undefined;
    }
  });

  it('refuses plain HTTP unless the host is listed as insecure', async () => {
    const plain = new ImageSource({ retry: { attempts: 1 } });
    sources.push(plain);
    const e = await rejection(plain.resolve(spec(`${proxy.host}/acme/app:v1`), {}));
    // https spoken to a plain-http server: a configuration problem, retrying cannot fix it
    expect(e).toMatchObject({ stage: 'resolve', code: 'tls-verify-failed', terminal: true });
  });
});

describe('containment: the pulled tree as a whole (issue 8)', () => {
  it('a second layer that turns a directory into a link cannot make a first-layer link leave the tree', async () => {
    // layer 1: manifests/sub/sub/.../sub (20 real directories) and a link that climbs back out of
    // them: lexically and on layer 1's own tree it ends at etc/hostname inside the image
    const depth = 20;
    const dirs: LayerEntry[] = [{ name: 'manifests/', type: 'directory' }];
    for (let i = 1; i <= depth; i++) dirs.push({ name: `manifests/${'sub/'.repeat(i)}`, type: 'directory' });
    const layer1: LayerEntry[] = [
      ...dirs,
      { name: 'manifests/ok.yaml', data: 'kind: ConfigMap\n' },
      { name: 'manifests/cm.yaml', type: 'symlink', linkname: `${'sub/'.repeat(depth)}${'../'.repeat(depth + 1)}etc/hostname` },
    ];
    // layer 2: manifests/sub becomes a link to "." -- every sub/ now stays in manifests/, and the
    // link's ../ climb out of the tree to the controller's /etc/hostname
    const layer2: LayerEntry[] = [{ name: 'manifests/sub', type: 'symlink', linkname: '.' }];
    const pushed = await push('acme/layered-escape:v1', [layer1, layer2]);
    const ref = `${proxy.host}/acme/layered-escape@${pushed.digest}`;
    const st = await store();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    const e = await rejection(src.fetch(spec(ref), resolved, st, {}));
    expect(e).toMatchObject({ stage: 'fetch', code: 'symlink-escape', terminal: true, subject: 'manifests/cm.yaml' });
    expect(e.message).toContain(`image ${ref}: symlink "manifests/cm.yaml" leads outside the content tree`);
    expect(await st.has(resolved.key)).toBe(false);
  });

  it('links that stay inside the image keep working, also across layers', async () => {
    const pushed = await push('acme/inside-links:v1', [
      [
        { name: 'manifests/a.yaml', data: 'kind: A\n' },
        { name: 'manifests/b.yaml', type: 'symlink', linkname: 'a.yaml' },
      ],
      [{ name: 'more/c.yaml', type: 'symlink', linkname: '../manifests/b.yaml' }],
    ]);
    const ref = `${proxy.host}/acme/inside-links@${pushed.digest}`;
    const src = source();
    const dir = await src.fetch(spec(ref), await src.resolve(spec(ref), {}), await store(), {});
    expect(await readFile(join(dir, 'more/c.yaml'), 'utf8')).toBe('kind: A\n');
  });

  it('a Helm OCI chart holding a link is refused, naming it (helm never reads links in a chart archive)', async () => {
    // files/p points at the archive root next to the chart directory: after the chart is lifted
    // to the destination root, the same link would point above the tree
    const entries: LayerEntry[] = [
      { name: 'evil/Chart.yaml', data: 'apiVersion: v2\nname: evil\nversion: 0.1.0\n' },
      { name: 'evil/templates/cm.yaml', data: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {p: {{ .Files.Get "files/p" | quote }}}\n' },
      { name: 'evil/files/p', type: 'symlink', linkname: '../../secret' },
      { name: 'secret', data: 'not part of the chart' },
    ];
    const tgz = await writeLayer(entries, join(work, 'evil-chart.tgz'), 'gzip');
    const layer = await fileLayer(tgz.path, MEDIA_TYPES.helmChart);
    const config = Buffer.from(JSON.stringify({ name: 'evil', version: '0.1.0', apiVersion: 'v2' }));
    const pushed = await pushImage(pusher, parseReference(`${reg.host}/charts/evil:0.1.0`), [layer], pushCtx, {
      configMediaType: MEDIA_TYPES.helmConfig,
      config,
    });
    const ref = `${proxy.host}/charts/evil@${pushed.digest}`;
    const st = await store();
    const src = source();
    const resolved = await src.resolve(spec(ref), {});
    const e = await rejection(src.fetch(spec(ref), resolved, st, {}));
    expect(e).toMatchObject({ stage: 'fetch', code: 'link-refused', terminal: true, subject: ref });
    expect(e.message).toBe('entry "evil/files/p" is a symlink; this archive may hold regular files and directories only');
    expect(await st.has(resolved.key)).toBe(false);
  });
});
