/**
 * The receiver over real HTTP on loopback, with secrets from a plain map (the Secret watch is
 * exercised by test/e2e/webhook.test.ts) and onPush recording what it was asked.
 */
import { createHmac } from 'node:crypto';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Provider, PushEvent } from '../../../src/webhook/push-event.ts';
import { startWebhookReceiver, type WebhookReceiver, type WebhookReceiverOptions } from '../../../src/webhook/receiver.ts';
import { signGeneric } from '../../../src/webhook/signatures.ts';
import { FakeClock } from '../../support/fake-clock.ts';

const SECRETS: Record<Provider, Buffer> = {
  github: Buffer.from('gh-secret-never-logged'),
  gitlab: Buffer.from('gl-secret-never-logged'),
  generic: Buffer.from('gen-secret-never-logged'),
};
const REPO = 'http://git.example/org/app.git';

let rx: WebhookReceiver | undefined;
afterEach(async () => {
  await rx?.close();
  rx = undefined;
});

async function start(extra: Partial<WebhookReceiverOptions> = {}, matched = 0) {
  const pushes: PushEvent[] = [];
  const logs: string[] = [];
  const registry = new Registry();
  const log = pino({ level: 'debug' }, { write: (s: string) => void logs.push(s) });
  rx = await startWebhookReceiver({
    port: 0,
    host: '127.0.0.1',
    secrets: { secretFor: (p) => SECRETS[p] },
    onPush: (e) => (pushes.push(e), matched),
    registry,
    log,
    ...extra,
  });
  const post = async (path: string, body: string, headers: Record<string, string>) => {
    const r = await fetch(`http://127.0.0.1:${rx!.port}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    return { status: r.status, body: await r.text() };
  };
  return { pushes, logs, registry, post };
}

const ghBody = (ref = 'refs/heads/main', url = REPO): string => JSON.stringify({ ref, repository: { clone_url: url, html_url: url.replace(/\.git$/, '') } });
const ghHeaders = (body: string, delivery: string, secret = SECRETS.github) => ({
  'x-github-event': 'push',
  'x-github-delivery': delivery,
  'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
});

describe('webhook receiver', () => {
  it('a verified GitHub push reaches onPush once; the answer is the same whether it matched 0 or 5 BDs', async () => {
    const none = await start({}, 0);
    const b = ghBody();
    const r0 = await none.post('/hooks/github', b, ghHeaders(b, 'd-1'));
    expect(none.pushes).toEqual([{ repositories: [REPO, REPO.replace(/\.git$/, '')], branch: 'main' }]);
    await rx!.close();
    const five = await start({}, 5);
    const r5 = await five.post('/hooks/github', b, ghHeaders(b, 'd-1'));
    expect(r5).toEqual(r0);
    expect(r0).toEqual({ status: 202, body: 'accepted\n' });
  });

  it('bad, missing and wrong-provider signatures: one 401 and body, nothing pushed, no secret or signature logged', async () => {
    const s = await start();
    const b = ghBody();
    const answers = [
      await s.post('/hooks/github', b, ghHeaders(b, 'x-1', Buffer.from('wrong'))),
      await s.post('/hooks/github', b, { 'x-github-event': 'push', 'x-github-delivery': 'x-2' }),
      await s.post('/hooks/github', b, ghHeaders(`${b} `, 'x-3')),
      await s.post('/hooks/gitlab', b, { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': 'gl-secret-never-logge' }),
      await s.post('/hooks/generic', b, {
        'x-hoist-signature': signGeneric(b, Math.floor(Date.now() / 1000), SECRETS.github),
        'x-hoist-timestamp': String(Math.floor(Date.now() / 1000)),
      }),
    ];
    for (const a of answers) expect(a).toEqual({ status: 401, body: 'unauthorized\n' });
    expect(s.pushes).toEqual([]);
    const all = s.logs.join('');
    for (const secret of Object.values(SECRETS)) expect(all).not.toContain(secret.toString());
    expect(all).not.toContain('sha256=');
    expect(await s.registry.getSingleMetricAsString('hoist_webhook_deliveries_total')).toContain(
      'hoist_webhook_deliveries_total{provider="github",result="unauthorized"} 3',
    );
  });

  it('a replayed delivery is answered like the first and acts on nothing, under its own id or a fresh one', async () => {
    const s = await start();
    const b = ghBody();
    const first = await s.post('/hooks/github', b, ghHeaders(b, 'same-id'));
    const again = await s.post('/hooks/github', b, ghHeaders(b, 'same-id'));
    // delivery ids are not signed: a captured delivery sent again under a fresh id is the same delivery
    const fresh = await s.post('/hooks/github', b, ghHeaders(b, 'a-fresh-id'));
    expect(again).toEqual(first);
    expect(fresh).toEqual(first);
    expect(s.pushes).toHaveLength(1);
    // another push (another body) under a used id is not a replay
    const other = ghBody('refs/heads/release');
    await s.post('/hooks/github', other, ghHeaders(other, 'same-id'));
    expect(s.pushes).toHaveLength(2);
    s.pushes.pop();
    // GitLab: X-Gitlab-Event-UUID, else Idempotency-Key
    const gl = JSON.stringify({ ref: 'refs/heads/main', project: { git_http_url: REPO } });
    const glh = { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRETS.gitlab.toString(), 'idempotency-key': 'k-1' };
    await s.post('/hooks/gitlab', gl, glh);
    await s.post('/hooks/gitlab', gl, { ...glh, 'idempotency-key': 'k-2' });
    expect(s.pushes).toHaveLength(2);
    expect(await s.registry.getSingleMetricAsString('hoist_webhook_deliveries_total')).toMatch(/provider="gitlab",result="replayed"} 1/);
    expect(await s.registry.getSingleMetricAsString('hoist_webhook_deliveries_total')).toMatch(/provider="github",result="replayed"} 2/);
  });

  it('generic: signed {url, branch}; a timestamp outside the window is refused like a bad signature; a repeat is ignored', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const s = await start({ clock, timestampWindowMs: 60_000 });
    const b = JSON.stringify({ url: REPO, branch: 'main' });
    const ts = clock.now() / 1000;
    const h = { 'x-hoist-signature': signGeneric(b, ts, SECRETS.generic), 'x-hoist-timestamp': String(ts) };
    expect(await s.post('/hooks/generic', b, h)).toEqual({ status: 202, body: 'accepted\n' });
    expect(await s.post('/hooks/generic', b, h)).toEqual({ status: 202, body: 'accepted\n' });
    // X-Hoist-Delivery is not signed: the same signed timestamp and body under any id is a repeat
    expect(await s.post('/hooks/generic', b, { ...h, 'x-hoist-delivery': 'fresh' })).toEqual({ status: 202, body: 'accepted\n' });
    expect(s.pushes).toEqual([{ repositories: [REPO], branch: 'main' }]);
    await clock.advance(61_000);
    const stale = { 'x-hoist-signature': signGeneric(`${b} `, ts, SECRETS.generic), 'x-hoist-timestamp': String(ts) };
    expect(await s.post('/hooks/generic', `${b} `, stale)).toEqual({ status: 401, body: 'unauthorized\n' });
    expect(s.pushes).toHaveLength(1);
  });

  it('rate-limited per source and overall; bodies over the cap get 413 before any verification', async () => {
    const s = await start({ perSource: { rate: 0.001, burst: 2 }, maxBodyBytes: 64 });
    const b = ghBody();
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await s.post('/hooks/github', b, ghHeaders(b, `r-${i}`))).status);
    expect(codes).toEqual([413, 413, 429, 429]);
    await rx!.close();
    const o = await start({ overall: { rate: 0.001, burst: 1 } });
    expect((await o.post('/hooks/github', b, ghHeaders(b, 'o-1'))).status).toBe(202);
    expect((await o.post('/hooks/github', b, ghHeaders(b, 'o-2'))).status).toBe(429);
  });

  it('only POST on the three paths', async () => {
    const s = await start();
    expect((await fetch(`http://127.0.0.1:${rx!.port}/hooks/github`)).status).toBe(405);
    expect((await s.post('/hooks/bitbucket', '{}', {})).status).toBe(404);
  });
});
