/**
 * Issue 39, the providers test/e2e/notifications.test.ts leaves out, through the real controller
 * and API server: one BundleDeployment's install, rolled-back upgrade and fix fan out to loopback
 * HTTPS stand-ins of Microsoft Teams (Workflows webhook, Adaptive Card), Opsgenie (Alert API:
 * create with an alias, close by alias), Alertmanager (API v2 postableAlerts: startsAt, then
 * endsAt), GitLab and Gitea (commit statuses on the commit the BD's git source resolved, on the
 * same origin as the repository) and Slack's Web API (chat.postMessage with a bot token and a
 * channel); each request is asserted as the provider documents it (docs/notifications.md). A
 * Slack answer of HTTP 200 `{"ok": false}` is a failed delivery, on the route's status. And
 * `hoist notify test PROVIDER` against the same stand-ins: delivered, refused, and a commit status
 * on --commit.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTIFICATION_PROVIDER_KIND, NOTIFICATION_ROUTE_KIND, type NotificationRoute } from '../../api/v1alpha2/notification-types.ts';
import { ANNOTATION_CREDENTIAL_HOSTS, API_VERSION, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { notify } from '../../src/cli/verbs/notify.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { runVerb } from '../support/cli-verb.ts';
import { cond, isFailed, isSucceeded, startTestController, type TestController } from '../support/controller.ts';
import { deployment } from '../support/e2e-bundles.ts';
import { git, startGitServer, type GitServer } from '../support/git-server.ts';
import { startProviderServer, type ProviderServer, type RecordedRequest } from '../support/provider-server.ts';
import { makePki, type TestPki } from '../support/registry.ts';
import { waitUntil } from '../support/wait.ts';

let t: TestController;
let work: string;
let pki: TestPki;
let gitServer: GitServer;
let forge: ProviderServer;
let src: string;
let ns: string;
const commits: Record<string, string> = {};

const cm = (name: string, v: string) => stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v } });
const REFUSED = stringify(deployment('no-containers', { containers: [] }));
/** the BundleDeployment's name: BD names are cluster-wide, and notifications.test.ts has a `web` of its own */
const BD = 'provider-web';
const LINK = 'https://dash.example.com/bd/web?rev=';

async function commitTree(label: string, files: Record<string, string>): Promise<void> {
  await rm(join(src, 'web'), { recursive: true, force: true });
  await mkdir(join(src, 'web'), { recursive: true });
  for (const [f, text] of Object.entries(files)) await writeFile(join(src, 'web', f), text);
  git(src, ['add', '-A']);
  git(src, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', label]);
  commits[label] = git(src, ['rev-parse', 'HEAD']);
  git(src, ['push', '-q', 'origin', 'HEAD:main']);
}

const secret = (name: string, data: Record<string, string>, hosts?: string, namespace = ns): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, ...(hosts ? { annotations: { [ANNOTATION_CREDENTIAL_HOSTS]: hosts } } : {}) },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  }) as KubeObject;
const provider = (name: string, spec: Record<string, unknown>): KubeObject =>
  ({
    apiVersion: API_VERSION,
    kind: NOTIFICATION_PROVIDER_KIND,
    metadata: { name, namespace: ns },
    spec: { certSecretRef: { name: 'forge-ca' }, ...spec },
  }) as KubeObject;
const route = (name: string, providerName: string): KubeObject =>
  ({
    apiVersion: API_VERSION,
    kind: NOTIFICATION_ROUTE_KIND,
    metadata: { name, namespace: ns },
    spec: { providerRef: { name: providerName }, bundleDeployments: { names: [BD] }, minInterval: '1s', linkTemplate: `${LINK}{{revision}}` },
  }) as KubeObject;

const repo = () => `${forge.url}/acme/app.git`;
const gitSpec = (sha: string): BundleDeploymentSpec => ({
  installNamespace: ns,
  format: 'plain',
  sources: [{ kind: 'git', git: { repository: repo(), ref: { commit: sha }, directory: 'web', caSecretRef: { name: 'forge-ca' } } }],
});

/** the stand-ins' paths, one prefix per provider */
const P = { teams: '/teams/', og: '/og/', am: '/am/', gitlab: '/api/v4/', gitea: '/api/v1/', slack: '/slack-api/', slackBad: '/slack-bad/' } as const;
type Counts = Record<keyof typeof P, number>;
const counts = (): Counts => Object.fromEntries(Object.entries(P).map(([k, p]) => [k, forge.to(p).length])) as Counts;
const since = (at: Counts, k: keyof typeof P): RecordedRequest[] => forge.to(P[k]).slice(at[k]);
const grown = (at: Counts, ...keys: Array<keyof typeof P>) => keys.every((k) => forge.to(P[k]).length > at[k]);
const notifierIdle = () => t.ctl.notifier.dispatcher.whenIdle();
const stateOf = (r: RecordedRequest) => (r.json as { state: string }).state;

beforeAll(async () => {
  t = await startTestController({ notifications: { burst: 10, digestWindowMs: 1000, baseBackoffMs: 200, maxAttempts: 3, statusIntervalMs: 200 } });
  work = await mkdtemp(join(tmpdir(), 'hoist-notify-providers-'));
  pki = await makePki(join(work, 'pki'));
  src = join(work, 'src');
  await mkdir(src);
  const repos = join(work, 'repos');
  await mkdir(join(repos, 'acme'), { recursive: true });
  git(work, ['init', '-q', '--bare', '-b', 'main', join(repos, 'acme', 'app.git')]);
  git(src, ['init', '-q', '-b', 'main']);
  git(src, ['remote', 'add', 'origin', join(repos, 'acme', 'app.git')]);
  gitServer = await startGitServer({ projectRoot: repos });
  forge = await startProviderServer(pki, gitServer.url);
  // what each API answers on success (Teams Workflows and Opsgenie accept with 202, the forges create with 201)
  forge.answer(P.teams, 202);
  forge.answer(P.og, { status: 202, body: '{"result":"Request will be processed","took":0.1,"requestId":"r"}' });
  forge.answer(P.am, 200);
  forge.answer(P.gitlab, 201);
  forge.answer(P.gitea, 201);
  forge.answer(P.slack, { status: 200, body: '{"ok":true,"channel":"C0HOIST","ts":"1.2"}' });
  forge.answer(P.slackBad, { status: 200, body: '{"ok":false,"error":"channel_not_found"}' });
  await commitTree('good', { 'cm.yaml': cm('web', '1') });
  await commitTree('bad', { 'cm.yaml': cm('web', '2'), 'bad.yaml': REFUSED });
  await commitTree('fixed', { 'cm.yaml': cm('web', '3') });

  ns = `notify-p-${t.runId}`;
  await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  // the git source's CA is read in the controller's namespace, the providers' in their own
  await t.client.create(secret('forge-ca', { 'ca.crt': pki.caCert }, undefined, t.namespace));
  await t.client.create(secret('forge-ca', { 'ca.crt': pki.caCert }));
  await t.client.create(secret('teams', { address: `${forge.url}/teams/workflows/abc/triggers/manual/paths/invoke?sig=SIGSECRET` }, forge.host));
  await t.client.create(secret('opsgenie', { token: 'og-api-key' }, forge.host));
  await t.client.create(secret('gitlab', { token: 'glpat-secret' }, forge.host));
  await t.client.create(secret('gitea', { token: 'gitea-secret' }, forge.host));
  await t.client.create(secret('slack-bot', { token: 'xoxb-secret' }, forge.host));
  await t.client.create(provider('teams', { type: 'msteams', secretRef: { name: 'teams' } }));
  await t.client.create(provider('opsgenie', { type: 'opsgenie', address: `${forge.url}/og`, secretRef: { name: 'opsgenie' } }));
  await t.client.create(provider('alertmanager', { type: 'alertmanager', address: `${forge.url}/am` }));
  await t.client.create(provider('gitlab', { type: 'gitlab', address: `${forge.url}/acme/app`, secretRef: { name: 'gitlab' } }));
  await t.client.create(provider('gitea', { type: 'gitea', address: `${forge.url}/acme/app.git`, secretRef: { name: 'gitea' }, context: 'deploy' }));
  await t.client.create(
    provider('slack-api', { type: 'slack', address: `${forge.url}/slack-api/chat.postMessage`, secretRef: { name: 'slack-bot' }, channel: 'C0HOIST' }),
  );
  await t.client.create(
    provider('slack-refuses', { type: 'slack', address: `${forge.url}/slack-bad/chat.postMessage`, secretRef: { name: 'slack-bot' }, channel: 'C0GONE' }),
  );
  for (const p of ['teams', 'opsgenie', 'alertmanager', 'gitlab', 'gitea', 'slack-api', 'slack-refuses']) await t.client.create(route(p, p));
}, 180_000);

afterAll(async () => {
  await t?.stop();
  await forge?.close();
  await gitServer?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('one BundleDeployment, every provider', () => {
  it('install, rolled-back upgrade and fix: the documented request of Teams, Opsgenie, Alertmanager, GitLab, Gitea and Slack chat.postMessage', async () => {
    const alias = `hoist/${ns}/${BD}`;
    const closeUrl = `/og/v2/alerts/${encodeURIComponent(alias)}/close?identifierType=alias`;
    const amLabels = { alertname: 'HoistBundleDeploymentFailed', bundledeployment: BD, namespace: ns };

    // the install: success statuses on its commit, a resolve to each incident tool, one chat message each
    await t.create(BD, gitSpec(commits.good!));
    await t.waitFor(BD, isSucceeded, 'installed');
    const none = Object.fromEntries(Object.keys(P).map((k) => [k, 0])) as Counts;
    await waitUntil('the install reached every provider', () => grown(none, 'teams', 'og', 'am', 'gitlab', 'gitea', 'slack', 'slackBad'), 30_000);
    await notifierIdle();
    expect(forge.to(P.gitlab).at(-1)).toMatchObject({
      method: 'POST',
      path: `/api/v4/projects/acme%2Fapp/statuses/${commits.good}`,
      headers: { 'private-token': 'glpat-secret', 'content-type': 'application/json' },
      json: { state: 'success', name: `hoist/${BD}`, target_url: `${LINK}1` },
    });
    expect(forge.to(P.gitea).at(-1)).toMatchObject({
      method: 'POST',
      path: `/api/v1/repos/acme/app/statuses/${commits.good}`,
      headers: { authorization: 'token gitea-secret' },
      json: { state: 'success', context: `deploy/${BD}`, target_url: `${LINK}1` },
    });
    expect(forge.to(P.og).map((r) => r.path)).toEqual([closeUrl]);
    expect(forge.to(P.am)).toHaveLength(1);
    const at = counts();

    // the rolled-back upgrade
    await t.patchSpec(BD, { sources: gitSpec(commits.bad!).sources });
    await t.waitFor(BD, (b) => isFailed(b) && cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back');
    await waitUntil('the rollback reached every provider', () => grown(at, 'teams', 'og', 'am', 'gitlab', 'gitea', 'slack'), 30_000);
    await notifierIdle();

    const teams = since(at, 'teams');
    expect(teams).toHaveLength(1);
    expect(teams[0]).toMatchObject({
      method: 'POST',
      path: '/teams/workflows/abc/triggers/manual/paths/invoke?sig=SIGSECRET',
      headers: { 'content-type': 'application/json' },
    });
    const card = teams[0]!.json as {
      type: string;
      attachments: Array<{
        contentType: string;
        contentUrl: null;
        content: { type: string; version: string; body: Array<Record<string, unknown>>; actions: unknown[] };
      }>;
    };
    expect(card.type).toBe('message');
    expect(card.attachments).toHaveLength(1);
    expect(card.attachments[0]).toMatchObject({ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null });
    const content = card.attachments[0]!.content;
    expect(content).toMatchObject({ $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4' });
    expect(content.body[0]).toMatchObject({ type: 'TextBlock', text: `BundleDeployment ${BD}: upgrade rolled back (revision 2)` });
    expect(content.body[1]!.type).toBe('FactSet');
    expect(JSON.stringify(content.body[1])).toContain(commits.bad);
    expect(content.actions).toEqual([{ type: 'Action.OpenUrl', title: 'Details', url: `${LINK}2` }]);

    const og = since(at, 'og');
    expect(og).toHaveLength(1);
    expect(og[0]).toMatchObject({
      method: 'POST',
      path: '/og/v2/alerts',
      headers: { authorization: 'GenieKey og-api-key', 'content-type': 'application/json' },
      json: { message: `BundleDeployment ${BD}: upgrade rolled back (revision 2)`, alias, source: 'hoist', entity: BD, priority: 'P2' },
    });
    expect((og[0]!.json as { message: string }).message.length).toBeLessThanOrEqual(130);

    const am = since(at, 'am');
    expect(am).toHaveLength(1);
    expect(am[0]).toMatchObject({ method: 'POST', path: '/am/api/v2/alerts', headers: { 'content-type': 'application/json' } });
    const [fired] = am[0]!.json as Array<Record<string, unknown>>;
    expect(am[0]!.json).toHaveLength(1);
    expect(fired).toMatchObject({ labels: amLabels, annotations: { severity: 'error' }, generatorURL: `${LINK}2` });
    expect(Date.parse(fired!.startsAt as string)).not.toBeNaN();
    expect(fired!.endsAt).toBeUndefined();

    const failedStatus = (k: 'gitlab' | 'gitea') => since(at, k).filter((r) => r.path.endsWith(commits.bad!) && ['failed', 'failure'].includes(stateOf(r)));
    expect(failedStatus('gitlab')).toHaveLength(1);
    expect(failedStatus('gitlab')[0]).toMatchObject({
      path: `/api/v4/projects/acme%2Fapp/statuses/${commits.bad}`,
      headers: { 'private-token': 'glpat-secret' },
      json: { state: 'failed', name: `hoist/${BD}`, target_url: `${LINK}2` },
    });
    expect(failedStatus('gitea')).toHaveLength(1);
    expect(failedStatus('gitea')[0]).toMatchObject({
      path: `/api/v1/repos/acme/app/statuses/${commits.bad}`,
      json: { state: 'failure', context: `deploy/${BD}`, target_url: `${LINK}2` },
    });
    // every status the rollback sent is on the commit it tried; GitLab never gets Gitea's or GitHub's word for failure
    for (const r of [...since(at, 'gitlab'), ...since(at, 'gitea')]) expect(r.path.endsWith(commits.bad!)).toBe(true);
    expect(
      since(at, 'gitlab')
        .map(stateOf)
        .every((s) => ['pending', 'failed'].includes(s)),
    ).toBe(true);

    const slack = since(at, 'slack');
    expect(slack).toHaveLength(1);
    expect(slack[0]).toMatchObject({
      method: 'POST',
      path: '/slack-api/chat.postMessage',
      headers: { authorization: 'Bearer xoxb-secret', 'content-type': 'application/json; charset=utf-8' },
      json: { channel: 'C0HOIST', text: `BundleDeployment ${BD}: upgrade rolled back (revision 2)` },
    });
    // no credential in any body
    for (const r of forge.requests) expect(r.body).not.toMatch(/og-api-key|glpat-secret|gitea-secret|xoxb-secret|SIGSECRET/);

    // the fix: Opsgenie closes the alert by alias, Alertmanager gets the same labels with endsAt, the forges success
    const fixAt = counts();
    await t.patchSpec(BD, { sources: gitSpec(commits.fixed!).sources });
    await t.waitFor(BD, isSucceeded, 'upgraded');
    await waitUntil('the fix reached every provider', () => grown(fixAt, 'og', 'am', 'gitlab', 'gitea', 'slack', 'teams'), 30_000);
    await notifierIdle();
    const close = since(fixAt, 'og');
    expect(close).toHaveLength(1);
    expect(close[0]).toMatchObject({ method: 'POST', path: closeUrl, headers: { authorization: 'GenieKey og-api-key' }, json: { source: 'hoist' } });
    const resolved = since(fixAt, 'am');
    expect(resolved).toHaveLength(1);
    const [ended] = resolved[0]!.json as Array<Record<string, unknown>>;
    expect(ended).toMatchObject({ labels: amLabels });
    expect(Date.parse(ended!.endsAt as string)).toBeGreaterThanOrEqual(Date.parse(fired!.startsAt as string));
    expect(ended!.startsAt).toBeUndefined();
    for (const k of ['gitlab', 'gitea'] as const) {
      const s = since(fixAt, k);
      expect(s.every((r) => r.path.endsWith(commits.fixed!))).toBe(true);
      expect(s.map(stateOf).at(-1)).toBe('success');
    }
    expect(since(fixAt, 'slack').map((r) => (r.json as { text: string }).text)).toEqual([`BundleDeployment ${BD}: upgraded (revision 3)`]);
  }, 180_000);

  it('Slack answering HTTP 200 {"ok": false} is a failed delivery, final, on the route status with Slack’s error code', async () => {
    const get = async () =>
      (await t.client.get({ apiVersion: API_VERSION, kind: NOTIFICATION_ROUTE_KIND }, 'slack-refuses', ns)) as unknown as NotificationRoute;
    await waitUntil('the refusal is on the route', async () => (await get()).status?.lastFailure !== undefined, 15_000);
    const status = (await get()).status!;
    expect(status.lastFailure?.message).toContain('Slack answered ok: false (channel_not_found)');
    expect(status.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'DeliveryFailed' });
    // final: each message was tried once, not retried — as many requests as the identical route to the Slack that answers ok: true got
    await notifierIdle();
    expect(forge.to(P.slackBad).length).toBe(forge.to(P.slack).length);
    expect(forge.to(P.slackBad)[0]).toMatchObject({ headers: { authorization: 'Bearer xoxb-secret' }, json: { channel: 'C0GONE' } });
  });
});

describe('hoist notify test', () => {
  it('sends one test message through a provider as the caller: delivered, refused by Slack, and a pending status on --commit', async () => {
    const before = forge.to(P.slack).length;
    const ok = await runVerb(notify, ['test', 'slack-api'], ns);
    expect(ok).toMatchObject({ code: 0, stdout: `test notification delivered through notificationprovider ${ns}/slack-api (slack)\n` });
    const sent = forge.to(P.slack).slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      path: '/slack-api/chat.postMessage',
      headers: { authorization: 'Bearer xoxb-secret', 'user-agent': 'hoist-cli' },
      json: { channel: 'C0HOIST', text: 'BundleDeployment hoist-notify-test: blocked' },
    });

    const refused = await runVerb(notify, ['test', 'slack-refuses'], ns);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('channel_not_found');
    expect(refused.stderr).not.toContain('xoxb-secret');

    // a commit status provider needs --commit, and then puts `pending` on it
    expect((await runVerb(notify, ['test', 'gitlab'], ns)).code).toBe(2);
    const glBefore = forge.to(P.gitlab).length;
    const gl = await runVerb(notify, ['test', 'gitlab', '--commit', commits.good!], ns);
    expect(gl.code).toBe(0);
    expect(forge.to(P.gitlab).slice(glBefore)).toMatchObject([
      {
        method: 'POST',
        path: `/api/v4/projects/acme%2Fapp/statuses/${commits.good}`,
        headers: { 'private-token': 'glpat-secret' },
        json: { state: 'pending', name: 'hoist/hoist-notify-test' },
      },
    ]);
    // an incident tool gets a trigger for the test BundleDeployment
    const ogBefore = forge.to(P.og).length;
    expect((await runVerb(notify, ['test', 'opsgenie'], ns)).code).toBe(0);
    expect(forge.to(P.og).slice(ogBefore)).toMatchObject([
      { path: '/og/v2/alerts', headers: { authorization: 'GenieKey og-api-key' }, json: { alias: `hoist/${ns}/hoist-notify-test` } },
    ]);
    // a provider that is not there
    const missing = await runVerb(notify, ['test', 'nope'], ns);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`notificationprovider ${ns}/nope not found`);
  });
});
