/**
 * Drift correction that restores the bundle while leaving other controllers' fields alone (issue
 * 15), through the real controller, the real kubectl and the real API server's server-side apply:
 * - with a `spec.driftIgnore` rule naming `/spec/replicas`, the bundle's value is set on create and
 *   then belongs to whoever writes it next (a stand-in for an HPA, by SSA without force and by a
 *   merge patch, and even `kubectl patch`), while a hand edit of another field is still reverted;
 * - without a rule, the same merge patch is reverted by the drift watch (Hoist owns the field), and
 *   an SSA without force is refused by the API server with a conflict;
 * - status stays honest: a correction the API server refuses leaves `Installed=True` reason
 *   `Drifted` and `Progressing=True` `Retrying`, naming the object, until a retry lands.
 */
import { describe, expect, it } from 'vitest';
import type { DriftIgnoreRule } from '../../api/v1alpha2/types.ts';
import { isConflict } from '../../src/kube/api-error.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { configMap, kubectl, serveBundle } from '../support/e2e-bundles.ts';
import { waitUntil } from '../support/wait.ts';

const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
const EVENT = { apiVersion: 'v1', kind: 'Event' } as const;
const WEBHOOK = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' } as const;
const REPLICAS: DriftIgnoreRule = { target: { group: 'apps', kind: 'Deployment', name: 'web' }, jsonPointers: ['/spec/replicas'] };

const { t, files, cleanup } = controllerWithFiles();

function web(labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', labels: { tier: 'web', ...labels } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1', env: [{ name: 'COLOR', value: 'blue' }] }] },
      },
    },
  } as KubeObject;
}

interface Live {
  replicas: number;
  env: Record<string, string>;
  /** field managers of spec.replicas (not of a subresource) */
  replicasOwners: string[];
}

async function live(ns: string): Promise<Live> {
  const d = (await t.client.get(DEPLOY, 'web', ns))!;
  const spec = d.spec as { replicas: number; template: { spec: { containers: Array<{ env?: Array<{ name: string; value: string }> }> } } };
  const entries = (d.metadata.managedFields ?? []) as Array<{ manager: string; subresource?: string; fieldsV1?: { 'f:spec'?: Record<string, unknown> } }>;
  return {
    replicas: spec.replicas,
    env: Object.fromEntries((spec.template.spec.containers[0]!.env ?? []).map((e) => [e.name, e.value])),
    replicasOwners: entries
      .filter((e) => !e.subresource && e.fieldsV1?.['f:spec']?.['f:replicas'])
      .map((e) => e.manager)
      .sort(),
  };
}

async function events(uid: string, reason: string): Promise<string[]> {
  const list = await t.client.list(EVENT, { namespace: 'default', fieldSelector: `involvedObject.uid=${uid},reason=${reason}` });
  return list.items.map((e) => (e as unknown as { message: string }).message);
}

/** the stand-in for an HPA: server-side apply of spec.replicas alone, without force */
const ssaReplicas = (ns: string, replicas: number) =>
  t.client.apply({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: ns }, spec: { replicas } } as KubeObject, {
    fieldManager: 'hpa-stand-in',
    force: false,
  });

describe('driftIgnore', () => {
  it('sets an ignored field on create, then leaves it to another manager (SSA, merge patch, even kubectl patch) while reverting a hand edit of other fields', async () => {
    const ns = `dign-${t.runId}`;
    const name = `dign-${t.runId}`;
    cleanup(() => t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined));
    const src = await serveBundle(files, '/dign.tgz', [web(), configMap('web-config', { color: 'blue' })]);
    await t.create(name, { installNamespace: ns, format: 'plain', sources: [src], driftIgnore: [REPLICAS] });
    const bd = await t.waitFor(name, isDone, 'installed', 90_000);

    // the bundle's value on create; then Hoist owns it no more
    expect(await live(ns)).toMatchObject({ replicas: 2, replicasOwners: [] });

    // an SSA without force succeeds: nobody else owns the field
    let mark = t.log.mark();
    await ssaReplicas(ns, 5);
    await t.settled(name, mark, 'the drift watch saw the SSA and reconciled');
    expect(await live(ns)).toMatchObject({ replicas: 5, replicasOwners: ['hpa-stand-in'] });
    // a merge patch (what an HPA's scale write amounts to): kept too
    mark = t.log.mark();
    await t.client.patch(DEPLOY, 'web', ns, { spec: { replicas: 4 } }, 'merge', { fieldManager: 'hpa-stand-in' });
    await t.settled(name, mark, 'the drift watch saw the merge patch and reconciled');
    expect((await live(ns)).replicas).toBe(4);

    // kubectl patch of the ignored field and kubectl set env of another: only the env goes
    mark = t.log.mark();
    await kubectl(['-n', ns, 'patch', 'deployment/web', '--type=merge', '-p', '{"spec":{"replicas":6}}']);
    await kubectl(['-n', ns, 'set', 'env', 'deployment/web', 'HOTFIX=1']);
    await waitUntil('hotfix reverted by the drift watch', async () => !('HOTFIX' in (await live(ns)).env), 15_000);
    await t.settled(name, mark, 'both edits and the revert seen; a reconcile after them changed nothing', { changes: 3 });
    const after = await live(ns);
    expect(after).toMatchObject({ replicas: 6, env: { COLOR: 'blue' } });
    // never taken over from kubectl either: kubectl-patch still owns spec.replicas
    expect(after.replicasOwners).toEqual(['kubectl-patch']);
    const drift = (await events(bd.metadata.uid!, 'DriftCorrected')).join('\n');
    expect(drift).toContain('kubectl-set: spec.template.spec.containers[name=web].env[name=HOTFIX]');
    expect(drift).not.toContain('replicas');
    expect(cond(await t.get(name), 'Installed')).toMatchObject({ status: 'True', reason: 'Installed' });

    // kubectl-patch stays on the object holding only the ignored field: a reconcile with nothing
    // changed still reads and writes none of the objects (the Deployment's rollout to 6 replicas may
    // still move its health meanwhile: a status write and an Event are not about that)
    await t.ctl.manager.reconciler.reconcile(name);
    const before = t.ctl.client.requests.snapshot();
    await t.ctl.manager.reconciler.reconcile(name);
    const after2 = t.ctl.client.requests.snapshot();
    const delta = Object.fromEntries((['get', 'list', 'apply', 'patch', 'update', 'delete'] as const).map((v) => [v, (after2[v] ?? 0) - (before[v] ?? 0)]));
    expect(delta).toEqual({ get: 0, list: 0, apply: 0, patch: 0, update: 0, delete: 0 });
  }, 120_000);

  it("without a rule the field is Hoist's: a merge patch is reverted by the drift watch, an SSA without force is refused with a conflict", async () => {
    const ns = `dnor-${t.runId}`;
    const name = `dnor-${t.runId}`;
    cleanup(() => t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined));
    const src = await serveBundle(files, '/dnor.tgz', [web()]);
    await t.create(name, { installNamespace: ns, format: 'plain', sources: [src] });
    await t.waitFor(name, isDone, 'installed', 90_000);
    expect(await live(ns)).toMatchObject({ replicas: 2, replicasOwners: [`hoist-${name}`] });

    const refused = await ssaReplicas(ns, 5).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isConflict(refused)).toBe(true);

    const patched = Date.now();
    await t.client.patch(DEPLOY, 'web', ns, { spec: { replicas: 5 } }, 'merge', { fieldManager: 'hpa-stand-in' });
    await waitUntil('replicas restored', async () => (await live(ns)).replicas === 2, 15_000);
    console.log(`non-kubectl manager's change of a Hoist-owned field restored ${Date.now() - patched} ms after it was made`);
    expect((await live(ns)).replicasOwners).toEqual([`hoist-${name}`]);
  }, 120_000);

  it('a correction the API server refuses leaves Installed=True reason Drifted and Progressing=True Retrying naming the object, until a retry lands', async () => {
    const ns = `dhon-${t.runId}`;
    const name = `dhon-${t.runId}`;
    const guard = { 'hoist.test/guard': t.runId };
    cleanup(() => t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined));
    const src = await serveBundle(files, '/dhon.tgz', [web(guard)]);
    await t.create(name, { installNamespace: ns, format: 'plain', sources: [src] });
    await t.waitFor(name, isDone, 'installed', 90_000);

    // paused: a hotfix; then every write to the Deployment fails (a webhook nobody serves, failing closed)
    await t.patchSpec(name, { paused: true });
    await t.waitFor(name, (b) => cond(b, 'Paused')?.status === 'True', 'paused');
    await kubectl(['-n', ns, 'set', 'env', 'deployment/web', 'HOTFIX=1']);
    const hook = `hoist-test-guard-${t.runId}`;
    await t.client.create({
      ...WEBHOOK,
      metadata: { name: hook },
      webhooks: [
        {
          name: 'guard.hoist.test',
          clientConfig: { url: 'https://127.0.0.1:1/validate' },
          rules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['deployments'] }],
          objectSelector: { matchLabels: guard },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 1,
        },
      ],
    } as unknown as KubeObject);
    cleanup(() => t.client.delete(WEBHOOK, hook, undefined));

    await t.patchSpec(name, { paused: false });
    const drifted = await t.waitFor(name, (b) => cond(b, 'Paused')?.status === 'False' && cond(b, 'Installed')?.reason === 'Drifted', 'Drifted', 30_000);
    expect(cond(drifted, 'Installed')!.status).toBe('True');
    expect(cond(drifted, 'Installed')!.message).toContain(`apps/v1 Deployment ${ns}/web`);
    expect(cond(drifted, 'Progressing')).toMatchObject({ status: 'True', reason: 'Retrying' });
    expect(cond(drifted, 'Progressing')!.message).toContain(`apps/v1 Deployment ${ns}/web`);
    expect(isDone(drifted)).toBe(false);
    expect(drifted.status?.attemptedRevision).toBeUndefined();
    expect(drifted.status?.revisions?.find((r) => r.number === 1)?.phase).toBe('Active');
    expect((await live(ns)).env).toHaveProperty('HOTFIX');

    await t.client.delete(WEBHOOK, hook, undefined);
    await waitUntil('hotfix reverted once writes are allowed again', async () => !('HOTFIX' in (await live(ns)).env), 60_000);
    const done = await t.waitFor(name, (b) => isDone(b) && cond(b, 'Installed')?.reason === 'Installed', 'installed again', 30_000);
    expect(done.status?.activeRevision?.number).toBe(1);
    const reverted = (await events(done.metadata.uid!, 'DriftCorrected')).join('\n');
    expect(reverted).toContain(`apps/v1 Deployment ${ns}/web reverted (`);
    expect(reverted).toContain('kubectl-set: spec.template.spec.containers[name=web].env[name=HOTFIX]');
  }, 180_000);
});
