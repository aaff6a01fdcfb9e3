/**
 * The push receiver of `hoist run --webhook-bind-address`: POST /hooks/github, /hooks/gitlab and
 * /hooks/generic. A delivery is
 * 1. rate-limited per source IP and overall (429), its body capped (413);
 * 2. verified against the provider's secret (signatures.ts); anything unverified — a bad or
 *    missing signature, no secret configured, a generic timestamp outside the window — gets the
 *    same 401 and body;
 * 3. refused silently when the same signed content was seen within the replay window (answered as
 *    accepted, acting on nothing);
 * 4. parsed; a branch push asks `onPush` to re-resolve the BundleDeployments following that
 *    repository and branch.
 * Every verified delivery gets the same 202 and body whether it matched no BundleDeployment or
 * many, so the receiver never tells a sender which BundleDeployments exist. Logs carry the
 * provider, delivery id, branch and match count; never secrets, signatures or bodies.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { systemClock, type Clock } from '../util/clock.ts';
import { deliveriesCounter, type DeliveryResult } from './metrics.ts';
import { parsePush, type Provider, type PushEvent } from './push-event.ts';
import { ReplayGuard } from './replay-guard.ts';
import { verifyGeneric, verifyGithub, verifyGitlab } from './signatures.ts';
import { KeyedBuckets, TokenBucket } from './token-bucket.ts';
import type { SecretSource } from './webhook-secrets.ts';

export interface RateLimit {
  /** tokens per second */
  rate: number;
  burst: number;
}

export interface WebhookReceiverOptions {
  /** 0 picks a free port */
  port: number;
  host?: string;
  secrets: SecretSource;
  /** a verified branch push; returns how many BundleDeployments it re-queued (logged, never answered) */
  onPush(event: PushEvent, provider: Provider): number;
  registry?: Registry;
  log: Logger;
  /** largest body accepted (default 1 MiB) */
  maxBodyBytes?: number;
  /** how long delivery ids are remembered (default 1h) */
  replayWindowMs?: number;
  /** generic endpoint: how far X-Hoist-Timestamp may be from now (default 5 min) */
  timestampWindowMs?: number;
  perSource?: RateLimit;
  overall?: RateLimit;
  /** the time of rate limits, replay memory and the timestamp window (default: the system clock) */
  clock?: Clock;
}

export interface WebhookReceiver {
  readonly port: number;
  close(): Promise<void>;
}

const ROUTES: Record<string, Provider> = { '/hooks/github': 'github', '/hooks/gitlab': 'gitlab', '/hooks/generic': 'generic' };
export const MIB = 1024 * 1024;

/** the answers; identical for every request of one kind, whatever matched */
const ACCEPTED = 'accepted\n';
const UNAUTHORIZED = 'unauthorized\n';

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

class TooLarge extends Error {}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > max) return reject(new TooLarge());
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.removeAllListeners('data');
        reject(new TooLarge());
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startWebhookReceiver(opts: WebhookReceiverOptions): Promise<WebhookReceiver> {
  const clock = opts.clock ?? systemClock;
  const now = (): number => clock.now();
  const maxBody = opts.maxBodyBytes ?? MIB;
  const timestampWindow = opts.timestampWindowMs ?? 5 * 60_000;
  // ids must outlive the timestamp window, or a generic delivery could be replayed after its id expired
  const replay = new ReplayGuard(Math.max(opts.replayWindowMs ?? 60 * 60_000, 2 * timestampWindow));
  const perSource = new KeyedBuckets(opts.perSource?.rate ?? 5, opts.perSource?.burst ?? 20);
  const overall = new TokenBucket(opts.overall?.rate ?? 50, opts.overall?.burst ?? 100, now());
  const counter = opts.registry ? deliveriesCounter(opts.registry) : undefined;

  const verified = (provider: Provider, req: IncomingMessage, body: Buffer): boolean => {
    const secret = opts.secrets.secretFor(provider);
    if (!secret) return false;
    switch (provider) {
      case 'github':
        return verifyGithub(body, header(req, 'x-hub-signature-256'), secret);
      case 'gitlab':
        return verifyGitlab(header(req, 'x-gitlab-token'), secret);
      case 'generic':
        return verifyGeneric(body, header(req, 'x-hoist-signature'), header(req, 'x-hoist-timestamp'), secret, now(), timestampWindow) === 'ok';
    }
  };

  /** the forge's delivery id, for logs only: no forge signs it */
  const deliveryId = (provider: Provider, req: IncomingMessage): string | undefined => {
    const id =
      provider === 'github'
        ? header(req, 'x-github-delivery')
        : provider === 'gitlab'
          ? (header(req, 'x-gitlab-event-uuid') ?? header(req, 'idempotency-key'))
          : header(req, 'x-hoist-delivery');
    return id && id.length <= 200 ? id : undefined;
  };

  /**
   * What makes a delivery the same one again: what its signature covers (GitHub: the body;
   * generic: the timestamp and the body; GitLab signs nothing, its token proves the sender: the
   * body). Delivery ids are not signed, so a captured delivery sent again under a fresh id is
   * still recognised; two different pushes never have the same body.
   */
  const replayKey = (provider: Provider, req: IncomingMessage, body: Buffer): string => {
    const hash = createHash('sha256');
    if (provider === 'generic') hash.update(header(req, 'x-hoist-timestamp') ?? '').update('.');
    return `${provider}:sha256:${hash.update(body).digest('hex')}`;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const reply = (code: number, body: string, extra: Record<string, string> = {}): void => {
      res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...extra });
      res.end(body);
    };
    const provider = ROUTES[(req.url ?? '/').split('?')[0]!];
    if (!provider) return reply(404, 'not found\n');
    if (req.method !== 'POST') return reply(405, 'method not allowed\n', { allow: 'POST' });
    const count = (result: DeliveryResult): void => counter?.inc({ provider, result });
    const t = now();
    // the per-source bucket first: one noisy sender must not drain the overall one for everybody
    if (!perSource.take(req.socket.remoteAddress ?? '', t) || !overall.take(t)) {
      count('rate-limited');
      return reply(429, 'too many requests\n', { 'retry-after': '1' });
    }
    let body: Buffer;
    try {
      body = await readBody(req, maxBody);
    } catch (e) {
      if (!(e instanceof TooLarge)) throw e;
      count('too-large');
      res.setHeader('connection', 'close');
      return reply(413, 'payload too large\n');
    }
    if (!verified(provider, req, body)) {
      count('unauthorized');
      return reply(401, UNAUTHORIZED);
    }
    const id = deliveryId(provider, req);
    if (!replay.firstSeen(replayKey(provider, req, body), now())) {
      count('replayed');
      opts.log.info({ provider, ...(id ? { delivery: id } : {}) }, 'webhook delivery repeated within the replay window (same signed content): ignored');
      return reply(202, ACCEPTED);
    }
    let event: PushEvent | undefined;
    try {
      event = parsePush(provider, header(req, provider === 'gitlab' ? 'x-gitlab-event' : 'x-github-event'), body);
    } catch {
      count('bad-request');
      return reply(400, 'bad request\n');
    }
    if (!event) {
      count('ignored');
      return reply(202, ACCEPTED);
    }
    const matched = opts.onPush(event, provider);
    count('accepted');
    opts.log.info({ provider, ...(id ? { delivery: id } : {}), branch: event.branch, matched }, 'webhook push: re-resolving matching BundleDeployments');
    reply(202, ACCEPTED);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      opts.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'webhook request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('internal error\n');
    });
  });
  // a slow sender must not hold connections open (slowloris)
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  opts.log.info({ port }, 'serving webhooks on /hooks/github, /hooks/gitlab and /hooks/generic');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
