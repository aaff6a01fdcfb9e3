/** A plain HTTP server for tarballs in tests: serves what it is given, counts requests. */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';

export interface FileServer {
  url(path: string): string;
  set(path: string, body: Buffer): void;
  requests: number;
  close(): Promise<void>;
}

export async function startFileServer(): Promise<FileServer> {
  const files = new Map<string, Buffer>();
  let port = 0;
  const state = { requests: 0 };
  const server: Server = createServer((req, res) => {
    state.requests++;
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

export async function tarGz(files: Record<string, string | Buffer>): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    p.on('data', (c: unknown) => void chunks.push(c as Buffer));
    p.on('end', resolve);
    p.on('error', reject);
  });
  for (const [name, body] of Object.entries(files)) {
    const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
    p.entry({ name, size: b.length, mode: 0o644, mtime: new Date(0) }, b);
  }
  p.finalize();
  await done;
  return gzipSync(Buffer.concat(chunks));
}

export function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}
