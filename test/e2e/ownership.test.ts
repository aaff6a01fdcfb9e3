/**
 * Ownership end to end through the real controller (DESIGN §4): handover between two
 * BundleDeployments of one lineage (objects keep their UIDs), a BundleDeployment named after a
 * labelled lineage by a user without `use` on it joining nothing (issue 23), refusal of another lineage's
 * objects (ConflictingOwner, nothing changed), and objects created by `kubectl apply`: refused
 * under Prevent, adopted under IfNotOwned with kubectl's fields taken over, and uninstall deleting
 * only what the BundleDeployment adopted or created.
 */
import { describe, expect, it } from 'vitest';
import { LABEL_LINEAGE, LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { tenancyPolicy } from '../../api/v1alpha2/tenancy-policy.ts';
import { applyTenancyPolicy, whoAmI } from '../../src/cli/controller.ts';
import { ApiError } from '../../src/kube/api-error.ts';
import { CM, configMap, deleteBundleDeployment, kubectl, serveBundle, uidOf } from '../support/e2e-bundles.ts';
import { BD_TYPE, cond, isDone, pastSecondOf, TEST_LABEL } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { waitUntil } from '../support/wait.ts';

const SA = { apiVersion: 'v1', kind: 'ServiceAccount' } as const;

const { t, files, cleanup } = controllerWithFiles();

function ns(prefix: string): string {
  const name = `${prefix}-${t.runId}`;
  cleanup(() => t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, name, undefined));
  return name;
}

async function rvOf(name: string, namespace: string): Promise<string | undefined> {
  return (await t.client.get(CM, name, namespace))?.metadata.resourceVersion;
}

async function ownedBy(bd: string, namespace: string): Promise<string[]> {
  const list = await t.client.list(CM, { namespace, labelSelector: `${LABEL_OWNER_NAME}=${bd}` });
  return list.items.map((o) => o.metadata.name).sort();
}

function managersOf(o: KubeObject | undefined): string[] {
  return ((o?.metadata.managedFields ?? []) as Array<{ manager?: string }>).map((m) => m.manager ?? '');
}

/** BundleDeployments are cluster-scoped and test files share one API server */
const bdName = (base: string): string => `${base}-${t.runId}`;

describe('handover between BundleDeployments of one lineage', () => {
  it('the newer BD takes every object over in place; the older reports Conflict; deleting it deletes nothing the lineage installs', async () => {
    const namespace = ns('lineage');
    const lineage = `app-${t.runId}`;
    const sa = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'app' } } as KubeObject;
    const v1 = await serveBundle(files, '/lineage-v1.tgz', [configMap('app-config', { version: 'v1' }), sa, configMap('v1-only', { old: 'yes' })]);
    const v2 = await serveBundle(files, '/lineage-v2.tgz', [configMap('app-config', { version: 'v2' }), sa, configMap('v2-only', { new: 'yes' })]);

    await t.create(bdName('app-v1'), { installNamespace: namespace, format: 'plain', sources: [v1] }, { [LABEL_LINEAGE]: lineage });
    await t.waitFor(bdName('app-v1'), isDone, 'v1 installed');
    const uids = { config: await uidOf(t.client, CM, 'app-config', namespace), sa: await uidOf(t.client, SA, 'app', namespace) };
    expect(uids.config).toBeDefined();
    expect(uids.sa).toBeDefined();

    await pastSecondOf(t.client, BD_TYPE, bdName('app-v1')); // creationTimestamp has second precision: v2 is strictly newer
    await t.create(bdName('app-v2'), { installNamespace: namespace, format: 'plain', sources: [v2] }, { [LABEL_LINEAGE]: lineage });
    await t.waitFor(bdName('app-v2'), isDone, 'v2 installed');
    const loser = await t.waitFor(bdName('app-v1'), (b) => cond(b, 'Installed')?.reason === 'Conflict', 'v1 reports Conflict', 30_000);
    expect(cond(loser, 'Installed')).toMatchObject({ status: 'False', reason: 'Conflict' });
    expect(cond(loser, 'Installed')!.message).toContain(bdName('app-v2'));

    for (const [type, name, uid] of [
      [CM, 'app-config', uids.config],
      [SA, 'app', uids.sa],
    ] as const) {
      const live = await t.client.get(type, name, namespace);
      expect(live?.metadata.uid, `${name} kept its UID`).toBe(uid);
      expect(live?.metadata.labels).toMatchObject({ [LABEL_OWNER_NAME]: bdName('app-v2'), [LABEL_LINEAGE]: lineage });
    }
    expect(((await t.client.get(CM, 'app-config', namespace)) as unknown as { data: Record<string, string> }).data).toEqual({ version: 'v2' });
    expect(await ownedBy(bdName('app-v2'), namespace)).toEqual(['app-config', 'v2-only']);

    // the loser writes nothing while it loses
    const rvBefore = await rvOf('app-config', namespace);
    const touched = Date.now();
    await t.client.patch(BD_TYPE, bdName('app-v1'), undefined, { metadata: { labels: { touch: '1' } } }, 'merge');
    await t.reconciled(bdName('app-v1'), touched, 'the loser reconciled after the touch');
    expect(await rvOf('app-config', namespace)).toBe(rvBefore);

    await deleteBundleDeployment(t.client, bdName('app-v1'));
    expect(await uidOf(t.client, CM, 'app-config', namespace)).toBe(uids.config);
    expect(await uidOf(t.client, SA, 'app', namespace)).toBe(uids.sa);
    expect(await uidOf(t.client, CM, 'v2-only', namespace)).toBeDefined();
    // v1's own leftover is no longer installed by the lineage: it goes with v1
    expect(await uidOf(t.client, CM, 'v1-only', namespace)).toBeUndefined();
    const winner = await t.waitFor(bdName('app-v2'), isDone, 'v2 still installed');
    expect(cond(winner, 'Installed')?.status).toBe('True');

    await deleteBundleDeployment(t.client, bdName('app-v2'));
    expect(await uidOf(t.client, CM, 'app-config', namespace)).toBeUndefined();
    expect(await uidOf(t.client, SA, 'app', namespace)).toBeUndefined();
  }, 120_000);

  it('deleting the newer BD hands the objects back to the older one in place', async () => {
    const namespace = ns('lineage-back');
    const lineage = `back-${t.runId}`;
    const v1 = await serveBundle(files, '/back-v1.tgz', [configMap('app-config', { version: 'v1' })]);
    const v2 = await serveBundle(files, '/back-v2.tgz', [configMap('app-config', { version: 'v2' }), configMap('v2-only', { new: 'yes' })]);
    await t.create(bdName('back-v1'), { installNamespace: namespace, format: 'plain', sources: [v1] }, { [LABEL_LINEAGE]: lineage });
    await t.waitFor(bdName('back-v1'), isDone, 'v1 installed');
    const uid = await uidOf(t.client, CM, 'app-config', namespace);
    await pastSecondOf(t.client, BD_TYPE, bdName('back-v1'));
    await t.create(bdName('back-v2'), { installNamespace: namespace, format: 'plain', sources: [v2] }, { [LABEL_LINEAGE]: lineage });
    await t.waitFor(bdName('back-v2'), isDone, 'v2 installed');
    await t.waitFor(bdName('back-v1'), (b) => cond(b, 'Installed')?.reason === 'Conflict', 'v1 reports Conflict', 30_000);

    await deleteBundleDeployment(t.client, bdName('back-v2'));
    await t.waitFor(bdName('back-v1'), isDone, 'v1 installed again', 30_000);
    const live = (await t.client.get(CM, 'app-config', namespace)) as KubeObject & { data: Record<string, string> };
    expect(live.metadata.uid, 'app-config was never deleted').toBe(uid);
    expect(live.data).toEqual({ version: 'v1' });
    expect(live.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bdName('back-v1'));
    expect(await uidOf(t.client, CM, 'v2-only', namespace)).toBeUndefined();
    await deleteBundleDeployment(t.client, bdName('back-v1'));
    expect(await uidOf(t.client, CM, 'app-config', namespace)).toBeUndefined();
  }, 90_000);
});

// Issue 23: the tenancy policy lets a user set the lineage label L only with `use` on
// lineages.core.rukpak.io L; a BundleDeployment without the label is the lineage named after
// itself, and a name needs no permission. A user without `use` names a BundleDeployment L.
describe('a BundleDeployment named after a labelled lineage', () => {
  it('joins nothing without use on the lineage: it applies nothing, the labelled member keeps applying and its objects stay its own', async () => {
    const namespace = ns('named');
    await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await t.client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'installer', namespace } });
    const scope = { 'hoist.test/tenancy': t.runId };
    const alice = `alice-${t.runId}`;
    const rbac = (kind: string, name: string, rules: unknown[], subject: Record<string, string>, where?: string) => [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: { name, ...(where ? { namespace: where } : {}) }, rules },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: `${kind}Binding`,
        metadata: { name, ...(where ? { namespace: where } : {}) },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
        subjects: [subject],
      },
    ];
    const grants = [
      ...rbac(
        'Role',
        'installer',
        [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
        { kind: 'ServiceAccount', name: 'installer', namespace },
        namespace,
      ),
      // alice may create BundleDeployments and act as installer in her namespace; she has no use on any lineage
      ...rbac('ClusterRole', alice, [{ apiGroups: ['core.rukpak.io'], resources: ['bundledeployments'], verbs: ['get', 'list', 'watch', 'create'] }], {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'User',
        name: alice,
      }),
      ...rbac(
        'Role',
        alice,
        [{ apiGroups: [''], resources: ['serviceaccounts'], resourceNames: ['installer'], verbs: ['impersonate'] }],
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: alice },
        namespace,
      ),
    ];
    const policyName = `hoist-tenancy-${t.runId}`;
    const [policy, binding] = tenancyPolicy({ name: policyName, controllerUser: await whoAmI(t.client) });
    binding.spec.matchResources = { objectSelector: { matchLabels: scope } };
    await applyTenancyPolicy(t.client, [policy, binding]);
    const clusterObjects = [binding, policy, ...grants.filter((g) => !g.metadata.namespace)] as KubeObject[];
    try {
      for (const g of grants) await t.client.create(g as KubeObject);

      // the labelled lineage, by its administrator
      const lineage = bdName('shop');
      const v1 = await serveBundle(files, '/named-v1.tgz', [configMap('app-config', { owner: 'team-b' })]);
      await t.create(
        bdName('shop-v1'),
        { installNamespace: namespace, format: 'plain', sources: [v1], serviceAccount: { name: 'installer' } },
        { [LABEL_LINEAGE]: lineage, ...scope },
      );
      await t.waitFor(bdName('shop-v1'), isDone, 'the labelled member installed');
      const uid = await uidOf(t.client, CM, 'app-config', namespace);
      await pastSecondOf(t.client, BD_TYPE, bdName('shop-v1')); // what alice creates is strictly newer

      const asAlice = t.client.impersonate(alice);
      const evil = await serveBundle(files, '/named-evil.tgz', [configMap('app-config', { owner: 'alice' })]);
      const aliceBD = (name: string, labels: Record<string, string>) =>
        ({
          ...BD_TYPE,
          metadata: { name, labels: { [TEST_LABEL]: t.runId, ...scope, ...labels } },
          spec: { installNamespace: namespace, format: 'plain', sources: [evil], serviceAccount: { name: 'installer' } },
        }) as unknown as KubeObject;
      // through the label she is refused at admission (once the policy and her grants are in force)
      await waitUntil('the tenancy policy refuses alice the lineage label', async () => {
        const err = await asAlice.create(aliceBD(bdName('shop-label'), { [LABEL_LINEAGE]: lineage })).then(
          async () => {
            await deleteBundleDeployment(t.client, bdName('shop-label'));
            return undefined;
          },
          (e: unknown) => e,
        );
        return err instanceof ApiError && err.apiMessage.includes(`hoist tenancy rule lineage: user ${alice} may not join lineage ${lineage}`);
      });

      // by name, the API server admits it: a name needs no permission
      const at = Date.now();
      await asAlice.create(aliceBD(lineage, {}));
      const refused = await t.waitFor(lineage, (b) => cond(b, 'Installed')?.reason === 'Conflict', 'the namesake is refused');
      expect(cond(refused, 'Installed')).toMatchObject({ status: 'False', reason: 'Conflict' });
      expect(cond(refused, 'Installed')!.message).toContain(
        `lineage ${lineage} is joined through the label ${LABEL_LINEAGE}=${lineage} (BundleDeployment ${bdName('shop-v1')})`,
      );
      expect(cond(refused, 'Installed')!.message).toContain(`use on lineages.core.rukpak.io ${lineage}`);
      expect(refused.status?.activeRevision).toBeUndefined();

      // the labelled member, reconciled since, still applies; its object is untouched
      await t.reconciled(bdName('shop-v1'), at, 'the labelled member looked at its lineage again');
      const member = await t.waitFor(bdName('shop-v1'), isDone, 'the labelled member still installed');
      expect(cond(member, 'Installed')?.status).toBe('True');
      await t.idle();
      const live = (await t.client.get(CM, 'app-config', namespace)) as KubeObject & { data: Record<string, string> };
      expect(live.metadata.uid).toBe(uid);
      expect(live.data).toEqual({ owner: 'team-b' });
      expect(live.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bdName('shop-v1'));

      // deleting the namesake deletes nothing of the lineage's
      await deleteBundleDeployment(t.client, lineage);
      expect(await uidOf(t.client, CM, 'app-config', namespace)).toBe(uid);
      await deleteBundleDeployment(t.client, bdName('shop-v1'));
    } finally {
      for (const o of clusterObjects) await t.client.delete(o, o.metadata.name, undefined).catch(() => undefined);
    }
  }, 120_000);
});

describe('a BundleDeployment of another lineage', () => {
  it('is refused with ConflictingOwner naming object and owner, and changes nothing; deleting it completes', async () => {
    const namespace = ns('conflict');
    const owner = await serveBundle(files, '/owner.tgz', [configMap('shared', { who: bdName('owner') })]);
    await t.create(bdName('owner'), { installNamespace: namespace, format: 'plain', sources: [owner] });
    await t.waitFor(bdName('owner'), isDone, 'owner installed');
    const before = await t.client.get(CM, 'shared', namespace);

    const intruder = await serveBundle(files, '/intruder.tgz', [configMap('intruder-new', { a: '1' }), configMap('shared', { who: bdName('intruder') })]);
    await t.create(bdName('intruder'), { installNamespace: namespace, format: 'plain', sources: [intruder] });
    const bd = await t.waitFor(bdName('intruder'), (b) => cond(b, 'Installed')?.reason === 'ConflictingOwner', 'conflicting owner');
    const installed = cond(bd, 'Installed')!;
    expect(installed.status).toBe('False');
    expect(installed.message).toContain(`v1 ConfigMap ${namespace}/shared`);
    expect(installed.message).toContain(`BundleDeployment ${bdName('owner')}`);
    expect(bd.status?.activeRevision).toBeUndefined();

    // the refusing reconcile wrote that status last: once the queue is empty, it is over
    await t.idle();
    const after = await t.client.get(CM, 'shared', namespace);
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expect(after?.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bdName('owner'));
    expect(await uidOf(t.client, CM, 'intruder-new', namespace)).toBeUndefined();
    expect(await ownedBy(bdName('intruder'), namespace)).toEqual([]);

    // deleting a BD that never installed anything completes and deletes nothing
    await deleteBundleDeployment(t.client, bdName('intruder'));
    expect(await rvOf('shared', namespace)).toBe(before?.metadata.resourceVersion);
    await deleteBundleDeployment(t.client, bdName('owner'));
    expect(await uidOf(t.client, CM, 'shared', namespace)).toBeUndefined();
  }, 90_000);
});

describe('objects created by kubectl apply (client-side)', () => {
  it('refused under Prevent, adopted under IfNotOwned with kubectl fields taken over; uninstall deletes only what was adopted or created', async () => {
    const namespace = ns('kubectl');
    await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    const manifest = (name: string, data: Record<string, string>, labels: Record<string, string>) =>
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data });
    await kubectl(['apply', '-f', '-'], manifest('adopt-me', { a: '1', legacy: 'old' }, { tool: 'kubectl', keep: 'yes' }));
    await kubectl(['apply', '-f', '-'], manifest('bystander', { x: '1' }, { tool: 'kubectl' }));
    const adoptBefore = await t.client.get(CM, 'adopt-me', namespace);
    expect(managersOf(adoptBefore)).toContain('kubectl-client-side-apply');

    // Prevent (the default): refused, nothing changed, nothing created
    const rev1 = await serveBundle(files, '/kc-1.tgz', [
      configMap('adopt-me', { a: '2', legacy: 'old' }, { tool: 'kubectl', keep: 'yes' }),
      configMap('kc-new', { n: '1' }),
    ]);
    await t.create(bdName('adopter'), { installNamespace: namespace, format: 'plain', sources: [rev1] });
    let bd = await t.waitFor(bdName('adopter'), (b) => cond(b, 'Installed')?.reason === 'ConflictingOwner', 'refused under Prevent');
    expect(cond(bd, 'Installed')!.message).toContain(`v1 ConfigMap ${namespace}/adopt-me`);
    expect(cond(bd, 'Installed')!.message).toMatch(/created outside Hoist/);
    await t.idle();
    expect(await rvOf('adopt-me', namespace)).toBe(adoptBefore?.metadata.resourceVersion);
    expect(await uidOf(t.client, CM, 'kc-new', namespace)).toBeUndefined();

    // IfNotOwned: adopted in place
    await t.patchSpec(bdName('adopter'), { collisionProtection: 'IfNotOwned' });
    bd = await t.waitFor(bdName('adopter'), isDone, 'adopted under IfNotOwned');
    let live = (await t.client.get(CM, 'adopt-me', namespace)) as KubeObject & { data: Record<string, string> };
    expect(live.metadata.uid).toBe(adoptBefore?.metadata.uid);
    expect(live.data).toEqual({ a: '2', legacy: 'old' });
    expect(live.metadata.labels).toMatchObject({ tool: 'kubectl', keep: 'yes', [LABEL_OWNER_NAME]: bdName('adopter') });
    expect(managersOf(live)).not.toContain('kubectl-client-side-apply');

    // the next revision drops a label and a data key kubectl had set: both disappear
    const rev2 = await serveBundle(files, '/kc-2.tgz', [configMap('adopt-me', { a: '2' }, { keep: 'yes' }), configMap('kc-new', { n: '1' })]);
    await t.patchSpec(bdName('adopter'), { sources: [rev2] });
    bd = await t.waitFor(bdName('adopter'), (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'revision 2 installed');
    live = (await t.client.get(CM, 'adopt-me', namespace)) as KubeObject & { data: Record<string, string> };
    expect(live.metadata.uid).toBe(adoptBefore?.metadata.uid);
    expect(live.data).toEqual({ a: '2' });
    expect(live.metadata.labels?.tool).toBeUndefined();
    expect(live.metadata.labels?.keep).toBe('yes');
    expect(live.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']).toBeUndefined();
    const managers = (live.metadata.managedFields ?? []) as Array<{ manager?: string; fieldsV1?: Record<string, unknown> }>;
    expect(managers.filter((m) => /kubectl/.test(m.manager ?? ''))).toEqual([]);
    for (const m of managers) expect(JSON.stringify(m.fieldsV1 ?? {})).not.toMatch(/f:legacy|f:tool/);

    // the adopter's next revision lists an object of another lineage: refused, revision 2 stays
    const bystanderBefore = await t.client.get(CM, 'bystander', namespace);
    const other = await serveBundle(files, '/kc-other.tgz', [configMap('other-own', { o: '1' })]);
    await t.create(bdName('other'), { installNamespace: namespace, format: 'plain', sources: [other] });
    await t.waitFor(bdName('other'), isDone, 'other installed');
    const otherOwnBefore = await t.client.get(CM, 'other-own', namespace);
    const rev3 = await serveBundle(files, '/kc-3.tgz', [
      configMap('adopt-me', { a: '2' }, { keep: 'yes' }),
      configMap('kc-new', { n: '1' }),
      configMap('other-own', { o: 'stolen' }),
    ]);
    await t.patchSpec(bdName('adopter'), { sources: [rev3] });
    bd = await t.waitFor(bdName('adopter'), (b) => cond(b, 'Installed')?.reason === 'ConflictingOwner', 'refused another lineage');
    expect(cond(bd, 'Installed')!.message).toContain(`v1 ConfigMap ${namespace}/other-own`);
    expect(bd.status?.activeRevision?.number).toBe(2);

    // "other" (Prevent) lists the kubectl-created bystander in its next revision: refused
    const other2 = await serveBundle(files, '/kc-other-2.tgz', [configMap('other-own', { o: '1' }), configMap('bystander', { x: '2' })]);
    await t.patchSpec(bdName('other'), { sources: [other2] });
    const otherBd = await t.waitFor(bdName('other'), (b) => cond(b, 'Installed')?.reason === 'ConflictingOwner', 'other refused bystander');
    expect(cond(otherBd, 'Installed')!.message).toContain(`v1 ConfigMap ${namespace}/bystander`);
    expect(await rvOf('bystander', namespace)).toBe(bystanderBefore?.metadata.resourceVersion);
    expect(await rvOf('other-own', namespace)).toBe(otherOwnBefore?.metadata.resourceVersion);

    // uninstall: only what each BD adopted or created goes; refused objects stay untouched
    await deleteBundleDeployment(t.client, bdName('adopter'));
    expect(await uidOf(t.client, CM, 'adopt-me', namespace)).toBeUndefined();
    expect(await uidOf(t.client, CM, 'kc-new', namespace)).toBeUndefined();
    expect(await rvOf('other-own', namespace)).toBe(otherOwnBefore?.metadata.resourceVersion);
    await deleteBundleDeployment(t.client, bdName('other'));
    expect(await uidOf(t.client, CM, 'other-own', namespace)).toBeUndefined();
    expect(await rvOf('bystander', namespace)).toBe(bystanderBefore?.metadata.resourceVersion);
  }, 150_000);
});
