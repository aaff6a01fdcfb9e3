/**
 * Objects Hoist keeps instead of deleting (issue 36, src/apply/retention.ts), through a real
 * controller on the test control plane (kube-controller-manager binds the claims):
 *
 * - keep-app (testdata/helm, written for this test), a chart whose PersistentVolumeClaim and state
 *   ConfigMap say `helm.sh/resource-policy: keep`, installed by Hoist and by the real helm side by
 *   side, the same steps for both: install; an upgrade that drops the claim and an ordinary
 *   ConfigMap; an upgrade that brings the claim back; uninstall (BD deleted / helm uninstall);
 *   install again. After each step the same objects are there for both, the kept ones with the
 *   same uid, the claim still bound to its volume and the ConfigMap's data as it was; what has no
 *   policy is pruned and deleted. Hoist's kept objects carry no owner label and no field manager
 *   entry of Hoist's, are listed in status.keptObjects and named in Events, and `hoist diff`
 *   says so before the upgrade.
 * - a plain bundle: `core.rukpak.io/prune: disabled` and Helm's annotation (in another spelling)
 *   keep objects that leave the bundle and at uninstall; an unannotated one goes.
 * - a rollback (a revision that missed its progressDeadline) keeps what the failed revision
 *   brought with `helm.sh/resource-policy: keep`, and deletes the rest of it.
 * - deletionPolicy Orphan: deleting the BundleDeployment leaves every object, a Namespace
 *   included, unowned; the next BundleDeployment of the lineage takes them back, and deleting it
 *   (policy Delete) removes them.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { API_VERSION, KIND, LABEL_LINEAGE, LABEL_OWNER_NAME, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { KEPT_MANAGER } from '../../src/apply/retention.ts';
import { diff } from '../../src/cli/verbs/diff.ts';
import { toolPath } from '../../src/devcluster/tools.ts';
import type { KubeObject, TypeRef } from '../../src/kube/types.ts';
import { runVerb } from '../support/cli-verb.ts';
import { cond, isDone, TEST_LABEL } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { CM, configMap, deleteBundleDeployment, deployment, kubectl, serveBundle } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { readTree, servePinned } from '../support/upgrade-fixtures.ts';
import { waitUntil } from '../support/wait.ts';

const run = promisify(execFile);
const KEEP_APP = fileURLToPath(new URL('../../testdata/helm/keep-app', import.meta.url));
const PVC = { apiVersion: 'v1', kind: 'PersistentVolumeClaim' } as const;
const PV = { apiVersion: 'v1', kind: 'PersistentVolume' } as const;
const NS = { apiVersion: 'v1', kind: 'Namespace' } as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const EVENT = { apiVersion: 'v1', kind: 'Event' } as const;
const RELEASE = 'keep';

const { t, files, cleanup } = controllerWithFiles();

/** the chart's objects in `ns` (label app.kubernetes.io/name=keep-app), by "Kind/name" */
async function chartObjects(ns: string): Promise<Map<string, KubeObject>> {
  const out = new Map<string, KubeObject>();
  for (const type of [CM, PVC]) {
    for (const o of (await t.client.list(type, { namespace: ns, labelSelector: 'app.kubernetes.io/name=keep-app' })).items)
      out.set(`${type.kind}/${o.metadata.name}`, o);
  }
  return out;
}

/** what a step leaves, for the comparison: the objects there, and for the kept ones their uid, data and claim */
const summary = (objects: Map<string, KubeObject>) =>
  [...objects.keys()].sort().map((k) => {
    const o = objects.get(k)!;
    const spec = o.spec as { volumeName?: string; resources?: unknown; accessModes?: unknown } | undefined;
    return {
      object: k,
      ...(o.kind === 'ConfigMap' ? { data: o.data } : { bound: (o.status as { phase?: string }).phase, requests: spec?.resources, modes: spec?.accessModes }),
    };
  });

/** uids of `objects`, by "Kind/name" */
const uids = (objects: Map<string, KubeObject>) => new Map([...objects].map(([k, o]) => [k, o.metadata.uid!]));

/** managers of the object itself (not a subresource) */
const managers = (o: KubeObject) =>
  ((o.metadata.managedFields ?? []) as Array<{ manager?: string; subresource?: string }>).filter((e) => !e.subresource).map((e) => e.manager);

/** a volume pre-bound to claim `keep-data` of `ns` (kube-controller-manager binds them) */
async function volumeFor(ns: string): Promise<string> {
  const name = `${ns}-data`;
  await t.client.create({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels: { [TEST_LABEL]: t.runId } },
    spec: {
      capacity: { storage: '1Mi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: '',
      persistentVolumeReclaimPolicy: 'Retain',
      hostPath: { path: `/tmp/hoist-e2e/${name}` },
      claimRef: { namespace: ns, name: `${RELEASE}-data` },
    },
  });
  cleanup(() => t.client.delete(PV, name, undefined));
  return name;
}

/** waits until the claim of `ns` is bound (kube-controller-manager) */
async function bound(ns: string): Promise<KubeObject> {
  let claim: KubeObject | undefined;
  await waitUntil(
    `claim ${ns}/${RELEASE}-data bound`,
    async () => {
      claim = await t.client.get(PVC, `${RELEASE}-data`, ns);
      return (claim?.status as { phase?: string } | undefined)?.phase === 'Bound';
    },
    60_000,
  );
  return claim!;
}

/** the real helm against the test control plane, with a private home */
async function helm(home: string, ns: string, args: string[]): Promise<string> {
  const { stdout } = await run(toolPath('helm'), [...args, '--namespace', ns, '--kubeconfig', kubeconfigPath()], {
    env: {
      PATH: process.env.PATH,
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    },
    timeout: 120_000,
  });
  return stdout;
}

/** the Events about BD uid `uid` with `reason`, waited for (Events are written without waiting) */
async function eventsOf(uid: string, reason: string, count = 1): Promise<string[]> {
  let found: string[] = [];
  await waitUntil(
    `${count} ${reason} Event(s)`,
    async () => {
      const list = await t.client.list(EVENT, { namespace: 'default', fieldSelector: `involvedObject.uid=${uid}` });
      found = list.items.filter((e) => (e as unknown as { reason: string }).reason === reason).map((e) => (e as unknown as { message: string }).message);
      return found.length >= count;
    },
    30_000,
  );
  return found;
}

/**
 * Hoist no longer owns it: no owner label or revision annotation, no entry of the lineage's field
 * manager (its fields are KEPT_MANAGER's); the lineage label stays (the lineage may take it back)
 */
function expectLetGo(o: KubeObject | undefined, lineage: string, what: string): void {
  expect(o, `${what} is there`).toBeDefined();
  expect(o!.metadata.labels?.[LABEL_OWNER_NAME], `${what}: owner label`).toBeUndefined();
  expect(o!.metadata.labels?.[LABEL_LINEAGE], `${what}: lineage label`).toBe(lineage);
  expect(o!.metadata.annotations?.['core.rukpak.io/revision'], `${what}: revision annotation`).toBeUndefined();
  expect(managers(o!), `${what}: field managers`).not.toContain(`hoist-${lineage}`);
  expect(managers(o!), `${what}: field managers`).toContain(KEPT_MANAGER);
}

describe('helm.sh/resource-policy: keep, compared with the real helm', () => {
  it('a kept claim and ConfigMap survive an upgrade that drops the claim, come back with it, survive uninstall, and are taken back by the next install — as with helm upgrade / uninstall / install', async () => {
    const nsHoist = `keep-hoist-${t.runId}`;
    const nsHelm = `keep-helm-${t.runId}`;
    const bd = `keep-${t.runId}`;
    for (const ns of [nsHoist, nsHelm]) {
      await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      cleanup(() => t.client.delete(NS, ns, undefined));
      await volumeFor(ns);
    }
    const home = await mkdtemp(join(tmpdir(), 'hoist-helm-home-'));
    cleanup(() => rm(home, { recursive: true, force: true }));
    const sources = await servePinned(files, '/keep-app.tgz', await readTree(KEEP_APP));
    const spec = (values: Record<string, unknown>): BundleDeploymentSpec => ({
      installNamespace: nsHoist,
      format: 'helm',
      sources,
      config: { helm: { releaseName: RELEASE, values } },
    });
    const set = (values: Record<string, unknown>) => Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${String(v)}`]);
    const both = async () => {
      const [hoist, real] = [await chartObjects(nsHoist), await chartObjects(nsHelm)];
      expect(summary(hoist)).toEqual(summary(real));
      return { hoist, real };
    };
    let generation = 0;
    const applied = (what: string) =>
      t.waitFor(bd, (b) => isDone(b) && cond(b, 'Progressing')?.reason === 'Succeeded' && (b.status?.observedGeneration ?? 0) >= generation, what, 120_000);

    // 1. install: claim (keep), state (keep), settings, config
    const v1 = { persistence: true, settings: true };
    const created = await t.create(bd, spec(v1));
    await applied('installed');
    await helm(home, nsHelm, ['install', RELEASE, KEEP_APP, ...set(v1)]);
    await Promise.all([bound(nsHoist), bound(nsHelm)]);
    const installed = await both();
    expect([...installed.hoist.keys()].sort()).toEqual([
      'ConfigMap/keep-config',
      'ConfigMap/keep-settings',
      'ConfigMap/keep-state',
      'PersistentVolumeClaim/keep-data',
    ]);
    const volume = (installed.hoist.get('PersistentVolumeClaim/keep-data')!.spec as { volumeName: string }).volumeName;
    expect(volume).toBe(`${nsHoist}-data`);

    // 2. an upgrade that drops the claim and settings: hoist diff says what it keeps and what it prunes
    const v2 = { persistence: false, settings: false };
    const dir = await mkdtemp(join(tmpdir(), 'hoist-keep-diff-'));
    cleanup(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'bd.yaml');
    await writeFile(file, stringify({ apiVersion: API_VERSION, kind: KIND, metadata: { name: bd, labels: { [TEST_LABEL]: t.runId } }, spec: spec(v2) }));
    const d = await runVerb(diff, ['-f', file], t.namespace);
    expect(d.code, d.stderr).toBe(1);
    expect(d.stderr).toContain(
      `v1 PersistentVolumeClaim ${nsHoist}/keep-data: kept by retention policy: left the bundle; kept: helm.sh/resource-policy: keep; left in place, no longer managed`,
    );
    expect(d.stdout).toContain(`-    ${LABEL_OWNER_NAME}: ${bd}`);
    expect(d.stderr).toMatch(/1 kept by retention policy/);
    expect(d.stderr).toMatch(/1 pruned/);
    expect((await t.client.get(PVC, 'keep-data', nsHoist))!.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bd); // a diff writes nothing

    generation = await t.patchSpec(bd, { config: spec(v2).config! });
    const upgraded = await applied('upgraded without the claim');
    await helm(home, nsHelm, ['upgrade', RELEASE, KEEP_APP, ...set(v2)]);
    const afterDrop = await both();
    expect([...afterDrop.hoist.keys()].sort()).toEqual(['ConfigMap/keep-config', 'ConfigMap/keep-state', 'PersistentVolumeClaim/keep-data']);
    for (const side of [afterDrop.hoist, afterDrop.real]) expect(side.get('PersistentVolumeClaim/keep-data')!.metadata.uid).toBeDefined();
    expect(uids(afterDrop.hoist).get('PersistentVolumeClaim/keep-data')).toBe(uids(installed.hoist).get('PersistentVolumeClaim/keep-data'));
    expect(uids(afterDrop.real).get('PersistentVolumeClaim/keep-data')).toBe(uids(installed.real).get('PersistentVolumeClaim/keep-data'));
    const keptClaim = afterDrop.hoist.get('PersistentVolumeClaim/keep-data')!;
    expectLetGo(keptClaim, bd, 'the kept claim');
    expect((keptClaim.spec as { volumeName: string }).volumeName).toBe(volume);
    expect(upgraded.status?.keptObjects).toEqual([
      { id: `${nsHoist}_keep-data__PersistentVolumeClaim`, v: 'v1', policy: 'helm.sh/resource-policy: keep', revision: 2 },
    ]);
    expect((await eventsOf(created.metadata.uid!, 'Kept'))[0]).toBe(
      `revision 2: 1 object(s) that left the bundle kept by their retention policy, left in place and no longer managed: v1 PersistentVolumeClaim ${nsHoist}/keep-data (helm.sh/resource-policy: keep)`,
    );

    // 3. the claim comes back: taken back in place (same uid, still bound to its volume), as helm adopts it
    generation = await t.patchSpec(bd, { config: spec(v1).config! });
    const back = await applied('upgraded with the claim again');
    await helm(home, nsHelm, ['upgrade', RELEASE, KEEP_APP, ...set(v1)]);
    const afterBack = await both();
    expect(uids(afterBack.hoist).get('PersistentVolumeClaim/keep-data')).toBe(uids(installed.hoist).get('PersistentVolumeClaim/keep-data'));
    expect(uids(afterBack.real).get('PersistentVolumeClaim/keep-data')).toBe(uids(installed.real).get('PersistentVolumeClaim/keep-data'));
    const taken = afterBack.hoist.get('PersistentVolumeClaim/keep-data')!;
    expect(taken.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bd);
    expect((taken.spec as { volumeName: string }).volumeName).toBe(volume);
    expect(back.status?.keptObjects).toBeUndefined();

    // 4. uninstall: the kept claim and state ConfigMap stay (data as it was), config goes; the namespace stays
    await deleteBundleDeployment(t.client, bd, 60_000);
    await helm(home, nsHelm, ['uninstall', RELEASE]);
    const afterUninstall = await both();
    expect([...afterUninstall.hoist.keys()].sort()).toEqual(['ConfigMap/keep-state', 'PersistentVolumeClaim/keep-data']);
    for (const k of afterUninstall.hoist.keys()) expect(uids(afterUninstall.hoist).get(k), k).toBe(uids(installed.hoist).get(k));
    for (const k of afterUninstall.real.keys()) expect(uids(afterUninstall.real).get(k), k).toBe(uids(installed.real).get(k));
    expect(afterUninstall.hoist.get('ConfigMap/keep-state')!.data).toEqual({ state: 'v1' });
    for (const [k, o] of afterUninstall.hoist) expectLetGo(o, bd, k);
    const [uninstalled] = await eventsOf(created.metadata.uid!, 'Kept', 2).then((m) => m.filter((x) => x.startsWith('uninstall')));
    // step 3 asked for revision 1's content again: it is revision 1 again (same content, same number)
    expect(uninstalled).toMatch(/^uninstall of revision 1: 2 object\(s\) kept by their retention policy, left in place and no longer managed: /);
    expect(uninstalled).toContain(`v1 PersistentVolumeClaim ${nsHoist}/keep-data (helm.sh/resource-policy: keep)`);
    expect(uninstalled).toContain(`v1 ConfigMap ${nsHoist}/keep-state (helm.sh/resource-policy: keep)`);

    // 5. installed again (collisionProtection Prevent, the default): the lineage takes back what it kept, as helm install adopts it
    generation = 0;
    await t.create(bd, spec(v1));
    await applied('installed again');
    await helm(home, nsHelm, ['install', RELEASE, KEEP_APP, ...set(v1)]);
    const again = await both();
    for (const k of ['ConfigMap/keep-state', 'PersistentVolumeClaim/keep-data']) {
      expect(uids(again.hoist).get(k), k).toBe(uids(installed.hoist).get(k));
      expect(uids(again.real).get(k), k).toBe(uids(installed.real).get(k));
      expect(again.hoist.get(k)!.metadata.labels?.[LABEL_OWNER_NAME], k).toBe(bd);
      // its fields are the lineage's manager's again
      expect(managers(again.hoist.get(k)!), k).toContain(`hoist-${bd}`);
      expect(managers(again.hoist.get(k)!), k).not.toContain(KEPT_MANAGER);
    }
    expect((again.hoist.get('PersistentVolumeClaim/keep-data')!.spec as { volumeName: string }).volumeName).toBe(volume);
    expect(again.hoist.get('ConfigMap/keep-state')!.data).toEqual({ state: 'v1' });
    await deleteBundleDeployment(t.client, bd, 60_000);
    await helm(home, nsHelm, ['uninstall', RELEASE]);
  }, 420_000);
});

describe('core.rukpak.io/prune: disabled and the keep annotation on a plain bundle', () => {
  it('objects that say so survive leaving the bundle and the uninstall, unowned; one that does not is pruned and deleted', async () => {
    const ns = `keep-plain-${t.runId}`;
    cleanup(() => t.client.delete(NS, ns, undefined));
    const bd = `keep-plain-${t.runId}`;
    const annotated = (name: string, annotations: Record<string, string>) => {
      const o = configMap(name, { name });
      o.metadata.annotations = annotations;
      return o;
    };
    // a Namespace of the bundle holding a kept object: it leaves with it, and stays for it
    const extra = `${ns}-extra`;
    cleanup(() => t.client.delete(NS, extra, undefined));
    const precious = {
      ...annotated('precious', { 'core.rukpak.io/prune': 'disabled' }),
      metadata: { name: 'precious', namespace: extra, annotations: { 'core.rukpak.io/prune': 'disabled' } },
    };
    const v1 = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: extra } } as KubeObject,
      precious,
      annotated('pinned', { 'core.rukpak.io/prune': 'disabled' }),
      annotated('kept', { 'helm.sh/resource-policy': ' Keep' }),
      configMap('gone', { name: 'gone' }),
      annotated('stays', { 'core.rukpak.io/prune': 'disabled' }),
      configMap('normal', { name: 'normal' }),
    ];
    const created = await t.create(bd, { installNamespace: ns, format: 'plain', sources: [await serveBundle(files, '/keep-plain-v1.tgz', v1)] });
    await t.waitFor(bd, isDone, 'installed', 90_000);
    const cms = v1.filter((o) => o.kind === 'ConfigMap' && o.metadata.name !== 'precious');
    const before = new Map(await Promise.all(cms.map(async (o) => [o.metadata.name, (await t.client.get(CM, o.metadata.name, ns))!.metadata.uid!] as const)));
    const v2 = cms.filter((o) => o.metadata.name === 'stays' || o.metadata.name === 'normal');

    const generation = await t.patchSpec(bd, { sources: [await serveBundle(files, '/keep-plain-v2.tgz', v2)] });
    const upgraded = await t.waitFor(
      bd,
      (b) => isDone(b) && (b.status?.observedGeneration ?? 0) >= generation && b.status?.activeRevision?.number === 2,
      'v2',
      90_000,
    );
    expect(await t.client.get(CM, 'gone', ns), 'an object without a policy is pruned').toBeUndefined();
    for (const name of ['pinned', 'kept']) {
      const o = await t.client.get(CM, name, ns);
      expectLetGo(o, bd, name);
      expect(o!.metadata.uid).toBe(before.get(name));
      expect(o!.data).toEqual({ name });
    }
    expectLetGo(await t.client.get(CM, 'precious', extra), bd, 'precious');
    const kept = await t.client.get(NS, extra, undefined);
    expect(kept?.metadata.deletionTimestamp, 'the namespace holding a kept object is not deleted').toBeUndefined();
    expect(upgraded.status?.keptObjects?.map((e) => [e.id, e.policy, e.revision])).toEqual([
      [`${extra}_precious__ConfigMap`, 'core.rukpak.io/prune: disabled', 2],
      [`${ns}_pinned__ConfigMap`, 'core.rukpak.io/prune: disabled', 2],
      [`${ns}_kept__ConfigMap`, 'helm.sh/resource-policy: keep', 2],
    ]);

    await deleteBundleDeployment(t.client, bd, 60_000);
    expect(await t.client.get(CM, 'normal', ns), 'an object without a policy is deleted').toBeUndefined();
    const stays = await t.client.get(CM, 'stays', ns);
    expectLetGo(stays, bd, 'stays');
    expect(stays!.metadata.uid).toBe(before.get('stays'));
    expect(await eventsOf(created.metadata.uid!, 'Kept', 2)).toContain(
      `uninstall of revision 2: 1 object(s) kept by their retention policy, left in place and no longer managed: v1 ConfigMap ${ns}/stays (core.rukpak.io/prune: disabled)`,
    );

    // another tool annotates the kept object (a field manager of its own, not an interactive one);
    // installed again, the lineage takes it back in place, leaves the tool's field, and no version
    // of it on the way lacks its content
    await kubectl(['annotate', 'configmap', 'stays', '-n', ns, 'hoist.test/touched=yes', '--field-manager', 'ops-tool']);
    const start = (await t.client.get(CM, 'stays', ns))!;
    const versions: Array<{ rv: string; data: unknown; owner?: string }> = [];
    const stop = new AbortController();
    const watching = (async () => {
      const events = t.client.watch(CM, {
        namespace: ns,
        fieldSelector: 'metadata.name=stays',
        resourceVersion: start.metadata.resourceVersion!,
        signal: stop.signal,
      });
      for await (const e of events) {
        if (e.type === 'MODIFIED')
          versions.push({ rv: e.object.metadata.resourceVersion!, data: e.object.data, owner: e.object.metadata.labels?.[LABEL_OWNER_NAME] });
      }
    })().catch(() => undefined);
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [await serveBundle(files, '/keep-plain-v2.tgz', v2)] });
    await t.waitFor(bd, isDone, 'installed again', 90_000);
    const taken = (await t.client.get(CM, 'stays', ns))!;
    await waitUntil('the watch delivered the last version', () => versions.at(-1)?.rv === taken.metadata.resourceVersion, 30_000);
    stop.abort();
    await watching;
    expect(taken.metadata.uid).toBe(before.get('stays'));
    expect(taken.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bd);
    expect(taken.metadata.annotations?.['hoist.test/touched']).toBe('yes');
    expect(versions.map((v) => v.data)).toEqual(versions.map(() => ({ name: 'stays' })));
    await deleteBundleDeployment(t.client, bd, 60_000);
  }, 240_000);
});

describe('rollback', () => {
  it('rolling back a failed revision keeps what it brought with helm.sh/resource-policy: keep and deletes the rest of it', async () => {
    const ns = `keep-rollback-${t.runId}`;
    cleanup(() => t.client.delete(NS, ns, undefined));
    const bd = `keep-rollback-${t.runId}`;
    const cache = configMap('cache', { warm: 'yes' });
    cache.metadata.annotations = { 'helm.sh/resource-policy': 'keep' };
    // never Available (no node matches): revision 2 misses its progressDeadline and is rolled back
    const stuck = deployment('stuck', { nodeSelector: { 'hoist.test/none': 'nowhere' } });
    const created = await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      upgrade: { progressDeadline: '5s' },
      sources: [await serveBundle(files, '/keep-rollback-v1.tgz', [configMap('base', { a: '1' })])],
    });
    await t.waitFor(bd, isDone, 'v1 installed', 90_000);
    await t.patchSpec(bd, { sources: [await serveBundle(files, '/keep-rollback-v2.tgz', [configMap('base', { a: '1' }), cache, stuck])] });
    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back', 120_000);
    expect(rolled.status?.activeRevision?.number).toBe(1);
    expect(await t.client.get({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'stuck', ns), 'the failed revision’s Deployment is deleted').toBeUndefined();
    const kept = await t.client.get(CM, 'cache', ns);
    expectLetGo(kept, bd, 'cache');
    expect(kept!.data).toEqual({ warm: 'yes' });
    expect(rolled.status?.keptObjects).toEqual([{ id: `${ns}_cache__ConfigMap`, v: 'v1', policy: 'helm.sh/resource-policy: keep', revision: 1 }]);
    expect(await eventsOf(created.metadata.uid!, 'Kept')).toEqual([
      `revision 1: 1 object(s) that left the bundle kept by their retention policy, left in place and no longer managed: v1 ConfigMap ${ns}/cache (helm.sh/resource-policy: keep)`,
    ]);
    await deleteBundleDeployment(t.client, bd, 60_000);
  }, 240_000);
});

describe('deletionPolicy: Orphan', () => {
  it('deleting the BundleDeployment leaves every object in place, unowned; the lineage takes them back; Delete then removes them', async () => {
    const ns = `orphan-${t.runId}`;
    cleanup(() => t.client.delete(NS, ns, undefined));
    const bd = `orphan-${t.runId}`;
    const objects: KubeObject[] = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { ...configMap('settings', { mode: 'fast' }), metadata: { name: 'settings', namespace: ns } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'token', namespace: ns }, stringData: { token: 'not-a-secret' } } as KubeObject,
    ];
    const types: Array<[TypeRef, string, string | undefined]> = [
      [NS, ns, undefined],
      [CM, 'settings', ns],
      [SECRET, 'token', ns],
    ];
    const live = () => Promise.all(types.map(([type, name, namespace]) => t.client.get(type, name, namespace)));
    const sources = [await serveBundle(files, '/orphan.tgz', objects)];
    const created = await t.create(bd, { format: 'plain', sources });
    expect(created.spec.deletionPolicy, 'the API server defaults it').toBe('Delete');
    await t.waitFor(bd, isDone, 'installed', 90_000);
    const before = (await live()).map((o) => o?.metadata.uid);
    expect(before.every(Boolean)).toBe(true);

    await t.patchSpec(bd, { deletionPolicy: 'Orphan' });
    await t.waitFor(bd, (b) => isDone(b) && b.spec.deletionPolicy === 'Orphan', 'Orphan observed');
    await deleteBundleDeployment(t.client, bd, 60_000);
    const orphaned = await live();
    expect(orphaned.map((o) => o?.metadata.uid)).toEqual(before);
    orphaned.forEach((o, i) => expectLetGo(o, bd, types[i]![1]));
    expect((orphaned[1] as KubeObject & { data: unknown }).data).toEqual({ mode: 'fast' });
    const [message] = await eventsOf(created.metadata.uid!, 'Orphaned');
    expect(message).toMatch(/^deletionPolicy Orphan: 3 object\(s\) left in place, no longer managed: /);
    expect(message).toContain(`v1 Namespace ${ns} (deletionPolicy: Orphan)`);

    // the lineage (a BD of the same name) takes them back in place; deleting it with Delete removes them
    await t.create(bd, { format: 'plain', sources });
    const back = await t.waitFor(bd, isDone, 'taken back', 90_000);
    expect(cond(back, 'Installed')?.status).toBe('True');
    const taken = await live();
    expect(taken.map((o) => o?.metadata.uid)).toEqual(before);
    for (const o of taken) expect(o!.metadata.labels?.[LABEL_OWNER_NAME]).toBe(bd);
    await deleteBundleDeployment(t.client, bd, 60_000);
    expect(await t.client.get(CM, 'settings', ns)).toBeUndefined();
    expect(await t.client.get(SECRET, 'token', ns)).toBeUndefined();
    // the namespace was deleted before the finalizer went (it is Terminating or gone)
    const gone = await t.client.get(NS, ns, undefined);
    expect(gone === undefined || gone.metadata.deletionTimestamp !== undefined, `namespace ${ns} deleted`).toBe(true);
  }, 240_000);
});
