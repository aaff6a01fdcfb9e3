/**
 * Apply phases that wait for readiness (issue 22), through a real controller:
 *
 * - `core.rukpak.io/apply-wave` orders objects within their phase (lower first), each wave waited
 *   like a phase, and never moves an object out of its phase (audit log order, watch timeline);
 * - a phase that never becomes ready (a Deployment no node takes) holds back the `publish` phase:
 *   its webhook configuration is never created, `status.transition` names the phase and what it
 *   waits for, and after `progressDeadline` the revision fails per `onFailure` (rolled back);
 * - registry-v1 webhook-operator: its webhook configurations and conversion CRD are created only
 *   after the operator's Deployment became Available, and no request is refused by a webhook call
 *   failure. On a control plane of its own: the bundle needs cert-manager's API (stand-in CRDs),
 *   which test/e2e/formats.test.ts expects to be absent from the shared one.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_APPLY_WAVE } from '../../api/v1alpha2/types.ts';
import { startControlPlane, type ControlPlane } from '../../src/devcluster/control-plane.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { loadRegistryV1Bundle } from '../../src/processors/registry-v1/bundle.ts';
import { renderRegistryV1Bundle } from '../../src/processors/registry-v1/render.ts';
import { auditEvents, auditOffset, auditRef, isCreate, showAudit } from '../support/audit.ts';
import { standInCertManager } from '../support/cert-manager.ts';
import { cond, isSucceeded, startTestController, type TestController } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { crdOf, untilServed } from '../support/crds.ts';
import { configMap, deleteBundleDeployment, deployment, serveBundle } from '../support/e2e-bundles.ts';
import { auditLogPath, isLocalControlPlane } from '../support/env.ts';
import { hasCondition, Timeline } from '../support/timeline.ts';
import { readTree, servePinned } from '../support/upgrade-fixtures.ts';
import { waitUntil } from '../support/wait.ts';

const REGISTRY_V1 = fileURLToPath(new URL('../../testdata/fixtures/registry-v1/', import.meta.url));
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
const VWC = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' } as const;
const MWC = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration' } as const;
const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;

/** a webhook configuration that would do no harm if it were called: a rule for a group nobody serves, failurePolicy Ignore */
function harmlessWebhook(name: string, service: string, namespace: string): KubeObject {
  return {
    ...VWC,
    metadata: { name },
    webhooks: [
      {
        name: 'never.hoist.test',
        rules: [{ apiGroups: ['never.hoist.test'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] }],
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        clientConfig: { service: { name: service, namespace, port: 443 } },
      },
    ],
  } as KubeObject;
}

const withAnnotations = (o: KubeObject, annotations: Record<string, string>): KubeObject => ({ ...o, metadata: { ...o.metadata, annotations } });

const { t, files } = controllerWithFiles();

// runs against the suite's own control plane (not HOIST_TEST_KUBECONFIG's cluster), whose audit log it reads; skipped only there
describe.runIf(isLocalControlPlane() && auditLogPath() !== '')('phases and waves (plain bundles)', () => {
  it('apply-wave: objects created in wave order within their phase, the next wave once the previous one is ready', async () => {
    const bd = `waves-${t.runId}`;
    const ns = `waves-${t.runId}`;
    // listed out of order on purpose; the ConfigMaps (configuration) precede the Deployments (deploy) whatever their waves
    const objects = [
      deployment('second'),
      withAnnotations(configMap('late', { wave: '2' }), { [ANNOTATION_APPLY_WAVE]: '2' }),
      configMap('middle', { wave: 'default' }),
      deployment('first', {}, { annotations: { [ANNOTATION_APPLY_WAVE]: '-1' } }),
      withAnnotations(configMap('one', { wave: '1' }), { [ANNOTATION_APPLY_WAVE]: '1' }),
      withAnnotations(configMap('early', { wave: '-1' }), { [ANNOTATION_APPLY_WAVE]: '-1' }),
    ];
    const tl = await Timeline.start(t.client, [CM, DEPLOY], { namespace: ns });
    try {
      const from = await auditOffset(auditLogPath());
      await t.create(bd, { installNamespace: ns, format: 'plain', sources: [await serveBundle(files, '/waves.tgz', objects)] });
      await t.waitFor(bd, isSucceeded, 'installed and healthy', 120_000);
      const w = (await auditEvents(auditLogPath(), from, (ua) => ua === `hoist/test-${t.runId}`)).filter(
        (e) => e.objectRef?.namespace === ns && isCreate(e) && ['configmaps', 'deployments'].includes(e.objectRef.resource ?? ''),
      );
      expect(w.map(auditRef), showAudit(w)).toEqual([
        'configmaps/early',
        'configmaps/middle',
        'configmaps/one',
        'configmaps/late',
        'deployments/first',
        'deployments/second',
      ]);
      // wave 0 of the deploy phase waited for wave -1 to be Available
      const available = tl.first('Deployment', 'first', (o) => hasCondition(o, 'Available'));
      const created = tl.created('Deployment', 'second');
      expect(available, 'Deployment first became Available').toBeDefined();
      expect(created, 'Deployment second created').toBeDefined();
      expect(available!.rv).toBeLessThan(created!.rv);
    } finally {
      await tl.stop();
    }
  }, 180_000);

  it('a phase that never becomes ready: the publish object is never created, the transition names the phase, progressDeadline rolls the revision back', async () => {
    const bd = `never-${t.runId}`;
    const ns = `never-${t.runId}`;
    const webhook = `hoist-never-${t.runId}`;
    const vwc = harmlessWebhook(webhook, 'stuck', ns);
    // no node matches: the pod never schedules, the Deployment never becomes Available
    const stuck = deployment('stuck', { nodeSelector: { 'hoist.test/no-such-node': 'true' } });

    // the deadline is the window in which the test sees the transition wait: short, not tight
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources: [await serveBundle(files, '/never-v1.tgz', [configMap('app', { v: '1' })])],
      upgrade: { onFailure: 'Rollback', progressDeadline: '30s' },
    });
    await t.waitFor(bd, isSucceeded, 'revision 1 installed', 90_000);

    const from = await auditOffset(auditLogPath());
    await t.patchSpec(bd, { sources: [await serveBundle(files, '/never-v2.tgz', [configMap('app', { v: '2' }), stuck, vwc])] });
    const waiting = await t.waitFor(bd, (b) => b.status?.transition?.phase === 'publish', 'revision 2 waiting in front of the publish phase', 60_000);
    expect(waiting.status?.transition).toMatchObject({ revision: 2, phase: 'publish' });
    expect(waiting.status?.transition?.waiting).toContain('stuck');
    expect(cond(waiting, 'Progressing')).toMatchObject({ status: 'True', reason: 'RollingOut' });
    expect(cond(waiting, 'Progressing')?.message).toContain('publish');
    expect(cond(waiting, 'Progressing')?.message).toContain('stuck');
    expect(await t.client.get(DEPLOY, 'stuck', ns)).toBeDefined();
    expect(await t.client.get(VWC, webhook)).toBeUndefined();

    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back after progressDeadline', 120_000);
    expect(cond(rolled, 'Progressing')).toMatchObject({ status: 'False' });
    expect(cond(rolled, 'Progressing')?.message).toContain('progressDeadline');
    expect(cond(rolled, 'Progressing')?.message).toContain('stuck');
    expect(rolled.status?.activeRevision?.number).toBe(1);
    expect(rolled.status?.attemptedRevision?.number).toBe(2);
    expect(rolled.status?.transition).toBeUndefined();
    expect(((await t.client.get(CM, 'app', ns)) as KubeObject & { data?: unknown })?.data).toEqual({ v: '1' });
    // nobody ever created the webhook configuration
    const creates = (await auditEvents(auditLogPath(), from)).filter(
      (e) => e.objectRef?.resource === 'validatingwebhookconfigurations' && e.objectRef.name === webhook && e.verb !== 'get',
    );
    expect(showAudit(creates)).toBe('');
    expect(await t.client.get(VWC, webhook)).toBeUndefined();
  }, 240_000);
});

// runs against the suite's own control plane (not HOIST_TEST_KUBECONFIG's cluster); skipped only against an external cluster
describe.runIf(isLocalControlPlane())('drift correction of an installed revision', () => {
  it('does not wait for phases: a webhook configuration deleted by hand comes back while an object of an earlier phase is not ready', async () => {
    const bd = `drift-${t.runId}`;
    const ns = `drift-${t.runId}`;
    const group = `drift-${t.runId}.hoist.test`;
    const webhook = `hoist-drift-${t.runId}`;
    const GADGET = { apiVersion: `${group}/v1`, kind: 'Gadget' };
    // a custom resource (deploy phase) whose readiness the test decides: no Ready condition (ready) at install, Ready=False later
    const objects = [
      crdOf(group, 'Gadget', { status: true }),
      { ...GADGET, metadata: { name: 'gadget' } } as KubeObject,
      harmlessWebhook(webhook, 'gadget', ns),
    ];
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [await serveBundle(files, '/drift.tgz', objects)] });
    await t.waitFor(bd, isSucceeded, 'installed', 120_000);

    const gadget = await t.client.get(GADGET, 'gadget', ns);
    await t.client.updateStatus({
      ...gadget!,
      status: {
        conditions: [{ type: 'Ready', status: 'False', reason: 'Test', message: 'made unready by the test', lastTransitionTime: new Date().toISOString() }],
      },
    });
    await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'False', 'the unready custom resource seen', 60_000);
    const before = await t.client.get(VWC, webhook);
    await t.client.delete(VWC, webhook, undefined);
    await waitUntil(
      `the webhook configuration re-created`,
      async () => {
        const now = await t.client.get(VWC, webhook);
        return !!now && now.metadata.uid !== before?.metadata.uid;
      },
      60_000,
    );
    const after = await t.get(bd);
    expect(after?.status?.activeRevision?.number).toBe(1);
    expect(after?.status?.transition).toBeUndefined();
    await deleteBundleDeployment(t.client, bd, 120_000);
  }, 240_000);
});

// runs against the suite's own control plane (not HOIST_TEST_KUBECONFIG's cluster); skipped only against an external cluster
describe.runIf(isLocalControlPlane())('registry-v1: webhooks after the Deployment that serves them', () => {
  let cp: ControlPlane;
  let own: TestController;

  beforeAll(async () => {
    cp = await startControlPlane({ auditLog: true, workloads: true });
    own = await startTestController({ kubeconfig: cp.kubeconfigPath });
    // cert-manager's API, as OLM v1's cert-manager provider needs it (nothing issues certificates:
    // no webhook is called by this install; the test writes the Issuer's and Certificate's Ready
    // status as cert-manager would, which the shipped health rules wait for)
    for (const kind of ['Issuer', 'Certificate']) {
      const crd = crdOf('cert-manager.io', kind, { status: true });
      await own.client.apply(crd, { fieldManager: 'hoist-test' });
      await untilServed(crd.metadata.name, { apiVersion: 'cert-manager.io/v1', kind }, [own.client, own.ctl.client]);
    }
  }, 300_000);
  afterAll(async () => {
    await own?.stop();
    await cp?.stop();
  });

  it('webhook-operator v0.0.5: webhook configurations and the conversion CRD created after the Deployment is Available; no request refused by a webhook', async () => {
    const name = 'webhook-operator.v0.0.5';
    const dir = join(REGISTRY_V1, name);
    const ns = `webhook-operator-${own.runId}`;
    const expected = renderRegistryV1Bundle(await loadRegistryV1Bundle(dir), { installNamespace: ns, watchNamespace: '' }).objects;
    const named = (kind: string) => expected.filter((o) => o.kind === kind).map((o) => o.metadata.name);
    const [deploymentName] = named('Deployment');
    const publish = [
      ...named('ValidatingWebhookConfiguration').map((n) => ['ValidatingWebhookConfiguration', n] as const),
      ...named('MutatingWebhookConfiguration').map((n) => ['MutatingWebhookConfiguration', n] as const),
      ...expected
        .filter((o) => o.kind === 'CustomResourceDefinition' && (o.spec as { conversion?: { strategy?: string } }).conversion?.strategy === 'Webhook')
        .map((o) => ['CustomResourceDefinition', o.metadata.name] as const),
    ];
    expect(deploymentName).toBeDefined();
    expect(publish.map(([k]) => k).sort()).toEqual(['CustomResourceDefinition', 'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']);

    const deployments = await Timeline.start(own.client, [DEPLOY], { namespace: ns });
    const clusterScoped = await Timeline.start(own.client, [VWC, MWC, CRD]);
    const certManager = standInCertManager(own.client, ns);
    try {
      const from = await auditOffset(cp.auditLogPath!);
      await own.create('webhook-operator', {
        installNamespace: ns,
        format: 'registry-v1',
        sources: await servePinned(files, '/webhook-operator.tgz', await readTree(dir)),
        config: { registryV1: { watchNamespace: '' } },
      });
      await own.waitFor('webhook-operator', isSucceeded, 'installed and healthy', 180_000);

      const available = deployments.first('Deployment', deploymentName!, (o) => hasCondition(o, 'Available'));
      expect(available, `Deployment ${deploymentName} became Available`).toBeDefined();
      for (const [kind, n] of publish) {
        const created = clusterScoped.created(kind, n);
        expect(created, `${kind} ${n} created`).toBeDefined();
        expect(created!.rv, `${kind} ${n} created after the Deployment was Available`).toBeGreaterThan(available!.rv);
      }
      // the API server's words for an admission or conversion webhook it could not call
      const refused = (await auditEvents(cp.auditLogPath!, from)).filter(
        (e) =>
          (e.responseStatus?.code ?? 0) >= 400 && /failed calling webhook|failed to call webhook|conversion webhook/i.test(e.responseStatus?.message ?? ''),
      );
      expect(refused.map((e) => `${e.verb} ${e.requestURI} -> ${e.responseStatus?.code}: ${e.responseStatus?.message}`)).toEqual([]);
    } finally {
      await certManager.stop();
      await deployments.stop();
      await clusterScoped.stop();
    }
  }, 300_000);
});
