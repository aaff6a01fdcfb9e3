/**
 * Remote clusters as targets (issue 37): BundleDeployments on the suite's control plane (the
 * management cluster) with spec.kubeConfig install into a second control plane this file starts
 * (etcd + kube-apiserver, no nodes), through the kubeconfig in a Secret as Cluster API writes it
 * (key `value`). A plain bundle and a Helm chart with hooks install there and nothing of them
 * lands on the management cluster; an upgrade keeps UIDs on the remote; a refused upgrade rolls
 * back there; pause + hand edit + resume reverts there; a rotated Secret (another identity) is a
 * new client without a restart; a stopped remote API server makes the BD say TargetUnreachable
 * naming the host while a local BD installs meanwhile, and its return resumes without a spec
 * change; delete uninstalls from the remote; an exec plugin in the kubeconfig is refused naming
 * the field. Revisions stay on the management cluster.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_OWNER_NAME, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { API_VERSION, KIND } from '../../api/v1alpha2/types.ts';
import { diff } from '../../src/cli/verbs/diff.ts';
import { events } from '../../src/cli/verbs/events.ts';
import { getRow } from '../../src/cli/verbs/get.ts';
import { history } from '../../src/cli/verbs/history.ts';
import { tree } from '../../src/cli/verbs/tree.ts';
import { startControlPlane, type ControlPlane } from '../../src/devcluster/control-plane.ts';
import { toolPath } from '../../src/devcluster/tools.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { runVerb } from '../support/cli-verb.ts';
import { kubeconfigPath } from '../support/env.ts';
import { cond, describeStatus, isDone, isSucceeded } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { deleteBundleDeployment, until } from '../support/e2e-bundles.ts';
import { crdOf } from '../support/crds.ts';
import { cm, servePinned } from '../support/upgrade-fixtures.ts';

const { t, files, cleanup } = controllerWithFiles();
const run = promisify(execFile);
/** names of this file's objects (t.runId is known only once beforeAll ran) */
const id = randomBytes(3).toString('hex');
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
const REFUSED = stringify({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'no-containers' },
  spec: { selector: { matchLabels: { app: 'x' } }, template: { metadata: { labels: { app: 'x' } }, spec: { containers: [] } } },
});

let remote: ControlPlane;
/** where this file writes BundleDeployment files for hoist diff */
let tmp: string;
/** an admin client of the remote cluster, for setup and assertions */
let rc: RestKubeClient;
let host: string;
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function putKubeconfig(name: string, text: string): Promise<void> {
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: t.namespace }, data: { value: b64(text) } } as KubeObject;
  await t.client.apply(secret, { fieldManager: 'hoist-test', force: true });
}

const kubeConfig = (name: string) => ({ secretRef: { name, namespace: t.namespace } });

/** the live BD `name` as a file for hoist diff -f, its spec changed by `change` */
async function bdFile(name: string, change: Partial<BundleDeployment['spec']>): Promise<string> {
  const live = (await t.get(name))!;
  const file = join(tmp, `${name}-${randomBytes(3).toString('hex')}.yaml`);
  await writeFile(
    file,
    stringify({ apiVersion: API_VERSION, kind: KIND, metadata: { name, labels: live.metadata.labels }, spec: { ...live.spec, ...change } }),
  );
  return file;
}

async function waitSucceeded(name: string, what: string, pred: (b: BundleDeployment) => boolean = () => true, ms = 90_000): Promise<BundleDeployment> {
  return t.waitFor(name, (b) => isSucceeded(b) && pred(b), what, ms);
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'hoist-remote-cli-'));
  remote = await startControlPlane({ log: (l) => console.error(`[remote control plane] ${l}`) });
  rc = createKubeClient(loadKubeConfig(remote.kubeconfigPath));
  host = new URL(remote.server).host;
  await putKubeconfig('cluster-a-kubeconfig', readFileSync(remote.kubeconfigPath, 'utf8'));
}, 180_000);

afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
  await rc?.close();
  await remote?.stop();
});

describe('a BundleDeployment installing into a remote cluster', { timeout: 240_000 }, () => {
  const bd = `remote-plain-${id}`;
  const ns = `remote-plain-${id}`;
  let uids: Map<string, string | undefined>;

  it('installs a plain bundle there (not on the management cluster), status and get -o wide name the host, revisions stay on the management cluster', async () => {
    const v1 = await servePinned(files, '/remote-v1.tgz', { 'a.yaml': cm('app-config', { color: 'blue' }), 'b.yaml': cm('keep', { a: '1' }) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: v1, kubeConfig: kubeConfig('cluster-a-kubeconfig') });
    const done = await waitSucceeded(bd, 'installed into the remote cluster');
    expect(done.status?.target).toEqual({ cluster: host, kubeConfigSecret: `${t.namespace}/cluster-a-kubeconfig` });
    expect(getRow(done, new Date(), true)).toContain(host);
    const there = (await rc.get(CM, 'app-config', ns)) as KubeObject & { data?: Record<string, string> };
    expect(there?.data).toEqual({ color: 'blue' });
    expect(there?.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bd);
    expect(await t.client.get(CM, 'app-config', ns)).toBeUndefined();
    expect(await t.client.get({ apiVersion: 'v1', kind: 'Namespace' }, ns)).toBeUndefined();
    // the revision Secret is on the management cluster, in the controller's namespace
    const revisions = await t.client.list(SECRET, { namespace: t.namespace, labelSelector: `core.rukpak.io/revision-of=${bd}` });
    expect(revisions.items.length).toBeGreaterThan(0);
    uids = new Map([
      ['app-config', there?.metadata.uid],
      ['keep', (await rc.get(CM, 'keep', ns))?.metadata.uid],
    ]);
  });

  it('dependsOn across targets: a remote BD waits for a local one, and a local BD for the remote one', async () => {
    const base = `local-base-${id}`;
    const dependent = `remote-dependent-${id}`;
    const after = `local-after-${id}`;
    const dns = `remote-dependent-${id}`;
    const dep = await servePinned(files, '/remote-dependent.tgz', { 'a.yaml': cm('dependent', { a: '1' }) });
    await t.create(dependent, {
      installNamespace: dns,
      format: 'plain',
      sources: dep,
      kubeConfig: kubeConfig('cluster-a-kubeconfig'),
      dependsOn: [{ name: base }],
    });
    const waiting = await t.waitFor(
      dependent,
      (b) => cond(b, 'Progressing')?.reason === 'DependencyNotReady' && /not found/.test(cond(b, 'Progressing')?.message ?? ''),
      'the remote BD waits for its local dependency',
    );
    expect(cond(waiting, 'Progressing')?.message).toContain(base);
    expect(await rc.get(CM, 'dependent', dns)).toBeUndefined();
    const local = await servePinned(files, '/local-base.tgz', { 'a.yaml': cm('base', { a: '1' }) });
    await t.create(base, { installNamespace: `local-base-${id}`, format: 'plain', sources: local });
    await waitSucceeded(dependent, 'the remote BD installs once its local dependency is ready');
    expect((await rc.get(CM, 'dependent', dns))?.metadata.labels?.[LABEL_OWNER_NAME]).toBe(dependent);
    // and the other way round: a local BD that depends on the remote one installs (the remote's status is on the management cluster)
    const lafter = await servePinned(files, '/local-after.tgz', { 'a.yaml': cm('after', { a: '1' }) });
    await t.create(after, { installNamespace: `local-after-${id}`, format: 'plain', sources: lafter, dependsOn: [{ name: dependent }] });
    await waitSucceeded(after, 'the local BD installs after its remote dependency');
    expect(await t.client.get(CM, 'after', `local-after-${id}`)).toBeDefined();
    for (const n of [after, dependent, base]) await deleteBundleDeployment(t.client, n);
    await until(async () => (await rc.get(CM, 'dependent', dns)) === undefined, 'the remote dependent uninstalled from the remote');
  });

  it('an upgrade hands the objects over in place on the remote (UIDs kept)', async () => {
    const v2 = await servePinned(files, '/remote-v2.tgz', { 'a.yaml': cm('app-config', { color: 'green' }), 'b.yaml': cm('keep', { a: '1' }) });
    await t.patchSpec(bd, { sources: v2 });
    await waitSucceeded(bd, 'revision 2', (b) => b.status?.activeRevision?.number === 2);
    const there = (await rc.get(CM, 'app-config', ns)) as KubeObject & { data?: Record<string, string> };
    expect(there.data).toEqual({ color: 'green' });
    expect(there.metadata.uid).toBe(uids.get('app-config'));
    expect((await rc.get(CM, 'keep', ns))?.metadata.uid).toBe(uids.get('keep'));
  });

  it('a refused upgrade rolls back on the remote', async () => {
    const v3 = await servePinned(files, '/remote-v3.tgz', {
      'a.yaml': cm('app-config', { color: 'red' }),
      'b.yaml': cm('keep', { a: '1' }),
      'c.yaml': REFUSED,
    });
    await t.patchSpec(bd, { sources: v3 });
    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back', 90_000);
    expect(cond(rolled, 'Progressing')?.message).toContain(`apps/v1 Deployment ${ns}/no-containers`);
    expect(rolled.status?.activeRevision?.number).toBe(2);
    expect(((await rc.get(CM, 'app-config', ns)) as KubeObject & { data?: Record<string, string> }).data).toEqual({ color: 'green' });
    expect(await rc.get(DEPLOY, 'no-containers', ns)).toBeUndefined();
  });

  it('pause + hand edit on the remote + resume reverts the edit there', async () => {
    const back = await servePinned(files, '/remote-v2.tgz', { 'a.yaml': cm('app-config', { color: 'green' }), 'b.yaml': cm('keep', { a: '1' }) });
    await t.patchSpec(bd, { sources: back });
    await waitSucceeded(bd, 'back on revision 2', (b) => b.status?.activeRevision?.number === 2);
    await t.patchSpec(bd, { paused: true });
    await t.waitFor(bd, (b) => cond(b, 'Paused')?.status === 'True', 'paused');
    await rc.patch(CM, 'app-config', ns, { data: { color: 'edited' } }, 'merge', { fieldManager: 'kubectl-edit' });
    await t.patchSpec(bd, { paused: false });
    await until(
      async () => ((await rc.get(CM, 'app-config', ns)) as KubeObject & { data?: Record<string, string> }).data?.color === 'green',
      'the hand edit reverted on the remote',
    );
    await waitSucceeded(bd, 'done after resume');
  });

  it("hoist tree, events, history and diff read the remote cluster (the kubeconfig Secret read with the caller's rights)", async () => {
    // the objects exist only on the remote: read on the management cluster they would be Missing
    const tr = await runVerb(tree, [bd], t.namespace);
    expect(tr.stderr).toBe('');
    expect(tr.code).toBe(0);
    expect(tr.stdout).toContain(`BundleDeployment ${bd} (cluster ${host}): revision 2`);
    expect(tr.stdout).toContain('all ready');
    expect(tr.stdout).toMatch(new RegExp(`ConfigMap ${ns}/app-config\\s+${bd}\\s+Ready`));
    // paused (no drift correction), an object deleted by hand on the remote is Missing there
    await t.patchSpec(bd, { paused: true });
    await t.waitFor(bd, (b) => cond(b, 'Paused')?.status === 'True', 'paused');
    await rc.delete(CM, 'keep', ns);
    await until(async () => (await rc.get(CM, 'keep', ns)) === undefined, 'keep gone on the remote');
    const missing = await runVerb(tree, [bd, '--not-ready'], t.namespace);
    expect(missing.stdout).toMatch(new RegExp(`ConfigMap ${ns}/keep\\s+<none>\\s+Missing`));
    expect(missing.stdout).not.toContain('app-config');
    // hoist events reads the Events of the objects that are not ready on the remote (this one exists only there)
    await rc.create({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `keep-gone-${id}`, namespace: ns },
      involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', name: 'keep', namespace: ns },
      reason: 'DeletedByHand',
      message: 'removed on the workload cluster',
      type: 'Warning',
      lastTimestamp: new Date().toISOString(),
    } as KubeObject);
    const ev = await runVerb(events, [bd], t.namespace);
    expect(ev.stderr).toBe('');
    expect(ev.code).toBe(0);
    expect(ev.stdout).toContain(`BundleDeployment ${bd} (cluster ${host})`);
    expect(ev.stdout).toMatch(new RegExp(`Warning\\s+DeletedByHand\\s+ConfigMap ${ns}/keep\\s+removed on the workload cluster`));
    await t.patchSpec(bd, { paused: false });
    await until(async () => (await rc.get(CM, 'keep', ns)) !== undefined, 'keep recreated on the remote after resume');
    await waitSucceeded(bd, 'done after resume');

    const hi = await runVerb(history, [bd], t.namespace);
    expect(hi.code).toBe(0);
    expect(hi.stderr).toContain(`installs into cluster ${host} (kubeconfig secret ${t.namespace}/cluster-a-kubeconfig)`);
    expect(hi.stdout).toMatch(/^2\s+Active/m);

    // diff against the remote's live objects: the ConfigMap changes (it does not exist locally, where it would be created)
    const v5 = await servePinned(files, '/remote-v5.tgz', { 'a.yaml': cm('app-config', { color: 'orange' }), 'b.yaml': cm('keep', { a: '1' }) });
    const d = await runVerb(diff, ['-f', await bdFile(bd, { sources: v5 })], t.namespace);
    expect(d.stderr).toContain(`target cluster ${host} (spec.kubeConfig)`);
    expect(d.code).toBe(1);
    expect(d.stdout).toContain(`live/v1/ConfigMap/${ns}/app-config`);
    expect(d.stdout).toMatch(/^-\s+color: green$/m);
    expect(d.stdout).toMatch(/^\+\s+color: orange$/m);
    expect(d.stdout).not.toContain(`ConfigMap/${ns}/keep`);
    expect(d.stderr).toContain('1 configured');
    expect(d.stderr).toContain('1 unchanged');
    // the same content as installed: no differences on the remote
    const same = await runVerb(diff, ['-f', await bdFile(bd, {})], t.namespace);
    expect(same.stdout).toBe('');
    expect(same.code).toBe(0);
  });

  it('a rotated kubeconfig Secret (another identity) is a new client without a restart', async () => {
    // a token of a remote ServiceAccount bound to cluster-admin, instead of the admin certificate
    await rc.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'hoist-remote', namespace: 'kube-system' } } as KubeObject);
    await rc.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'hoist-remote' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'hoist-remote', namespace: 'kube-system' }],
    } as KubeObject);
    const token = (
      await run(toolPath('kubectl'), ['--kubeconfig', remote.kubeconfigPath, 'create', 'token', 'hoist-remote', '-n', 'kube-system', '--duration=1h'])
    ).stdout.trim();
    const ca = readFileSync(remote.kubeconfigPath, 'utf8').match(/certificate-authority-data: (\S+)/)![1]!;
    const mark = t.log.mark();
    await putKubeconfig(
      'cluster-a-kubeconfig',
      `apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: { server: "${remote.server}", certificate-authority-data: ${ca} }\nusers:\n- name: sa\n  user: { token: "${token}" }\ncontexts:\n- name: a\n  context: { cluster: a, user: sa }\ncurrent-context: a\n`,
    );
    await until(async () => t.log.since(mark).some((l) => l.msg === 'remote target closed: no BundleDeployment uses it'), 'the old client closed');
    expect(t.log.since(mark).filter((l) => l.msg === 'remote target opened')).toHaveLength(1);
    const v4 = await servePinned(files, '/remote-v4.tgz', { 'a.yaml': cm('app-config', { color: 'violet' }), 'b.yaml': cm('keep', { a: '1' }) });
    await t.patchSpec(bd, { sources: v4 });
    await waitSucceeded(bd, 'revision after rotation', (b) => (b.status?.activeRevision?.number ?? 0) > 2);
    expect(((await rc.get(CM, 'app-config', ns)) as KubeObject & { data?: Record<string, string> }).data).toEqual({ color: 'violet' });
  });

  it('a stopped remote API server: TargetUnreachable naming the host while a local BD installs; its return resumes without a spec change', async () => {
    await remote.stopApiServer();
    let restarted = false;
    cleanup(async () => {
      if (!restarted) await remote.startApiServer();
    });
    const down = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'TargetUnreachable', 'unreachable reported', 90_000);
    expect(cond(down, 'Progressing')?.message).toContain(`target cluster ${host} unreachable`);
    expect(cond(down, 'Installed')).toMatchObject({ status: 'Unknown', reason: 'TargetUnreachable' });
    expect(describeStatus(down)).not.toMatch(/BEGIN|token|client-key/i);
    // hoist events still lists the BD's own Events (on the management cluster) and says why its objects' are missing
    const ev = await runVerb(events, [bd], t.namespace);
    expect(ev.code).toBe(1);
    expect(ev.stdout).toMatch(/\bInstalled\b/);
    expect(ev.stderr).toContain(`those of its objects on cluster ${host} could not be read`);
    expect(ev.stderr).not.toMatch(/BEGIN|token|client-key/i);
    // a BD on the management cluster installs meanwhile
    const local = `remote-local-${t.runId}`;
    const lsrc = await servePinned(files, '/remote-local.tgz', { 'a.yaml': cm('local-config', { here: 'local' }) });
    await t.create(local, { installNamespace: `remote-local-${t.runId}`, format: 'plain', sources: lsrc });
    await t.waitFor(local, isDone, 'the local BD installed while the remote is down', 60_000);
    expect(cond(await t.get(bd), 'Progressing')?.reason).toBe('TargetUnreachable');
    await remote.startApiServer();
    restarted = true;
    await waitSucceeded(bd, 'resumed once the remote answers', () => true, 120_000);
    await deleteBundleDeployment(t.client, local);
  });

  it('delete uninstalls from the remote', async () => {
    await deleteBundleDeployment(t.client, bd, 90_000);
    expect(await rc.get(CM, 'app-config', ns)).toBeUndefined();
    expect(await rc.get(CM, 'keep', ns)).toBeUndefined();
  });
});

describe('a Helm chart with hooks into the remote cluster', { timeout: 180_000 }, () => {
  it('runs its hooks there and installs the chart there', async () => {
    const bd = `remote-helm-${t.runId}`;
    const ns = `remote-helm-${t.runId}`;
    const hook = (name: string, event: string) =>
      stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, annotations: { 'helm.sh/hook': event, 'helm.sh/hook-delete-policy': 'before-hook-creation' } },
        data: { release: '{{ .Release.Name }}' },
      });
    const chart = await servePinned(files, '/remote-chart.tgz', {
      'Chart.yaml': 'apiVersion: v2\nname: remote-app\nversion: 0.1.0\n',
      'values.yaml': 'color: blue\n',
      'templates/config.yaml': stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app' }, data: { color: '{{ .Values.color }}' } }),
      'templates/pre.yaml': hook('pre-install-hook', 'pre-install'),
      'templates/post.yaml': hook('post-install-hook', 'post-install'),
    });
    await t.create(bd, { installNamespace: ns, format: 'helm', sources: chart, kubeConfig: kubeConfig('cluster-a-kubeconfig') });
    const done = await waitSucceeded(bd, 'chart installed remotely');
    expect(done.status?.revisions?.find((r) => r.number === 1)?.hooks?.map((h) => `${h.event} ${h.name} ${h.result}`)).toEqual([
      'pre-install pre-install-hook Succeeded',
      'post-install post-install-hook Succeeded',
    ]);
    expect(await rc.get(CM, 'pre-install-hook', ns)).toBeDefined();
    expect(await rc.get(CM, 'post-install-hook', ns)).toBeDefined();
    expect(((await rc.get(CM, 'app', ns)) as KubeObject & { data?: Record<string, string> }).data).toEqual({ color: 'blue' });
    expect(await t.client.get(CM, 'pre-install-hook', ns)).toBeUndefined();
    await deleteBundleDeployment(t.client, bd, 90_000);
    expect(await rc.get(CM, 'app', ns)).toBeUndefined();
  });
});

describe('a CRD on the remote cluster', { timeout: 180_000 }, () => {
  it('an optional object waiting for its CRD there is applied when the remote cluster serves it (its CRD watch wakes the BD)', async () => {
    const bd = `remote-crd-${t.runId}`;
    const ns = `remote-crd-${t.runId}`;
    // the group unique to this run; the CRD is made on the remote only
    const group = `${t.runId}.remote.hoist.test`;
    const widget = stringify({
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: { name: 'w1', annotations: { 'core.rukpak.io/optional': 'true' } },
      spec: { size: 1 },
    });
    const src = await servePinned(files, '/remote-crd.tgz', { 'a.yaml': cm('app', { a: '1' }), 'w.yaml': widget });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: src, kubeConfig: kubeConfig('cluster-a-kubeconfig') });
    const skipped = await t.waitFor(bd, (b) => isDone(b) && !!b.status?.skippedOptional?.length, 'installed without the Widget', 90_000);
    expect(skipped.status?.skippedOptional).toEqual([`${group}/v1 Widget w1`]);
    const mark = t.log.mark();
    const def = crdOf(group, 'Widget', { scope: 'Namespaced' });
    await rc.create(def);
    cleanup(() => rc.delete({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, def.metadata.name, undefined).then(() => {}));
    await t.waitFor(bd, (b) => !b.status?.skippedOptional?.length, 'the Widget applied on the remote', 60_000);
    expect((await rc.get({ apiVersion: `${group}/v1`, kind: 'Widget' }, 'w1', ns))?.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bd);
    // woken by the remote cluster's CRD watch, naming that cluster
    expect(t.log.since(mark).some((l) => l.msg === 'CRD established: looking again' && l.bd === bd && l.target === host)).toBe(true);
    // nothing of it on the management cluster
    expect(await t.client.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, def.metadata.name)).toBeUndefined();
    await deleteBundleDeployment(t.client, bd, 90_000);
  });
});

describe('refused kubeconfigs', { timeout: 120_000 }, () => {
  it('an exec plugin is refused naming the field; nothing is installed', async () => {
    await putKubeconfig(
      'exec-kubeconfig',
      `apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: { server: "${remote.server}" }\nusers:\n- name: u\n  user:\n    exec: { apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "touch /tmp/pwned"] }\ncontexts:\n- name: a\n  context: { cluster: a, user: u }\ncurrent-context: a\n`,
    );
    const bd = `remote-exec-${t.runId}`;
    const src = await servePinned(files, '/remote-exec.tgz', { 'a.yaml': cm('never', { x: '1' }) });
    await t.create(bd, { installNamespace: `remote-exec-${t.runId}`, format: 'plain', sources: src, kubeConfig: kubeConfig('exec-kubeconfig') });
    const refused = await t.waitFor(bd, (b) => cond(b, 'Resolved')?.status === 'False', 'refused', 60_000);
    expect(cond(refused, 'Resolved')?.message).toContain('users[u].user.exec');
    expect(cond(refused, 'Resolved')?.message).toContain('exec credential plugins run a program');
    expect(cond(refused, 'Progressing')).toMatchObject({ status: 'False', reason: 'Blocked' });
    expect(cond(refused, 'Installed')).toMatchObject({ status: 'False', reason: 'Pending' });
    // hoist diff refuses it the same way, naming the field, and runs nothing
    const d = await runVerb(diff, ['-f', await bdFile(bd, {})], t.namespace);
    expect(d.code).toBe(2);
    expect(d.stderr).toContain('users[u].user.exec');
    expect(d.stderr).toContain('exec credential plugins run a program');
    await deleteBundleDeployment(t.client, bd);
  });

  it("hoist diff reads the kubeconfig Secret with the caller's rights: a caller who may not read it is told so", async () => {
    // a ServiceAccount of the management cluster that may read BundleDeployments but no Secret
    const sa = `remote-cli-${t.runId}`;
    await t.client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: t.namespace } } as KubeObject);
    await t.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: sa },
      rules: [{ apiGroups: ['core.rukpak.io'], resources: ['bundledeployments'], verbs: ['get', 'list'] }],
    } as KubeObject);
    await t.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: sa },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: sa },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: t.namespace }],
    } as KubeObject);
    cleanup(async () => {
      await t.client.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' }, sa, undefined).catch(() => {});
      await t.client.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' }, sa, undefined).catch(() => {});
    });
    const token = (await run(toolPath('kubectl'), ['--kubeconfig', kubeconfigPath(), 'create', 'token', sa, '-n', t.namespace, '--duration=1h'])).stdout.trim();
    const mgmt = readFileSync(kubeconfigPath(), 'utf8');
    const caller = join(tmp, 'caller-kubeconfig');
    await writeFile(
      caller,
      `apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster: { server: "${mgmt.match(/server: (\S+)/)![1]!}", certificate-authority-data: ${mgmt.match(/certificate-authority-data: (\S+)/)![1]!} }\nusers:\n- name: u\n  user: { token: "${token}" }\ncontexts:\n- name: m\n  context: { cluster: m, user: u }\ncurrent-context: m\n`,
    );
    const bd = `remote-forbidden-${t.runId}`;
    const file = join(tmp, `${bd}.yaml`);
    const src = await servePinned(files, '/remote-forbidden.tgz', { 'a.yaml': cm('never', { x: '1' }) });
    await writeFile(
      file,
      stringify({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: bd },
        spec: { installNamespace: bd, format: 'plain', sources: src, kubeConfig: kubeConfig('cluster-a-kubeconfig') },
      }),
    );
    const r = { stdout: '', stderr: '' };
    const code = await diff(['-f', file, '--kubeconfig', caller, '-n', t.namespace], { out: (x) => void (r.stdout += x), err: (x) => void (r.stderr += x) });
    expect(r.stderr).toContain(`you may not read secret ${t.namespace}/cluster-a-kubeconfig (spec.kubeConfig.secretRef)`);
    expect(code).toBe(2);
    expect(r.stdout).toBe('');
  });

  it('hoist diff refuses a kubeconfig whose server is the management API server, as the controller does', async () => {
    const mgmt = readFileSync(kubeconfigPath(), 'utf8');
    const server = mgmt.match(/server: (\S+)/)![1]!;
    const ca = readFileSync(remote.kubeconfigPath, 'utf8').match(/certificate-authority-data: (\S+)/)![1]!;
    await putKubeconfig(
      'self-kubeconfig',
      `apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: { server: "${server}", certificate-authority-data: ${ca} }\nusers:\n- name: u\n  user: { token: "x" }\ncontexts:\n- name: a\n  context: { cluster: a, user: u }\ncurrent-context: a\n`,
    );
    const bd = `remote-self-${t.runId}`;
    const file = join(tmp, `${bd}.yaml`);
    const src = await servePinned(files, '/remote-self.tgz', { 'a.yaml': cm('never', { x: '1' }) });
    await writeFile(
      file,
      stringify({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: bd },
        spec: { installNamespace: bd, format: 'plain', sources: src, kubeConfig: kubeConfig('self-kubeconfig') },
      }),
    );
    const d = await runVerb(diff, ['-f', file], t.namespace);
    expect(d.code).toBe(2);
    expect(d.stderr).toContain("the management cluster's own API server");
    expect(d.stderr).toContain('--allow-restricted-targets');
  });
});
