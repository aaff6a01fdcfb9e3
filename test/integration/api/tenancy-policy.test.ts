/**
 * The tenancy policy (api/v1alpha2/tenancy-policy.yaml) on a real API server, as tenants meet it:
 * users made by impersonation, rights granted by RBAC, every refusal at admission naming its rule.
 * The binding is scoped to this file's BundleDeployments (an objectSelector on a per-run label), so
 * other test files of the run are unaffected; the policy itself is the shipped one, filled in by
 * the same function `hoist run --install-crd` uses, with this client's user as the controller.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRD_NAME, bundleDeploymentCRD } from '../../../api/v1alpha2/crd.ts';
import { tenancyPolicy } from '../../../api/v1alpha2/tenancy-policy.ts';
import { API_VERSION, KIND, LABEL_LINEAGE } from '../../../api/v1alpha2/types.ts';
import { applyTenancyPolicy, whoAmI } from '../../../src/cli/controller.ts';
import { SHARD_LABEL } from '../../../src/cli/shard.ts';
import { ApiError } from '../../../src/kube/api-error.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import type { KubeClient, KubeObject } from '../../../src/kube/types.ts';
import { untilServed } from '../../support/crds.ts';
import { kubeconfigPath } from '../../support/env.ts';
import { sleep } from '../../support/wait.ts';

const run = randomBytes(3).toString('hex');
const BD = { apiVersion: API_VERSION, kind: KIND } as const;
const RUN_LABEL = 'hoist-test/tenancy-run';
const POLICY = `hoist-tenancy-${run}`;
const NS = `tenancy-${run}`;
let admin: RestKubeClient;
const cleanup: Array<() => Promise<unknown>> = [];

const user = (name: string): string => `${name}-${run}`;
let seq = 0;
function bdObject(spec: Record<string, unknown>, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: `tenancy-${run}-${seq++}`, labels: { [RUN_LABEL]: run, ...labels } },
    spec: { format: 'plain', sources: [{ kind: 'http', http: { url: 'https://downloads.example.com/b.tar.gz' } }], paused: true, ...spec },
  };
}

async function create(as: KubeClient, obj: KubeObject): Promise<KubeObject> {
  const out = await as.create(obj);
  cleanup.push(() => admin.delete(BD, obj.metadata.name, undefined));
  return out;
}

/** the API server's refusal of `write`, or undefined when it was accepted */
async function refusal(write: () => Promise<unknown>): Promise<ApiError | undefined> {
  return write().then(
    () => undefined,
    (e: unknown) => {
      if (e instanceof ApiError) return e;
      throw e;
    },
  );
}

/** creates obj() as `as` until the API server accepts it (RBAC grants and policies take effect through watches), generous bound */
async function eventuallyCreated(as: KubeClient, obj: () => KubeObject): Promise<KubeObject> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await create(as, obj());
    } catch (e) {
      if (!(e instanceof ApiError) || Date.now() > deadline) throw e;
    }
    await sleep(200);
  }
}

/** creates obj() as `as` until the tenancy policy refuses it (what was accepted before is cleaned up), generous bound */
async function untilRefused(as: KubeClient, obj: () => KubeObject): Promise<ApiError | undefined> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const err = await refusal(() => create(as, obj()));
    if (err?.apiMessage.includes('hoist tenancy rule') || Date.now() > deadline) return err;
    await sleep(200);
  }
}

async function grant(name: string, rules: unknown[], subject: string, namespace?: string): Promise<void> {
  const kind = namespace ? 'Role' : 'ClusterRole';
  const meta = { name: `${name}-${run}`, ...(namespace ? { namespace } : {}) };
  await admin.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: meta, rules } as KubeObject);
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: `${kind}Binding`,
    metadata: meta,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name: meta.name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: subject }],
  } as KubeObject);
  cleanup.push(() => admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: `${kind}Binding` }, meta.name, namespace));
  cleanup.push(() => admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind }, meta.name, namespace));
}

const TENANT_RULES = [
  { apiGroups: ['core.rukpak.io'], resources: ['bundledeployments'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
];
const impersonateSA = (name: string) => [{ apiGroups: [''], resources: ['serviceaccounts'], verbs: ['impersonate'], resourceNames: [name] }];
const useLineage = (name: string) => [{ apiGroups: ['core.rukpak.io'], resources: ['lineages'], verbs: ['use'], resourceNames: [name] }];
const useShard = (name: string) => [{ apiGroups: ['core.rukpak.io'], resources: ['shards'], verbs: ['use'], resourceNames: [name] }];

let alice: KubeClient; // may create BundleDeployments, and impersonate installer in NS
let bob: KubeClient; // may create BundleDeployments, and impersonate kube-system/admin

beforeAll(async () => {
  admin = createKubeClient(loadKubeConfig(kubeconfigPath()), { missRefreshIntervalMs: 0 });
  await admin.apply(bundleDeploymentCRD(), { fieldManager: 'hoist-test-api', force: true });
  await untilServed(CRD_NAME, BD, [admin]);
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  cleanup.push(() => admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, NS, undefined));

  const [policy, binding] = tenancyPolicy({ name: POLICY, controllerUser: await whoAmI(admin) });
  binding.spec.matchResources = { objectSelector: { matchLabels: { [RUN_LABEL]: run } } };
  await applyTenancyPolicy(admin, [policy, binding]);
  cleanup.push(() => admin.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding' }, POLICY, undefined));
  cleanup.push(() => admin.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' }, POLICY, undefined));

  for (const name of ['alice', 'bob']) await grant(`${name}-bds`, TENANT_RULES, user(name));
  await grant('alice-installer', impersonateSA('installer'), user('alice'), NS);
  await grant('bob-admin', impersonateSA('admin'), user('bob'), 'kube-system');
  alice = admin.impersonate(user('alice'));
  bob = admin.impersonate(user('bob'));
  // the policy is in force once it refuses alice, the grants once bob is accepted (both reach the API server through watches)
  await untilRefused(alice, () => bdObject({ installNamespace: 'kube-system', serviceAccount: { name: 'admin' } }));
  await eventuallyCreated(bob, () => bdObject({ installNamespace: 'kube-system', serviceAccount: { name: 'admin' } }));
}, 120_000);

afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => undefined);
  await admin.close();
});

describe('tenancy policy on a real API server', () => {
  it('the shipped policy type-checks: no warnings for any expression', async () => {
    const deadline = Date.now() + 60_000;
    let policy: KubeObject | undefined;
    while (Date.now() < deadline) {
      policy = await admin.get({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' }, POLICY);
      if ((policy?.status as { typeChecking?: unknown } | undefined)?.typeChecking) break;
      await sleep(200);
    }
    expect((policy?.status as { typeChecking?: { expressionWarnings?: unknown[] } }).typeChecking?.expressionWarnings ?? []).toEqual([]);
  });

  it('rule service-account: a user who may not impersonate kube-system/admin cannot create a BundleDeployment naming it; one who may can', async () => {
    const err = await refusal(() => create(alice, bdObject({ installNamespace: 'kube-system', serviceAccount: { name: 'admin' } })));
    expect(err?.statusCode).toBe(403);
    expect(err?.apiMessage).toContain('hoist tenancy rule service-account');
    expect(err?.apiMessage).toContain(`user ${user('alice')} may not impersonate serviceaccount kube-system/admin`);
    // bob may (accepted in beforeAll); alice may use her own account
    const own = await create(alice, bdObject({ installNamespace: NS, serviceAccount: { name: 'installer' } }));
    expect(own.metadata.uid).toBeDefined();
  });

  it('rule service-account: without spec.serviceAccount a BundleDeployment acts as the controller, so only a user who may impersonate the controller creates one', async () => {
    const err = await refusal(() => create(alice, bdObject({ installNamespace: NS })));
    expect(err?.statusCode).toBe(403);
    expect(err?.apiMessage).toMatch(/hoist tenancy rule service-account: user \S+ may not impersonate user .*, the controller itself/);
    // the administrator (system:masters) may
    expect((await create(admin, bdObject({ installNamespace: NS }))).metadata.uid).toBeDefined();
  });

  it('rule service-account, --default-service-account: a BundleDeployment without spec.serviceAccount needs impersonate on that account in its installNamespace', async () => {
    const name = `${POLICY}-default`;
    const [policy, binding] = tenancyPolicy({ name, controllerUser: await whoAmI(admin), defaultServiceAccount: 'installer' });
    const label = `${run}-default`;
    binding.spec.matchResources = { objectSelector: { matchLabels: { [RUN_LABEL]: label } } };
    await applyTenancyPolicy(admin, [policy, binding]);
    cleanup.push(() => admin.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding' }, name, undefined));
    cleanup.push(() => admin.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' }, name, undefined));
    const labelled = (spec: Record<string, unknown>) => ({ ...bdObject(spec), metadata: { name: `tenancy-${run}-${seq++}`, labels: { [RUN_LABEL]: label } } });
    // alice may impersonate installer in NS (accepted once the policy is in force), bob may not
    await eventuallyCreated(alice, () => labelled({ installNamespace: NS }));
    const err = await untilRefused(bob, () => labelled({ installNamespace: NS }));
    expect(err?.apiMessage).toContain(`may not impersonate serviceaccount ${NS}/installer`);
    expect(err?.apiMessage).toContain("the controller's --default-service-account");
  });

  it('rule lineage: joining a foreign lineage is denied without use on it, and allowed with it; BundleDeployments without the label are unaffected', async () => {
    const lineage = `team-b-app-${run}`;
    const joining = () => bdObject({ installNamespace: NS, serviceAccount: { name: 'installer' } }, { [LABEL_LINEAGE]: lineage });
    const err = await refusal(() => create(alice, joining()));
    expect(err?.statusCode).toBe(403);
    expect(err?.apiMessage).toContain(`hoist tenancy rule lineage: user ${user('alice')} may not join lineage ${lineage}`);
    await grant('alice-lineage', useLineage(lineage), user('alice'));
    const joined = await eventuallyCreated(alice, joining);
    expect(joined.metadata.labels?.[LABEL_LINEAGE]).toBe(lineage);
  });

  it('rule shard: a shard label needs use on that shard', async () => {
    const shard = `shard-${run}`;
    const placed = () => bdObject({ installNamespace: NS, serviceAccount: { name: 'installer' } }, { [SHARD_LABEL]: shard });
    const err = await refusal(() => create(alice, placed()));
    expect(err?.statusCode).toBe(403);
    expect(err?.apiMessage).toContain(`hoist tenancy rule shard: user ${user('alice')} may not place a BundleDeployment on shard ${shard}`);
    await grant('alice-shard', useShard(shard), user('alice'));
    await eventuallyCreated(alice, placed);
  });

  it('rule kubeconfig: naming a kubeconfig Secret needs get on it; an edit that keeps the Secret is not checked again', async () => {
    const secret = `cluster-a-kubeconfig-${run}`;
    const remote = () => bdObject({ installNamespace: NS, serviceAccount: { name: 'installer' }, kubeConfig: { secretRef: { name: secret, namespace: NS } } });
    const err = await refusal(() => create(alice, remote()));
    expect(err?.statusCode).toBe(403);
    expect(err?.apiMessage).toContain(`hoist tenancy rule kubeconfig: user ${user('alice')} may not get secret ${NS}/${secret}`);
    expect(err?.apiMessage).toContain(`it needs verb get on secrets named ${secret} in namespace ${NS}`);
    // read access to another Secret is not enough; to this one it is
    await grant('alice-other-secret', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: [`other-${run}`] }], user('alice'), NS);
    expect((await refusal(() => create(alice, remote())))?.apiMessage).toContain('hoist tenancy rule kubeconfig');
    await grant('alice-kubeconfig', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: [secret] }], user('alice'), NS);
    const bd = await eventuallyCreated(alice, remote);
    // the key may change (a kubeconfig under another key of the same Secret); bob may not read the Secret but may edit it otherwise
    expect(
      await refusal(() =>
        bob.patch(BD, bd.metadata.name, undefined, { spec: { kubeConfig: { secretRef: { name: secret, namespace: NS, key: 'value.yaml' } } } }, 'merge'),
      ),
    ).toBeUndefined();
  });

  it('UPDATE is checked only when the identity or a label changes: other edits, finalizers and status writes pass', async () => {
    // created by bob (who may impersonate kube-system/admin); alice may edit BundleDeployments but not act as that account
    const bd = await create(bob, bdObject({ installNamespace: 'kube-system', serviceAccount: { name: 'admin' } }));
    const patch = (body: unknown) => alice.patch(BD, bd.metadata.name, undefined, body, 'merge');
    expect(await refusal(() => patch({ spec: { paused: false } }))).toBeUndefined();
    expect(await refusal(() => patch({ metadata: { finalizers: ['core.rukpak.io/cleanup'] } }))).toBeUndefined();
    expect(await refusal(() => patch({ metadata: { labels: { team: 'a' } } }))).toBeUndefined();
    // the status subresource is not matched: a status write by a user who could not create this BundleDeployment passes the policy
    const live = (await admin.get(BD, bd.metadata.name)) as KubeObject;
    await admin.updateStatus({ ...live, status: { conditions: [] } });
    // changing the account, or moving it to another namespace, is checked again
    const moved = await refusal(() => patch({ spec: { serviceAccount: { name: 'default' } } }));
    expect(moved?.apiMessage).toContain('may not impersonate serviceaccount kube-system/default');
    const elsewhere = await refusal(() => patch({ spec: { installNamespace: 'default' } }));
    expect(elsewhere?.apiMessage).toContain('may not impersonate serviceaccount default/admin');
    const relabelled = await refusal(() => patch({ metadata: { labels: { [LABEL_LINEAGE]: `x-${run}` } } }));
    expect(relabelled?.apiMessage).toContain('hoist tenancy rule lineage');
    await admin.patch(BD, bd.metadata.name, undefined, { metadata: { finalizers: null } }, 'merge');
  });
});
