/**
 * Real OCI registries for tests and benchmarks: Debian's `docker-registry` (distribution v2.8) on a
 * free loopback port, with no auth, htpasswd (Basic) auth or token auth; TLS from a generated CA;
 * a small in-process token issuer signing JWTs with a generated key and certificate; and a
 * counting (optionally tampering) HTTP proxy in front of a registry.
 *
 * Everything is started by the caller and stopped by `stop()`; processes are killed by their own
 * pid only.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createSign, randomBytes } from 'node:crypto';
import { openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sleep } from './wait.ts';

const run = promisify(execFile);

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createNetServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface TestPki {
  dir: string;
  caCert: string;
  caCertPath: string;
  /** server certificate for 127.0.0.1, 127.0.0.2 and localhost signed by the CA */
  serverCertPath: string;
  serverKeyPath: string;
  /** directory holding only ca.crt, for skopeo --*-cert-dir */
  certDir: string;
}

/** A CA and a loopback server certificate, generated with the openssl CLI. */
export async function makePki(dir: string): Promise<TestPki> {
  await mkdir(dir, { recursive: true });
  const p = (n: string): string => join(dir, n);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    p('ca.key'),
    '-out',
    p('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=hoist test ca',
  ]);
  await writeFile(
    p('server.ext'),
    'subjectAltName=IP:127.0.0.1,IP:127.0.0.2,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n',
  );
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', p('server.key'), '-out', p('server.csr'), '-subj', '/CN=127.0.0.1']);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    p('server.csr'),
    '-CA',
    p('ca.crt'),
    '-CAkey',
    p('ca.key'),
    '-CAcreateserial',
    '-out',
    p('server.crt'),
    '-days',
    '2',
    '-extfile',
    p('server.ext'),
  ]);
  const certDir = p('certs.d');
  await mkdir(certDir, { recursive: true });
  const caCert = await readFile(p('ca.crt'), 'utf8');
  await writeFile(join(certDir, 'ca.crt'), caCert);
  return { dir, caCert, caCertPath: p('ca.crt'), serverCertPath: p('server.crt'), serverKeyPath: p('server.key'), certDir };
}

export interface TokenIssuer {
  realm: string;
  service: string;
  issuer: string;
  rootCertBundle: string;
  /** token requests answered, by outcome */
  counts: { issued: number; denied: number };
  /**
   * When set, the next token's JWT expires this many seconds from now (it may be negative) while
   * the response still claims the normal `expires_in`: the client's cache keeps a token the
   * registry will refuse, which is how refresh-on-401 is tested. Reset after one token.
   */
  nextLifetime: number | undefined;
  stop(): Promise<void>;
}

export interface TokenIssuerOptions {
  users: Record<string, string>;
  /** repositories under this prefix need a user; others allow anonymous pull (default "private/") */
  privatePrefix?: string;
  /** token lifetime (default 300 s) */
  expiresIn?: number;
  pki: TestPki;
}

/**
 * The distribution token protocol's issuer: GET /token?service=&scope=repository:<name>:<actions>,
 * optional Basic credentials. Users get pull and push; anonymous callers get pull on public
 * repositories. Wrong credentials are a 401, like Docker Hub's auth service.
 */
export async function startTokenIssuer(opts: TokenIssuerOptions): Promise<TokenIssuer> {
  const dir = join(opts.pki.dir, 'token');
  await mkdir(dir, { recursive: true });
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    join(dir, 'signing.key'),
    '-out',
    join(dir, 'signing.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=hoist token signer',
  ]);
  const key = await readFile(join(dir, 'signing.key'), 'utf8');
  const certPem = await readFile(join(dir, 'signing.crt'), 'utf8');
  const certDer = Buffer.from(certPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64').toString('base64');
  const service = 'hoist-test-registry';
  const issuer = 'hoist-test-issuer';
  const privatePrefix = opts.privatePrefix ?? 'private/';
  const counts = { issued: 0, denied: 0 };
  const state: { nextLifetime: number | undefined } = { nextLifetime: undefined };
  const b64url = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

  const server = https.createServer({ cert: await readFile(opts.pki.serverCertPath), key: await readFile(opts.pki.serverKeyPath) }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    let user: string | undefined;
    const auth = req.headers.authorization;
    if (auth?.startsWith('Basic ')) {
      const [u, ...rest] = Buffer.from(auth.slice(6), 'base64').toString().split(':');
      if (!u || opts.users[u] !== rest.join(':')) {
        counts.denied++;
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"details":"incorrect username or password"}');
        return;
      }
      user = u;
    }
    const access = url.searchParams.getAll('scope').flatMap((s) => {
      const [type, name, actions] = s.split(':');
      if (type !== 'repository' || !name || !actions) return [];
      const wanted = actions.split(',');
      const granted = user ? wanted.filter((a) => a === 'pull' || a === 'push') : name.startsWith(privatePrefix) ? [] : wanted.filter((a) => a === 'pull');
      return [{ type, name, actions: granted }];
    });
    const now = Math.floor(Date.now() / 1000);
    const expiresIn = opts.expiresIn ?? 300;
    const header = { typ: 'JWT', alg: 'RS256', x5c: [certDer] };
    const lifetime = state.nextLifetime ?? expiresIn;
    state.nextLifetime = undefined;
    const claims = {
      iss: issuer,
      sub: user ?? '',
      aud: service,
      exp: now + lifetime,
      nbf: now - 300,
      iat: now - 300,
      jti: randomBytes(8).toString('hex'),
      access,
    };
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
    const sig = createSign('RSA-SHA256').update(input).sign(key);
    counts.issued++;
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ token: `${input}.${b64url(sig)}`, expires_in: expiresIn, issued_at: new Date().toISOString() }));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    realm: `https://127.0.0.1:${port}/token`,
    service,
    issuer,
    rootCertBundle: join(dir, 'signing.crt'),
    counts,
    get nextLifetime() {
      return state.nextLifetime;
    },
    set nextLifetime(v: number | undefined) {
      state.nextLifetime = v;
    },
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export type RegistryAuth = 'none' | 'htpasswd' | 'token';

export interface RegistryOptions {
  auth?: RegistryAuth;
  /** serve TLS with a generated CA (default: true for htpasswd and token, false for none) */
  tls?: boolean;
  /** users for htpasswd or the token issuer (default { hoist: 'hoist-secret' }) */
  users?: Record<string, string>;
  tokenExpiresIn?: number;
  /** working directory (default a fresh temp dir, removed on stop) */
  dir?: string;
}

export interface TestRegistry {
  /** host:port, e.g. 127.0.0.1:41234 */
  host: string;
  url: string;
  tls: boolean;
  pki: TestPki | undefined;
  issuer: TokenIssuer | undefined;
  users: Record<string, string>;
  dir: string;
  /** a dockerconfigjson Secret's data for `user` (default the first user) on this registry */
  dockerConfig(user?: string, password?: string, key?: string): Record<string, string>;
  /** an outage: stops the registry process (its data stays); `up()` serves the same data on the same port again */
  down(): Promise<void>;
  up(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `docker-registry serve` on a free loopback port and waits until it answers /v2/. */
export async function startRegistry(options: RegistryOptions = {}): Promise<TestRegistry> {
  const auth = options.auth ?? 'none';
  const tls = options.tls ?? auth !== 'none';
  const users = options.users ?? { hoist: 'hoist-secret' };
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'hoist-registry-')));
  const ownsDir = options.dir === undefined;
  await mkdir(dir, { recursive: true });
  const pki = tls || auth === 'token' ? await makePki(join(dir, 'pki')) : undefined;
  let issuer: TokenIssuer | undefined;
  const port = await freePort();
  const lines = [
    'version: 0.1',
    'log:',
    '  level: info',
    '  formatter: text',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${join(dir, 'data')}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`,
    `  secret: ${randomBytes(16).toString('hex')}`,
  ];
  if (tls && pki) lines.push('  tls:', `    certificate: ${pki.serverCertPath}`, `    key: ${pki.serverKeyPath}`);
  if (auth === 'htpasswd') {
    const entries: string[] = [];
    for (const [u, p] of Object.entries(users)) {
      const { stdout } = await run('htpasswd', ['-Bbn', u, p]);
      entries.push(stdout.trim());
    }
    await writeFile(join(dir, 'htpasswd'), `${entries.join('\n')}\n`);
    lines.push('auth:', '  htpasswd:', '    realm: hoist-test', `    path: ${join(dir, 'htpasswd')}`);
  }
  if (auth === 'token' && pki) {
    issuer = await startTokenIssuer({
      users,
      pki,
      ...(options.tokenExpiresIn ? { expiresIn: options.tokenExpiresIn } : {}),
    });
    lines.push(
      'auth:',
      '  token:',
      `    realm: ${issuer.realm}`,
      `    service: ${issuer.service}`,
      `    issuer: ${issuer.issuer}`,
      `    rootcertbundle: ${issuer.rootCertBundle}`,
    );
  }
  await writeFile(join(dir, 'config.yml'), `${lines.join('\n')}\n`);
  const log = openSync(join(dir, 'registry.log'), 'a');
  const serve = (): ChildProcess => spawn('docker-registry', ['serve', join(dir, 'config.yml')], { stdio: ['ignore', log, log] });
  let child = serve();
  const host = `127.0.0.1:${port}`;
  const url = `${tls ? 'https' : 'http'}://${host}`;
  const down = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(3000)]);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    }
  };
  const stop = async (): Promise<void> => {
    await down();
    await issuer?.stop();
    if (ownsDir) await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(url, pki?.caCert, child, join(dir, 'registry.log'));
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    host,
    url,
    tls,
    pki,
    issuer,
    users,
    dir,
    dockerConfig(user?: string, password?: string, key?: string): Record<string, string> {
      const u = user ?? Object.keys(users)[0]!;
      const p = password ?? users[u] ?? '';
      return { '.dockerconfigjson': JSON.stringify({ auths: { [key ?? host]: { auth: Buffer.from(`${u}:${p}`).toString('base64') } } }) };
    },
    down,
    async up() {
      await down();
      child = serve();
      await waitReady(url, pki?.caCert, child, join(dir, 'registry.log'));
    },
    stop,
  };
}

async function waitReady(url: string, ca: string | undefined, child: ChildProcess, logPath: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`docker-registry exited with ${child.exitCode}: ${await readFile(logPath, 'utf8').catch(() => '')}`);
    const status = await new Promise<number>((resolve) => {
      const mod = url.startsWith('https') ? https : http;
      const req = mod.get(`${url}/v2/`, ca ? { ca } : {}, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', () => resolve(0));
    });
    if (status === 200 || status === 401) return;
    if (Date.now() > deadline) throw new Error(`docker-registry at ${url} not ready: ${await readFile(logPath, 'utf8').catch(() => '')}`);
    await sleep(100);
  }
}

export interface ProxiedRequest {
  method: string;
  path: string;
  status: number;
  /** whether the request carried an Authorization header (its value is never kept) */
  authorized: boolean;
}

/** What a tamper hook may do to one response. */
export type Tamper =
  | { kind: 'flip-byte' }
  | { kind: 'truncate'; keep: number }
  | { kind: 'content-type'; value: string }
  | { kind: 'status'; status: number; headers?: Record<string, string>; times: number }
  /** answers without asking upstream */
  | { kind: 'respond'; status: number; headers: Record<string, string>; body: Buffer | string }
  /** answers with a redirect to another origin (blob storage) */
  | { kind: 'redirect'; location: string };

export interface CountingProxy {
  host: string;
  url: string;
  requests: ProxiedRequest[];
  /** requests whose path matches `re` (and method, when given) */
  count(re: RegExp, method?: string): number;
  reset(): void;
  /** decides per request whether and how to tamper with the upstream response */
  tamper: ((method: string, path: string) => Tamper | undefined) | undefined;
  stop(): Promise<void>;
}

/**
 * A plain-HTTP reverse proxy in front of `upstream` (http or https with `ca`): counts every
 * request and can corrupt, truncate or relabel responses, or answer with an error status first.
 */
export async function startCountingProxy(upstream: string, ca?: string): Promise<CountingProxy> {
  const up = new URL(upstream);
  const requests: ProxiedRequest[] = [];
  const statusLeft = new Map<string, number>();
  const proxy: CountingProxy = {
    host: '',
    url: '',
    requests,
    count: (re, method) => requests.filter((r) => re.test(r.path) && (!method || r.method === method)).length,
    reset: () => {
      requests.length = 0;
      statusLeft.clear();
    },
    tamper: undefined,
    stop: async () => {},
  };
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    const method = req.method ?? 'GET';
    const t = proxy.tamper?.(method, path);
    if (t?.kind === 'status') {
      const key = `${method} ${path}`;
      const left = statusLeft.get(key) ?? t.times;
      if (left > 0) {
        statusLeft.set(key, left - 1);
        requests.push({ method, path, status: t.status, authorized: req.headers.authorization !== undefined });
        req.resume();
        res.writeHead(t.status, t.headers ?? {}).end();
        return;
      }
    }
    if (t?.kind === 'respond' || t?.kind === 'redirect') {
      const status = t.kind === 'respond' ? t.status : 307;
      requests.push({ method, path, status, authorized: req.headers.authorization !== undefined });
      req.resume();
      if (t.kind === 'redirect') {
        res.writeHead(307, { location: t.location, 'content-length': '0' }).end();
        return;
      }
      const body = Buffer.from(t.body);
      res.writeHead(t.status, { ...t.headers, 'content-length': String(body.length) }).end(method === 'HEAD' ? undefined : body);
      return;
    }
    const mod = up.protocol === 'https:' ? https : http;
    const headers = { ...req.headers, host: up.host };
    const upReq = mod.request({ hostname: up.hostname, port: up.port, path, method, headers, ...(ca ? { ca } : {}) }, (upRes) => {
      requests.push({ method, path, status: upRes.statusCode ?? 0, authorized: req.headers.authorization !== undefined });
      const h = { ...upRes.headers };
      // keep relative and absolute Locations pointing at the proxy, so counting sees every hop
      if (typeof h.location === 'string' && h.location.startsWith(upstream)) h.location = h.location.slice(upstream.length);
      if (t?.kind === 'content-type') h['content-type'] = t.value;
      if (t?.kind === 'flip-byte' && (upRes.statusCode ?? 0) < 300) {
        let first = true;
        res.writeHead(upRes.statusCode ?? 502, h);
        upRes.on('data', (chunk: Buffer) => {
          if (first && chunk.length > 0) {
            const c = Buffer.from(chunk);
            c[c.length >> 1] = (c[c.length >> 1] ?? 0) ^ 0xff;
            res.write(c);
            first = false;
          } else res.write(chunk);
        });
        upRes.on('end', () => res.end());
        return;
      }
      if (t?.kind === 'truncate' && (upRes.statusCode ?? 0) < 300 && method === 'GET') {
        // a complete, well-formed response that is simply shorter than the blob
        h['content-length'] = String(t.keep);
        res.writeHead(upRes.statusCode ?? 502, h);
        let sent = 0;
        upRes.on('data', (chunk: Buffer) => {
          const room = t.keep - sent;
          if (room > 0) res.write(chunk.subarray(0, room));
          sent += Math.min(room, chunk.length);
        });
        upRes.on('end', () => res.end());
        return;
      }
      res.writeHead(upRes.statusCode ?? 502, h);
      upRes.pipe(res);
    });
    upReq.on('error', () => {
      requests.push({ method, path, status: 502, authorized: req.headers.authorization !== undefined });
      res.writeHead(502).end();
    });
    req.pipe(upReq);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  proxy.host = `127.0.0.1:${port}`;
  proxy.url = `http://127.0.0.1:${port}`;
  proxy.stop = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}

/** Runs skopeo with the given args; returns stdout. Throws with stderr on failure. */
export async function skopeo(args: string[]): Promise<string> {
  try {
    const { stdout } = await run('skopeo', args, { maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`skopeo ${args[0]} failed: ${err.stderr ?? err.message}`);
  }
}
