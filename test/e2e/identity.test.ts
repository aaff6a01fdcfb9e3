/**
 * Trust boundaries end to end, written as the attacker would (issue 8, DESIGN §7): a
 * BundleDeployment whose ServiceAccount may act only in its own namespace cannot install a
 * ClusterRole or an object in another namespace (Forbidden named in status, nothing created, the
 * installed revision untouched); with enough rights it installs; apply, prune and uninstall run as
 * that account (the API server's audit log shows the impersonated user on every write);
 * --default-service-account applies to BDs that name none; a namespace holding someone else's
 * object survives prune and uninstall; collisionProtection None cannot take another lineage's CRD;
 * a revision that cannot be loaded during deletion keeps the finalizer until it can.
 */
import { rm } from 'node:fs/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FINALIZER, LABEL_LINEAGE, LABEL_OWNER_NAME, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { LABEL_REVISION_OF } from '../../src/revisions/revision-store.ts';
import { startController } from '../../src/cli/controller.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { AuditReader, type AuditEvent } from '../support/audit.ts';
import { BD_TYPE, cond, describeStatus, isDone, startTestController, TEST_LABEL, type TestController } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { CM, configMap, deleteBundleDeployment, serveBundle } from '../support/e2e-bundles.ts';
import { auditLogPath, kubeconfigPath } from '../support/env.ts';
import { waitUntil } from '../support/wait.ts';

const NS = { apiVersion: 'v1', kind: 'Namespace' } as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const CLUSTER_ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' } as const;
const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;

const { t, files, cleanup } = controllerWithFiles();

const unique = (base: string): string => `${base}-${t.runId}`;

async function namespace(base: string): Promise<string> {
  const name = unique(base);
  await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  cleanup(() => t.client.delete(NS, name, undefined));
  return name;
}

/** a ServiceAccount in `ns` that may do anything inside `ns` and nothing outside it */
async function namespaceAdmin(ns: string, name: string): Promise<string> {
  await t.client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });
  await grantIn(ns, ns, name, [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }]);
  return `system:serviceaccount:${ns}:${name}`;
}

async function grantIn(where: string, saNamespace: string, sa: string, rules: unknown[]): Promise<void> {
  const name = `${sa}-in-${where}`.slice(0, 63);
  await t.client.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace: where }, rules } as KubeObject);
  await t.client.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: where },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: saNamespace }],
  } as KubeObject);
}

async function grantClusterWide(saNamespace: string, sa: string, rules: unknown[]): Promise<void> {
  const name = unique(`${sa}-${saNamespace}`).slice(0, 63);
  await t.client.create({ ...CLUSTER_ROLE, metadata: { name }, rules } as KubeObject);
  await t.client.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: saNamespace }],
  } as KubeObject);
  cleanup(() => t.client.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' }, name, undefined));
  cleanup(() => t.client.delete(CLUSTER_ROLE, name, undefined));
}

const clusterRole = (name: string): KubeObject => ({ ...CLUSTER_ROLE, metadata: { name }, rules: [] }) as KubeObject;
const inNamespace = (o: KubeObject, ns: string): KubeObject => ({ ...o, metadata: { ...o.metadata, namespace: ns } });

const writes = (events: readonly AuditEvent[], resource: string, ns?: string) =>
  events.filter(
    (e) =>
      ['create', 'patch', 'update', 'delete'].includes(e.verb) &&
      e.objectRef?.resource === resource &&
      !e.objectRef.subresource &&
      (ns === undefined || e.objectRef.namespace === ns),
  );

function crd(group: string): KubeObject {
  return {
    ...CRD,
    metadata: { name: `widgets.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  } as KubeObject;
}

describe('a BundleDeployment acts as its ServiceAccount', () => {
  it('an account with rights only in its namespace cannot install a ClusterRole or an object in another namespace; nothing is created and the installed revision stays', async () => {
    const tenant = await namespace('tenant');
    const other = await namespace('other');
    const user = await namespaceAdmin(tenant, 'installer');
    const role = unique('escape');
    cleanup(() => t.client.delete(CLUSTER_ROLE, role, undefined));
    const v1 = await serveBundle(files, '/tenant-v1.tgz', [configMap('app', { version: 'v1' })]);
    const v2 = await serveBundle(files, '/tenant-v2.tgz', [
      configMap('app', { version: 'v2' }),
      clusterRole(role),
      inNamespace(configMap('planted', { x: 'y' }), other),
    ]);
    const name = unique('tenant-app');
    await t.create(name, { installNamespace: tenant, serviceAccount: { name: 'installer' }, format: 'plain', sources: [v1] });
    await t.waitFor(name, isDone, 'v1 installed as the tenant account');

    await t.patchSpec(name, { sources: [v2] });
    const refused = await t.waitFor(name, (b) => cond(b, 'Installed')?.status === 'False', 'v2 refused');
    const msg = cond(refused, 'Installed')!.message;
    expect(cond(refused, 'Installed')!.reason).toBe('ApplyFailed');
    // objects no watch knows are applied without a read first, so the apply is refused; a retry
    // after a refusal reads first, so the read is. The ConfigMap's phase (configuration) comes
    // before the ClusterRole's (roles): that one is refused first, and the ClusterRole not tried
    expect(msg).toMatch(new RegExp(`v1 ConfigMap ${other}/planted: (apply|get) refused`));
    expect(msg).toMatch(/forbidden: User "system:serviceaccount:[^"]+:installer" cannot (patch|get) resource "configmaps"/);
    expect(msg).toContain(user);
    expect(msg).toContain('revision 1 stays installed');
    expect(await t.client.get(CLUSTER_ROLE, role)).toBeUndefined();
    expect(await t.client.get(CM, 'planted', other)).toBeUndefined();
    expect((await t.client.get(CM, 'app', tenant))?.data).toEqual({ version: 'v1' });
    expect(refused.status?.activeRevision?.number).toBe(1);

    // with the ConfigMap allowed, the ClusterRole is refused in its turn; nothing is created either
    await grantIn(other, tenant, 'installer', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }]);
    await t.patchSpec(name, { revisionHistoryLimit: 5 });
    const refusedRole = await t.waitFor(
      name,
      (b) => b.metadata.generation === b.status?.observedGeneration && (cond(b, 'Installed')?.message.includes('ClusterRole') ?? false),
      'the ClusterRole refused',
      30_000,
    );
    expect(cond(refusedRole, 'Installed')!.message).toMatch(new RegExp(`rbac.authorization.k8s.io/v1 ClusterRole ${role}: (apply|get) refused`));
    expect(cond(refusedRole, 'Installed')!.message).toMatch(/cannot (patch|get) resource "clusterroles"/);
    expect(await t.client.get(CLUSTER_ROLE, role)).toBeUndefined();
    expect(await t.client.get(CM, 'planted', other)).toBeUndefined();

    // the same BD with enough rights installs (a spec change retries the held-back revision)
    await grantClusterWide(tenant, 'installer', [
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'] },
    ]);
    await t.patchSpec(name, { revisionHistoryLimit: 4 });
    const installed = await t.waitFor(name, isDone, 'v2 installed once the account may', 30_000);
    expect(installed.status?.activeRevision?.number).toBe(2);
    expect((await t.client.get(CLUSTER_ROLE, role))?.metadata.labels?.[LABEL_OWNER_NAME]).toBe(name);
    expect((await t.client.get(CM, 'planted', other))?.data).toEqual({ x: 'y' });
    await deleteBundleDeployment(t.client, name);
    expect(await t.client.get(CLUSTER_ROLE, role)).toBeUndefined();
  });

  // runs on the suite's own control plane, which writes an audit log; against an existing cluster or
  // K3s (USE_EXISTING_CLUSTER, HOIST_TEST_K3S) there is no audit log to count requests in
  it.runIf(auditLogPath() !== '')('apply, prune and uninstall run as the account: the audit log shows the impersonated user on every write', async () => {
    const tenant = await namespace('audited');
    const user = await namespaceAdmin(tenant, 'installer');
    const audit = new AuditReader(auditLogPath(), `hoist/test-${t.runId}`);
    const v1 = await serveBundle(files, '/audited-v1.tgz', [configMap('keep', { v: '1' }), configMap('leaves', { v: '1' })]);
    const v2 = await serveBundle(files, '/audited-v2.tgz', [configMap('keep', { v: '2' })]);
    const name = unique('audited');
    const from = await audit.offset();
    await t.create(name, { installNamespace: tenant, serviceAccount: { name: 'installer' }, format: 'plain', sources: [v1] });
    await t.waitFor(name, isDone, 'v1 installed');
    await t.patchSpec(name, { sources: [v2] });
    await t.waitFor(name, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'v2 installed, leaves pruned');
    expect(await t.client.get(CM, 'leaves', tenant)).toBeUndefined();
    await deleteBundleDeployment(t.client, name);
    expect(await t.client.get(CM, 'keep', tenant)).toBeUndefined();

    const events = await audit.since(from);
    const cmWrites = writes(events, 'configmaps', tenant);
    const described = cmWrites.map((e) => `${e.verb} ${e.objectRef?.name} as ${e.impersonatedUser?.username ?? 'the controller'}`);
    // v1 applies both, v2 applies keep, prune deletes leaves, uninstall deletes keep
    expect(described).toEqual(
      expect.arrayContaining([`patch keep as ${user}`, `patch leaves as ${user}`, `delete leaves as ${user}`, `delete keep as ${user}`]),
    );
    expect(
      cmWrites.every((e) => e.impersonatedUser?.username === user),
      described.join('\n'),
    ).toBe(true);
    // the BD's own status and finalizer, and its revision Secrets, stay the controller's
    const own = events.filter(
      (e) => e.objectRef?.resource === 'bundledeployments' || (e.objectRef?.resource === 'secrets' && e.objectRef.namespace === t.namespace),
    );
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((e) => !e.impersonatedUser)).toBe(true);
  });
});

describe('hoist run --default-service-account', () => {
  let d: TestController;
  beforeAll(async () => {
    d = await startTestController({ defaultServiceAccount: 'hoist-default' });
  });
  afterAll(async () => {
    await d?.stop();
  });

  it('a BD without spec.serviceAccount acts as the default account of its installNamespace; without installNamespace it is refused', async () => {
    const tenant = await namespace('defaulted');
    await namespaceAdmin(tenant, 'hoist-default');
    const role = unique('default-escape');
    cleanup(() => t.client.delete(CLUSTER_ROLE, role, undefined));
    const body = await serveBundle(files, '/defaulted.tgz', [configMap('app', { v: '1' }), clusterRole(role)]);
    const name = `${unique('defaulted')}`;
    await d.create(name, { installNamespace: tenant, format: 'plain', sources: [body] });
    const refused = await d.waitFor(
      name,
      (b) => cond(b, 'Installed')?.status === 'False' && cond(b, 'Installed')?.reason === 'ApplyFailed',
      'refused as the default account',
    );
    expect(cond(refused, 'Installed')!.message).toMatch(
      new RegExp(`User "system:serviceaccount:${tenant}:hoist-default" cannot (patch|get) resource "clusterroles"`),
    );
    expect(await t.client.get(CLUSTER_ROLE, role)).toBeUndefined();
    expect(await t.client.get(CM, 'app', tenant)).toBeUndefined();

    const homeless = unique('homeless');
    await d.create(homeless, { format: 'plain', sources: [body] });
    const blocked = await d.waitFor(homeless, (b) => cond(b, 'Progressing')?.reason === 'Blocked', 'no namespace for the default account');
    expect(cond(blocked, 'Resolved')).toMatchObject({ status: 'False', reason: 'ResolveFailed' });
    expect(cond(blocked, 'Resolved')!.message).toContain('--default-service-account hoist-default');
    expect(await t.client.get(CLUSTER_ROLE, role)).toBeUndefined();
    await deleteBundleDeployment(d.client, name);
    await deleteBundleDeployment(d.client, homeless);
  });
});

describe('deletes only what is provably ours', () => {
  it('a namespace holding a foreign object survives prune and uninstall; the BD’s own objects in it are deleted; an otherwise empty one is deleted', async () => {
    const [pruned, kept, empty] = [unique('ns-pruned'), unique('ns-kept'), unique('ns-empty')];
    for (const n of [pruned, kept, empty]) cleanup(() => t.client.delete(NS, n, undefined));
    const nsObj = (n: string): KubeObject => ({ ...NS, metadata: { name: n } }) as KubeObject;
    const v1 = await serveBundle(files, '/ns-v1.tgz', [
      nsObj(pruned),
      inNamespace(configMap('mine', { a: '1' }), pruned),
      nsObj(kept),
      inNamespace(configMap('mine', { a: '1' }), kept),
      nsObj(empty),
      inNamespace(configMap('mine', { a: '1' }), empty),
    ]);
    const v2 = await serveBundle(files, '/ns-v2.tgz', [
      nsObj(kept),
      inNamespace(configMap('mine', { a: '1' }), kept),
      nsObj(empty),
      inNamespace(configMap('mine', { a: '1' }), empty),
    ]);
    const name = unique('namespaces');
    await t.create(name, { format: 'plain', sources: [v1] });
    await t.waitFor(name, isDone, 'v1 installed');
    // someone else's data in two of the namespaces
    for (const n of [pruned, kept]) await t.client.create(inNamespace(configMap('foreign', { owner: 'someone else' }), n));

    await t.patchSpec(name, { sources: [v2] });
    await t.waitFor(name, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'v2 installed');
    expect(await t.client.get(CM, 'mine', pruned)).toBeUndefined();
    expect((await t.client.get(NS, pruned))?.metadata.deletionTimestamp).toBeUndefined();
    expect(await t.client.get(CM, 'foreign', pruned)).toBeDefined();

    await deleteBundleDeployment(t.client, name);
    expect(await t.client.get(CM, 'mine', kept)).toBeUndefined();
    const survivor = await t.client.get(NS, kept);
    expect(survivor?.metadata.deletionTimestamp).toBeUndefined();
    expect((await t.client.get(CM, 'foreign', kept))?.data).toEqual({ owner: 'someone else' });
    // the namespace that held only the BD's own objects is deleted (or terminating)
    const gone = await t.client.get(NS, empty);
    expect(gone === undefined || gone.metadata.deletionTimestamp !== undefined).toBe(true);
  });

  it('collisionProtection None cannot take another lineage’s CRD; the refusal names its owner', async () => {
    const group = `${t.runId}.identity.hoist.test`;
    cleanup(() => t.client.delete(CRD, `widgets.${group}`, undefined));
    const body = await serveBundle(files, '/crd.tgz', [crd(group)]);
    const owner = unique('crd-owner');
    await t.create(owner, { format: 'plain', sources: [body] });
    await t.waitFor(owner, isDone, 'the CRD is installed by its owner');
    const thief = unique('crd-thief');
    await t.create(thief, { format: 'plain', collisionProtection: 'None', deleteCRDsOnUninstall: true, sources: [body] });
    const refused = await t.waitFor(thief, (b) => cond(b, 'Installed')?.reason === 'ConflictingOwner', 'refused');
    expect(cond(refused, 'Installed')!.message).toContain(
      `apiextensions.k8s.io/v1 CustomResourceDefinition widgets.${group} is owned by BundleDeployment ${owner}`,
    );
    expect(cond(refused, 'Installed')!.message).toContain('collisionProtection None');
    const live = await t.client.get(CRD, `widgets.${group}`);
    expect(live?.metadata.labels).toMatchObject({ [LABEL_OWNER_NAME]: owner, [LABEL_LINEAGE]: owner });
    await deleteBundleDeployment(t.client, thief);
    expect(await t.client.get(CRD, `widgets.${group}`)).toBeDefined();
    await deleteBundleDeployment(t.client, owner);
  });

  it('a revision that cannot be loaded during deletion keeps the finalizer and the objects until it can', async () => {
    // a controller of its own, restarted below so that nothing is remembered in memory
    const c = await startTestController();
    const tenant = await namespace('finalize');
    const body = await serveBundle(files, '/finalize.tgz', [configMap('precious', { v: '1' })]);
    const name = unique('finalize');
    await c.create(name, { installNamespace: tenant, format: 'plain', sources: [body] });
    await c.waitFor(name, isDone, 'installed');
    await c.ctl.stop();

    // the revision Secrets disappear (an operator's mistake, a restore in progress)
    const selector = `${LABEL_REVISION_OF}=${name}`;
    const stored = (await c.client.list(SECRET, { namespace: c.namespace, labelSelector: selector })).items;
    expect(stored.length).toBeGreaterThan(0);
    for (const s of stored) await c.client.delete(SECRET, s.metadata.name, c.namespace);
    await c.client.delete(BD_TYPE, name, undefined);

    const restarted = await startController({
      kubeconfig: kubeconfigPath(),
      namespace: c.namespace,
      cacheDir: c.cacheDir,
      log: pino({ level: 'silent' }),
      selector: `${TEST_LABEL}=${c.runId}`,
      userAgent: `hoist/test-${c.runId}`,
    });
    try {
      await waitUntil(
        'an UninstallFailed event',
        async () => {
          const events = await c.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
          return events.items.some((e) => (e as { reason?: string }).reason === 'UninstallFailed');
        },
        30_000,
      );
      const stuck = (await c.client.get(BD_TYPE, name)) as unknown as BundleDeployment | undefined;
      expect(stuck?.metadata.finalizers, describeStatus(stuck)).toContain(FINALIZER);
      expect((await c.client.get(CM, 'precious', tenant))?.data).toEqual({ v: '1' });

      // restored: the next retry uninstalls
      for (const s of stored) {
        const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ct, managedFields: _mf, ...meta } = s.metadata;
        await c.client.create({ ...s, metadata: meta });
      }
      await waitUntil('the BD is gone', async () => !(await c.client.get(BD_TYPE, name)), 60_000);
      expect(await c.client.get(CM, 'precious', tenant)).toBeUndefined();
    } finally {
      await restarted.stop();
      await c.client.close();
      await rm(c.cacheDir, { recursive: true, force: true });
    }
  });
});
