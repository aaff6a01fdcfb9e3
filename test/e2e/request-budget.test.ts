/**
 * Request budgets (issue 5), counted twice: from the API server's audit log (the controller's
 * requests carry a User-Agent unique to this test's controller) and from the controller client's
 * own request counter. A cold install of the 15-object argo-rollouts bundle makes at most 15
 * applies, at most 3 status writes, the revision Secret and the finalizer patch; a reconcile with
 * nothing changed makes no write and no per-object GET.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { RequestVerb } from '../../src/kube/request-counter.ts';
import { AuditReader, type AuditEvent } from '../support/audit.ts';
import { auditLogPath } from '../support/env.ts';
import { isDone, startTestController } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { sha256, tarGz } from '../support/http-files.ts';
import { FIXTURES, isolatePlain } from '../support/upgrade-fixtures.ts';

/** the upstream bundle with its API group and cluster-scoped names made unique to this file (other files install it too) */
const rollouts = (id: string) => isolatePlain(readFileSync(new URL('plain/argo-rollouts-v1.8.4/install.yaml', FIXTURES), 'utf8'), id);
const BUNDLE_RESOURCES = new Set([
  'customresourcedefinitions',
  'serviceaccounts',
  'clusterroles',
  'clusterrolebindings',
  'roles',
  'rolebindings',
  'configmaps',
  'secrets',
  'services',
  'deployments',
]);

function describeEvents(events: readonly AuditEvent[]): string {
  return events.map((e) => `${e.verb} ${e.requestURI} -> ${e.responseStatus?.code}`).join('\n');
}

const writesOf = (events: readonly AuditEvent[]) => events.filter((e) => ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb));
const bundleObject = (e: AuditEvent, ns: string) =>
  !!e.objectRef?.resource &&
  BUNDLE_RESOURCES.has(e.objectRef.resource) &&
  !e.objectRef.subresource &&
  (e.objectRef.namespace === ns || !e.objectRef.namespace) &&
  !!e.objectRef.name;

function delta(before: Partial<Record<RequestVerb, number>>, after: Partial<Record<RequestVerb, number>>): Partial<Record<RequestVerb, number>> {
  const out: Partial<Record<RequestVerb, number>> = {};
  for (const [verb, n] of Object.entries(after) as Array<[RequestVerb, number]>) {
    const d = n - (before[verb] ?? 0);
    if (d) out[verb] = d;
  }
  return out;
}

let audit: AuditReader;

/** the queue empty with nothing in flight for `quietMs`: the window lets the watch events of the controller's own last writes arrive */
const settled = (quietMs: number): Promise<void> => t.idle({ quietMs });

const { t, files, replace } = controllerWithFiles();
beforeAll(async () => {
  audit = new AuditReader(auditLogPath(), `hoist/test-${t.runId}`);
});
afterAll(async () => {
  await t?.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, `budget-${t.runId}`, undefined).catch(() => undefined);
});

// runs on the suite's own control plane, which writes an audit log; against an existing cluster or
// K3s (USE_EXISTING_CLUSTER, HOIST_TEST_K3S) there is no audit log to count requests in
describe.runIf(auditLogPath() !== '')('request budgets (audit log and client counter agree)', () => {
  const ns = () => `budget-${t.runId}`;

  it('cold install of argo-rollouts: ≤15 applies, ≤3 status writes, one revision Secret, one finalizer patch', async () => {
    const body = await tarGz({ 'install.yaml': rollouts(`b${t.runId}`) });
    files.set('/rollouts.tgz', body);
    const from = await audit.offset();
    const before = t.ctl.client.requests.snapshot();

    await t.create('budget', {
      installNamespace: ns(),
      format: 'plain',
      sources: [{ kind: 'http', http: { url: files.url('/rollouts.tgz'), sha256: sha256(body) } }],
    });
    await t.waitFor('budget', isDone, 'installed and healthy', 90_000);
    await settled(1000);

    const events = await audit.since(from);
    const counted = delta(before, t.ctl.client.requests.snapshot());
    const writes = writesOf(events);
    const applies = writes.filter((e) => e.verb === 'patch' && bundleObject(e, ns()));
    const statusWrites = writes.filter((e) => e.objectRef?.resource === 'bundledeployments' && e.objectRef.subresource === 'status');
    const finalizer = writes.filter((e) => e.objectRef?.resource === 'bundledeployments' && !e.objectRef.subresource);
    const revisionSecrets = writes.filter((e) => e.verb === 'create' && e.objectRef?.resource === 'secrets' && e.objectRef.namespace === t.namespace);
    const events_ = writes.filter((e) => e.objectRef?.resource === 'events');
    const namespaceCreate = writes.filter((e) => e.objectRef?.resource === 'namespaces');
    const other = writes.filter((w) => ![applies, statusWrites, finalizer, revisionSecrets, events_, namespaceCreate].some((g) => g.includes(w)));
    const summary = {
      applies: applies.length,
      statusWrites: statusWrites.length,
      finalizerPatches: finalizer.length,
      revisionSecrets: revisionSecrets.length,
      events: events_.length,
      namespaceCreates: namespaceCreate.length,
      objectGets: events.filter((e) => e.verb === 'get' && bundleObject(e, ns())).length,
      counter: counted,
    };
    console.log('cold install budget', JSON.stringify(summary));
    if (process.env.HOIST_BUDGET_DEBUG) console.log(describeEvents(events.filter((e) => e.verb === 'get')));
    const all = describeEvents(writes);

    expect(applies.length, all).toBe(15); // every object applied exactly once
    expect(statusWrites.length, all).toBeLessThanOrEqual(3);
    expect(finalizer, all).toHaveLength(1);
    expect(revisionSecrets, all).toHaveLength(1);
    expect(namespaceCreate, all).toHaveLength(1);
    expect(events_, all).toHaveLength(1); // Installed
    expect(other, all).toEqual([]);
    // which revisions exist comes from the revision Secrets' watch, not a LIST per lookup (issue 10);
    // (the bundle's own Secret kind gets its managed-object watch, a cluster-wide list)
    // (the index's own watch may (re)list all revision Secrets once; a lookup names its BD: revision-of=<bd>)
    const secretLists = events.filter(
      (e) =>
        e.verb === 'list' &&
        e.objectRef?.resource === 'secrets' &&
        e.objectRef.namespace === t.namespace &&
        decodeURIComponent(e.requestURI).includes('revision-of='),
    );
    expect(secretLists, describeEvents(secretLists)).toEqual([]);
    // the client's own counter saw the same writes
    expect(counted.apply ?? 0).toBe(applies.length);
    expect(counted.updateStatus ?? 0).toBe(statusWrites.length);
    expect(counted.patch ?? 0).toBe(finalizer.length);
    expect(counted.create ?? 0).toBe(revisionSecrets.length + events_.length + namespaceCreate.length);
    expect(sumWrites(counted)).toBe(writes.length);
  });

  it('cold install of an app bundle (no CRDs, no hooks): one apply per object and no read of any of them', async () => {
    // after the argo-rollouts case: the install namespace exists and the kinds are watched
    const app = ['ConfigMap', 'ServiceAccount', 'Service'].map((kind) => ({
      apiVersion: 'v1',
      kind,
      metadata: { name: `app-${kind.toLowerCase()}` },
      ...(kind === 'Service'
        ? { spec: { clusterIP: 'None', selector: { app: 'x' }, ports: [{ port: 80 }] } }
        : kind === 'ConfigMap'
          ? { data: { k: 'v' } }
          : {}),
    }));
    const body = await tarGz({ 'app.yaml': app.map((o) => stringify(o)).join('---\n') });
    files.set('/app.tgz', body);
    const from = await audit.offset();
    await t.create('budget-app', {
      installNamespace: ns(),
      format: 'plain',
      sources: [{ kind: 'http', http: { url: files.url('/app.tgz'), sha256: sha256(body) } }],
    });
    await t.waitFor('budget-app', isDone, 'installed and healthy', 60_000);
    await settled(500);
    const events = await audit.since(from);
    const mine = events.filter((e) => bundleObject(e, ns()) && (e.objectRef?.name ?? '').startsWith('app-'));
    const all = describeEvents(mine);
    // presumed new (no watch knows them): applied without force, created, never read
    expect(mine.filter((e) => e.verb === 'patch').length, all).toBe(3);
    expect(
      mine.filter((e) => e.verb !== 'patch'),
      all,
    ).toEqual([]);
    expect(
      events.filter((e) => e.verb === 'get' && e.objectRef?.resource === 'namespaces'),
      describeEvents(events),
    ).toEqual([]);
  }, 90_000);

  it('a phased install (an Ingress applied once its Deployment is ready): the revision Secret is stored once, each object applied once', async () => {
    // the scale benchmark's shape: the Ingress is in the publish phase, applied by a later reconcile than the Deployment
    const name = 'phased';
    const objects = [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name },
        spec: {
          replicas: 0,
          selector: { matchLabels: { app: name } },
          template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } },
        },
      },
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name },
        spec: {
          rules: [{ host: 'phased.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } }] } }],
        },
      },
    ];
    const body = await tarGz({ 'app.yaml': objects.map((o) => stringify(o)).join('---\n') });
    files.set('/phased.tgz', body);
    const from = await audit.offset();
    await t.create('budget-phased', {
      installNamespace: ns(),
      format: 'plain',
      sources: [{ kind: 'http', http: { url: files.url('/phased.tgz'), sha256: sha256(body) } }],
    });
    await t.waitFor('budget-phased', isDone, 'installed and healthy', 60_000);
    await settled(500);
    const writes = writesOf(await audit.since(from));
    const all = describeEvents(writes);
    const revisionSecrets = writes.filter((e) => e.verb === 'create' && e.objectRef?.resource === 'secrets' && e.objectRef.namespace === t.namespace);
    // one create, not a second one answered AlreadyExists when the publish phase goes
    expect(revisionSecrets, all).toHaveLength(1);
    expect(writes.filter((e) => e.verb === 'patch' && bundleObject(e, ns()) && e.objectRef?.name === name).length, all).toBe(2);
    expect(writes.filter((e) => e.verb === 'patch' && e.objectRef?.resource === 'ingresses').length, all).toBe(1);
    // the phase waiting (its message may change once as the Deployment's status moves), then installed and healthy
    expect(writes.filter((e) => e.objectRef?.resource === 'bundledeployments' && e.objectRef.subresource === 'status').length, all).toBeLessThanOrEqual(3);
  }, 90_000);

  it('a reconcile with nothing changed: zero writes, no per-object GETs', async () => {
    await settled(500);
    const from = await audit.offset();
    const before = t.ctl.client.requests.snapshot();
    const enqueued = Date.now();
    t.ctl.manager.controller.enqueue('budget');
    await t.reconciled('budget', enqueued, 'the enqueued reconcile');
    await settled(500);

    const events = await audit.since(from);
    const counted = delta(before, t.ctl.client.requests.snapshot());
    console.log('no-change reconcile budget', JSON.stringify({ auditEvents: events.length, counter: counted }));
    expect(writesOf(events), describeEvents(events)).toEqual([]);
    expect(
      events.filter((e) => e.verb === 'get' && bundleObject(e, ns())),
      describeEvents(events),
    ).toEqual([]);
    expect(sumWrites(counted)).toBe(0);
    expect(counted.get ?? 0).toBe(0);
    expect(counted.list ?? 0).toBe(0);
    const bd = await t.get('budget');
    expect(bd && isDone(bd)).toBe(true);
  });

  it('a restarted controller: reconciles start once the revision index is synced, and no lookup lists revision Secrets', async () => {
    await settled(500);
    const { runId } = t;
    await t.ctl.stop();
    const from = await audit.offset();
    const restarted = Date.now();
    await replace(await startTestController({ runId }));
    for (const name of ['budget', 'budget-app']) await t.reconciled(name, restarted, 'the reconcile after the restart');
    await settled(500);
    const events = await audit.since(from);
    // the index's own watch lists the revision Secrets once (selector `revision-of` without a value);
    // a lookup of which revisions a BD has (revision-of=<bd> without a revision number) must come from it
    const lookups = events.filter((e) => {
      const uri = decodeURIComponent(e.requestURI);
      return e.verb === 'list' && e.objectRef?.resource === 'secrets' && uri.includes('revision-of=') && !uri.includes('core.rukpak.io/revision=');
    });
    expect(lookups, describeEvents(lookups)).toEqual([]);
    for (const name of ['budget', 'budget-app']) {
      const bd = await t.get(name);
      expect(bd && isDone(bd), name).toBe(true);
    }
  });
});

function sumWrites(c: Partial<Record<RequestVerb, number>>): number {
  return (['create', 'update', 'updateStatus', 'patch', 'apply', 'delete'] as const).reduce((n, v) => n + (c[v] ?? 0), 0);
}
