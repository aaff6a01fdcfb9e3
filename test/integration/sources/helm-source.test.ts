/**
 * The helm source against real chart repositories: directories made by the real `helm package`
 * and `helm repo index`, served over HTTPS on loopback with a test CA. Host A (127.0.0.1) wants
 * Basic auth for everything; host B (127.0.0.2) serves tarballs anonymously and records every
 * Authorization header it receives, so the tests see where credentials went. Request budgets
 * are counted at the servers, never timed.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { HelmSource as HelmSpec, SourceSpec } from '../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../src/cache/fs-content-store.ts';
import { HelmSource, type HelmSourceOptions } from '../../../src/sources/helm/helm-source.ts';
import type { Credentials, SourceContext } from '../../../src/sources/source.ts';
import { failure } from '../../support/failure.ts';
import { aliasBombEntries } from '../../support/hostile-bundles.ts';
import { makeChartRepo, type ChartRepo } from '../../support/helm-repo.ts';
import { startFileServer, type FileServer } from '../../support/http-files.ts';
import { makePki, type TestPki } from '../../support/registry.ts';

const USER = 'charts-reader';
const PASSWORD = 'charts-pw-71c3-never-shown';
const BASIC = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

let work: string;
let pki: TestPki;
let a: FileServer;
let b: FileServer;
let repo: ChartRepo;
let cdn: ChartRepo;
let store: FsContentStore;
const sources: HelmSource[] = [];
const digests = new Map<string, string>();

const sha = (buf: Buffer): string => createHash('sha256').update(buf).digest('hex');
const hostOf = (s: FileServer): string => new URL(s.url('/')).host;

function source(opts: HelmSourceOptions = {}): HelmSource {
  const s = new HelmSource({ store, ...opts });
  sources.push(s);
  return s;
}

const spec = (h: Partial<HelmSpec> = {}): SourceSpec => ({ kind: 'helm', helm: { repoURL: a.url('/charts'), chart: 'greeter', ...h } });
const credentials = (hosts = [hostOf(a)]): Credentials => ({ data: { username: USER, password: PASSWORD }, secret: 'ns/charts', hosts });
const ctx = (extra: Partial<SourceContext> = {}): SourceContext => ({
  credentials: credentials(),
  ca: { pem: pki.caCert, ref: 'secret ns/ca key ca.crt' },
  ...extra,
});

/** requests since the last reset, as `METHOD path` on each host, with whether Authorization came */
function seen(): string[] {
  const line = (host: string) => (r: { method: string; path: string; authorization: string | undefined }) =>
    `${host} ${r.method} ${r.path}${r.authorization === undefined ? '' : r.authorization === BASIC ? ' (auth)' : ' (other auth)'}`;
  return [...a.log.map(line('a')), ...b.log.map(line('b'))];
}

/** publishes `text` as the index at `path` on host A */
function setIndex(path: string, text: string): void {
  a.set(path, Buffer.from(text));
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-helm-source-'));
  pki = await makePki(join(work, 'pki'));
  a = await startFileServer({ tls: pki, auth: { username: USER, password: PASSWORD }, host: '127.0.0.1' });
  b = await startFileServer({ tls: pki, host: '127.0.0.2' });
  repo = makeChartRepo(join(work, 'repo'));
  for (const v of ['1.1.0', '1.2.0', '2.0.0']) repo.package(v);
  repo.index();
  repo.publish(a, '/charts');
  for (const v of ['1.1.0', '1.2.0', '2.0.0']) digests.set(v, sha(await readFile(join(repo.dir, `greeter-${v}.tgz`))));
  // the same charts, indexed with absolute URLs on host B
  cdn = makeChartRepo(join(work, 'cdn'));
  cdn.package('1.2.0');
  cdn.index(b.url('/pkgs'));
  b.set('/pkgs/greeter-1.2.0.tgz', await readFile(join(cdn.dir, 'greeter-1.2.0.tgz')));
  setIndex('/cdn/index.yaml', cdn.indexText());
}, 120_000);

afterAll(async () => {
  await Promise.all(sources.map((s) => s.close()));
  await a?.close();
  await b?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

beforeEach(async () => {
  store = new FsContentStore({ root: await mkdtemp(join(work, 'store-')) });
  a.log.length = 0;
  b.log.length = 0;
});

describe('helm source: a range over a real repository', () => {
  it('resolves >=1.2 <2 to 1.2.0 with one authenticated index request; fetch downloads the chart once, then serves it from the store', async () => {
    const s = source();
    const r = await s.resolve(spec({ version: '>=1.2 <2' }), ctx());
    expect(r).toMatchObject({
      key: `sha256:${digests.get('1.2.0')}`,
      pinned: false,
      status: { kind: 'helm', version: '1.2.0', sha256: digests.get('1.2.0'), chartURL: a.url('/charts/greeter-1.2.0.tgz') },
    });
    expect(r.status.etag).toMatch(/^"/);
    expect(seen()).toEqual(['a GET /charts/index.yaml (auth)']);

    const dir = await s.fetch(spec({ version: '>=1.2 <2' }), r, store, ctx());
    expect(await readFile(join(dir, 'greeter', 'Chart.yaml'), 'utf8')).toContain('version: 1.2.0');
    expect(seen()).toEqual(['a GET /charts/index.yaml (auth)', 'a GET /charts/greeter-1.2.0.tgz (auth)']);
    // the same BD again: proven, no request
    expect(await s.fetch(spec({ version: '>=1.2 <2' }), r, store, ctx())).toBe(dir);
    expect(seen()).toHaveLength(2);
  });

  it('an exact version, no version (the newest release) and a pre-release range', async () => {
    const s = source();
    expect((await s.resolve(spec({ version: '1.1.0' }), ctx())).status.version).toBe('1.1.0');
    expect((await s.resolve(spec({}), ctx())).status.version).toBe('2.0.0');
    expect((await s.resolve(spec({ version: '~1.1' }), ctx())).status.version).toBe('1.1.0');
  });

  it('re-checks with If-None-Match: a 304 keeps the resolution; a new version in the index is chosen', async () => {
    // a clock that moves on every reading: a resolution made by a 200 says when, a kept one does not change
    let tick = Date.parse('2026-01-01T00:00:00Z');
    const s = source({ now: () => new Date((tick += 1000)) });
    const next = makeChartRepo(join(work, 'next'));
    next.package('1.2.0');
    next.index();
    next.publish(a, '/next');
    const onNext = spec({ repoURL: a.url('/next'), version: '>=1.2 <2' });
    const first = await s.resolve(onNext, ctx());
    expect(first.status.version).toBe('1.2.0');
    const previous = { ...first.status, generation: 1 };
    // without a re-check: the recorded resolution, no request
    expect((await s.resolve(onNext, ctx({ previous }))).status).toEqual(previous);
    expect(a.log).toHaveLength(1);
    // re-checked, unchanged: 304, the resolution kept as it was
    expect((await s.resolve(onNext, ctx({ previous, recheck: true }))).status).toEqual(previous);
    expect(a.log).toHaveLength(2);

    // 1.3.0 published and indexed: the re-check chooses it
    next.package('1.3.0');
    next.index();
    next.publish(a, '/next');
    const upgraded = await s.resolve(onNext, ctx({ previous, recheck: true }));
    expect(upgraded.status).toMatchObject({ version: '1.3.0', sha256: sha(await readFile(join(next.dir, 'greeter-1.3.0.tgz'))) });
    expect(upgraded.status.etag).not.toBe(previous.etag);
    expect(upgraded.status.resolvedAt).not.toBe(previous.resolvedAt);
    expect(seen()).toEqual(['a GET /next/index.yaml (auth)', 'a GET /next/index.yaml (auth)', 'a GET /next/index.yaml (auth)']);
  });
});

describe('helm source: credentials and chart URLs on another host', () => {
  it('absolute chart URLs on another host are downloaded without the repository credentials', async () => {
    const s = source();
    const r = await s.resolve(spec({ repoURL: a.url('/cdn'), version: '1.2.0' }), ctx());
    expect(r.status.chartURL).toBe(b.url('/pkgs/greeter-1.2.0.tgz'));
    const dir = await s.fetch(spec({ repoURL: a.url('/cdn'), version: '1.2.0' }), r, store, ctx());
    expect(await readFile(join(dir, 'greeter', 'Chart.yaml'), 'utf8')).toContain('version: 1.2.0');
    expect(seen()).toEqual(['a GET /cdn/index.yaml (auth)', 'b GET /pkgs/greeter-1.2.0.tgz']);
    // even when the Secret names host B too: the repository's credentials stay with its own origin
    b.log.length = 0;
    await s.fetch(spec({ repoURL: a.url('/cdn'), version: '1.2.0' }), r, new FsContentStore({ root: await mkdtemp(join(work, 'other-')) }), {
      ...ctx(),
      credentials: credentials([hostOf(a), hostOf(b)]),
    });
    expect(b.log.map((l) => l.authorization)).toEqual([undefined]);
  });

  it('an http error from the other host says the credentials were not sent there, and why', async () => {
    const s = source();
    setIndex('/gone/index.yaml', cdn.indexText().replace('/pkgs/greeter-1.2.0.tgz', '/pkgs/missing-1.2.0.tgz'));
    const r = await s.resolve(spec({ repoURL: a.url('/gone'), version: '1.2.0' }), ctx());
    const e = await failure(s.fetch(spec({ repoURL: a.url('/gone'), version: '1.2.0' }), r, store, ctx()));
    expect(e).toMatchObject({ stage: 'fetch', code: 'not-found', terminal: true, subject: b.url('/pkgs/missing-1.2.0.tgz') });
    expect(e.message).toContain(`the repository's auth Secret is sent only to https://${hostOf(a)}`);
    expect(e.message).not.toContain(PASSWORD);
  });

  it('a Secret not bound to the repository host is refused before any request; without credentials the server says 401', async () => {
    const s = source();
    const e = await failure(s.resolve(spec(), ctx({ credentials: credentials(['charts.example.com']) })));
    expect(e).toMatchObject({ stage: 'resolve', code: 'credential-host-mismatch', terminal: true });
    expect(seen()).toEqual([]);
    const anonymous = await failure(s.resolve(spec(), { ca: ctx().ca! }));
    expect(anonymous).toMatchObject({ stage: 'resolve', code: 'unauthorized', subject: a.url('/charts/index.yaml') });
  });

  it("TLS is verified: without the repository's CA the host and the unknown authority are named", async () => {
    const e = await failure(source().resolve(spec(), { credentials: credentials() }));
    expect(e).toMatchObject({ stage: 'resolve', code: 'tls-verify-failed', terminal: true, subject: a.url('/charts/index.yaml') });
    expect(e.message).toContain('certificate signed by unknown authority');
    expect(seen()).toEqual([]);
  });
});

describe('helm source: bad repositories', () => {
  it('an index over the size limit is refused naming the limit and the flag', async () => {
    const e = await failure(source({ maxIndexBytes: 1024 }).resolve(spec(), ctx()));
    expect(e).toMatchObject({ stage: 'resolve', code: 'too-large', terminal: true, subject: a.url('/charts/index.yaml') });
    expect(e.message).toBe('index.yaml is larger than 1 KiB, the limit (hoist run --helm-index-max-size); nothing of it was read further');
    // the default admits it
    expect((await source().resolve(spec(), ctx())).status.version).toBe('2.0.0');
  });

  it('no version in the range: the chart, the range and the newest versions are named; retried', async () => {
    const e = await failure(source().resolve(spec({ version: '>=5' }), ctx()));
    expect(e).toMatchObject({ stage: 'resolve', code: 'no-matching-version', terminal: false, subject: a.url('/charts/index.yaml') });
    expect(e.message).toBe('chart "greeter" has no version ">=5"; newest in the index: 2.0.0, 1.2.0, 1.1.0 (3 versions)');
  });

  it('a chart the index does not list is named with the charts it does list', async () => {
    const e = await failure(source().resolve(spec({ chart: 'grafana' }), ctx()));
    expect(e).toMatchObject({ stage: 'resolve', code: 'unknown-chart', terminal: false });
    expect(e.message).toBe(`chart "grafana" is not in the repository's index.yaml (1 charts: greeter)`);
  });

  it('a tarball that does not match the index digest is refused and nothing lands in the store', async () => {
    const wrong = 'f'.repeat(64);
    setIndex('/tampered/index.yaml', repo.indexText().replace(digests.get('1.2.0')!, wrong).replaceAll('- greeter-', '- ../charts/greeter-'));
    const s = source();
    const r = await s.resolve(spec({ repoURL: a.url('/tampered'), version: '1.2.0' }), ctx());
    expect(r.key).toBe(`sha256:${wrong}`);
    const e = await failure(s.fetch(spec({ repoURL: a.url('/tampered'), version: '1.2.0' }), r, store, ctx()));
    expect(e).toMatchObject({ stage: 'fetch', code: 'digest-mismatch', terminal: true, subject: a.url('/charts/greeter-1.2.0.tgz') });
    expect(e.message).toBe(`chart greeter 1.2.0: digest mismatch: index.yaml gives sha256 ${wrong}, the server sent sha256 ${digests.get('1.2.0')}`);
    expect(await store.has(r.key)).toBe(false);
    expect(await store.has(`sha256:${digests.get('1.2.0')}`)).toBe(false);
  });

  it('an index entry without a digest is downloaded by resolve, hashed, and found by fetch', async () => {
    setIndex(
      '/nodigest/index.yaml',
      repo
        .indexText()
        .replace(/^\s+digest: .*\n/gm, '')
        .replaceAll('- greeter-', '- ../charts/greeter-'),
    );
    const s = source();
    const r = await s.resolve(spec({ repoURL: a.url('/nodigest'), version: '1.2.0' }), ctx());
    expect(r.key).toBe(`sha256:${digests.get('1.2.0')}`);
    expect(seen()).toEqual(['a GET /nodigest/index.yaml (auth)', 'a GET /charts/greeter-1.2.0.tgz (auth)']);
    await s.fetch(spec({ repoURL: a.url('/nodigest'), version: '1.2.0' }), r, store, ctx());
    expect(seen()).toHaveLength(2);
  });

  it('a digest that is not a sha256 is refused, naming the version', async () => {
    setIndex('/baddigest/index.yaml', repo.indexText().replace(digests.get('1.2.0')!, 'md5:abc'));
    const e = await failure(source().resolve(spec({ repoURL: a.url('/baddigest'), version: '1.2.0' }), ctx()));
    expect(e).toMatchObject({ stage: 'resolve', code: 'invalid-index', terminal: true });
    expect(e.message).toContain('chart greeter 1.2.0: the index gives a digest that is not a sha256');
  });

  it('an alias bomb in index.yaml is refused by the node budget', async () => {
    setIndex('/bomb/index.yaml', `apiVersion: v1\n${aliasBombEntries(8)}entries:\n  greeter: [*l8]\n`);
    const e = await failure(source().resolve(spec({ repoURL: a.url('/bomb') }), ctx()));
    expect(e).toMatchObject({ stage: 'resolve', code: 'invalid-index', terminal: true });
    expect(e.message).toContain('nodes (the limit per document; aliases are counted as expanded)');
  });
});

describe('helm source: pinned by sha256', () => {
  it('resolves without a request; fetch reads the index once to find the tarball, then downloads it', async () => {
    const s = source();
    const pinned = spec({ version: '1.2.0', sha256: digests.get('1.2.0')! });
    const r = await s.resolve(pinned, ctx());
    expect(r).toEqual({ status: { kind: 'helm', sha256: digests.get('1.2.0'), version: '1.2.0' }, key: `sha256:${digests.get('1.2.0')}`, pinned: true });
    expect(seen()).toEqual([]);
    await s.fetch(pinned, r, store, ctx());
    expect(seen()).toEqual(['a GET /charts/index.yaml (auth)', 'a GET /charts/greeter-1.2.0.tgz (auth)']);
    // a pin found by its digest, whatever the range says
    const byDigest = spec({ version: '>=1 <3', sha256: digests.get('1.1.0')! });
    const dir = await s.fetch(byDigest, await s.resolve(byDigest, ctx()), store, ctx());
    expect(await readFile(join(dir, 'greeter', 'Chart.yaml'), 'utf8')).toContain('version: 1.1.0');
  });

  it('a pin the repository does not serve is a terminal mismatch', async () => {
    const s = source();
    const pinned = spec({ version: '1.2.0', sha256: 'e'.repeat(64) });
    const e = await failure(s.fetch(pinned, await s.resolve(pinned, ctx()), store, ctx()));
    expect(e).toMatchObject({ stage: 'fetch', code: 'digest-mismatch', terminal: true });
    expect(e.message).toContain(`spec pins sha256 ${'e'.repeat(64)}, the server sent sha256 ${digests.get('1.2.0')}`);
  });
});
