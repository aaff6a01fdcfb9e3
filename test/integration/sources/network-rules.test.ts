/**
 * The network rules every source shares (src/sources/transport/transport.ts, credential-hosts.ts,
 * cached-fetch.ts), tested once for http, git and image (the proxy for helm too), as an attacker
 * would try them, against real servers on loopback: HTTPS file servers that log every request's
 * Authorization header, `git http-backend`, docker-registry, a forward proxy that logs CONNECTs,
 * and a server that trickles one byte a second. 127.0.0.1 and 127.0.0.2 are different hosts.
 */
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../src/cache/fs-content-store.ts';
import { GitSource } from '../../../src/sources/git/git-source.ts';
import { HelmSource } from '../../../src/sources/helm/helm-source.ts';
import { HttpSource } from '../../../src/sources/http-source.ts';
import { RegistryClient } from '../../../src/sources/image/client.ts';
import { ImageSource } from '../../../src/sources/image/image-source.ts';
import { pushImage, writeLayer } from '../../../src/sources/image/push.ts';
import { parseReference } from '../../../src/sources/image/reference.ts';
import type { Credentials, SourceContext } from '../../../src/sources/source.ts';
import { HoistError } from '../../../src/util/errors.ts';
import { startConnectProxy } from '../../support/connect-proxy.ts';
import { git, startGitServer, type GitServer } from '../../support/git-server.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../../support/http-files.ts';
import { makePki, startRegistry, type TestPki, type TestRegistry } from '../../support/registry.ts';
import { failure } from '../../support/failure.ts';
import { sleep } from '../../support/wait.ts';

const USER = 'tenant-a';
const PW = 'tenant-a-pw-never-shown';
const BASIC = `Basic ${Buffer.from(`${USER}:${PW}`).toString('base64')}`;

let work: string;
let pki: TestPki;
let cas: string;
/** the legitimate host: Basic auth required */
let hostA: FileServer;
/** another host on 127.0.0.2: logs whatever arrives */
let hostB: FileServer;
/** plain http on 127.0.0.1 */
let plain: FileServer;
let privateTgz: Buffer;
let otherTgz: Buffer;
/** git: a private repository over https, and an attacker's public one */
let gitPrivate: GitServer;
let gitAttacker: GitServer;
let commit: string;
/** registries: the victim's (htpasswd, TLS) and an attacker's (anonymous, plain http, insecure) */
let reg: TestRegistry;
let evilReg: TestRegistry;
let imageDigest: string;

const closers: Array<() => Promise<void>> = [];
const hostOf = (url: string): string => new URL(url).host;
const bound = (data: Record<string, string>, ...hosts: string[]): SourceContext => ({
  credentials: { data, secret: 'tenant-a/creds', hosts } satisfies Credentials,
});
const httpSpec = (url: string, pin?: string): SourceSpec => ({ kind: 'http', http: { url, ...(pin ? { sha256: pin } : {}) } });
const gitSpec = (repository: string, ref: { commit?: string; branch?: string }): SourceSpec => ({ kind: 'git', git: { repository, ref } });
const imageSpec = (ref: string): SourceSpec => ({ kind: 'image', image: { ref } });

function http(opts: ConstructorParameters<typeof HttpSource>[0] = {}): HttpSource {
  const s = new HttpSource({ ca: cas, ...opts });
  closers.push(() => s.close());
  return s;
}
function gitSource(opts: ConstructorParameters<typeof GitSource>[0] = {}): GitSource {
  const s = new GitSource({ caBundle: cas, ...opts });
  closers.push(() => s.close());
  return s;
}
function image(opts: ConstructorParameters<typeof ImageSource>[0] = {}): ImageSource {
  const s = new ImageSource({ ca: [cas], insecureHosts: [evilReg.host], retry: { attempts: 1 }, ...opts });
  closers.push(() => s.close());
  return s;
}

function expectNoSecret(e: HoistError): void {
  const text = `${e.message} ${e.describe()} ${JSON.stringify(e)}`;
  expect(text).not.toContain(PW);
  expect(text).not.toContain(BASIC.slice(6));
}

interface TestServer {
  url: string;
  log: Array<{ method: string; path: string; authorization: string | undefined }>;
  /** connections currently open */
  open(): number;
  close(): Promise<void>;
}

/** an https server on loopback with a request log and a count of open connections */
async function httpsServer(host: string, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  const log: TestServer['log'] = [];
  const sockets = new Set<Socket>();
  const server: Server = createHttpsServer({ cert: await readFile(pki.serverCertPath), key: await readFile(pki.serverKeyPath) }, (req, res) => {
    log.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization });
    handler(req, res);
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const url = `https://${host}:${(server.address() as AddressInfo).port}`;
  const s: TestServer = {
    url,
    log,
    open: () => sockets.size,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  closers.push(() => s.close());
  return s;
}

/**
 * A server on host A that asks for credentials (401 Basic) and redirects whoever presents them
 * to `target()` + the same path. With `anonymous`, it redirects without asking.
 */
async function redirector(target: () => string, anonymous = false): Promise<TestServer> {
  return httpsServer('127.0.0.1', (req, res) => {
    if (!anonymous && req.headers.authorization === undefined) return void res.writeHead(401, { 'www-authenticate': 'Basic realm="a"' }).end();
    res.writeHead(302, { location: `${target()}${req.url ?? '/'}` }).end();
  });
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-net-rules-'));
  pki = await makePki(join(work, 'pki'));
  privateTgz = await tarGz({ 'private.yaml': 'kind: ConfigMap\nmetadata: { name: tenant-a-private }\n' });
  otherTgz = await tarGz({ 'other.yaml': 'kind: ConfigMap\nmetadata: { name: attacker }\n' });
  hostA = await startFileServer({ tls: pki, auth: { username: USER, password: PW } });
  hostB = await startFileServer({ tls: pki, host: '127.0.0.2' });
  plain = await startFileServer();
  hostA.set('/private.tgz', privateTgz);
  hostB.set('/private.tgz', otherTgz);
  hostB.set('/mirror.tgz', otherTgz);

  // git: the victim's private repository (https, Basic) and an attacker's public one
  const repos = join(work, 'repos');
  const wc = join(work, 'wc');
  await mkdir(join(wc, 'manifests'), { recursive: true });
  git(wc, ['init', '-q', '-b', 'main']);
  await writeFile(join(wc, 'manifests', 'cm.yaml'), 'kind: ConfigMap\nmetadata: { name: tenant-a-git }\n');
  git(wc, ['add', '.']);
  git(wc, ['commit', '-qm', 'private']);
  commit = git(wc, ['rev-parse', 'HEAD']);
  await mkdir(repos);
  git(work, ['clone', '-q', '--bare', wc, join(repos, 'private.git')]);
  // the attacker's repository shares no object with the victim's
  const evilWc = join(work, 'evil-wc');
  await mkdir(evilWc);
  git(evilWc, ['init', '-q', '-b', 'main']);
  await writeFile(join(evilWc, 'cm.yaml'), 'kind: ConfigMap\nmetadata: { name: attacker }\n');
  git(evilWc, ['add', '.']);
  git(evilWc, ['commit', '-qm', 'attacker']);
  git(work, ['clone', '-q', '--bare', evilWc, join(repos, 'attacker.git')]);
  gitPrivate = await startGitServer({ projectRoot: repos, users: [{ username: USER, password: PW }], tls: pki });
  gitAttacker = await startGitServer({ projectRoot: repos, tls: pki });

  // images: the victim's private registry and an attacker's anonymous one
  reg = await startRegistry({ auth: 'htpasswd', users: { [USER]: PW } });
  evilReg = await startRegistry();
  cas = `${pki.caCert}\n${reg.pki!.caCert}`;
  const client = new RegistryClient({ ca: reg.pki!.caCert });
  try {
    const layer = await writeLayer([{ name: 'image.yaml', data: 'kind: ConfigMap\nmetadata: { name: tenant-a-image }\n' }], join(work, 'layer.tgz'));
    imageDigest = (
      await pushImage(client, parseReference(`${reg.host}/tenant-a/app:v1`), [layer], { stage: 'fetch', credential: { username: USER, password: PW } })
    ).digest;
  } finally {
    await client.close();
  }
}, 120_000);

afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => undefined);
  await hostA?.close();
  await hostB?.close();
  await plain?.close();
  await gitPrivate?.close();
  await gitAttacker?.close();
  await reg?.stop();
  await evilReg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const noAuth = (log: Array<{ authorization: string | undefined }>): boolean => log.every((r) => r.authorization === undefined);

describe('a Secret bound to host A is never sent to host B', () => {
  it('http: refused before any request, naming the URL and the secret, at resolve and at fetch', async () => {
    const creds = bound({ username: USER, password: PW }, hostOf(hostA.url('/')));
    const before = hostB.log.length;
    const url = hostB.url('/private.tgz?sig=query-is-not-shown');
    const r = await failure(http().resolve(httpSpec(url), creds));
    expect(r).toMatchObject({
      stage: 'resolve',
      reason: 'ResolveFailed',
      code: 'credential-host-mismatch',
      terminal: true,
      subject: hostB.url('/private.tgz'),
    });
    expect(r.message).toContain('secret tenant-a/creds is not bound to host 127.0.0.2:');
    expectNoSecret(r);
    const pinned = httpSpec(url, sha256(privateTgz));
    const f = await failure(
      http().fetch(
        pinned,
        { status: { kind: 'http', sha256: sha256(privateTgz) }, key: `sha256:${sha256(privateTgz)}`, pinned: true },
        new FsContentStore({ root: join(work, 'hb') }),
        creds,
      ),
    );
    expect(f).toMatchObject({ stage: 'fetch', code: 'credential-host-mismatch' });
    // a secret that names no hosts at all is not used either
    const unbound = await failure(
      http().resolve(httpSpec(hostA.url('/private.tgz')), { credentials: { data: { username: USER, password: PW }, secret: 'tenant-a/creds' } }),
    );
    expect(unbound).toMatchObject({ code: 'credential-hosts-missing' });
    expect(unbound.message).toContain('core.rukpak.io/credential-hosts');
    expect(hostB.log.length).toBe(before);
  });

  it('git: refused before any request (also for a pinned commit), host B sees nothing', async () => {
    const creds = bound({ username: USER, password: PW }, hostOf(hostA.url('/')));
    const before = hostB.log.length;
    for (const ref of [{ branch: 'main' }, { commit }]) {
      const e = await failure(gitSource().resolve(gitSpec(hostB.url('/repo.git'), ref), creds));
      expect(e).toMatchObject({ stage: 'resolve', code: 'credential-host-mismatch', terminal: true });
      expectNoSecret(e);
    }
    expect(hostB.log.length).toBe(before);
  });

  it('image: registry credentials for A are not sent to registry B (B is asked anonymously)', async () => {
    const creds: SourceContext = { credentials: { data: reg.dockerConfig(USER, PW) } };
    const before = hostB.log.length;
    await failure(image().resolve(imageSpec(`${hostOf(hostB.url('/'))}/tenant-a/app:v1`), creds));
    const seen = hostB.log.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    expect(noAuth(seen)).toBe(true);
  });
});

describe('credentials only over https', () => {
  it('http and git refuse a secret for an http:// URL before any request', async () => {
    const creds = bound({ username: USER, password: PW }, hostOf(plain.url('/')));
    const before = plain.log.length;
    const h = await failure(http().resolve(httpSpec(plain.url('/x.tgz')), creds));
    expect(h).toMatchObject({ stage: 'resolve', code: 'insecure-credentials', terminal: true });
    const g = await failure(gitSource().resolve(gitSpec(plain.url('/x.git'), { branch: 'main' }), creds));
    expect(g).toMatchObject({ stage: 'resolve', code: 'insecure-credentials', terminal: true });
    expect(plain.log.length).toBe(before);
  });
});

describe('redirects: to another origin without credentials, never from https to http', () => {
  it('http: a cross-origin redirect drops Authorization; https → http is refused', async () => {
    const toB = await redirector(() => hostOf(hostB.url('/')).replace(/^/, 'https://'));
    const creds = bound({ username: USER, password: PW }, hostOf(toB.url));
    const bBefore = hostB.log.length;
    const dir = await http().fetch(
      httpSpec(`${toB.url}/mirror.tgz`, sha256(otherTgz)),
      { status: { kind: 'http', sha256: sha256(otherTgz) }, key: `sha256:${sha256(otherTgz)}`, pinned: true },
      new FsContentStore({ root: join(work, 'r1') }),
      creds,
    );
    expect(await readFile(join(dir, 'other.yaml'), 'utf8')).toContain('attacker');
    expect(toB.log.map((r) => r.authorization)).toEqual([BASIC]);
    expect(hostB.log.slice(bBefore)).toEqual([{ method: 'GET', path: '/mirror.tgz', authorization: undefined }]);

    const toPlain = await redirector(() => plain.url('').replace(/\/$/, ''));
    const pBefore = plain.log.length;
    const e = await failure(http().resolve(httpSpec(`${toPlain.url}/x.tgz`), bound({ username: USER, password: PW }, hostOf(toPlain.url))));
    expect(e).toMatchObject({ stage: 'resolve', code: 'insecure-redirect', terminal: true });
    expect(plain.log.length).toBe(pBefore);
  });

  it('git: the ref advertisement follows the same rules; the git CLI follows no redirect with credentials and never downgrades', async () => {
    const toB = await redirector(() => `https://${hostOf(hostB.url('/'))}`);
    const creds = bound({ username: USER, password: PW }, hostOf(toB.url));
    const bBefore = hostB.log.length;
    await failure(gitSource().resolve(gitSpec(`${toB.url}/repo.git`, { branch: 'main' }), creds));
    expect(toB.log.map((r) => r.authorization)).toEqual([BASIC]);
    expect(hostB.log.slice(bBefore).map((r) => [r.path, r.authorization])).toEqual([['/repo.git/info/refs?service=git-upload-pack', undefined]]);

    // the CLI fetch: redirected, git stops instead of replaying the header elsewhere
    const bBeforeFetch = hostB.log.length;
    const f = await failure(
      gitSource().fetch(
        gitSpec(`${toB.url}/repo.git`, { commit }),
        { status: { kind: 'git', commit }, key: `git:${commit}:`, pinned: true },
        new FsContentStore({ root: join(work, 'g1') }),
        creds,
      ),
    );
    expect(f.stage).toBe('fetch');
    expect(noAuth(hostB.log.slice(bBeforeFetch))).toBe(true);

    // https → http: refused by the transport (resolve) and by git itself (fetch, no credentials involved)
    const toPlain = await redirector(() => plain.url('').replace(/\/$/, ''), true);
    const pBefore = plain.log.length;
    const r = await failure(gitSource().resolve(gitSpec(`${toPlain.url}/repo.git`, { branch: 'main' }), {}));
    expect(r).toMatchObject({ code: 'insecure-redirect' });
    await failure(
      gitSource().fetch(
        gitSpec(`${toPlain.url}/repo.git`, { commit }),
        { status: { kind: 'git', commit }, key: `git:${commit}:`, pinned: true },
        new FsContentStore({ root: join(work, 'g2') }),
        {},
      ),
    );
    expect(plain.log.length).toBe(pBefore);
  });

  it('image: after the registry challenge, a redirect to another origin goes without Authorization; https → http is refused', async () => {
    const toB = await redirector(() => `https://${hostOf(hostB.url('/'))}`);
    const creds: SourceContext = { credentials: { data: reg.dockerConfig(USER, PW, hostOf(toB.url)) } };
    const bBefore = hostB.log.length;
    await failure(image().resolve(imageSpec(`${hostOf(toB.url)}/tenant-a/app:v1`), creds));
    expect(toB.log.some((r) => r.authorization === BASIC)).toBe(true);
    const seen = hostB.log.slice(bBefore);
    expect(seen.length).toBeGreaterThan(0);
    expect(noAuth(seen)).toBe(true);

    const toPlain = await redirector(() => plain.url('').replace(/\/$/, ''));
    const pBefore = plain.log.length;
    const e = await failure(
      image().resolve(imageSpec(`${hostOf(toPlain.url)}/tenant-a/app:v1`), { credentials: { data: reg.dockerConfig(USER, PW, hostOf(toPlain.url)) } }),
    );
    expect(e).toMatchObject({ stage: 'resolve', code: 'insecure-redirect', terminal: true });
    expect(plain.log.length).toBe(pBefore);
  });
});

describe("a second tenant cannot obtain the first tenant's private content by digest", () => {
  it('http: its own server (HEAD 200, other bytes) and the victim URL without credentials are both refused, before and after a restart', async () => {
    const root = join(work, 'tenants-http');
    const key = `sha256:${sha256(privateTgz)}`;
    const resolved = { status: { kind: 'http' as const, sha256: sha256(privateTgz) }, key, pinned: true };
    await http().fetch(
      httpSpec(hostA.url('/private.tgz'), sha256(privateTgz)),
      resolved,
      new FsContentStore({ root }),
      bound({ username: USER, password: PW }, hostOf(hostA.url('/'))),
    );
    for (const phase of ['running', 'restarted']) {
      const store = new FsContentStore({ root }); // a restart reopens the store from disk
      const attacker = http();
      const own = await failure(attacker.fetch(httpSpec(hostB.url('/private.tgz'), sha256(privateTgz)), resolved, store, {}));
      expect([phase, own.code]).toEqual([phase, 'digest-mismatch']);
      const anon = await failure(attacker.fetch(httpSpec(hostA.url('/private.tgz'), sha256(privateTgz)), resolved, store, {}));
      expect([phase, anon.code]).toEqual([phase, 'unauthorized']);
    }
  });

  it('git: its own repository and the victim repository without credentials are both refused, before and after a restart', async () => {
    const root = join(work, 'tenants-git');
    const resolved = { status: { kind: 'git' as const, commit }, key: `git:${commit}:`, pinned: true };
    await gitSource().fetch(
      gitSpec(`${gitPrivate.url}/private.git`, { commit }),
      resolved,
      new FsContentStore({ root }),
      bound({ username: USER, password: PW }, hostOf(gitPrivate.url)),
    );
    for (const phase of ['running', 'restarted']) {
      const store = new FsContentStore({ root });
      const attacker = gitSource();
      const own = await failure(attacker.fetch(gitSpec(`${gitAttacker.url}/attacker.git`, { commit }), resolved, store, {}));
      expect([phase, own.code]).toEqual([phase, 'unknown-ref']);
      const anon = await failure(attacker.fetch(gitSpec(`${gitPrivate.url}/private.git`, { commit }), resolved, store, {}));
      expect([phase, anon.code]).toEqual([phase, 'auth-failed']);
    }
  });

  it('image: its own registry and the victim repository without credentials are both refused, before and after a restart', async () => {
    const root = join(work, 'tenants-image');
    const victimRef = `${reg.host}/tenant-a/app@${imageDigest}`;
    const victim = image();
    const creds: SourceContext = { credentials: { data: reg.dockerConfig(USER, PW) } };
    const resolved = await victim.resolve(imageSpec(victimRef), creds);
    await victim.fetch(imageSpec(victimRef), resolved, new FsContentStore({ root }), creds);
    for (const phase of ['running', 'restarted']) {
      const store = new FsContentStore({ root });
      const attacker = image();
      const own = await failure(attacker.fetch(imageSpec(`${evilReg.host}/attacker/app@${imageDigest}`), resolved, store, {}));
      expect([phase, own.code]).toEqual([phase, 'not-found']);
      const anon = await failure(attacker.fetch(imageSpec(victimRef), resolved, store, {}));
      expect([phase, anon.code]).toEqual([phase, 'credentials-required']);
    }
  });
});

describe('a trickling server does not hold a worker past the deadline', () => {
  /** headers at once, then one byte a second; HEAD never answers */
  const trickle = (): Promise<TestServer> =>
    httpsServer('127.0.0.1', (req, res) => {
      if (req.method === 'HEAD') return;
      res.writeHead(200, { 'content-type': 'application/x-git-upload-pack-advertisement', 'content-length': '1000000' });
      const t = setInterval(() => res.write('0'), 1000);
      res.on('close', () => clearInterval(t));
    });

  it.each([
    [
      'http fetch',
      (url: string) =>
        http({ timeoutMs: 1500 }).fetch(
          httpSpec(`${url}/x.tgz`, 'a'.repeat(64)),
          { status: { kind: 'http', sha256: 'a'.repeat(64) }, key: `sha256:${'a'.repeat(64)}`, pinned: true },
          new FsContentStore({ root: join(work, 't1') }),
          {},
        ),
    ],
    ['git resolve', (url: string) => gitSource({ resolveTimeoutMs: 1500 }).resolve(gitSpec(`${url}/r.git`, { branch: 'main' }), {})],
    [
      'git fetch',
      (url: string) =>
        gitSource({ fetchTimeoutMs: 1500 }).fetch(
          gitSpec(`${url}/r.git`, { commit }),
          { status: { kind: 'git', commit }, key: `git:${commit}:`, pinned: true },
          new FsContentStore({ root: join(work, 't2') }),
          {},
        ),
    ],
    ['image resolve', (url: string) => image({ timeoutMs: 1500 }).resolve(imageSpec(`${hostOf(url)}/a/b:v1`), {})],
  ])('%s: fails at the deadline, naming it, and the connection is closed', async (what, run) => {
    const t = await trickle();
    // the trickle would go on for minutes: failing at all, with this code and message, is the deadline's doing
    const e = await failure(run(t.url));
    expect(e).toMatchObject({ code: 'deadline-exceeded', terminal: false });
    expect(e.message).toMatch(/exceeded its deadline of 1500ms/);
    for (let i = 0; i < 100 && t.open() > 0; i++) await sleep(50);
    expect([what, t.open()]).toEqual([what, 0]);
  });

  it("the caller's abort signal ends a resolve too", async () => {
    const t = await trickle();
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('reconcile cancelled')), 300);
    await expect(http().resolve(httpSpec(`${t.url}/x.tgz`), { signal: ctl.signal })).rejects.toThrow('reconcile cancelled');
  });
});

/** runs `f` with HTTPS_PROXY (and NO_PROXY when given) set, restoring the environment afterwards */
async function withProxyEnv(httpsProxy: string, noProxy: string | undefined, f: () => Promise<void>): Promise<void> {
  const names = ['HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy'] as const;
  const saved = Object.fromEntries(names.map((k) => [k, process.env[k]]));
  for (const k of names) delete process.env[k];
  process.env.HTTPS_PROXY = httpsProxy;
  if (noProxy !== undefined) process.env.NO_PROXY = noProxy;
  try {
    await f();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('HTTPS_PROXY and NO_PROXY are honoured by every source', () => {
  it('http, git (resolve and the git CLI), image and helm all tunnel through the proxy', async () => {
    const proxy = await startConnectProxy();
    closers.push(() => proxy.close());
    await withProxyEnv(proxy.url, undefined, async () => {
      // sources read the proxy settings when they are created
      const dir = await http().fetch(
        httpSpec(hostA.url('/private.tgz'), sha256(privateTgz)),
        { status: { kind: 'http', sha256: sha256(privateTgz) }, key: `sha256:${sha256(privateTgz)}`, pinned: true },
        new FsContentStore({ root: join(work, 'p1') }),
        bound({ username: USER, password: PW }, hostOf(hostA.url('/'))),
      );
      expect(await readFile(join(dir, 'private.yaml'), 'utf8')).toContain('tenant-a-private');
      expect(proxy.connects).toContain(hostOf(hostA.url('/')));

      const g = gitSource();
      const gitCreds = bound({ username: USER, password: PW }, hostOf(gitPrivate.url));
      const resolved = await g.resolve(gitSpec(`${gitPrivate.url}/private.git`, { branch: 'main' }), gitCreds);
      const connectsBeforeFetch = proxy.connects.length;
      await g.fetch(gitSpec(`${gitPrivate.url}/private.git`, { branch: 'main' }), resolved, new FsContentStore({ root: join(work, 'p2') }), gitCreds);
      expect(proxy.connects.slice(connectsBeforeFetch)).toContain(hostOf(gitPrivate.url));

      const creds: SourceContext = { credentials: { data: reg.dockerConfig(USER, PW) } };
      const img = image();
      const r = await img.resolve(imageSpec(`${reg.host}/tenant-a/app:v1`), creds);
      expect(r.status.digest).toBe(imageDigest);
      expect(proxy.connects).toContain(reg.host);

      // a helm repository on host A whose index places the chart on host B: both through the proxy
      hostA.set('/helm/index.yaml', Buffer.from(`apiVersion: v1\nentries:\n  app:\n  - {version: 1.0.0, urls: ['${hostB.url('/mirror.tgz')}']}\n`));
      const helm = new HelmSource({ ca: cas });
      closers.push(() => helm.close());
      const helmSpec: SourceSpec = { kind: 'helm', helm: { repoURL: hostA.url('/helm'), chart: 'app' } };
      const helmCreds = bound({ username: USER, password: PW }, hostOf(hostA.url('/')));
      const connectsBeforeHelm = proxy.connects.length;
      await helm.fetch(helmSpec, await helm.resolve(helmSpec, helmCreds), new FsContentStore({ root: join(work, 'p3') }), helmCreds);
      expect(proxy.connects.slice(connectsBeforeHelm)).toEqual(expect.arrayContaining([hostOf(hostA.url('/')), hostOf(hostB.url('/'))]));
      expect(proxy.plain).toEqual([]);
    });
  });

  it('NO_PROXY hosts are reached directly by http, git (both paths) and image; other hosts still go through the proxy', async () => {
    const proxy = await startConnectProxy();
    closers.push(() => proxy.close());
    // everything but host B (127.0.0.2) runs on 127.0.0.1; curl (git) matches NO_PROXY by host name, without a port
    await withProxyEnv(proxy.url, '127.0.0.1', async () => {
      const dir = await http().fetch(
        httpSpec(hostA.url('/private.tgz'), sha256(privateTgz)),
        { status: { kind: 'http', sha256: sha256(privateTgz) }, key: `sha256:${sha256(privateTgz)}`, pinned: true },
        new FsContentStore({ root: join(work, 'np1') }),
        bound({ username: USER, password: PW }, hostOf(hostA.url('/'))),
      );
      expect(await readFile(join(dir, 'private.yaml'), 'utf8')).toContain('tenant-a-private');

      const g = gitSource();
      const gitCreds = bound({ username: USER, password: PW }, hostOf(gitPrivate.url));
      const spec = gitSpec(`${gitPrivate.url}/private.git`, { branch: 'main' });
      await g.fetch(spec, await g.resolve(spec, gitCreds), new FsContentStore({ root: join(work, 'np2') }), gitCreds);

      const r = await image().resolve(imageSpec(`${reg.host}/tenant-a/app:v1`), { credentials: { data: reg.dockerConfig(USER, PW) } });
      expect(r.status.digest).toBe(imageDigest);
      expect(proxy.connects).toEqual([]);

      // not listed: through the proxy
      await http().resolve(httpSpec(hostB.url('/mirror.tgz')), {});
      expect(proxy.connects).toEqual([hostOf(hostB.url('/'))]);
      expect(proxy.plain).toEqual([]);
    });
  });
});
