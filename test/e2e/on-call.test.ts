/**
 * The on-call verbs of issue 25 through their real code path, against a real controller and the
 * real API server:
 *
 * - `hoist retry`: a revision rolled back after a real admission webhook refused its upgrade is
 *   not retried by later reconciles; a retry while the webhook still refuses tries it exactly once
 *   more (one more review of its content) and fails again; once the fault is gone, a retry
 *   installs it. `status.lastHandledRequest` equals the annotation set;
 * - `hoist reconcile --wait` on a git source following a branch with `pollInterval: 1h` applies a
 *   new commit at once;
 * - `hoist tree` on the argo-rollouts bundle with its Deployment made unready (no node takes its
 *   pod) lists that Deployment as the one not ready, with its condition's message and its pod's
 *   problem; the status inventory equals the revision's objects; `hoist events` prints the
 *   BundleDeployment's and that Deployment's pod's Events in time order.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { ANNOTATION_REQUESTED_AT } from '../../api/v1alpha2/types.ts';
import { splitHooks } from '../../src/apply/hooks.ts';
import { RevisionStore } from '../../src/revisions/revision-store.ts';
import { events, type EventObject } from '../../src/cli/verbs/events.ts';
import { reconcile, retry } from '../../src/cli/verbs/reconcile.ts';
import { tree } from '../../src/cli/verbs/tree.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { inventoryEntry } from '../../src/revisions/inventory.ts';
import { guardConfigMaps, startAdmissionWebhook, WEBHOOK_CONFIG, type AdmissionWebhook } from '../support/admission-webhook.ts';
import { cond, isDone, isSucceeded, startTestController, type TestController } from '../support/controller.ts';
import { git, startGitServer, type GitServer } from '../support/git-server.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../support/http-files.ts';
import { waitUntil } from '../support/wait.ts';
import { FIXTURES, isolatePlain, servePinned } from '../support/upgrade-fixtures.ts';
import { runVerb, type Verb } from '../support/cli-verb.ts';

let t: TestController;
let files: FileServer;
let webhook: AdmissionWebhook | undefined;
let gitServer: GitServer | undefined;
let work: string | undefined;

beforeAll(async () => {
  t = await startTestController();
  files = await startFileServer();
});
afterAll(async () => {
  await t?.client.delete(WEBHOOK_CONFIG, `hoist-test-retry-${t.runId}`, undefined).catch(() => undefined);
  await webhook?.close();
  await gitServer?.close();
  if (work) await rm(work, { recursive: true, force: true });
  await t?.stop();
  await files?.close();
});

/** runs a verb in-process with the test's kubeconfig (and the controller's namespace) */
const hoist = (verb: Verb, args: string[], opts: { namespaced?: boolean } = {}) => runVerb(verb, args, opts.namespaced ? t.namespace : undefined);

const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const valueOf = async (name: string, ns: string) =>
  ((await t.client.get(CM, name, ns)) as (KubeObject & { data?: Record<string, string> }) | undefined)?.data?.value;

describe('hoist retry and hoist reconcile', () => {
  it('a revision rolled back after a refusing admission webhook is retried once per request, and installs once the fault is gone', async () => {
    const bd = `retry-${t.runId}`;
    const ns = `retry-${t.runId}`;
    const label = { 'hoist.test/retry': t.runId };
    const settings = (value: string) => ({
      'cm.yaml': stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', labels: label }, data: { value } }),
    });
    let refuse = false;
    webhook = await startAdmissionWebhook((r) =>
      refuse && r.object?.data?.value === 'two'
        ? { allowed: false, status: { code: 400, reason: 'BadRequest', message: 'value two is not allowed by policy' } }
        : { allowed: true },
    );
    await guardConfigMaps(t.client, `hoist-test-retry-${t.runId}`, label, webhook, 5);
    const reviewsOfTwo = () => webhook!.requests.filter((r) => r.object?.data?.value === 'two').length;

    await t.create(bd, { installNamespace: ns, format: 'plain', sources: await servePinned(files, `/${bd}-v1.tgz`, settings('one')) });
    await t.waitFor(bd, isSucceeded, 'revision 1 installed', 60_000);
    refuse = true;
    await t.patchSpec(bd, { sources: await servePinned(files, `/${bd}-v2.tgz`, settings('two')) });
    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'revision 2 rolled back', 60_000);
    expect(cond(rolled, 'Progressing')?.message).toContain('value two is not allowed by policy');
    expect(rolled.status?.attemptedRevision).toMatchObject({ number: 2, rolledBackTo: 1 });

    // later reconciles hold it back: no new attempt
    await t.idle({ quietMs: 500 });
    let reviews = reviewsOfTwo();
    const at = Date.now();
    t.ctl.manager.controller.enqueue(bd);
    await t.reconciled(bd, at, 'a reconcile without a request');
    expect(reviewsOfTwo()).toBe(reviews);

    // retry while the webhook still refuses: tried exactly once more, fails again (exit 1), held back again
    const again = await hoist(retry, [bd, '--timeout', '60s']);
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toContain('handled: Progressing=False/RolledBack');
    expect(reviewsOfTwo()).toBeGreaterThan(reviews);
    await t.idle({ quietMs: 500 });
    reviews = reviewsOfTwo();
    const later = Date.now();
    t.ctl.manager.controller.enqueue(bd);
    await t.reconciled(bd, later, 'a reconcile after the handled request');
    expect(reviewsOfTwo()).toBe(reviews);

    // the fault is gone: retry installs revision 2
    refuse = false;
    const ok = await hoist(retry, [bd, '--timeout', '60s']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('handled: Progressing=False/Succeeded');
    const done = (await t.get(bd))!;
    expect(isSucceeded(done)).toBe(true);
    expect(done.status?.activeRevision?.number).toBe(2);
    expect(done.status?.attemptedRevision).toBeUndefined();
    expect(done.status?.lastHandledRequest).toBe(done.metadata.annotations?.[ANNOTATION_REQUESTED_AT]);
    expect(await valueOf('settings', ns)).toBe('two');

    // nothing left to retry
    const nothing = await hoist(retry, [bd]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('nothing to retry');
  }, 180_000);

  it('a first revision Blocked at its progressDeadline gets another deadline from a retry', async () => {
    const bd = `blocked-${t.runId}`;
    const ns = `blocked-${t.runId}`;
    // a Deployment no node takes: never available; nothing to roll back to, so Blocked at the deadline
    const stuck = stringify({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'stuck' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'stuck' } },
        template: {
          metadata: { labels: { app: 'stuck' } },
          spec: { nodeSelector: { 'hoist.test/no-such-node': 'true' }, containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
        },
      },
    });
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      upgrade: { progressDeadline: '3s' },
      sources: await servePinned(files, `/${bd}.tgz`, { 'deploy.yaml': stuck }),
    });
    const blocked = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'Blocked', 'Blocked at the deadline', 60_000);
    const first = blocked.status!.activeRevision!.appliedAt!;
    const r = await hoist(retry, [bd, '--timeout', '60s']);
    // not healthy within its second deadline either: Blocked again, after a fresh start
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('handled: Progressing=False/Blocked');
    const again = (await t.get(bd))!;
    expect(Date.parse(again.status!.activeRevision!.appliedAt!)).toBeGreaterThan(Date.parse(first));
    expect(again.status?.lastHandledRequest).toBe(again.metadata.annotations?.[ANNOTATION_REQUESTED_AT]);
    expect(t.log.records.some((l) => l.bd === bd && l.note === 'blocked revision retried on request')).toBe(true);
  }, 120_000);

  it('reconcile --wait on a branch-following git source with pollInterval 1h applies a new commit at once', async () => {
    work = await mkdtemp(join(tmpdir(), 'hoist-e2e-reconcile-'));
    const repos = join(work, 'repos');
    await mkdir(repos);
    const bare = join(repos, 'app.git');
    git('/', ['init', '-q', '--bare', '-b', 'main', bare]);
    const clone = join(work, 'clone');
    await mkdir(join(clone, 'manifests'), { recursive: true });
    git(clone, ['init', '-q', '-b', 'main']);
    const commit = async (value: string): Promise<string> => {
      await writeFile(join(clone, 'manifests', 'cm.yaml'), `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pulled\ndata:\n  value: "${value}"\n`);
      git(clone, ['add', '.']);
      git(clone, ['commit', '-qm', value]);
      git(clone, ['push', '-q', bare, 'main']);
      return git(clone, ['rev-parse', 'HEAD']);
    };
    gitServer = await startGitServer({ projectRoot: repos });
    const bd = `follows-${t.runId}`;
    const ns = `follows-${t.runId}`;
    await commit('one');
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      pollInterval: '1h',
      sources: [{ kind: 'git', git: { repository: `${gitServer.url}/app.git`, ref: { branch: 'main' }, directory: 'manifests' } }],
    });
    await t.waitFor(bd, isDone, 'the first commit installed', 60_000);

    const c2 = await commit('two');
    await t.idle({ quietMs: 500 });
    expect((await t.get(bd))?.status?.resolvedSources?.[0]?.commit).not.toBe(c2);
    const r = await hoist(reconcile, [bd, '--wait', '--timeout', '60s']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/reconcile requested \(core\.rukpak\.io\/requested-at: \S+\)\n.*handled: Progressing=False\/Succeeded/);
    const after = (await t.get(bd))!;
    expect(after.status?.resolvedSources?.[0]?.commit).toBe(c2);
    expect(after.status?.activeRevision?.number).toBe(2);
    expect(after.status?.lastHandledRequest).toBe(after.metadata.annotations?.[ANNOTATION_REQUESTED_AT]);
    expect(await valueOf('pulled', ns)).toBe('two');
  }, 120_000);
});

describe('hoist tree, hoist events and the inventory', () => {
  it('name the unready Deployment of argo-rollouts with its condition message; the inventory equals the revision', async () => {
    const id = `t${t.runId}`;
    const ns = `tree-${t.runId}`;
    const bd = `rollouts-tree-${t.runId}`;
    // argo-rollouts, its one Deployment asking for a node that does not exist: it never becomes available
    const docs = parseAllDocuments(isolatePlain(readFileSync(new URL('plain/argo-rollouts-v1.8.4/install.yaml', FIXTURES), 'utf8'), id)).map(
      (d) => d.toJS() as KubeObject,
    );
    const deployment = docs.find((d) => d.kind === 'Deployment')! as KubeObject & { spec: { template: { spec: Record<string, unknown> } } };
    deployment.spec.template.spec.nodeSelector = { 'hoist.test/no-such-node': 'true' };
    const body = await tarGz({ 'install.yaml': docs.map((d) => stringify(d)).join('---\n') });
    files.set(`/${bd}.tgz`, body);
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [{ kind: 'http', http: { url: files.url(`/${bd}.tgz`), sha256: sha256(body) } }] });
    const installed = await t.waitFor(
      bd,
      (b) => b.status?.activeRevision !== undefined && cond(b, 'Healthy')?.status === 'False',
      'installed, not healthy',
      90_000,
    );

    // the inventory in status is the revision's objects
    const stored = await new RevisionStore(t.client, t.namespace).load(bd, installed.status!.activeRevision!);
    const objects = splitHooks(stored!).managed;
    expect(installed.status?.activeRevision?.inventory).toEqual({ entries: objects.map(inventoryEntry).sort((a, b) => (a.id < b.id ? -1 : 1)) });
    expect(installed.status?.activeRevision?.inventory?.entries).toHaveLength(15);

    // once the Deployment's controller and the scheduler have said why
    const live = async () =>
      (await t.client.get({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'argo-rollouts', ns)) as KubeObject & {
        status?: { conditions?: Array<{ type: string; status: string; message?: string }> };
      };
    await waitUntil(
      'the Deployment reports Available=False',
      async () => (await live())?.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'False') ?? false,
    );
    const available = (await live()).status!.conditions!.find((c) => c.type === 'Available')!;

    const out = await hoist(tree, [bd], { namespaced: true });
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`BundleDeployment ${bd}: revision 1 (${installed.status!.activeRevision!.contentDigest}), 15 objects, 1 not ready`);
    expect(lines[1]).toMatch(/^PHASE\s+OBJECT\s+OWNER\s+HEALTH\s+RULE\s+REASON$/);
    const rows = lines.slice(2);
    expect(rows).toHaveLength(15);
    // a ready row ends with its health and the rule that judged it (no reason)
    const notReady = rows.filter((l) => !/\sReady\s+\S+$/.test(l));
    expect(notReady, out.stdout).toHaveLength(1);
    expect(notReady[0]).toMatch(new RegExp(`^deploy\\s+Deployment ${ns}/argo-rollouts\\s+${bd}\\s+InProgress\\s+kstatus\\s+Available: 0/1`));
    expect(notReady[0]).toContain(`Available=False MinimumReplicasUnavailable: ${available.message}`);
    expect(notReady[0]).toMatch(/pod argo-rollouts-\S+ not scheduled/);
    // phases in apply order: the CRDs' phase before the Deployment's
    expect(rows.findIndex((l) => l.startsWith('crds'))).toBeLessThan(rows.findIndex((l) => l.startsWith('deploy')));
    const onlyNotReady = await hoist(tree, [bd, '--not-ready', '-o', 'json'], { namespaced: true });
    expect(
      (JSON.parse(onlyNotReady.stdout) as Array<{ kind: string; name: string; health: string; phase: string; owner: string }>).map((o) => [
        o.kind,
        o.name,
        o.health,
        o.phase,
        o.owner,
      ]),
    ).toEqual([['Deployment', 'argo-rollouts', 'InProgress', 'deploy', bd]]);

    // events: the BD's own and the unready Deployment's pod's (FailedScheduling), oldest first
    await waitUntil('the scheduler has reported the pod', async () => {
      const e = await hoist(events, [bd, '-o', 'json'], { namespaced: true });
      return (JSON.parse(e.stdout) as EventObject[]).some((x) => x.reason === 'FailedScheduling');
    });
    const ev = await hoist(events, [bd, '-o', 'json'], { namespaced: true });
    const list = JSON.parse(ev.stdout) as EventObject[];
    expect(list.find((e) => e.involvedObject.kind === 'BundleDeployment' && e.reason === 'Installed')?.involvedObject.name).toBe(bd);
    expect(list.find((e) => e.reason === 'FailedScheduling')?.involvedObject).toMatchObject({ kind: 'Pod', namespace: ns });
    const times = list.map((e) => Date.parse(e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? ''));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const table = await hoist(events, [bd], { namespaced: true });
    expect(table.stdout).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+(COUNT\s+)?MESSAGE\n/);
    expect(table.stdout).toMatch(new RegExp(`Normal\\s+Installed\\s+BundleDeployment ${bd}\\s+`));
    expect(table.stdout).toMatch(new RegExp(`Warning\\s+FailedScheduling\\s+Pod ${ns}/argo-rollouts-`));
  }, 180_000);
});
