/** A plain HTTP server for tarballs in tests: serves what it is given, counts requests. */
export { tarGz } from '../../src/util/tar-gz.ts';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';

export interface FileServer {
  url(path: string): string;
  set(path: string, body: Buffer): void;
  requests: number;
  close(): Promise<void>;
}

/** `auth`: every request must carry these Basic credentials (else 401) */
export async function startFileServer(opts: { auth?: { username: string; password: string } } = {}): Promise<FileServer> {
  const files = new Map<string, Buffer>();
  let port = 0;
  const state = { requests: 0 };
  const expected = opts.auth ? `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}` : undefined;
  const server: Server = createServer((req, res) => {
    state.requests++;
    if (expected && req.headers.authorization !== expected) return void res.writeHead(401, { 'www-authenticate': 'Basic realm="files"' }).end('unauthorized');
    const body = files.get(req.url ?? '');
    if (!body) return void res.writeHead(404).end('not found');
    const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304).end();
    res.writeHead(200, { 'content-length': body.length, etag }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const a = server.address();
  port = typeof a === 'object' && a ? a.port : 0;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    set: (path, body) => void files.set(path, body),
    get requests() {
      return state.requests;
    },
    set requests(n: number) {
      state.requests = n;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}
