/**
 * The manager's HTTP endpoints and its shutdown sequence.
 * - /healthz: the process is alive and serving (200 unless shutting down);
 * - /readyz: every informer has synced and, with leader election, the elector is either leading
 *   or standing by as a candidate (an elector that lost leadership is not ready);
 * - /metrics: the prom-client registry (controller_runtime_*, workqueue_*, and whatever else is
 *   registered on it).
 * Which informers count is the caller's choice, read at each probe: `hoist run --leader-elect`
 * starts its informers only when it leads, so it passes none while standing by (a standby is
 * ready as a candidate; else a rolling update with maxUnavailable 0 could never finish).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ElectorState } from './leader-election.ts';

export interface SyncSource {
  hasSynced(): boolean;
}

export interface ManagerServerOptions {
  /** 0 picks a free port */
  port: number;
  /** default 0.0.0.0 so the kubelet can probe it */
  host?: string;
  registry: Registry;
  /** informers that must have synced for readiness; read at each probe */
  informers?: () => Iterable<SyncSource>;
  /** the leader elector, when leader election is enabled */
  elector?: { readonly state: ElectorState };
  logger?: Logger;
}

export interface ManagerServer {
  readonly port: number;
  /** why the manager is not ready; empty when ready */
  notReadyReasons(): string[];
  /** from now on /readyz and /healthz fail, so traffic and probes stop before shutdown */
  markShuttingDown(): void;
  close(): Promise<void>;
}

export async function startManagerServer(opts: ManagerServerOptions): Promise<ManagerServer> {
  let shuttingDown = false;
  const notReadyReasons = (): string[] => {
    const reasons: string[] = [];
    if (shuttingDown) reasons.push('shutting down');
    let pending = 0;
    for (const inf of opts.informers?.() ?? []) if (!inf.hasSynced()) pending++;
    if (pending) reasons.push(`${pending} informer(s) not synced`);
    const state = opts.elector?.state;
    if (state !== undefined && state !== 'leading' && state !== 'candidate') reasons.push(`leader election ${state}`);
    return reasons;
  };

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (code: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(code, { 'content-type': type });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'method not allowed\n');
    if (path === '/healthz' || path === '/livez') return shuttingDown ? reply(503, 'shutting down\n') : reply(200, 'ok\n');
    if (path === '/readyz') {
      const reasons = notReadyReasons();
      return reasons.length ? reply(503, `${reasons.join('\n')}\n`) : reply(200, 'ok\n');
    }
    if (path === '/metrics') {
      opts.registry.metrics().then(
        (text) => reply(200, text, opts.registry.contentType),
        (e: unknown) => {
          opts.logger?.error({ err: e }, 'collecting metrics failed');
          reply(500, 'collecting metrics failed\n');
        },
      );
      return;
    }
    reply(404, 'not found\n');
  });
  // probes are short; idle keep-alive connections must not hold shutdown up
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  opts.logger?.info({ port }, 'serving /healthz, /readyz and /metrics');

  return {
    port,
    notReadyReasons,
    markShuttingDown: () => {
      shuttingDown = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
