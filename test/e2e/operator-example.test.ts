/**
 * examples/operator end to end (issue 14): the example's Operator controller and a real Hoist
 * controller against the local control plane. The Operator installs argo-rollouts 1.8.4, upgrades
 * to 1.9.1, tries a broken build (the API server refuses one of its objects: the Operator rolls
 * back and reports the BundleDeployment's reason in its own status), then a fixed one; every
 * step is a new BundleDeployment of one lineage, and every object kept across the handovers keeps
 * its UID. Then a hotfix: paused, a kubectl edit stays; resumed, Hoist reverts it.
 *
 * The BundleDeployment template sets upgrade.crdSafety None: argo-rollouts 1.9.1's CRDs make
 * hostAliases[].ip required and drop resourceClaims[].source, which Enforce refuses (as OLM v1
 * would); the upgrade test (test/e2e/upgrade.test.ts) makes the same choice for the same pair.
 */
import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { operatorCRD, OPERATOR_CRD_NAME } from '../../examples/operator/crd.ts';
import { OperatorController } from '../../examples/operator/operator-controller.ts';
import { OP_API_VERSION, OP_KIND, type Operator, type OperatorStatus } from '../../examples/operator/types.ts';
import { BD_TYPE, cond, TEST_LABEL } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { untilServed } from '../support/crds.ts';
import { kubectl } from '../support/e2e-bundles.ts';
import { tarGz } from '../support/http-files.ts';
import { FIXTURES, isolatePlain, ownedUids } from '../support/upgrade-fixtures.ts';
import { waitUntil } from '../support/wait.ts';

const OP = { apiVersion: OP_API_VERSION, kind: OP_KIND } as const;
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;

let ops: OperatorController;
let name: string;
let ns: string;

/** argo-rollouts builds served as /argo-rollouts-<version>.tgz */
async function serveVersions(id: string): Promise<void> {
  const read = (v: string): string => isolatePlain(readFileSync(new URL(`plain/argo-rollouts-${v}/install.yaml`, FIXTURES), 'utf8'), id);
  // the API server refuses a Deployment without containers: the build is broken
  const refused = stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'rollouts-dashboard' },
    spec: { selector: { matchLabels: { app: 'd' } }, template: { metadata: { labels: { app: 'd' } }, spec: { containers: [] } } },
  });
  const extra = stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rollouts-fix' }, data: { fixed: 'true' } });
  files.set('/argo-rollouts-1.8.4.tgz', await tarGz({ 'install.yaml': read('v1.8.4') }));
  files.set('/argo-rollouts-1.9.1.tgz', await tarGz({ 'install.yaml': read('v1.9.1') }));
  files.set('/argo-rollouts-1.9.2-broken.tgz', await tarGz({ 'install.yaml': read('v1.9.1'), 'dashboard.yaml': refused }));
  files.set('/argo-rollouts-1.9.2.tgz', await tarGz({ 'install.yaml': read('v1.9.1'), 'fix.yaml': extra }));
}

async function operator(): Promise<Operator> {
  return (await t.client.get(OP, name)) as unknown as Operator;
}

async function waitOperator(what: string, pred: (s: OperatorStatus) => boolean, timeoutMs = 120_000): Promise<OperatorStatus> {
  let last: Operator | undefined;
  try {
    await waitUntil(
      what,
      async () => {
        last = await operator();
        return last.status?.observedGeneration === last.metadata.generation && pred(last.status ?? {});
      },
      timeoutMs,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${JSON.stringify(last?.status, null, 2)}`);
  }
  return last!.status!;
}

const progressing = (s: OperatorStatus) => s.conditions?.find((c) => c.type === 'Progressing');
const installed = (version: string) => (s: OperatorStatus) => s.installedVersion === version && progressing(s)?.reason === 'Succeeded';

async function setSpec(spec: Partial<Operator['spec']>): Promise<void> {
  await t.client.patch(OP, name, undefined, { spec }, 'merge');
}

async function bdsOfOperator(): Promise<string[]> {
  const list = await t.client.list<BundleDeployment & KubeObject>(BD_TYPE, { labelSelector: `examples.hoist.io/operator=${name}` });
  return list.items.map((b) => b.metadata.name).sort();
}

async function env(): Promise<Record<string, string>> {
  const d = (await t.client.get(DEPLOY, 'argo-rollouts', ns)) as unknown as {
    spec: { template: { spec: { containers: Array<{ env?: Array<{ name: string; value: string }> }> } } };
  };
  return Object.fromEntries((d.spec.template.spec.containers[0]!.env ?? []).map((e) => [e.name, e.value]));
}

/** every object of `before` still there with the same uid (under the new owner's label) */
function expectSameUids(before: Map<string, string>, after: Map<string, string>): void {
  for (const [id, uid] of before) expect(after.get(id), `${id} keeps its uid`).toBe(uid);
}

const { t, files } = controllerWithFiles();
beforeAll(async () => {
  await t.client.apply(operatorCRD(), { fieldManager: 'hoist-test', force: true });
  await untilServed(OPERATOR_CRD_NAME, { apiVersion: OP_API_VERSION, kind: OP_KIND }, [t.client, t.ctl.client]);
  ops = new OperatorController({ client: t.ctl.client, log: pino({ level: process.env.HOIST_TEST_LOG ?? 'silent' }), selector: `${TEST_LABEL}=${t.runId}` });
  await ops.start();
  name = `rollouts-${t.runId}`;
  ns = `operator-${t.runId}`;
  await serveVersions(`op${t.runId}`);
}, 120_000);

afterAll(async () => {
  await ops?.stop();
});

describe('examples/operator on Hoist', () => {
  it('1.8.4 → 1.9.1 → a broken build (rolled back, reported upward) → a fixed one; UIDs kept at every handover', async () => {
    await t.client.create({
      apiVersion: OP_API_VERSION,
      kind: OP_KIND,
      // the Operator's labels reach its BundleDeployments: this one picks the test's Hoist controller
      metadata: { name, labels: { [TEST_LABEL]: t.runId } },
      spec: {
        version: '1.8.4',
        source: { kind: 'http', http: { url: files.url('/argo-rollouts-{version}.tgz') } },
        template: { format: 'plain', installNamespace: ns, upgrade: { crdSafety: 'None' } },
      },
    } as unknown as KubeObject);
    let s = await waitOperator('1.8.4 installed', installed('1.8.4'));
    const first = s.bundleDeployment!;
    const uids1 = await ownedUids(t.client, first);
    expect(uids1.size).toBe(15);

    await setSpec({ version: '1.9.1' });
    s = await waitOperator('1.9.1 installed', installed('1.9.1'));
    const second = s.bundleDeployment!;
    expect(second).not.toBe(first);
    // the previous BundleDeployment goes only after the new one is installed, and takes nothing with it
    await waitUntil('1.8.4 BundleDeployment deleted', async () => (await bdsOfOperator()).join() === second);
    const uids2 = await ownedUids(t.client, second);
    expectSameUids(uids1, uids2);
    expect(uids2.size).toBe(15);

    await setSpec({ version: '1.9.2-broken' });
    s = await waitOperator(
      'broken build rolled back',
      (st) => st.lastFailure?.version === '1.9.2-broken' && progressing(st)?.reason === 'RolledBack' && progressing(st)?.status === 'False',
    );
    // reported upward: the BundleDeployment's own reason and message
    expect(s.lastFailure).toMatchObject({ reason: 'ApplyFailed' });
    expect(s.lastFailure!.message).toContain('rollouts-dashboard');
    expect(progressing(s)?.message).toContain('version 1.9.2-broken failed (ApplyFailed');
    expect(s.installedVersion).toBe('1.9.1');
    expect(s.bundleDeployment).toBe(second);
    // the operator deletes the failed BundleDeployment once it has reported the failure
    await waitUntil("the broken build's BundleDeployment deleted", async () => (await bdsOfOperator()).join() === second);
    const back = (await t.client.get(BD_TYPE, second)) as unknown as BundleDeployment;
    expect(cond(back, 'Installed')?.status).toBe('True');
    // what the broken build applied before its refusal carries its label until the deleted BD's
    // lineage member re-applies (its next reconcile after the deletion): wait for that, then compare
    let uids3 = new Map<string, string>();
    await waitUntil('objects labelled for 1.9.1 again', async () => (uids3 = await ownedUids(t.client, second)).size === uids2.size);
    expectSameUids(uids2, uids3);
    expect(await t.client.get(DEPLOY, 'rollouts-dashboard', ns)).toBeUndefined();

    await setSpec({ version: '1.9.2' });
    s = await waitOperator('1.9.2 installed', installed('1.9.2'));
    const fourth = s.bundleDeployment!;
    await waitUntil('1.9.1 BundleDeployment deleted', async () => (await bdsOfOperator()).join() === fourth);
    const uids4 = await ownedUids(t.client, fourth);
    expectSameUids(uids2, uids4);
    expect(uids4.has(`ConfigMap ${ns}/rollouts-fix`)).toBe(true);
  }, 600_000);

  it('hotfix: paused, a kubectl edit is kept; resumed, it is reverted', async () => {
    const bd = (await operator()).status!.bundleDeployment!;
    await setSpec({ paused: true });
    await waitOperator('paused', (s) => s.conditions?.some((c) => c.type === 'Paused' && c.status === 'True') === true);
    await waitUntil('BundleDeployment paused', async () => cond((await t.client.get(BD_TYPE, bd)) as unknown as BundleDeployment, 'Paused')?.status === 'True');
    const mark = t.log.mark();
    await kubectl(['-n', ns, 'set', 'env', 'deployment/argo-rollouts', 'HOTFIX=1']);
    await t.settled(bd, mark, 'the paused BD saw the edit and reconciled');
    expect(await env()).toMatchObject({ HOTFIX: '1' });

    const resumed = Date.now();
    await setSpec({ paused: false });
    await waitUntil('hotfix reverted', async () => !('HOTFIX' in (await env())), 30_000);
    console.log(`operator example: hotfix reverted ${Date.now() - resumed} ms after resume`);
    const s = await waitOperator('resumed', (st) => st.conditions?.some((c) => c.type === 'Paused' && c.status === 'False') === true && installed('1.9.2')(st));
    expect(s.bundleDeployment).toBe(bd);
  }, 120_000);
});
