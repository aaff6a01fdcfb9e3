/**
 * Loopback HTTPS stand-ins for the notification providers' APIs (Slack incoming webhooks,
 * PagerDuty Events v2, GitHub's commit status API, generic webhooks…): every request is recorded
 * with its path, headers and JSON body; each path prefix answers as the test says (a status, or
 * never). Requests no route claims are proxied to `upstream` (a git server), so one origin serves
 * both a repository and its forge's API, as github.com does.
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TestPki } from './registry.ts';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  json: unknown;
}

/** how a path prefix answers: a status code, a function of the attempt, or 'hang' (never) */
export type Answer = number | 'hang' | ((n: number) => number | 'hang');

export interface ProviderServer {
  /** https://127.0.0.1:<port> */
  url: string;
  host: string;
  requests: RecordedRequest[];
  /** the requests to paths starting with prefix */
  to(prefix: string): RecordedRequest[];
  answer(prefix: string, a: Answer): void;
  /** answers every request left hanging with `status` */
  release(status: number): void;
  close(): Promise<void>;
}

export async function startProviderServer(pki: TestPki, upstream?: string): Promise<ProviderServer> {
  const requests: RecordedRequest[] = [];
  const answers = new Map<string, Answer>();
  const counts = new Map<string, number>();
  const hanging = new Set<ServerResponse>();
  const proxy = (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(upstream!);
    const up = httpRequest({ host: u.hostname, port: u.port, path: req.url, method: req.method, headers: { ...req.headers, host: u.host } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  };
  const server = createServer({ cert: readFileSync(pki.serverCertPath), key: readFileSync(pki.serverKeyPath) }, (req, res) => {
    const path = req.url ?? '/';
    const prefix = [...answers.keys()].filter((p) => path.startsWith(p)).sort((a, b) => b.length - a.length)[0];
    if (prefix === undefined) {
      if (upstream) return proxy(req, res);
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      requests.push({ method: req.method ?? '', path, headers: req.headers, body, json });
      const n = (counts.get(prefix) ?? 0) + 1;
      counts.set(prefix, n);
      const a = answers.get(prefix)!;
      const status = typeof a === 'function' ? a(n) : a;
      if (status === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    requests,
    to: (prefix) => requests.filter((r) => r.path.startsWith(prefix)),
    answer: (prefix, a) => answers.set(prefix, a),
    release: (status) => {
      for (const r of hanging) r.writeHead(status, { 'content-type': 'application/json' }).end('{}');
      hanging.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const r of hanging) r.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
