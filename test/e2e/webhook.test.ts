/**
 * The push receiver end to end (issue 14): a real Hoist controller, a real `git http-backend`
 * repository, the webhook secrets in a real Secret. A push followed by a signed GitHub-style
 * delivery installs the new commit within seconds although pollInterval is 1h; a bad signature, a
 * replayed delivery and an unknown repository make no request to the git server, and are answered
 * exactly like deliveries that matched (or not) — nothing says which BundleDeployments exist.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhook } from '../../src/cli/webhook.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { WebhookReceiver } from '../../src/webhook/receiver.ts';
import { isDone, startTestController, type TestController } from '../support/controller.ts';
import { isReconciled } from '../support/controller-log.ts';
import { git, startGitServer, type GitServer } from '../support/git-server.ts';
import { sleep } from '../support/wait.ts';

const GH_SECRET = 'gh-hook-secret-4a1f-never-shown';
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const cm = (value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed\ndata:\n  value: "${value}"\n`;

let t: TestController;
let gitServer: GitServer;
let receiver: WebhookReceiver;
let work: string;
let bare: string;
let clone: string;
const logs: string[] = [];

async function commit(value: string): Promise<string> {
  await writeFile(join(clone, 'manifests', 'cm.yaml'), cm(value));
  git(clone, ['add', '.']);
  git(clone, ['commit', '-qm', value]);
  git(clone, ['push', '-q', bare, 'main']);
  return git(clone, ['rev-parse', 'HEAD']);
}

const repoUrl = (): string => `${gitServer.url}/app.git`;

async function deliver(body: string, opts: { delivery?: string; secret?: string } = {}): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${receiver.port}/hooks/github`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': opts.delivery ?? randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', opts.secret ?? GH_SECRET)
        .update(body)
        .digest('hex')}`,
    },
  });
  return { status: r.status, body: await r.text() };
}

/** a GitHub push payload as GitHub spells it: clone_url with .git, html_url without, another host case */
const pushPayload = (url: string, branch = 'main'): string => {
  const u = new URL(url);
  return JSON.stringify({
    ref: `refs/heads/${branch}`,
    after: 'f'.repeat(40),
    repository: { clone_url: `${u.protocol}//${u.host.toUpperCase()}${u.pathname}`, html_url: url.replace(/\.git$/, '') },
  });
};

async function value(ns: string): Promise<string | undefined> {
  const o = (await t.client.get(CM, 'pushed', ns)) as (KubeObject & { data?: Record<string, string> }) | undefined;
  return o?.data?.value;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-webhook-'));
  const repos = join(work, 'repos');
  await mkdir(repos);
  bare = join(repos, 'app.git');
  git('/', ['init', '-q', '--bare', '-b', 'main', bare]);
  clone = join(work, 'clone');
  await mkdir(join(clone, 'manifests'), { recursive: true });
  git(clone, ['init', '-q', '-b', 'main']);
  gitServer = await startGitServer({ projectRoot: repos });
  t = await startTestController();
  await t.client.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'hoist-webhook', namespace: t.namespace },
    stringData: { github: GH_SECRET },
  } as unknown as KubeObject);
  const log = pino({ level: 'debug' }, { write: (s: string) => void logs.push(s) });
  receiver = await startWebhook({
    client: t.ctl.client,
    pushes: t.ctl.manager.pushes,
    secret: `${t.namespace}/hoist-webhook`,
    host: '127.0.0.1',
    port: 0,
    registry: t.ctl.registry,
    log,
  });
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await t?.stop();
  await gitServer?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('push webhook', () => {
  const ns = (): string => `pushed-${t.runId}`;

  it('a push and a signed GitHub delivery install the new commit in under 5s with pollInterval 1h', async () => {
    const c1 = await commit('one');
    await t.create('follows-main', {
      installNamespace: ns(),
      format: 'plain',
      pollInterval: '1h',
      sources: [{ kind: 'git', git: { repository: repoUrl(), ref: { branch: 'main' }, directory: 'manifests' } }],
    });
    let bd = await t.waitFor('follows-main', isDone, 'installed', 60_000);
    expect(bd.status?.resolvedSources?.[0]).toMatchObject({ kind: 'git', commit: c1 });
    expect(await value(ns())).toBe('one');

    const c2 = await commit('two');
    // nothing happens by itself: once the controller is idle, the next poll is an hour away
    await t.idle();
    const last = t.log.records.filter((r) => isReconciled(r, 'follows-main')).at(-1);
    expect(last?.requeueAfterMs).toBe(3_600_000);
    expect((await t.get('follows-main'))?.status?.resolvedSources?.[0]?.commit).toBe(c1);

    const start = Date.now();
    expect(await deliver(pushPayload(repoUrl()))).toEqual({ status: 202, body: 'accepted\n' });
    // installed long before the next poll (an hour away): the push did it
    bd = await t.waitFor('follows-main', (b) => isDone(b) && b.status?.resolvedSources?.[0]?.commit === c2, 'new commit installed');
    console.log(`webhook push -> install latency: ${Date.now() - start} ms`);
    expect(bd.status?.activeRevision?.number).toBe(2);
    expect(await value(ns())).toBe('two');
    expect(logs.join('')).not.toContain(GH_SECRET);
    expect(logs.join('')).not.toContain('sha256=');
  });

  it('a bad signature, a replayed delivery and an unknown repository make no git request and answer alike', async () => {
    const c3 = await commit('three');
    const before = (await t.get('follows-main'))!;
    const rv = before.metadata.resourceVersion;

    gitServer.resetRequests();
    const accepted = await deliver(pushPayload(`${gitServer.url}/unknown.git`));
    const otherBranch = await deliver(pushPayload(repoUrl(), 'release'));
    const bad = await deliver(pushPayload(repoUrl()), { secret: 'not-the-secret' });
    const unsigned = await fetch(`http://127.0.0.1:${receiver.port}/hooks/github`, {
      method: 'POST',
      body: pushPayload(repoUrl()),
      headers: { 'x-github-event': 'push', 'x-github-delivery': randomUUID() },
    });
    const unknown = await deliver(pushPayload(`${gitServer.url}/unknown-too.git`));
    // a captured delivery sent again under a fresh delivery id (ids are not signed): the same signed body
    const original = await deliver(pushPayload(`${gitServer.url}/elsewhere.git`));
    const replay = await deliver(pushPayload(`${gitServer.url}/elsewhere.git`), { delivery: randomUUID() });
    // a push re-queues before its answer is sent: once the queue is empty, whatever they caused is done
    await t.idle();

    expect(gitServer.requests).toEqual([]);
    const after = (await t.get('follows-main'))!;
    expect(after.metadata.resourceVersion).toBe(rv);
    expect(after.status?.resolvedSources?.[0]?.commit).not.toBe(c3);
    expect(await value(ns())).toBe('two');
    // one answer for every verified delivery, matched or not; one for every unverified one
    for (const a of [otherBranch, unknown, original, replay]) expect(a).toEqual(accepted);
    expect(bad).toEqual({ status: 401, body: 'unauthorized\n' });
    expect({ status: unsigned.status, body: await unsigned.text() }).toEqual(bad);
    const metrics = await t.ctl.registry.getSingleMetricAsString('hoist_webhook_deliveries_total');
    expect(metrics).toContain('hoist_webhook_deliveries_total{provider="github",result="unauthorized"} 2');
    expect(metrics).toContain('hoist_webhook_deliveries_total{provider="github",result="replayed"} 1');
  });

  it('a rotated Secret takes effect without a restart', async () => {
    const rotated = 'gh-hook-secret-rotated-never-shown';
    await t.client.patch({ apiVersion: 'v1', kind: 'Secret' }, 'hoist-webhook', t.namespace, { stringData: { github: rotated } }, 'merge');
    const body = pushPayload(`${gitServer.url}/unknown.git`);
    const deadline = Date.now() + 10_000;
    let r = await deliver(body, { secret: rotated });
    while (r.status !== 202 && Date.now() < deadline) {
      await sleep(100);
      r = await deliver(body, { secret: rotated });
    }
    expect(r.status).toBe(202);
    expect((await deliver(body)).status).toBe(401);
  });
});
