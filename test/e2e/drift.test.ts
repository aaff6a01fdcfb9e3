/**
 * Living with a cluster (issue 5, DESIGN §2 Apply/Observe, §4 deletion) through a real controller:
 * drift corrected through watches, immutable-field changes named (and re-created on opt-in),
 * optional objects applied as soon as their CRD is created, and uninstall keeping CRDs.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { LABEL_REVISION_OF } from '../../src/revisions/revision-store.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { BD_TYPE, cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { crdOf } from '../support/crds.ts';
import { cm, servePinned } from '../support/upgrade-fixtures.ts';
import { sleep, waitUntil } from '../support/wait.ts';

const { t, files, cleanup } = controllerWithFiles();

const CM = { apiVersion: 'v1', kind: 'ConfigMap' };
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' };
const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' };
const SECRET = { apiVersion: 'v1', kind: 'Secret' };

const serve = (path: string, content: Record<string, string>) => servePinned(files, path, content);

const yaml = (o: unknown) => stringify(o);

function deployment(name: string): string {
  return yaml({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: { tier: 'web' } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } },
    },
  });
}

/** a minimal CRD for `kind` in `group` (plural: lowercase kind + s) */
const crd = (group: string, kind: string, scope: 'Namespaced' | 'Cluster' = 'Namespaced'): KubeObject => crdOf(group, kind, { scope });

async function events(bd: string, reason: string): Promise<string[]> {
  const list = await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${bd},reason=${reason}` });
  return list.items.map((e) => (e as unknown as { message: string }).message);
}

describe('drift', () => {
  it('a deleted ConfigMap and a hand-edited Deployment and ConfigMap are corrected within seconds, with a DriftCorrected event', async () => {
    const bd = `drift-${t.runId}`;
    const ns = `drift-${t.runId}`;
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources: await serve('/drift.tgz', { 'a.yaml': cm('settings', { mode: 'safe' }), 'b.yaml': cm('other', { k: 'v' }), 'web.yaml': deployment('web') }),
    });
    await t.waitFor(bd, isDone, 'installed', 90_000);
    const settingsUid = (await t.client.get(CM, 'settings', ns))!.metadata.uid;
    const webUid = (await t.client.get(DEPLOY, 'web', ns))!.metadata.uid;

    // by hand: delete one ConfigMap, edit another's data, scale the Deployment and change its label
    const mark = t.log.mark();
    await t.client.delete(CM, 'settings', ns);
    await t.client.patch(CM, 'other', ns, { data: { k: 'hacked' } }, 'merge');
    await t.client.patch(DEPLOY, 'web', ns, { metadata: { labels: { tier: 'hacked' } }, spec: { replicas: 3 } }, 'merge');

    const back = await waitUntil('settings re-created', async () => t.client.get(CM, 'settings', ns));
    expect(back.metadata.uid).not.toBe(settingsUid);
    expect((back as unknown as { data: Record<string, string> }).data).toEqual({ mode: 'safe' });
    await waitUntil(
      'other reverted',
      async () => ((await t.client.get(CM, 'other', ns)) as unknown as { data?: Record<string, string> } | undefined)?.data?.k === 'v',
    );
    const web = await waitUntil('web reverted', async () => {
      const d = (await t.client.get(DEPLOY, 'web', ns)) as unknown as (KubeObject & { spec: { replicas: number } }) | undefined;
      return d && d.spec.replicas === 1 && d.metadata.labels?.tier === 'web' ? d : undefined;
    });
    expect(web.metadata.uid).toBe(webUid);
    // through watches (no periodic resync exists): the controller heard of the edits from its watches of the BD's objects
    expect(t.log.since(mark).filter((r) => r.msg === 'managed object changed' && r.bd === bd).length).toBeGreaterThan(0);
    // one event per correcting reconcile (watch events arrive separately); together they name all three
    const expected = [`v1 ConfigMap ${ns}/settings re-created`, `v1 ConfigMap ${ns}/other reverted`, `apps/v1 Deployment ${ns}/web reverted`];
    const drift = await waitUntil('DriftCorrected events naming every corrected object', async () => {
      const all = (await events(bd, 'DriftCorrected')).join('\n');
      return expected.every((e) => all.includes(e)) && all;
    });
    expect(drift).toMatch(/^changed back to revision 1: /);
    const bdNow = await t.get(bd);
    expect(bdNow?.status?.activeRevision?.number).toBe(1);
  });
});

describe('immutable fields', () => {
  it('a changed Service clusterIP and Job template are named as errors; with the recreate annotation they are deleted and re-created', async () => {
    const bd = `immutable-${t.runId}`;
    const ns = `immutable-${t.runId}`;
    // an address from the top of the test cluster's 10.96.0.0/16 service range, different per run
    const ip = `10.96.255.${1 + (parseInt(t.runId.slice(0, 4), 16) % 250)}`;
    const service = (clusterIP: string, annotations: Record<string, string> = {}) =>
      yaml({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'api', annotations }, spec: { clusterIP, selector: { app: 'api' }, ports: [{ port: 80 }] } });
    const job = (arg: string, annotations: Record<string, string> = {}) =>
      yaml({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'migrate', annotations },
        spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10', args: [arg] }] } } },
      });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: await serve('/imm-v1.tgz', { 'svc.yaml': service('None'), 'job.yaml': job('one') }) });
    await t.waitFor(bd, (b) => cond(b, 'Installed')?.status === 'True', 'installed', 90_000);
    const svcUid = (await t.client.get({ apiVersion: 'v1', kind: 'Service' }, 'api', ns))!.metadata.uid;
    const jobUid = (await t.client.get({ apiVersion: 'batch/v1', kind: 'Job' }, 'migrate', ns))!.metadata.uid;

    await t.patchSpec(bd, { sources: await serve('/imm-v2.tgz', { 'svc.yaml': service(ip), 'job.yaml': job('two') }) });
    const failed = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'immutable change refused and rolled back');
    const msg = cond(failed, 'Progressing')!.message;
    // the Service (phase infrastructure) is refused, so the Job (phase deploy, after it) is not tried
    expect(msg).toContain(`v1 Service ${ns}/api`);
    expect(msg).toMatch(/spec\.clusterIPs?(\[0\])?/);
    expect(msg).not.toContain(`batch/v1 Job ${ns}/migrate`);
    expect(msg).toMatch(/immutable/);
    expect(msg).toContain('core.rukpak.io/recreate-on-immutable');
    expect((await t.client.get({ apiVersion: 'v1', kind: 'Service' }, 'api', ns))!.metadata.uid).toBe(svcUid);

    // the Job's own immutable template, with the Service as installed
    await t.patchSpec(bd, { sources: await serve('/imm-v2b.tgz', { 'svc.yaml': service('None'), 'job.yaml': job('two') }) });
    const jobFailed = await t.waitFor(
      bd,
      (b) => cond(b, 'Progressing')?.reason === 'RolledBack' && (cond(b, 'Progressing')?.message.includes('Job') ?? false),
      'immutable Job template refused and rolled back',
      30_000,
    );
    const jobMsg = cond(jobFailed, 'Progressing')!.message;
    expect(jobMsg).toContain(`batch/v1 Job ${ns}/migrate`);
    expect(jobMsg).toMatch(/spec\.template/);
    expect(jobMsg).toMatch(/immutable/);
    expect((await t.client.get({ apiVersion: 'batch/v1', kind: 'Job' }, 'migrate', ns))!.metadata.uid).toBe(jobUid);

    const recreate = { 'core.rukpak.io/recreate-on-immutable': 'true' };
    await t.patchSpec(bd, { sources: await serve('/imm-v3.tgz', { 'svc.yaml': service(ip, recreate), 'job.yaml': job('two', recreate) }) });
    const done = await t.waitFor(bd, (b) => cond(b, 'Installed')?.status === 'True' && b.status?.activeRevision?.number === 4, 'recreated', 90_000);
    expect(cond(done, 'Progressing')?.reason).not.toBe('RolledBack');
    const svc = (await t.client.get({ apiVersion: 'v1', kind: 'Service' }, 'api', ns)) as unknown as KubeObject & { spec: { clusterIP: string } };
    expect(svc.metadata.uid).not.toBe(svcUid);
    expect(svc.spec.clusterIP).toBe(ip);
    const j = (await t.client.get({ apiVersion: 'batch/v1', kind: 'Job' }, 'migrate', ns)) as unknown as KubeObject & {
      spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
    };
    expect(j.metadata.uid).not.toBe(jobUid);
    expect(j.spec.template.spec.containers[0]!.args).toEqual(['two']);
  }, 240_000);
});

describe('optional objects', () => {
  it('a ServiceMonitor without its CRD is skipped and listed, and applied as soon as the CRD is created', async () => {
    const bd = `optional-${t.runId}`;
    const ns = `optional-${t.runId}`;
    // the monitoring group made unique to this run: CRDs are cluster-wide and test files run in parallel
    const group = `${t.runId}.monitoring.coreos.com`;
    const monitor = yaml({
      apiVersion: `${group}/v1`,
      kind: 'ServiceMonitor',
      metadata: { name: 'app-metrics', annotations: { 'core.rukpak.io/optional': 'true' } },
      spec: { selector: { matchLabels: { app: 'app' } }, endpoints: [{ port: 'metrics' }] },
    });
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources: await serve('/optional.tgz', { 'cm.yaml': cm('app', { a: '1' }), 'monitor.yaml': monitor }),
    });
    const skipped = await t.waitFor(bd, isDone, 'installed without the ServiceMonitor');
    // the kind's scope is unknown while it is not served, so the bundle's namespace-less object is named without one
    expect(skipped.status?.skippedOptional).toEqual([`${group}/v1 ServiceMonitor app-metrics`]);
    expect(cond(skipped, 'Installed')?.status).toBe('True');
    expect(await t.client.get(CM, 'app', ns)).toBeDefined();

    // reconciling while the kind is still missing asks the API server nothing (no discovery refresh)
    await t.ctl.manager.reconciler.reconcile(bd);
    await sleep(400); // past discovery's refresh-on-miss interval
    const before = t.ctl.client.requests.total;
    await t.ctl.manager.reconciler.reconcile(bd);
    expect(t.ctl.client.requests.total - before).toBe(0);

    // the test, not the bundle, creates the CRD
    const def = crd(group, 'ServiceMonitor');
    await t.client.create(def);
    cleanup(() => t.client.delete(CRD, def.metadata.name, undefined));
    const applied = await t.waitFor(bd, (b) => !b.status?.skippedOptional?.length, 'ServiceMonitor applied', 30_000);
    expect(applied.status?.skippedOptional).toBeUndefined();
    const live = await waitUntil('ServiceMonitor exists', async () => t.client.get({ apiVersion: `${group}/v1`, kind: 'ServiceMonitor' }, 'app-metrics', ns));
    expect(live.metadata.labels?.['core.rukpak.io/owner-name']).toBe(bd);
    // its health is read where it was applied (the revision was stored before its scope was known)
    const healthy = await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'True', 'healthy with the ServiceMonitor', 30_000);
    expect(cond(healthy, 'Healthy')?.message).toBe('2 objects ready');
  });

  it('a required object whose CRD is not served yet is retried, not blocked, and installs once the CRD is created', async () => {
    const bd = `unserved-${t.runId}`;
    const ns = `unserved-${t.runId}`;
    const group = `${t.runId}.unserved.hoist.test`;
    const widget = yaml({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } });
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources: await serve('/unserved.tgz', { 'cm.yaml': cm('app', { a: '1' }), 'widget.yaml': widget }),
    });
    const waiting = await t.waitFor(
      bd,
      (b) => cond(b, 'Installed')?.status === 'False' && cond(b, 'Progressing')?.reason === 'Retrying',
      'retrying the unserved kind',
      60_000,
    );
    expect(cond(waiting, 'Installed')?.message).toContain(`${group}/v1 Widget is not served by the api server`);
    expect(cond(waiting, 'Progressing')?.message).toContain('retrying with backoff');

    // the CRD comes from elsewhere (another BD, an operator): the BD installs without a spec change
    const def = crd(group, 'Widget');
    await t.client.create(def);
    cleanup(() => t.client.delete(CRD, def.metadata.name, undefined));
    await t.waitFor(bd, isDone, 'installed once the CRD is served', 60_000);
    t.client.discovery.invalidate(); // the test's own client: its discovery predates the CRD
    const live = await t.client.get({ apiVersion: `${group}/v1`, kind: 'Widget' }, 'w1', ns);
    expect(live?.metadata.labels?.['core.rukpak.io/owner-name']).toBe(bd);

    // the revision, stored while the kind's scope was unknown, names the Widget in its namespace
    // now: uninstall finds and removes it
    await t.client.delete(BD_TYPE, bd, undefined);
    await waitUntil(`${bd} gone`, async () => !(await t.client.get(BD_TYPE, bd)), 60_000);
    expect(await t.client.get({ apiVersion: `${group}/v1`, kind: 'Widget' }, 'w1', ns)).toBeUndefined();
  }, 180_000);
});

describe('deletion', () => {
  async function installWithCrd(bd: string, ns: string, extra: Partial<BundleDeploymentSpec> = {}): Promise<{ group: string; crdName: string }> {
    const group = `${bd}.hoist.test`;
    const def = crd(group, 'Widget');
    const widget = yaml({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } });
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources: await serve(`/${bd}.tgz`, {
        'crd.yaml': yaml(def),
        'cm.yaml': cm('settings', { a: '1' }),
        'web.yaml': deployment('web'),
        'widget.yaml': widget,
      }),
      ...extra,
    });
    await t.waitFor(bd, (b) => cond(b, 'Installed')?.status === 'True', 'installed', 90_000);
    cleanup(() => t.client.delete(CRD, def.metadata.name, undefined));
    return { group, crdName: def.metadata.name };
  }

  async function deleteAndWait(bd: string): Promise<void> {
    await t.client.delete(BD_TYPE, bd, undefined);
    await waitUntil(`${bd} gone (finalizer removed)`, async () => !(await t.client.get(BD_TYPE, bd)), 30_000);
  }

  it('removes what the BD installed and its revision Secrets, keeps the CRD, and removes the finalizer', async () => {
    const bd = `uninstall-${t.runId}`;
    const ns = `uninstall-${t.runId}`;
    const { group, crdName } = await installWithCrd(bd, ns);
    const bdObj = await t.get(bd);
    expect(bdObj?.metadata.finalizers).toContain('core.rukpak.io/cleanup');
    const crdUid = (await t.client.get(CRD, crdName))!.metadata.uid;
    expect((await t.client.list(SECRET, { namespace: t.namespace, labelSelector: `${LABEL_REVISION_OF}=${bd}` })).items.length).toBeGreaterThan(0);

    await deleteAndWait(bd);
    expect(await t.client.get(CM, 'settings', ns)).toBeUndefined();
    expect(await t.client.get(DEPLOY, 'web', ns)).toBeUndefined();
    expect(await t.client.get({ apiVersion: `${group}/v1`, kind: 'Widget' }, 'w1', ns)).toBeUndefined();
    expect((await t.client.get(CRD, crdName))?.metadata.uid).toBe(crdUid);
    expect((await t.client.list(SECRET, { namespace: t.namespace, labelSelector: `${LABEL_REVISION_OF}=${bd}` })).items).toEqual([]);
  });

  it('with deleteCRDsOnUninstall the CRD goes too', async () => {
    const bd = `uninstall-crds-${t.runId}`;
    const ns = `uninstall-crds-${t.runId}`;
    const { crdName } = await installWithCrd(bd, ns, { deleteCRDsOnUninstall: true });
    await deleteAndWait(bd);
    await waitUntil('CRD deleted', async () => !(await t.client.get(CRD, crdName)), 30_000);
    expect(await t.client.get(CM, 'settings', ns)).toBeUndefined();
  });
});
