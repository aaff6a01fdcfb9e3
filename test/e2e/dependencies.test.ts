/**
 * spec.dependsOn through a real controller on the real API server (issue 25):
 *
 * - crds → operator → instance (the last with a readyExpr), created at once, install in
 *   dependency order: from the audit log, no object of a dependent is created before the last
 *   object of its dependency, nor before the dependency's status says it became healthy; deleting
 *   all three uninstalls them in the reverse order (audit log), the ones depended on saying
 *   WaitingForDependents meanwhile;
 * - a failed middle one holds the last with Progressing=False DependencyNotReady naming it, and
 *   fixing it lets the last proceed without any change to its spec;
 * - a missing and a paused dependency are named; while the dependent waits, a change of its
 *   dependency re-queues it through the watch, and that reconcile (and the wait) makes no API
 *   request at all (audit log and the client's counter); no reconcile schedules a re-check;
 * - a 2-cycle is reported on both members, the controller goes idle (no ping-pong), breaking it
 *   lets both install, and deleting both members of a cycle finishes (no uninstall deadlock).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BundleDeployment, BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { get } from '../../src/cli/verbs/get.ts';
import type { RequestEvent } from '../../src/kube/request-counter.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { auditEvents, auditOffset, auditRef, isCreate, showAudit, type AuditEvent } from '../support/audit.ts';
import { BD_TYPE, cond, isFailed, isSucceeded, startTestController, type TestController } from '../support/controller.ts';
import { isReconciled } from '../support/controller-log.ts';
import { crdOf } from '../support/crds.ts';
import { configMap, deployment, serveBundle } from '../support/e2e-bundles.ts';
import { waitUntil } from '../support/wait.ts';
import { auditLogPath, isLocalControlPlane, kubeconfigPath } from '../support/env.ts';
import { startFileServer, type FileServer } from '../support/http-files.ts';
import { servePinned } from '../support/upgrade-fixtures.ts';

let t: TestController;
let files: FileServer;

beforeAll(async () => {
  t = await startTestController();
  files = await startFileServer();
});
afterAll(async () => {
  await t?.stop();
  await files?.close();
});

const ua = () => `hoist/test-${t.runId}`;
const progressing = (b: BundleDeployment | undefined) => cond(b, 'Progressing');
const waitingOn = (b: BundleDeployment) => progressing(b)?.reason === 'DependencyNotReady';

/** the three bundles of a stack: a CRD; an operator (ConfigMap, Deployment); an instance (a custom resource of the CRD, a ConfigMap) */
function stack(id: string, ns: string) {
  const group = `${id}.deps.hoist.test`;
  const crd = crdOf(group, 'Widget');
  return {
    group,
    crdName: crd.metadata.name,
    crds: [crd],
    operator: [configMap('operator-config', { mode: 'on' }), deployment('operator')],
    instance: [
      { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1', namespace: ns }, spec: { size: 1 } } as KubeObject,
      configMap('instance-config', { size: '1' }),
    ],
  };
}

/** a healthy operator that also lists its Deployment in the inventory (Flux's readyExpr reads `dep`) */
const OPERATOR_READY =
  "dep.status.conditions.exists(c, c.type == 'Healthy' && c.status == 'True') && dep.status.activeRevision.inventory.entries.exists(e, e.id.endsWith('_operator_apps_Deployment'))";

/** position in `events` of the first and last request matching `mine` */
function span(events: readonly AuditEvent[], mine: (e: AuditEvent) => boolean): { first: number; last: number } {
  const at = events.flatMap((e, i) => (mine(e) ? [i] : []));
  expect(at.length, 'requests of this BundleDeployment in the audit log').toBeGreaterThan(0);
  return { first: at[0]!, last: at[at.length - 1]! };
}

// runs against the suite's own control plane (not HOIST_TEST_KUBECONFIG's cluster), whose audit log it reads; skipped only there
describe.runIf(isLocalControlPlane() && auditLogPath() !== '')('dependsOn', () => {
  // first: the others delete CRDs, and the managed-object watch of a deleted kind retries its
  // list in the background, which would count in this test's window
  it('a missing and a paused dependency are named; the wait is watch-driven and makes no API request', async () => {
    const id = `m${t.runId}`;
    const ns = `deps-${id}`;
    const [app, ghost, sleeper] = [`app-${id}`, `ghost-${id}`, `sleeper-${id}`];
    const bundle = (name: string) => serveBundle(files, `/${name}.tgz`, [configMap(`${name}-config`, { a: '1' })]);
    await t.create(sleeper, { installNamespace: ns, format: 'plain', paused: true, sources: [await bundle(sleeper)] });
    const mark = t.log.mark();
    await t.create(app, { installNamespace: ns, format: 'plain', sources: [await bundle(app)], dependsOn: [{ name: ghost }, { name: sleeper }] });
    const held = await t.waitFor(app, waitingOn, 'the app waits', 60_000);
    expect(progressing(held)?.message).toBe(
      `a new revision is not applied: waiting for ${ghost} (not found), ${sleeper} (paused); applied once they are ready`,
    );

    // a change of a dependency re-queues the dependent through the watch: no request by either reconcile
    await t.idle({ quietMs: 1000 });
    const from = await auditOffset(auditLogPath());
    const sent: RequestEvent[] = [];
    const stop = t.ctl.client.onRequest((e) => sent.push(e));
    const at = Date.now();
    await t.client.patch(BD_TYPE, sleeper, undefined, { metadata: { labels: { 'hoist.test/poked': 'yes' } } }, 'merge');
    await t.reconciled(app, at, "the dependent re-queued by its dependency's change");
    await t.idle({ quietMs: 1000 });
    stop();
    // left out: what the controller's CRD watch does when any CRD of the shared cluster changes
    // (other test files' too) — discovery, and its own list when its watch is restarted
    const background = (path: string, verb: string) =>
      verb === 'watch' ||
      verb === 'discovery' ||
      /^\/apis?(\/[^/]+\/[^/]+)?\/?$/.test(path) ||
      (verb === 'list' && path.endsWith('/customresourcedefinitions'));
    const requests = (await auditEvents(auditLogPath(), from, (u) => u === ua())).filter((e) => !background(e.requestURI.split('?')[0]!, e.verb));
    expect(requests, requests.map((e) => `${e.verb} ${e.requestURI}`).join('\n')).toEqual([]);
    expect(sent.filter((e) => !background(e.path, e.verb)).map((e) => `${e.verb} ${e.path}`)).toEqual([]);

    // the dependency appears, the other resumes: the app installs, no spec change
    await t.create(ghost, { installNamespace: ns, format: 'plain', sources: [await bundle(ghost)] });
    await t.patchSpec(sleeper, { paused: false });
    const done = await t.waitFor(app, isSucceeded, 'installed once both are ready', 90_000);
    expect(done.metadata.generation).toBe(1);
    // nothing scheduled a re-check while it waited: every wait ended by a watch event
    const waits = t.log.since(mark).filter((r) => isReconciled(r, app) && r.note === 'waiting for dependencies');
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.filter((r) => r.requeueAfterMs !== undefined)).toEqual([]);
  }, 180_000);

  it('crds → operator → instance created at once install in dependency order and uninstall in the reverse order', async () => {
    const id = `o${t.runId}`;
    const ns = `deps-${id}`;
    const s = stack(id, ns);
    const [crds, operator, instance] = [`crds-${id}`, `operator-${id}`, `instance-${id}`];
    const spec = async (path: string, objects: KubeObject[], extra: Partial<BundleDeploymentSpec> = {}): Promise<BundleDeploymentSpec> => ({
      installNamespace: ns,
      format: 'plain',
      sources: [await serveBundle(files, path, objects)],
      ...extra,
    });
    const specs = {
      crds: await spec(`/${crds}.tgz`, s.crds, { deleteCRDsOnUninstall: true }),
      operator: await spec(`/${operator}.tgz`, s.operator, { dependsOn: [{ name: crds }] }),
      instance: await spec(`/${instance}.tgz`, s.instance, { dependsOn: [{ name: operator, readyExpr: OPERATOR_READY }] }),
    };
    const from = await auditOffset(auditLogPath());
    // the last first: the order comes from dependsOn, not from creation
    await Promise.all([t.create(instance, specs.instance), t.create(operator, specs.operator), t.create(crds, specs.crds)]);
    for (const name of [crds, operator, instance]) await t.waitFor(name, isSucceeded, 'installed and healthy', 120_000);

    // the dependents were held (their reconciles said so) before they applied anything
    for (const name of [operator, instance])
      expect(
        t.log.records.some((r) => isReconciled(r, name) && r.note === 'waiting for dependencies'),
        `${name} waited`,
      ).toBe(true);
    const events = (await auditEvents(auditLogPath(), from, (u) => u === ua())).filter(isCreate);
    const crdCreates = span(events, (e) => auditRef(e) === `customresourcedefinitions/${s.crdName}`);
    const operatorCreates = span(events, (e) => e.objectRef?.namespace === ns && ['deployments/operator', 'configmaps/operator-config'].includes(auditRef(e)));
    const instanceCreates = span(events, (e) => e.objectRef?.namespace === ns && ['widgets/w1', 'configmaps/instance-config'].includes(auditRef(e)));
    const shown = showAudit(events);
    expect(crdCreates.last, shown).toBeLessThan(operatorCreates.first);
    expect(operatorCreates.last, shown).toBeLessThan(instanceCreates.first);
    // and not before the dependency was done: its healthyAt (set in the reconcile that made it
    // Succeeded, written with that status) precedes the dependent's first create
    const healthyAt = async (name: string) => Date.parse((await t.get(name))!.status!.activeRevision!.healthyAt!);
    expect(await healthyAt(crds)).toBeLessThanOrEqual(Date.parse(events[operatorCreates.first]!.requestReceivedTimestamp!));
    expect(await healthyAt(operator)).toBeLessThanOrEqual(Date.parse(events[instanceCreates.first]!.requestReceivedTimestamp!));

    // deleting all three at once: the instance goes first, then the operator, then the CRD
    const gone = await auditOffset(auditLogPath());
    await Promise.all([crds, operator, instance].map((n) => t.client.delete(BD_TYPE, n, undefined)));
    await waitUntil(
      'all three BundleDeployments are gone',
      async () => (await Promise.all([crds, operator, instance].map((n) => t.get(n)))).every((b) => b === undefined),
      120_000,
    );
    const deletes = (await auditEvents(auditLogPath(), gone, (u) => u === ua())).filter((e) => e.verb === 'delete' && e.responseStatus?.code === 200);
    const shownDeletes = showAudit(deletes);
    const instanceDeletes = span(deletes, (e) => e.objectRef?.namespace === ns && ['widgets/w1', 'configmaps/instance-config'].includes(auditRef(e)));
    const operatorDeletes = span(deletes, (e) => e.objectRef?.namespace === ns && ['deployments/operator', 'configmaps/operator-config'].includes(auditRef(e)));
    const crdDeletes = span(deletes, (e) => auditRef(e) === `customresourcedefinitions/${s.crdName}`);
    expect(instanceDeletes.last, shownDeletes).toBeLessThan(operatorDeletes.first);
    expect(operatorDeletes.last, shownDeletes).toBeLessThan(crdDeletes.first);
    // the two depended on said why they waited
    const waited = (await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: 'reason=WaitingForDependents' }))
      .items as unknown as Array<{ involvedObject: { name: string }; message: string }>;
    expect(waited.find((e) => e.involvedObject.name === operator)?.message).toContain(`depend on it are gone: ${instance}`);
    expect(waited.find((e) => e.involvedObject.name === crds)?.message).toContain(operator);
  }, 240_000);

  it('a failed middle one holds the last with DependencyNotReady naming it; fixing it lets the last proceed without a spec change', async () => {
    const id = `f${t.runId}`;
    const ns = `deps-${id}`;
    const s = stack(id, ns);
    const [crds, operator, instance] = [`crds-${id}`, `operator-${id}`, `instance-${id}`];
    // YAML 1.1: `yes` is a boolean where a ConfigMap needs a string, refused by the API server (terminal: Blocked)
    const broken = await servePinned(files, `/${operator}-broken.tgz`, {
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: operator-config\ndata:\n  enabled: yes\n',
    });
    await Promise.all([
      t.create(crds, { installNamespace: ns, format: 'plain', sources: [await serveBundle(files, `/${crds}.tgz`, s.crds)] }),
      t.create(operator, { installNamespace: ns, format: 'plain', sources: broken, dependsOn: [{ name: crds }] }),
      t.create(instance, {
        installNamespace: ns,
        format: 'plain',
        sources: [await serveBundle(files, `/${instance}.tgz`, s.instance)],
        dependsOn: [{ name: operator }],
      }),
    ]);
    await t.waitFor(operator, isFailed, 'the operator fails (Blocked)', 90_000);
    const held = await t.waitFor(
      instance,
      (b) => waitingOn(b) && progressing(b)!.message.includes(`${operator} (failed (Progressing=False/Blocked))`),
      'the instance names the failed operator',
      60_000,
    );
    expect(progressing(held)).toMatchObject({ status: 'False', reason: 'DependencyNotReady' });
    expect(cond(held, 'Installed')).toMatchObject({
      status: 'False',
      reason: 'Pending',
      message: 'nothing installed: a new revision waits for its dependencies',
    });
    // rendered ahead, applied nothing
    expect(cond(held, 'Unpacked')?.status).toBe('True');
    expect(held.status?.activeRevision).toBeUndefined();
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'instance-config', ns)).toBeUndefined();
    // hoist get -o wide says the same: the dependency and its state
    const wide = { stdout: '', stderr: '' };
    expect(
      await get([instance, '-o', 'wide', '--kubeconfig', kubeconfigPath()], { out: (x) => void (wide.stdout += x), err: (x) => void (wide.stderr += x) }),
      wide.stderr,
    ).toBe(0);
    // columns by the header's offsets (the empty DIGEST column of a BD with no revision)
    const [header, row] = wide.stdout.split('\n') as [string, string];
    const starts = [...header.matchAll(/\S+/g)].map((m) => m.index);
    const column = (name: string) =>
      row
        .slice(
          header.indexOf(name),
          starts.find((i) => i > header.indexOf(name)),
        )
        .trim();
    expect(column('PROGRESSING')).toBe('DependencyNotReady');
    expect(row.slice(header.indexOf('DEPENDS')).trim()).toBe(`${operator}=failed`);

    await t.patchSpec(operator, { sources: [await serveBundle(files, `/${operator}.tgz`, s.operator)] });
    const done = await t.waitFor(instance, isSucceeded, 'the instance installs once the operator is fixed', 120_000);
    expect(done.metadata.generation).toBe(held.metadata.generation);
    expect(await t.client.get({ apiVersion: `${s.group}/v1`, kind: 'Widget' }, 'w1', ns)).toBeDefined();
  }, 240_000);

  it('a 2-cycle is reported on both members without a reconcile loop; broken it installs; members of a cycle are deleted without waiting for each other', async () => {
    const id = `c${t.runId}`;
    const ns = `deps-${id}`;
    const [a, b] = [`a-${id}`, `b-${id}`];
    const sources = async (name: string) => [await serveBundle(files, `/${name}.tgz`, [configMap(`${name}-config`, { a: '1' })])];
    await Promise.all([
      t.create(a, { installNamespace: ns, format: 'plain', sources: await sources(a), dependsOn: [{ name: b }] }),
      t.create(b, { installNamespace: ns, format: 'plain', sources: await sources(b), dependsOn: [{ name: a }] }),
    ]);
    const onA = await t.waitFor(a, (x) => waitingOn(x) && progressing(x)!.message.includes('cycle'), 'a reports the cycle', 60_000);
    const onB = await t.waitFor(b, (x) => waitingOn(x) && progressing(x)!.message.includes('cycle'), 'b reports the cycle', 60_000);
    expect(progressing(onA)?.message).toContain(`dependency cycle ${a} → ${b} → ${a}`);
    expect(progressing(onB)?.message).toContain(`dependency cycle ${b} → ${a} → ${b}`);
    // no ping-pong between the two: the controller goes idle
    await t.idle({ quietMs: 2000, timeoutMs: 30_000 });

    // broken: a no longer depends on b; a installs, then b
    await t.patchSpec(a, { dependsOn: null });
    await t.waitFor(a, isSucceeded, 'a installs', 60_000);
    await t.waitFor(b, isSucceeded, 'b installs after a', 60_000);

    // a cycle again (no new revision, so nothing waits), then both deleted at once: neither waits for the other
    await t.patchSpec(a, { dependsOn: [{ name: b }] });
    await Promise.all([a, b].map((n) => t.client.delete(BD_TYPE, n, undefined)));
    await waitUntil('both members of the cycle are gone', async () => (await t.get(a)) === undefined && (await t.get(b)) === undefined, 60_000);
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, `${a}-config`, ns)).toBeUndefined();
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, `${b}-config`, ns)).toBeUndefined();
  }, 180_000);
});
