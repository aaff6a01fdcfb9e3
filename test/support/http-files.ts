/**
 * An HTTP(S) server for tarballs in tests: serves what it is given, counts requests and records
 * the Authorization header of each (tests assert where credentials went).
 */
export { tarGz } from '../../src/util/tar-gz.ts';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { TestPki } from './registry.ts';

export interface FileServer {
  url(path: string): string;
  set(path: string, body: Buffer): void;
  requests: number;
  /** every request in order: method, path, and the Authorization header as received */
  readonly log: Array<{ method: string; path: string; authorization: string | undefined }>;
  close(): Promise<void>;
}

/**
 * `auth`: every request must carry these Basic credentials (else 401). `tls`: serve https with
 * the PKI's server certificate (127.0.0.1, 127.0.0.2, localhost). `host`: the address to bind.
 */
export async function startFileServer(opts: { auth?: { username: string; password: string }; tls?: TestPki; host?: string } = {}): Promise<FileServer> {
  const files = new Map<string, Buffer>();
  let port = 0;
  const state = { requests: 0 };
  const log: FileServer['log'] = [];
  const expected = opts.auth ? `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}` : undefined;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    state.requests++;
    log.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization });
    if (expected && req.headers.authorization !== expected) return void res.writeHead(401, { 'www-authenticate': 'Basic realm="files"' }).end('unauthorized');
    const body = files.get(req.url ?? '');
    if (!body) return void res.writeHead(404).end('not found');
    const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304).end();
    res.writeHead(200, { 'content-length': body.length, etag }).end(req.method === 'HEAD' ? undefined : body);
  };
  const server: Server = opts.tls
    ? createHttpsServer({ cert: readFileSync(opts.tls.serverCertPath), key: readFileSync(opts.tls.serverKeyPath) }, handler)
    : createServer(handler);
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  const a = server.address();
  port = typeof a === 'object' && a ? a.port : 0;
  return {
    url: (path) => `${opts.tls ? 'https' : 'http'}://${host}:${port}${path}`,
    log,
    set: (path, body) => void files.set(path, body),
    get requests() {
      return state.requests;
    },
    set requests(n: number) {
      state.requests = n;
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}
