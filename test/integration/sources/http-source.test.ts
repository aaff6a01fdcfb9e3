/**
 * The http source against a real HTTPS server on loopback (a test CA). 127.0.0.1 and 127.0.0.2
 * are two different hosts as far as credentials are concerned. Every request is recorded, so the
 * tests assert request budgets, not timings. The network rules shared by every source are tested
 * in network-rules.test.ts.
 */
import { createHash } from 'node:crypto';
import { type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../src/cache/fs-content-store.ts';
import { HttpSource } from '../../../src/sources/http-source.ts';
import { createSourceRegistry } from '../../../src/sources/registry.ts';
import type { SourceContext } from '../../../src/sources/source.ts';
import type { HoistError } from '../../../src/util/errors.ts';
import { buildTar, buildTarGz } from '../../unit/util/tar-fixtures.ts';
import { failure } from '../../support/failure.ts';
import { makePki, type TestPki } from '../../support/registry.ts';

const FIXTURE = new URL('../../../testdata/fixtures/plain/argo-rollouts-v1.8.4/install.yaml', import.meta.url).pathname;
const USER = 'deployer';
const PASSWORD = 's3cret-pa55';
const TOKEN = 'tok-abc123';

interface Seen {
  host: 'a' | 'b';
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

let install: string;
let tgz: Buffer;
let plainTar: Buffer;
let otherTgz: Buffer;
let seen: Seen[] = [];
let a: Server;
let b: Server;
let A: string;
let B: string;
let pki: TestPki & { serverCert: Buffer; serverKey: Buffer };
let pkiDir: string;

const sha = (buf: Buffer): string => createHash('sha256').update(buf).digest('hex');

function listen(server: Server, host: string): Promise<string> {
  return new Promise((resolve) => server.listen(0, host, () => resolve(`https://${host}:${(server.address() as AddressInfo).port}`)));
}

const createServer = (handler: (req: IncomingMessage, res: ServerResponse) => void): Server =>
  createHttpsServer({ cert: pki.serverCert, key: pki.serverKey }, handler);

beforeAll(async () => {
  pkiDir = await mkdtemp(join(tmpdir(), 'hoist-http-pki-'));
  const made = await makePki(pkiDir);
  pki = { ...made, serverCert: await readFile(made.serverCertPath), serverKey: await readFile(made.serverKeyPath) };
  install = await readFile(FIXTURE, 'utf8');
  tgz = await buildTarGz([{ header: { name: 'manifests/install.yaml' }, body: install }]);
  otherTgz = await buildTarGz([{ header: { name: 'other.yaml' }, body: 'kind: Other\n' }]);
  plainTar = await buildTar([{ header: { name: 'install.yaml' }, body: install }]);
  const lastModified = new Date('2025-03-01T10:00:00Z').toUTCString();

  a = createServer((req, res) => {
    seen.push({ host: 'a', method: req.method ?? '', path: req.url ?? '', headers: req.headers });
    const path = (req.url ?? '').split('?')[0];
    const basicOk = req.headers.authorization === `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
    const bearerOk = req.headers.authorization === `Bearer ${TOKEN}`;
    const send = (body: Buffer, headers: Record<string, string> = {}): void => {
      res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': String(body.length), ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    switch (path) {
      case '/bundle.tar.gz': {
        const etag = `"${sha(tgz).slice(0, 16)}"`;
        if (req.headers['if-none-match'] === etag) {
          res.writeHead(304, { etag });
          res.end();
          return;
        }
        return send(tgz, { etag, 'last-modified': lastModified });
      }
      case '/slow.tar.gz':
        // keeps the response in flight long enough for concurrent callers to overlap
        setTimeout(() => send(tgz), 150);
        return;
      case '/plain.tar':
        return send(plainTar, { 'content-type': 'application/x-tar' });
      case '/private.tar.gz':
        if (!basicOk && !bearerOk) {
          res.writeHead(401, { 'www-authenticate': 'Basic realm="hoist"' });
          res.end('unauthorized');
          return;
        }
        return send(tgz);
      case '/redirect-same':
        res.writeHead(302, { location: '/private.tar.gz' });
        res.end();
        return;
      case '/redirect-cross':
        res.writeHead(302, { location: `${B}/mirror.tar.gz` });
        res.end();
        return;
      case '/garbage':
        return send(Buffer.from('<html><body>welcome to our download portal</body></html>\n'.repeat(40)), { 'content-type': 'text/html' });
      case '/truncated.tar.gz':
        return send(tgz.subarray(0, Math.floor(tgz.length / 2)));
      case '/error':
        res.writeHead(503);
        res.end('maintenance');
        return;
      default:
        res.writeHead(404);
        res.end('not found');
    }
  });
  b = createServer((req, res) => {
    seen.push({ host: 'b', method: req.method ?? '', path: req.url ?? '', headers: req.headers });
    if (req.url === '/mirror.tar.gz') {
      res.writeHead(200, { 'content-length': String(otherTgz.length) });
      res.end(otherTgz);
      return;
    }
    res.writeHead(404);
    res.end();
  });
  A = await listen(a, '127.0.0.1');
  B = await listen(b, '127.0.0.2');
});

afterAll(async () => {
  a.closeAllConnections();
  b.closeAllConnections();
  await new Promise((r) => a.close(r));
  await new Promise((r) => b.close(r));
  await rm(pkiDir, { recursive: true, force: true });
});

let root: string;
let store: FsContentStore;
let sources: HttpSource[] = [];
beforeEach(async () => {
  seen = [];
  root = await mkdtemp(join(tmpdir(), 'hoist-http-it-'));
  store = new FsContentStore({ root });
});
afterEach(async () => {
  for (const s of sources) await s.close();
  sources = [];
  await rm(root, { recursive: true, force: true });
});

function source(opts: ConstructorParameters<typeof HttpSource>[0] = {}): HttpSource {
  const s = new HttpSource({ ca: pki.caCert, ...opts });
  sources.push(s);
  return s;
}

const spec = (url: string, sha256?: string): SourceSpec => ({ kind: 'http', http: { url, ...(sha256 ? { sha256 } : {}) } });
const hostOf = (url: string): string => new URL(url).host;
/** a secret bound to host A (127.0.0.1) */
const bound = (data: Record<string, string>): SourceContext => ({ credentials: { data, secret: 'test/creds', hosts: [hostOf(A)] } });
const basicCreds = (): SourceContext => bound({ username: USER, password: PASSWORD });

function noSecrets(e: HoistError): void {
  const text = `${e.message} ${e.subject ?? ''} ${e.describe()} ${JSON.stringify(e)}`;
  expect(text).not.toContain(PASSWORD);
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain(Buffer.from(`${USER}:${PASSWORD}`).toString('base64'));
}

describe('http source: pinned', () => {
  it('resolves with no request, fetches once, then serves from the cache with ZERO requests', async () => {
    const s = source();
    const r = await s.resolve(spec(`${A}/bundle.tar.gz`, sha(tgz)), {});
    expect(r).toEqual({ status: { kind: 'http', sha256: sha(tgz) }, key: `sha256:${sha(tgz)}`, pinned: true });
    expect(seen).toHaveLength(0);

    const dir = await s.fetch(spec(`${A}/bundle.tar.gz`, sha(tgz)), r, store, {});
    expect(await readFile(join(dir, 'manifests/install.yaml'), 'utf8')).toBe(install);
    expect(seen).toHaveLength(1);

    // same process, and a new process (new source, new store object on the same cache dir)
    expect(await s.fetch(spec(`${A}/bundle.tar.gz`, sha(tgz)), r, store, {})).toBe(dir);
    expect(await source().fetch(spec(`${A}/bundle.tar.gz`, sha(tgz)), r, new FsContentStore({ root }), {})).toBe(dir);
    expect(seen).toHaveLength(1);
  });

  it('two concurrent fetches of one key download ONCE', async () => {
    const s = source();
    const r = await s.resolve(spec(`${A}/slow.tar.gz`, sha(tgz)), {});
    const [d1, d2, d3] = await Promise.all([
      s.fetch(spec(`${A}/slow.tar.gz`, sha(tgz)), r, store, {}),
      s.fetch(spec(`${A}/slow.tar.gz`, sha(tgz)), r, store, {}),
      source().fetch(spec(`${A}/slow.tar.gz`, sha(tgz)), r, store, {}),
    ]);
    expect(d1).toBe(d2);
    expect(d2).toBe(d3);
    expect(seen.filter((x) => x.method === 'GET')).toHaveLength(1);
  });

  it('a pin mismatch is terminal, names the URL without credentials and both digests, and stores nothing', async () => {
    const wrong = 'ab'.repeat(32);
    const s = source();
    const url = `${A}/private.tar.gz?token=${TOKEN}`;
    const r = await s.resolve(spec(url, wrong), basicCreds());
    const e = await failure(s.fetch(spec(url, wrong), r, store, basicCreds()));
    expect(e.code).toBe('digest-mismatch');
    expect(e.stage).toBe('fetch');
    expect(e.terminal).toBe(true);
    expect(e.subject).toBe(`${A}/private.tar.gz`);
    expect(e.message).toContain(wrong);
    expect(e.message).toContain(sha(tgz));
    noSecrets(e);
    expect(await store.list()).toEqual([]);
    expect(seen[0]?.headers.authorization).toMatch(/^Basic /);
  });

  it('refuses credentials written into the URL (they belong in a Secret), naming the URL without them', async () => {
    const e = await failure(source().resolve(spec(`https://${USER}:${PASSWORD}@${hostOf(A)}/private.tar.gz`, sha(tgz)), {}));
    expect(e).toMatchObject({ stage: 'spec', code: 'credentials-in-url', terminal: true, subject: `${A}/private.tar.gz` });
    noSecrets(e);
    expect(seen).toHaveLength(0);
  });

  it('unpacks an uncompressed tar too', async () => {
    const s = source();
    const r = await s.resolve(spec(`${A}/plain.tar`, sha(plainTar)), {});
    const dir = await s.fetch(spec(`${A}/plain.tar`, sha(plainTar)), r, store, {});
    expect(await readFile(join(dir, 'install.yaml'), 'utf8')).toBe(install);
  });
});

describe('http source: unpinned', () => {
  it('resolve downloads into the store, fetch then makes no request', async () => {
    const s = source({ store });
    const r = await s.resolve(spec(`${A}/bundle.tar.gz`), {});
    expect(r.pinned).toBe(false);
    expect(r.key).toBe(`sha256:${sha(tgz)}`);
    expect(r.status).toMatchObject({ kind: 'http', sha256: sha(tgz), lastModified: 'Sat, 01 Mar 2025 10:00:00 GMT' });
    expect(r.status.etag).toMatch(/^"[0-9a-f]{16}"$/);
    expect(seen).toHaveLength(1);
    const dir = await s.fetch(spec(`${A}/bundle.tar.gz`), r, store, {});
    expect(await readFile(join(dir, 'manifests/install.yaml'), 'utf8')).toBe(install);
    expect(seen).toHaveLength(1);
  });

  it('without a store at hand, resolve only hashes the download and fetch downloads again', async () => {
    const s = createSourceRegistry({ ca: pki.caCert }).sourceFor('http') as HttpSource;
    sources.push(s);
    const r = await s.resolve(spec(`${A}/bundle.tar.gz`), {});
    const dir = await s.fetch(spec(`${A}/bundle.tar.gz`), r, store, {});
    expect(await readFile(join(dir, 'manifests/install.yaml'), 'utf8')).toBe(install);
    expect(seen.map((x) => x.method)).toEqual(['GET', 'GET']);
  });

  it('a re-check sends If-None-Match / If-Modified-Since and a 304 keeps the previous resolution', async () => {
    const s = source({ store });
    const first = await s.resolve(spec(`${A}/bundle.tar.gz`), {});
    const again = await s.resolve(spec(`${A}/bundle.tar.gz`), { previous: first.status, recheck: true });
    expect(seen).toHaveLength(2);
    expect(seen[1]?.headers['if-none-match']).toBe(first.status.etag);
    expect(seen[1]?.headers['if-modified-since']).toBe(first.status.lastModified);
    expect(again).toEqual({ status: first.status, key: first.key, pinned: false });
  });
});

describe('http source: credentials', () => {
  it('sends Basic auth from the secret and refuses without it (401, terminal, no secrets in the error)', async () => {
    const s = source();
    const e = await failure(s.resolve(spec(`${A}/private.tar.gz`), {}));
    expect(e).toMatchObject({ stage: 'resolve', code: 'unauthorized', terminal: true, subject: `${A}/private.tar.gz` });
    expect(e.message).toContain('401');

    const r = await source({ store }).resolve(spec(`${A}/private.tar.gz`), basicCreds());
    expect(r.key).toBe(`sha256:${sha(tgz)}`);
  });

  it('sends a token as Bearer', async () => {
    const s = source();
    const r = await s.resolve(spec(`${A}/private.tar.gz`, sha(tgz)), {});
    await s.fetch(spec(`${A}/private.tar.gz`, sha(tgz)), r, store, bound({ token: TOKEN }));
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('keeps Authorization on a same-host redirect and drops it on a cross-host one', async () => {
    const s = source();
    const same = await s.resolve(spec(`${A}/redirect-same`, sha(tgz)), {});
    await s.fetch(spec(`${A}/redirect-same`, sha(tgz)), same, store, basicCreds());
    expect(seen.map((x) => [x.host, x.path, x.headers.authorization !== undefined])).toEqual([
      ['a', '/redirect-same', true],
      ['a', '/private.tar.gz', true],
    ]);

    seen = [];
    const cross = await s.resolve(spec(`${A}/redirect-cross`, sha(otherTgz)), {});
    const dir = await s.fetch(spec(`${A}/redirect-cross`, sha(otherTgz)), cross, store, basicCreds());
    expect(await readFile(join(dir, 'other.yaml'), 'utf8')).toBe('kind: Other\n');
    expect(seen.map((x) => [x.host, x.path, x.headers.authorization])).toEqual([
      ['a', '/redirect-cross', `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`],
      ['b', '/mirror.tar.gz', undefined],
    ]);
  });

  it('a cache hit of private content needs proof of access once per caller, then none, also after a restart', async () => {
    const s = source();
    const r = await s.resolve(spec(`${A}/private.tar.gz`, sha(tgz)), {});
    await s.fetch(spec(`${A}/private.tar.gz`, sha(tgz)), r, store, basicCreds());
    await s.fetch(spec(`${A}/private.tar.gz`, sha(tgz)), r, store, basicCreds());
    expect(seen.map((x) => x.method)).toEqual(['GET']);

    // another caller without credentials does not get the private content from the cache
    const e = await failure(s.fetch(spec(`${A}/private.tar.gz`, sha(tgz)), r, store, {}));
    expect(e).toMatchObject({ code: 'unauthorized', terminal: true });
    expect(seen.map((x) => x.method)).toEqual(['GET', 'HEAD']);

    // a restarted controller (new source, store reopened from disk): the proof is durable, so
    // the same credential needs no request and the anonymous caller is still refused
    const fresh = source();
    const reopened = new FsContentStore({ root });
    await fresh.fetch(spec(`${A}/private.tar.gz`, sha(tgz)), r, reopened, basicCreds());
    expect(seen.map((x) => x.method)).toEqual(['GET', 'HEAD']);
    expect(await failure(fresh.fetch(spec(`${A}/private.tar.gz`, sha(tgz)), r, reopened, {}))).toMatchObject({ code: 'unauthorized' });
    expect(seen.map((x) => x.method)).toEqual(['GET', 'HEAD', 'HEAD']);
    // another credential that the server accepts proves access with one HEAD, not a download
    await fresh.fetch(spec(`${A}/private.tar.gz`, sha(tgz)), r, reopened, bound({ token: TOKEN }));
    await fresh.fetch(spec(`${A}/private.tar.gz`, sha(tgz)), r, reopened, bound({ token: TOKEN }));
    expect(seen.map((x) => x.method)).toEqual(['GET', 'HEAD', 'HEAD', 'HEAD']);
  });
});

describe('http source: failures', () => {
  it('404 is terminal and names the URL without its query', async () => {
    const s = source();
    const url = `${A}/nope.tar.gz?token=${TOKEN}`;
    const r = await s.resolve(spec(url, sha(tgz)), {});
    const e = await failure(s.fetch(spec(url, sha(tgz)), r, store, {}));
    expect(e).toMatchObject({ stage: 'fetch', reason: 'FetchFailed', code: 'not-found', terminal: true, subject: `${A}/nope.tar.gz` });
    expect(e.message).toBe('http 404 not found');
    noSecrets(e);
  });

  it('5xx is transient', async () => {
    const e = await failure(source().resolve(spec(`${A}/error`), basicCreds()));
    expect(e).toMatchObject({ code: 'http-status', terminal: false });
    expect(e.message).toContain('503');
    noSecrets(e);
  });

  it('a refused connection is transient', async () => {
    const closed = createServer(() => undefined);
    const url = await listen(closed, '127.0.0.1');
    await new Promise((r) => closed.close(r));
    const e = await failure(source().resolve(spec(`${url}/x.tar.gz`), { credentials: { data: { username: USER, password: PASSWORD }, hosts: [hostOf(url)] } }));
    expect(e).toMatchObject({ stage: 'resolve', code: 'network', terminal: false });
    noSecrets(e);
  });

  it('a body that is not a tar, and a truncated gzip, are bad archives and leave the store empty', async () => {
    const s = source({ store });
    const e1 = await failure(s.resolve(spec(`${A}/garbage`), {}));
    expect(e1).toMatchObject({ stage: 'fetch', code: 'bad-archive', terminal: true, subject: `${A}/garbage` });
    const pin = sha(tgz.subarray(0, Math.floor(tgz.length / 2)));
    const r = await s.resolve(spec(`${A}/truncated.tar.gz`, pin), {});
    const e2 = await failure(s.fetch(spec(`${A}/truncated.tar.gz`, pin), r, store, {}));
    expect(e2).toMatchObject({ code: 'bad-archive', terminal: true });
    expect(await store.list()).toEqual([]);
  });
});
