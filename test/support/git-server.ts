/**
 * A real git smart-HTTP server for tests and benchmarks: Debian's `git http-backend` run as a CGI
 * program behind a small node:http server on loopback. Request and response bodies are streamed
 * both ways (packs can be large); gzip request bodies are passed through with
 * HTTP_CONTENT_ENCODING so http-backend inflates them itself, exactly as it does behind Apache.
 *
 * Optional Basic auth (any of several user/password pairs), a request log for request budgets, and
 * a switch to refuse unadvertised wants (uploadpack.allowReachableSHA1InWant / AnySHA1InWant off).
 */
import { spawn, execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import type { TestPki } from './registry.ts';

export const GIT_HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

export interface GitServerOptions {
  /** directory holding the bare repositories served as /<name>.git */
  projectRoot: string;
  /** when set, every request must carry Basic credentials matching one of these pairs */
  users?: ReadonlyArray<{ username: string; password: string }>;
  /**
   * false: ignore the client's `Git-Protocol: version=2` header, so the server speaks only v0 and
   * refuses wants for commits no ref points at (unless uploadpack.allow*SHA1InWant is set), like
   * old servers and proxies that drop the header. Default true.
   */
  protocolV2?: boolean;
  /** serve https with the PKI's server certificate */
  tls?: TestPki;
}

export interface GitRequestRecord {
  method: string;
  /** path and query, e.g. /repo.git/info/refs?service=git-upload-pack */
  url: string;
  status: number;
  /** the Authorization header as received; tests assert where credentials went */
  authorization: string | undefined;
}

export interface GitServer {
  /** http(s)://127.0.0.1:<port> */
  readonly url: string;
  /** every request answered, in order */
  readonly requests: GitRequestRecord[];
  /** forgets the recorded requests */
  resetRequests(): void;
  close(): Promise<void>;
}

function unauthorized(res: ServerResponse): void {
  res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="hoist-test"', 'Content-Type': 'text/plain' });
  res.end('authentication required\n');
}

function authorized(req: IncomingMessage, users: GitServerOptions['users']): { ok: boolean; user?: string } {
  if (!users) return { ok: true };
  const header = req.headers.authorization;
  if (!header?.startsWith('Basic ')) return { ok: false };
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const username = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  const match = users.find((u) => u.username === username && u.password === password);
  return match ? { ok: true, user: match.username } : { ok: false };
}

/**
 * Parses the CGI header block ("Status: 200 OK\r\nContent-Type: …\r\n\r\n") that http-backend
 * writes before the body; returns undefined until the blank line has arrived.
 */
function parseCgiHeaders(buf: Buffer): { status: number; headers: Record<string, string>; bodyStart: number } | undefined {
  let end = buf.indexOf('\r\n\r\n');
  let sepLen = 4;
  if (end < 0) {
    end = buf.indexOf('\n\n');
    sepLen = 2;
  }
  if (end < 0) return undefined;
  const headers: Record<string, string> = {};
  let status = 200;
  for (const line of buf.subarray(0, end).toString('latin1').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
    else headers[name] = value;
  }
  return { status, headers, bodyStart: end + sepLen };
}

function handle(req: IncomingMessage, res: ServerResponse, opts: GitServerOptions, record: GitRequestRecord): void {
  const auth = authorized(req, opts.users);
  if (!auth.ok) {
    record.status = 401;
    unauthorized(res);
    return;
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_PROJECT_ROOT: opts.projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: opts.projectRoot,
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.startsWith('?') ? url.search.slice(1) : url.search,
    REQUEST_METHOD: req.method ?? 'GET',
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_USER: auth.user ?? '',
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    GATEWAY_INTERFACE: 'CGI/1.1',
  };
  if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = req.headers['content-length'];
  if (req.headers['content-encoding'] !== undefined) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
  const protocol = req.headers['git-protocol'];
  if (typeof protocol === 'string' && opts.protocolV2 !== false) {
    env.HTTP_GIT_PROTOCOL = protocol;
    env.GIT_PROTOCOL = protocol;
  }
  const cgi = spawn(GIT_HTTP_BACKEND, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  req.pipe(cgi.stdin);
  cgi.stdin.on('error', () => undefined);
  let stderr = '';
  cgi.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  let head: Buffer = Buffer.alloc(0);
  let started = false;
  cgi.stdout.on('data', (chunk: Buffer) => {
    if (started) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const parsed = parseCgiHeaders(head);
    if (!parsed) return;
    started = true;
    record.status = parsed.status;
    res.writeHead(parsed.status, parsed.headers);
    if (parsed.bodyStart < head.length) res.write(head.subarray(parsed.bodyStart));
  });
  cgi.on('close', (code) => {
    if (!started) {
      record.status = 500;
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(`http-backend exited ${code}: ${stderr}`);
      return;
    }
    res.end();
  });
  cgi.on('error', (err) => {
    if (!started) {
      record.status = 500;
      res.writeHead(500);
    }
    res.end(String(err));
  });
}

/** Starts the server on a free loopback port. */
export async function startGitServer(opts: GitServerOptions): Promise<GitServer> {
  if (!existsSync(GIT_HTTP_BACKEND)) throw new Error(`${GIT_HTTP_BACKEND} not found: install Debian's git package`);
  const requests: GitRequestRecord[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const record: GitRequestRecord = {
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      status: 0,
      authorization: req.headers.authorization,
    };
    requests.push(record);
    handle(req, res, opts, record);
  };
  const server: Server = opts.tls
    ? createHttpsServer({ cert: readFileSync(opts.tls.serverCertPath), key: readFileSync(opts.tls.serverKeyPath) }, handler)
    : createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    requests,
    resetRequests: () => {
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs git with a clean environment (no global/system config) in `cwd`; returns trimmed stdout. */
export function git(cwd: string, args: readonly string[], extraEnv: NodeJS.ProcessEnv = {}): string {
  return execFileSync('git', args, {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Hoist Test',
      GIT_AUTHOR_EMAIL: 'test@hoist.invalid',
      GIT_COMMITTER_NAME: 'Hoist Test',
      GIT_COMMITTER_EMAIL: 'test@hoist.invalid',
      ...extraEnv,
    },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  }).trim();
}

/**
 * Sets whether the served bare repository accepts wants for commits no ref points at. Off is
 * git's default; GitHub and GitLab turn it on.
 */
export function setAllowUnadvertisedWants(bareRepo: string, allow: boolean): void {
  const value = allow ? 'true' : 'false';
  git(bareRepo, ['config', 'uploadpack.allowReachableSHA1InWant', value]);
  git(bareRepo, ['config', 'uploadpack.allowAnySHA1InWant', value]);
}

export interface GeneratedRepo {
  /** the bare repository */
  dir: string;
  /** the commit refs/heads/main points at */
  head: string;
  files: number;
  commits: number;
}

/**
 * Writes a bare repository with `files` text files spread over nested directories and `commits`
 * commits (each rewriting a few files, so history has real depth), via `git fast-import` so a
 * repo of thousands of files takes about a second. Content is deterministic; lines vary so packs
 * compress like source code rather than like zeros.
 */
export async function generateRepo(dir: string, opts: { files: number; commits: number; filesPerCommit?: number }): Promise<GeneratedRepo> {
  git('/', ['init', '-q', '--bare', '-b', 'main', dir]);
  const perCommit = opts.filesPerCommit ?? 10;
  const pathOf = (i: number): string => `src/pkg${i % 23}/mod${i % 7}/file-${i}.ts`;
  const body = (i: number, rev: number): string => {
    const lines: string[] = [];
    for (let l = 0; l < 60; l++) lines.push(`export const value_${i}_${l} = ${(i * 7919 + l * 104729 + rev * 31) % 1000003}; // rev ${rev}`);
    return lines.join('\n') + '\n';
  };
  const proc = spawn('git', ['fast-import', '--quiet'], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  proc.stdin.on('error', () => undefined);
  const done = new Promise<void>((resolve, reject) => {
    proc.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited ${code}: ${stderr}`))));
  });
  const write = (s: string): Promise<void> =>
    new Promise((resolve) => {
      if (proc.stdin.write(s)) resolve();
      else proc.stdin.once('drain', () => resolve());
    });
  const data = (s: string): string => `data ${Buffer.byteLength(s)}\n${s}\n`;
  for (let c = 0; c < opts.commits; c++) {
    let cmd = `commit refs/heads/main\ncommitter Hoist Test <test@hoist.invalid> ${1_700_000_000 + c * 60} +0000\n${data(`commit ${c}`)}`;
    if (c === 0) {
      for (let i = 0; i < opts.files; i++) cmd += `M 100644 inline ${pathOf(i)}\n${data(body(i, 0))}`;
    } else {
      for (let k = 0; k < perCommit; k++) {
        const i = (c * perCommit + k) % opts.files;
        cmd += `M 100644 inline ${pathOf(i)}\n${data(body(i, c))}`;
      }
    }
    await write(cmd + '\n');
  }
  proc.stdin.end();
  await done;
  const head = git(dir, ['rev-parse', 'refs/heads/main']);
  return { dir, head, files: opts.files, commits: opts.commits };
}
