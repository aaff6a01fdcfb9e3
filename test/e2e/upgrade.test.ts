/**
 * Upgrades in place (issue 5, DESIGN §3/§4): argo-rollouts v1.8.4 → v1.9.1 as plain manifests and
 * chart 2.40.10 → 2.41.0 through the helm processor, both served as tarballs by a real HTTP server
 * and applied by a real controller. Every object present in both revisions keeps its UID (nothing
 * is deleted and re-created, CRDs are never deleted), objects that left the bundle are pruned, and
 * a field removed upstream is removed from the live object.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { sha256, tarGz } from '../support/http-files.ts';
import { FIXTURES, isolateGroup, ownedUids, plainRolloutsTarballs, readTree } from '../support/upgrade-fixtures.ts';

/** every request the controller sent */

const { t, files, sent } = controllerWithFiles();

type Container = { name: string; args?: string[]; readinessProbe?: unknown };
async function container(ns: string, name: string): Promise<Container> {
  const d = (await t.client.get({ apiVersion: 'apps/v1', kind: 'Deployment' }, name, ns)) as unknown as {
    spec: { template: { spec: { containers: Container[] } } };
  };
  return d.spec.template.spec.containers[0]!;
}

/** deletes the controller sent while `fn` ran */
async function deletesDuring(fn: () => Promise<void>): Promise<string[]> {
  const from = sent.length;
  await fn();
  return sent
    .slice(from)
    .filter((e) => e.verb === 'delete')
    .map((e) => e.path);
}

function expectSameUids(before: Map<string, string>, after: Map<string, string>, dropped: readonly string[]): void {
  for (const [id, uid] of before) {
    if (dropped.includes(id)) expect(after.has(id), `${id} pruned`).toBe(false);
    else expect(after.get(id), `${id} keeps its uid`).toBe(uid);
  }
}

describe('upgrade in place', () => {
  it('plain argo-rollouts v1.8.4 → v1.9.1: same UIDs, the dropped object pruned, the removed readinessProbe gone', async () => {
    const id = `u${t.runId}`;
    const ns = `rollouts-up-${t.runId}`;
    // upstream drops nothing between these versions: v1 carries one extra object that v2 drops
    const { v1, v2 } = await plainRolloutsTarballs(id);
    files.set('/plain-v1.tgz', v1);
    files.set('/plain-v2.tgz', v2);
    const bd = `rollouts-up-${t.runId}`;

    // argo-rollouts v1.9.1's CRDs make hostAliases[].ip required and drop resourceClaims[].source (from the PodSpec they embed): upgrade.crdSafety Enforce refuses that, as OLM v1 would
    const upgrade = { crdSafety: 'None' as const };
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      upgrade,
      sources: [{ kind: 'http', http: { url: files.url('/plain-v1.tgz'), sha256: sha256(v1) } }],
    });
    const first = await t.waitFor(bd, isDone, 'v1.8.4 installed', 90_000);
    expect(first.status?.activeRevision).toMatchObject({ number: 1, objects: 16 });
    const before = await ownedUids(t.client, bd);
    expect(before.size).toBe(16);
    expect((await container(ns, 'argo-rollouts')).readinessProbe).toBeDefined();

    const deletes = await deletesDuring(async () => {
      await t.patchSpec(bd, { sources: [{ kind: 'http', http: { url: files.url('/plain-v2.tgz'), sha256: sha256(v2) } }] });
      const second = await t.waitFor(bd, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'v1.9.1 installed', 90_000);
      expect(cond(second, 'Installed')?.message).toBe('revision 2: 15 objects');
      expect(second.status?.revisions?.map((r) => [r.number, r.phase])).toEqual([
        [1, 'Superseded'],
        [2, 'Active'],
      ]);
    });

    const after = await ownedUids(t.client, bd);
    expectSameUids(before, after, [`ConfigMap ${ns}/argo-rollouts-legacy`]);
    expect(after.size).toBe(15);
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'argo-rollouts-legacy', ns)).toBeUndefined();
    // the only delete was the dropped ConfigMap: no CRD, no Deployment went away even for a moment
    expect(deletes).toEqual([`/api/v1/namespaces/${ns}/configmaps/argo-rollouts-legacy`]);
    // v1.9.1 removed the controller's readinessProbe and added a rule
    expect((await container(ns, 'argo-rollouts')).readinessProbe).toBeUndefined();
    const role = (await t.client.get({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' }, `argo-rollouts-${id}`)) as unknown as {
      rules: Array<{ apiGroups?: string[] }>;
    };
    expect(role.rules.some((r) => r.apiGroups?.includes('eks.amazonaws.com'))).toBe(true);
    const live = await t.client.get({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'argo-rollouts', ns);
    expect(live?.metadata.annotations?.['core.rukpak.io/revision']).toBe('2');
  });

  it('helm chart argo-rollouts 2.40.10 → 2.41.0: same UIDs, the object dropped by values pruned, the removed args gone', async () => {
    const id = `h${t.runId}`;
    const ns = `rollouts-helm-${t.runId}`;
    const chart = (v: string) => readTree(fileURLToPath(new URL(`helm/argo-rollouts-${v}`, FIXTURES)), (_p, text) => isolateGroup(text, id));
    const v1 = await tarGz(await chart('2.40.10'));
    const v2 = await tarGz(await chart('2.41.0'));
    files.set('/chart-v1.tgz', v1);
    files.set('/chart-v2.tgz', v2);
    const bd = `rollouts-helm-${t.runId}`;
    const release = `r${t.runId}`;

    // 2.40.10 with a notifications Secret and an extra controller flag; 2.41.0 with neither
    await t.create(bd, {
      installNamespace: ns,
      format: 'helm',
      sources: [{ kind: 'http', http: { url: files.url('/chart-v1.tgz'), sha256: sha256(v1) } }],
      config: { helm: { releaseName: release, values: { notifications: { secret: { create: true } }, controller: { extraArgs: ['--loglevel=debug'] } } } },
    });
    const first = await t.waitFor(bd, isDone, 'chart 2.40.10 installed', 90_000);
    expect(first.status?.activeRevision).toMatchObject({ number: 1, objects: 15 });
    const before = await ownedUids(t.client, bd);
    expect(before.size).toBe(15);
    expect(before.has(`Secret ${ns}/argo-rollouts-notification-secret`)).toBe(true);
    const deployment = `${release}-argo-rollouts`;
    expect((await container(ns, deployment)).args).toContain('--loglevel=debug');

    const deletes = await deletesDuring(async () => {
      await t.patchSpec(bd, {
        sources: [{ kind: 'http', http: { url: files.url('/chart-v2.tgz'), sha256: sha256(v2) } }],
        config: { helm: { releaseName: release, values: null } },
      });
      await t.waitFor(bd, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'chart 2.41.0 installed', 90_000);
    });

    const after = await ownedUids(t.client, bd);
    expectSameUids(before, after, [`Secret ${ns}/argo-rollouts-notification-secret`]);
    expect(after.size).toBe(14);
    expect(deletes).toEqual([`/api/v1/namespaces/${ns}/secrets/argo-rollouts-notification-secret`]);
    expect((await container(ns, deployment)).args ?? []).not.toContain('--loglevel=debug');
    const live = await t.client.get({ apiVersion: 'apps/v1', kind: 'Deployment' }, deployment, ns);
    expect(live?.metadata.labels?.['helm.sh/chart']).toBe('argo-rollouts-2.41.0');
  });
});
