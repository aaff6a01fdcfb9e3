/**
 * Issue 39 through the real controller and API server: NotificationRoutes deliver transitions to
 * loopback HTTPS stand-ins of Slack (incoming webhook), PagerDuty (Events v2) and GitHub (commit
 * statuses, on the same origin as the git repository the BundleDeployment follows), asserting the
 * exact requests. A rolled-back upgrade is one Slack message, one PagerDuty trigger and one
 * `failure` status on the resolved commit; the fix one resolve and a `success`; a reconcile
 * without a transition sends nothing; 100 BDs failing at once are a bounded number of messages; a
 * provider that hangs or answers 500 delays no install and is retried. Tenancy: RBAC on the real
 * API server keeps a tenant from routes and Secrets of another namespace, and a route never sees
 * another namespace's BundleDeployments.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTIFICATION_PROVIDER_KIND, NOTIFICATION_ROUTE_KIND, type NotificationRoute } from '../../api/v1alpha2/notification-types.ts';
import { ANNOTATION_CREDENTIAL_HOSTS, ANNOTATION_REQUESTED_AT, API_VERSION, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { isForbidden } from '../../src/kube/api-error.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { BD_TYPE, cond, isFailed, isSucceeded, startTestController, type TestController } from '../support/controller.ts';
import { deployment } from '../support/e2e-bundles.ts';
import { git, startGitServer, type GitServer } from '../support/git-server.ts';
import { startProviderServer, type ProviderServer } from '../support/provider-server.ts';
import { makePki, type TestPki } from '../support/registry.ts';
import { waitUntil } from '../support/wait.ts';

let t: TestController;
let work: string;
let pki: TestPki;
let gitServer: GitServer;
let forge: ProviderServer;
let src: string;
let teamA: string;
let teamB: string;
const commits: Record<string, string> = {};

const cm = (name: string, v: string) => stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v } });
const REFUSED = stringify(deployment('no-containers', { containers: [] }));

const APPS = ['web', 'slow-1', 'slow-2', 'plain-0', 'a-app', 'b-app'];

/** commits a tree with one directory per app (its own ConfigMap), `web` as given, and pushes; returns the commit */
async function commitTree(label: string, web: Record<string, string>): Promise<string> {
  await rm(join(src, 'apps'), { recursive: true, force: true });
  for (const app of APPS) {
    await mkdir(join(src, 'apps', app), { recursive: true });
    const files = app === 'web' ? web : { 'cm.yaml': cm(app, '1') };
    for (const [f, text] of Object.entries(files)) await writeFile(join(src, 'apps', app, f), text);
  }
  git(src, ['add', '-A']);
  git(src, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', label]);
  const sha = git(src, ['rev-parse', 'HEAD']);
  git(src, ['push', '-q', 'origin', 'HEAD:main']);
  commits[label] = sha;
  return sha;
}

const secret = (namespace: string, name: string, data: Record<string, string>, hosts?: string): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, ...(hosts ? { annotations: { [ANNOTATION_CREDENTIAL_HOSTS]: hosts } } : {}) },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  }) as KubeObject;
const provider = (namespace: string, name: string, spec: Record<string, unknown>): KubeObject =>
  ({ apiVersion: API_VERSION, kind: NOTIFICATION_PROVIDER_KIND, metadata: { name, namespace }, spec }) as KubeObject;
const route = (namespace: string, name: string, spec: Record<string, unknown>): KubeObject =>
  ({ apiVersion: API_VERSION, kind: NOTIFICATION_ROUTE_KIND, metadata: { name, namespace }, spec: { minInterval: '1s', ...spec } }) as KubeObject;

const repoUrl = () => `${forge.url}/acme/app.git`;
const gitSpec = (namespace: string, sha: string, app = 'web'): BundleDeploymentSpec => ({
  installNamespace: namespace,
  format: 'plain',
  sources: [{ kind: 'git', git: { repository: repoUrl(), ref: { commit: sha }, directory: `apps/${app}`, caSecretRef: { name: 'forge-ca' } } }],
});

/** waits until the notifier has nothing queued, held or in flight */
const notifierIdle = () => t.ctl.notifier.dispatcher.whenIdle();

beforeAll(async () => {
  t = await startTestController({
    workers: 8,
    notifications: { burst: 3, digestWindowMs: 5000, baseBackoffMs: 200, maxAttempts: 5, statusIntervalMs: 200 },
  });
  work = await mkdtemp(join(tmpdir(), 'hoist-notify-e2e-'));
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
  for (const p of ['/slack/', '/pd/', '/api/v3/', '/digest/', '/tenant-a/', '/tenant-b/']) forge.answer(p, p === '/api/v3/' ? 201 : p === '/pd/' ? 202 : 200);
  await commitTree('good', { 'cm.yaml': cm('web', '1') });
  await commitTree('bad', { 'cm.yaml': cm('web', '2'), 'bad.yaml': REFUSED });
  await commitTree('fixed', { 'cm.yaml': cm('web', '3') });

  teamA = `notify-a-${t.runId}`;
  teamB = `notify-b-${t.runId}`;
  for (const ns of [teamA, teamB]) await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await t.client.create(secret(t.namespace, 'forge-ca', { 'ca.crt': pki.caCert }));
  for (const ns of [teamA, teamB]) await t.client.create(secret(ns, 'forge-ca', { 'ca.crt': pki.caCert }));
  // team A: Slack (the webhook URL is the credential), PagerDuty (routing key), GitHub (token)
  await t.client.create(secret(teamA, 'slack', { address: `${forge.url}/slack/T000/B000/XXXX` }, forge.host));
  await t.client.create(secret(teamA, 'pagerduty', { token: 'routing-key-a' }, forge.host));
  await t.client.create(secret(teamA, 'github', { token: 'ghp_team_a' }, forge.host));
  const ca = { certSecretRef: { name: 'forge-ca' } };
  await t.client.create(provider(teamA, 'slack', { type: 'slack', secretRef: { name: 'slack' }, ...ca }));
  await t.client.create(provider(teamA, 'pagerduty', { type: 'pagerduty', address: `${forge.url}/pd/v2/enqueue`, secretRef: { name: 'pagerduty' }, ...ca }));
  await t.client.create(provider(teamA, 'github', { type: 'github', address: `${forge.url}/acme/app`, secretRef: { name: 'github' }, ...ca }));
  const web = { bundleDeployments: { names: ['web'] }, linkTemplate: 'https://dash.example.com/bd/{{name}}?rev={{revision}}' };
  await t.client.create(route(teamA, 'web-slack', { providerRef: { name: 'slack' }, ...web }));
  await t.client.create(route(teamA, 'web-pagerduty', { providerRef: { name: 'pagerduty' }, ...web }));
  await t.client.create(route(teamA, 'web-github', { providerRef: { name: 'github' }, ...web }));
}, 180_000);

afterAll(async () => {
  await t?.stop();
  await forge?.close();
  await gitServer?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('a rolled-back upgrade and its fix', () => {
  it('one Slack message, one PagerDuty trigger and a GitHub failure on the resolved commit; the fix one resolve and a success; no transition, no message', async () => {
    await t.create('web', gitSpec(teamA, commits.good!));
    await t.waitFor('web', isSucceeded, 'installed');
    await waitUntil('the install reached GitHub', () => forge.to('/api/v3/').length >= 1, 30_000);
    await notifierIdle();
    const at = { slack: forge.to('/slack/').length, pd: forge.to('/pd/').length, gh: forge.to('/api/v3/').length };
    // the install: a success status on its commit and one message
    expect(forge.to('/api/v3/').at(-1)).toMatchObject({
      path: `/api/v3/repos/acme/app/statuses/${commits.good}`,
      json: { state: 'success', context: 'hoist/web' },
    });
    expect(at.slack).toBe(1);

    await t.patchSpec('web', { sources: gitSpec(teamA, commits.bad!).sources });
    await t.waitFor('web', (b) => isFailed(b) && cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back');
    await waitUntil(
      'the rollback reached every provider',
      () => forge.to('/api/v3/').length > at.gh && forge.to('/pd/').length > at.pd && forge.to('/slack/').length > at.slack,
      30_000,
    );
    await notifierIdle();
    const slack = forge.to('/slack/').slice(at.slack);
    const pd = forge.to('/pd/').slice(at.pd);
    const gh = forge.to('/api/v3/').slice(at.gh);
    expect(slack).toHaveLength(1);
    expect(slack[0]).toMatchObject({ method: 'POST', path: '/slack/T000/B000/XXXX', headers: { 'content-type': 'application/json' } });
    const sj = slack[0]!.json as { text: string; blocks: Array<{ type: string; text: { text: string } }> };
    expect(sj.text).toBe('BundleDeployment web: upgrade rolled back (revision 2)');
    expect(sj.blocks[1]!.text.text).toContain(`commit ${commits.bad}`);
    expect(sj.blocks[1]!.text.text).toContain('failed at: apply');
    expect(sj.blocks[2]!.text.text).toBe('<https://dash.example.com/bd/web?rev=2|details>');
    expect(pd).toHaveLength(1);
    expect(pd[0]).toMatchObject({
      method: 'POST',
      path: '/pd/v2/enqueue',
      json: {
        routing_key: 'routing-key-a',
        event_action: 'trigger',
        dedup_key: `hoist/${teamA}/web`,
        payload: { source: 'hoist', severity: 'error', class: 'RolledBack', component: 'web' },
      },
    });
    expect(gh).toHaveLength(1);
    expect(gh[0]).toMatchObject({
      method: 'POST',
      path: `/api/v3/repos/acme/app/statuses/${commits.bad}`,
      headers: { authorization: 'Bearer ghp_team_a', accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' },
      json: { state: 'failure', context: 'hoist/web', target_url: 'https://dash.example.com/bd/web?rev=2' },
    });
    // no secret in any message body
    for (const r of [...slack, ...pd, ...gh]) expect(r.body).not.toMatch(/ghp_team_a|XXXX/);

    // a reconcile without a transition: nothing
    const before = forge.requests.length;
    const token = `${Date.now()}-again`;
    await t.client.patch(BD_TYPE, 'web', undefined, { metadata: { annotations: { [ANNOTATION_REQUESTED_AT]: token } } }, 'merge');
    await t.waitFor('web', (b) => b.status?.lastHandledRequest === token, 'reconciled again');
    await t.idle({ quietMs: 500 });
    await notifierIdle();
    expect(forge.requests.slice(before).map((r) => r.path)).toEqual([]);

    // the fix
    const fixAt = { slack: forge.to('/slack/').length, pd: forge.to('/pd/').length, gh: forge.to('/api/v3/').length };
    await t.patchSpec('web', { sources: gitSpec(teamA, commits.fixed!).sources });
    await t.waitFor('web', isSucceeded, 'upgraded');
    await waitUntil(
      'the fix reached PagerDuty and GitHub',
      () => forge.to('/pd/').length > fixAt.pd && forge.to('/api/v3/').some((r) => r.path.endsWith(commits.fixed!)),
      30_000,
    );
    await notifierIdle();
    const resolves = forge.to('/pd/').slice(fixAt.pd);
    expect(resolves.map((r) => r.json)).toEqual([{ routing_key: 'routing-key-a', event_action: 'resolve', dedup_key: `hoist/${teamA}/web` }]);
    const statuses = forge.to('/api/v3/').slice(fixAt.gh);
    expect(statuses.filter((r) => (r.json as { state: string }).state === 'success').map((r) => r.path)).toEqual([
      `/api/v3/repos/acme/app/statuses/${commits.fixed}`,
    ]);
    expect(statuses.every((r) => r.path.endsWith(commits.fixed!))).toBe(true);
    expect(
      forge
        .to('/slack/')
        .slice(fixAt.slack)
        .map((r) => (r.json as { text: string }).text),
    ).toEqual(['BundleDeployment web: upgraded (revision 3)']);

    // the route says what it delivered
    const getRoute = async () =>
      (await t.client.get({ apiVersion: API_VERSION, kind: NOTIFICATION_ROUTE_KIND }, 'web-pagerduty', teamA)) as unknown as NotificationRoute;
    await waitUntil('route status', async () => (await getRoute()).status?.lastDelivered?.event === 'UpgradeSucceeded', 10_000);
    expect((await getRoute()).status).toMatchObject({
      lastDelivered: { bundleDeployment: 'web' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'Delivered' }],
    });
  });
});

describe('noise control and dead providers', () => {
  it('100 BundleDeployments failing at once: a bounded number of messages that together name all of them', async () => {
    await t.client.create(secret(teamB, 'digest', { address: `${forge.url}/digest/hook` }, forge.host));
    await t.client.create(provider(teamB, 'digest', { type: 'slack', secretRef: { name: 'digest' }, certSecretRef: { name: 'forge-ca' } }));
    await t.client.create(
      route(teamB, 'all', { providerRef: { name: 'digest' }, bundleDeployments: { selector: { matchLabels: { wave: 'w1' } } }, severity: 'error' }),
    );
    const started = Date.now();
    const names = Array.from({ length: 100 }, (_, i) => `wave-${i}`);
    await Promise.all(names.map((n) => t.create(n, gitSpec(teamB, commits.bad!), { wave: 'w1' })));
    for (const n of names) await t.waitFor(n, isFailed, 'blocked', 180_000);
    await notifierIdle();
    const elapsed = Date.now() - started;
    const messages = forge.to('/digest/');
    const named = new Set<string>();
    for (const m of messages) {
      const text = JSON.stringify(m.json);
      for (const n of names) if (text.includes(`${n} (`) || text.includes(`BundleDeployment ${n}:`)) named.add(n);
    }
    // at most the burst, then one digest per window (5 s) of the time the failures took; and far fewer than 100
    const bound = 3 + Math.ceil(elapsed / 5000) + 1;
    expect(messages.length).toBeLessThanOrEqual(bound);
    expect(messages.length).toBeLessThan(names.length);
    const counted = messages.reduce((sum, m) => {
      const text = (m.json as { text: string }).text;
      const n = /^(\d+) BundleDeployments/.exec(text);
      return sum + (n ? Number(n[1]) : 1);
    }, 0);
    expect(counted).toBe(100);
    // each BD is named, alone or among a digest's first 20
    expect(named.size).toBeGreaterThanOrEqual(Math.min(100, messages.length));
  }, 300_000);

  it('a provider that hangs or answers 500 delays no install and is retried', async () => {
    forge.answer('/dead/', 'hang');
    forge.answer('/flaky/', (n) => (n === 1 ? 500 : 200));
    const ns = teamA;
    await t.client.create(secret(ns, 'dead', { address: `${forge.url}/dead/hook` }, forge.host));
    await t.client.create(secret(ns, 'flaky', { address: `${forge.url}/flaky/hook`, token: 'hmac-key' }, forge.host));
    await t.client.create(provider(ns, 'dead', { type: 'generic', secretRef: { name: 'dead' }, certSecretRef: { name: 'forge-ca' }, timeout: '30m' }));
    await t.client.create(provider(ns, 'flaky', { type: 'generic', secretRef: { name: 'flaky' }, certSecretRef: { name: 'forge-ca' } }));
    // the baseline: the same install with no provider
    const t0 = Date.now();
    await t.create('plain-0', gitSpec(teamB, commits.good!, 'plain-0'));
    const base = await t.reconciled('plain-0', t0, 'installed without a provider');
    await t.client.create(route(ns, 'dead', { providerRef: { name: 'dead' }, bundleDeployments: { selector: { matchLabels: { slow: 'yes' } } } }));
    await t.client.create(route(ns, 'flaky', { providerRef: { name: 'flaky' }, bundleDeployments: { selector: { matchLabels: { slow: 'yes' } } } }));
    await t.create('slow-1', gitSpec(ns, commits.good!, 'slow-1'), { slow: 'yes' });
    await t.waitFor('slow-1', isSucceeded, 'installed');
    await waitUntil('the dead provider got the message', () => forge.to('/dead/').length === 1, 30_000);
    // while that request hangs, another BD routed to the same dead provider installs
    const t1 = Date.now();
    await t.create('slow-2', gitSpec(ns, commits.good!, 'slow-2'), { slow: 'yes' });
    const withProvider = await t.reconciled('slow-2', t1, 'installed with a hanging provider');
    await t.waitFor('slow-2', isSucceeded, 'installed');
    expect(forge.to('/dead/')).toHaveLength(1);
    // the dead provider's request hangs for its 30 min timeout until released below: a delivery on
    // the reconcile path would have held slow-1's and slow-2's installs past every wait above
    expect(withProvider.changed).toBe(base.changed);
    // the flaky one was retried: the same signed body twice, then delivered
    await waitUntil('flaky retried', () => forge.to('/flaky/').length >= 3, 30_000);
    const flaky = forge.to('/flaky/');
    expect(flaky[0]!.body).toBe(flaky[1]!.body);
    expect(flaky[0]!.headers['x-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    // the dead provider comes back: what it was sent is delivered, and the lanes go idle
    forge.answer('/dead/', 200);
    forge.release(200);
    await notifierIdle();
  }, 120_000);
});

describe('tenancy', () => {
  it('a tenant cannot touch another namespace’s routes or Secrets, and its routes never see another namespace’s BundleDeployments', async () => {
    const bob = t.client.impersonate('bob');
    // bob may manage notifications and read Secrets in team B only
    await t.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'notify', namespace: teamB },
      rules: [
        { apiGroups: ['core.rukpak.io'], resources: ['notificationproviders', 'notificationroutes'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create'] },
      ],
    } as KubeObject);
    await t.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'notify', namespace: teamB },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'notify' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
    } as KubeObject);
    await waitUntil(
      'rbac in force',
      async () => !!(await bob.list({ apiVersion: API_VERSION, kind: NOTIFICATION_ROUTE_KIND }, { namespace: teamB }).catch(() => undefined)),
      10_000,
    );
    const refused = async (p: Promise<unknown>) =>
      expect(
        await p.then(
          () => 'allowed',
          (e: unknown) => (isForbidden(e) ? 'forbidden' : String(e)),
        ),
      ).toBe('forbidden');
    await refused(bob.create(route(teamA, 'steal', { providerRef: { name: 'slack' } })));
    await refused(bob.create(provider(teamA, 'steal', { type: 'slack', address: `${forge.url}/tenant-b/x` })));
    await refused(bob.get({ apiVersion: 'v1', kind: 'Secret' }, 'slack', teamA));
    await refused(bob.patch({ apiVersion: API_VERSION, kind: NOTIFICATION_ROUTE_KIND }, 'web-slack', teamA, { spec: { providerRef: { name: 'x' } } }, 'merge'));
    // and the API server refuses what the CRD's rules forbid: credentials in the address, an incident tool without its Secret
    const invalid = async (p: Promise<unknown>, what: string) =>
      expect(
        String(
          await p.then(
            () => 'allowed',
            (e: unknown) => e,
          ),
        ),
      ).toContain(what);
    await invalid(bob.create(provider(teamB, 'userinfo', { type: 'generic', address: 'https://u:p@hooks.example.com/x' })), 'without user:password@');
    await invalid(bob.create(provider(teamB, 'no-key', { type: 'pagerduty' })), 'spec.secretRef (key token) is required');

    // bob's route in team B names team A's BD and selects everything: it gets nothing of it
    await bob.create(provider(teamB, 'mine', { type: 'generic', address: `${forge.url}/tenant-b/hook`, certSecretRef: { name: 'forge-ca' } }));
    await bob.create(route(teamB, 'theirs', { providerRef: { name: 'mine' }, bundleDeployments: { names: ['web'] } }));
    await bob.create(route(teamB, 'everything', { providerRef: { name: 'mine' } }));
    // a provider naming a ServiceAccount reads its Secret as that account (which may read nothing)
    await bob.create(secret(teamB, 'token', { token: 't' }, forge.host));
    await bob.create(
      provider(teamB, 'as-sa', {
        type: 'generic',
        address: `${forge.url}/tenant-b/sa`,
        secretRef: { name: 'token' },
        serviceAccountName: 'nobody',
        certSecretRef: { name: 'forge-ca' },
      }),
    );
    await bob.create(route(teamB, 'as-sa', { providerRef: { name: 'as-sa' }, bundleDeployments: { names: ['b-app'] } }));
    // team A's own route for the same BD does get it
    await t.client.create(secret(teamA, 'tenant-a', { address: `${forge.url}/tenant-a/hook` }, forge.host));
    await t.client.create(provider(teamA, 'tenant-a', { type: 'generic', secretRef: { name: 'tenant-a' }, certSecretRef: { name: 'forge-ca' } }));
    await t.client.create(route(teamA, 'tenant-a', { providerRef: { name: 'tenant-a' }, bundleDeployments: { names: ['web', 'a-app'] } }));
    await t.create('a-app', gitSpec(teamA, commits.good!, 'a-app'));
    await t.create('b-app', gitSpec(teamB, commits.good!, 'b-app'));
    await t.waitFor('a-app', isSucceeded, 'a-app installed');
    await t.waitFor('b-app', isSucceeded, 'b-app installed');
    await waitUntil('team A notified', () => forge.to('/tenant-a/').length >= 1, 30_000);
    await waitUntil(
      'the as-sa route reports its failure',
      async () =>
        ((await bob.get({ apiVersion: API_VERSION, kind: NOTIFICATION_ROUTE_KIND }, 'as-sa', teamB)) as unknown as NotificationRoute | undefined)?.status
          ?.lastFailure !== undefined,
      30_000,
    );
    await notifierIdle();
    const seenByB = forge.to('/tenant-b/').map((r) => JSON.stringify(r.json));
    expect(seenByB.some((j) => j.includes('"bundleDeployment":"a-app"') || j.includes('"bundleDeployment":"web"'))).toBe(false);
    expect(seenByB.some((j) => j.includes('"bundleDeployment":"b-app"'))).toBe(true);
    expect(forge.to('/tenant-a/').map((r) => (r.json as { bundleDeployment: string }).bundleDeployment)).toContain('a-app');
    expect(forge.to('/tenant-b/sa')).toHaveLength(0);
    const asSa = (await bob.get({ apiVersion: API_VERSION, kind: NOTIFICATION_ROUTE_KIND }, 'as-sa', teamB)) as unknown as NotificationRoute;
    expect(asSa.status?.lastFailure?.message).toContain(`secret ${teamB}/token may not be read`);
    expect(asSa.status?.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'DeliveryFailed' });
  }, 120_000);
});
