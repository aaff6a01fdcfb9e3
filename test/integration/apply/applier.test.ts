/**
 * The Applier alone against the real API server (no controller; the last cases add the watch-fed
 * live index the controller gives it): for each call, the
 * action it reports per object and the exact requests it sends. The middle of the test pyramid
 * between collision/field-manager unit tests and the controller's end-to-end tests.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_RECREATE, Applier, type ApplyTarget } from '../../../src/apply/applier.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import { deleteOwned } from '../../../src/apply/prune.ts';
import { ManagedObjects, versionOf } from '../../../src/reconciler/routing/managed-objects.ts';
import type { DeleteOptions, KubeClient, KubeObject, TypeRef } from '../../../src/kube/types.ts';
import { isHoistError } from '../../../src/util/errors.ts';
import { kubeconfigPath } from '../../support/env.ts';
import { sleep } from '../../support/wait.ts';

const log = pino({ level: 'silent' });
const run = randomBytes(3).toString('hex');
const ns = `applier-${run}`;
let client: RestKubeClient;

const cm = (name: string, data: Record<string, string>, annotations?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  data,
});
const target = (name: string, over: Partial<ApplyTarget> = {}): ApplyTarget => ({
  name,
  lineage: name,
  revision: 1,
  protection: 'Prevent',
  installNamespace: ns,
  ...over,
});
const actions = (r: { results: Array<{ subject: string; action: string }> }) =>
  Object.fromEntries(r.results.map((x) => [x.subject.split(' ').at(-1)!, x.action]));

/** the requests `fn` sends, by verb */
async function counted<T>(fn: () => Promise<T>): Promise<[T, Record<string, number>]> {
  client.requests.reset();
  const out = await fn();
  return [out, client.requests.snapshot() as Record<string, number>];
}

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
});
afterAll(async () => {
  await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
  await client.close();
});

describe('Applier against the API server', () => {
  it('creates, then sends nothing for unchanged objects, then configures exactly the changed one', async () => {
    const applier = new Applier(client, { log });
    const objs = [cm('a', { k: '1' }), cm('b', { k: '1' }), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa' } }];
    await client.discovery.resourceFor({ apiVersion: 'v1', kind: 'ConfigMap' });

    const [first, r1] = await counted(() => applier.apply(target('app'), objs));
    expect(actions(first)).toEqual({ [`${ns}/a`]: 'created', [`${ns}/b`]: 'created', [`${ns}/sa`]: 'created' });
    // one GET per object (collision check: no watch cache here), the install namespace read and
    // created, one apply per object
    expect(r1).toEqual({ get: 4, create: 1, apply: 3 });

    const [second, r2] = await counted(() => applier.apply(target('app'), objs));
    expect(Object.values(actions(second))).toEqual(['unchanged', 'unchanged', 'unchanged']);
    // without a watch cache the live objects are read; nothing is written
    expect(r2).toEqual({ get: 3 });

    const [third, r3] = await counted(() => applier.apply(target('app'), [cm('a', { k: '2' }), objs[1]!, objs[2]!]));
    expect(actions(third)).toEqual({ [`${ns}/a`]: 'configured', [`${ns}/b`]: 'unchanged', [`${ns}/sa`]: 'unchanged' });
    // the install namespace is read once per process, not before every write
    expect(r3).toEqual({ get: 3, apply: 1 });
    expect(third.appliedDigest).toMatch(/^sha256:|^[0-9a-f]+$/);
  });

  it("refuses another lineage's object and a pre-existing one under Prevent before any write; IfNotOwned adopts", async () => {
    const applier = new Applier(client, { log });
    await client.create({ ...cm('foreign', { k: 'theirs' }), metadata: { name: 'foreign', namespace: ns } });
    const [err, r] = await counted(() =>
      applier.apply(target('other'), [cm('a', { k: 'mine' }), cm('foreign', { k: 'mine' }), cm('fresh', { k: '1' })]).catch((e: unknown) => e),
    );
    expect(isHoistError(err) && err.reason === 'ConflictingOwner' && err.terminal).toBe(true);
    expect((err as Error).message).toContain(`${ns}/a is owned by`);
    expect((err as Error).message).toContain(`${ns}/foreign`);
    expect(r).toEqual({ get: 3 });
    expect(await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'fresh', ns)).toBeUndefined();

    const [adopted, r2] = await counted(() => applier.apply(target('other', { protection: 'IfNotOwned' }), [cm('foreign', { k: 'mine' })]));
    expect(actions(adopted)).toEqual({ [`${ns}/foreign`]: 'adopted' });
    expect(r2.apply).toBe(1);
    const live = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'foreign', ns);
    expect((live as KubeObject & { data: Record<string, string> }).data).toEqual({ k: 'mine' });
  });

  it('takes over a kubectl edit and reverts it, naming the fields', async () => {
    const applier = new Applier(client, { log });
    await applier.apply(target('edits'), [cm('edited', { k: '1' })]);
    await client.patch({ apiVersion: 'v1', kind: 'ConfigMap' }, 'edited', ns, { data: { k: '1', hotfix: 'yes' } }, 'merge', { fieldManager: 'kubectl-edit' });
    const [res, r] = await counted(() => applier.apply(target('edits'), [cm('edited', { k: '1' })]));
    expect(res.results[0]).toMatchObject({ action: 'configured', reverted: [expect.stringContaining('kubectl-edit')] });
    // the object (its managedFields); the takeover patch; the apply
    expect(r).toEqual({ get: 1, patch: 1, apply: 1 });
    const live = (await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'edited', ns)) as KubeObject & { data: Record<string, string> };
    expect(live.data).toEqual({ k: '1' });
  });

  it('an immutable change fails naming the field, and with the recreate annotation deletes and re-creates', async () => {
    const applier = new Applier(client, { log });
    const immutable = (k: string, annotations?: Record<string, string>): KubeObject => ({ ...cm('frozen', { k }, annotations), immutable: true });
    await applier.apply(target('frozen'), [immutable('1')]);
    const uid = (await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'frozen', ns))?.metadata.uid;
    const err = await applier.apply(target('frozen'), [immutable('2')]).catch((e: unknown) => e);
    expect(isHoistError(err) && err.reason === 'ApplyFailed').toBe(true);
    expect((err as Error).message).toContain(ANNOTATION_RECREATE);

    const res = await applier.apply(target('frozen'), [immutable('2', { [ANNOTATION_RECREATE]: 'true' })]);
    expect(res.results[0]?.action).toBe('configured');
    const after = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'frozen', ns);
    expect(after?.metadata.uid).not.toBe(uid);
  });

  it('content server-side apply cannot type (a 500) is told from a failing server by a dry-run create (a 400): terminal', async () => {
    const applier = new Applier(client, { log });
    // YAML 1.1 reads `enabled: yes` as true; a ConfigMap's data must be strings
    const [err, r] = await counted(() =>
      applier.apply(target('typed'), [cm('typed', { enabled: true } as unknown as Record<string, string>)]).catch((e: unknown) => e),
    );
    expect(isHoistError(err) && err.terminal).toBe(true);
    expect((err as Error).message).toMatch(/failed to create typed patch object .*\.data\.enabled: expected string/);
    // the object and the install namespace read (no watch cache here), the apply, the dry-run
    // create that classified it
    expect(r).toEqual({ get: 2, apply: 1, create: 1 });
    expect(await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'typed', ns)).toBeUndefined();
  });

  describe('with the watch-fed live index (as the controller runs it)', () => {
    let index: ManagedObjects;
    /** what the index told owners: which object version each created/changed event carried */
    const told: Array<{ owner: string; version: string | undefined }> = [];
    const types = [
      { apiVersion: 'v1', kind: 'ConfigMap' },
      { apiVersion: 'v1', kind: 'ServiceAccount' },
    ];
    beforeAll(async () => {
      index = new ManagedObjects(client, (owner, _why, version) => told.push({ owner, version }), log);
      await index.watch(types);
    });
    afterAll(async () => {
      await index.stop();
    });
    /** until the watch has delivered the object with Hoist's labels */
    async function indexed(name: string, kind = 'ConfigMap'): Promise<void> {
      for (let i = 0; i < 200 && !index.get(`/${kind}/${ns}/${name}`); i++) await sleep(10);
    }

    it('creates objects no watch knows without reading them first: one apply each', async () => {
      const applier = new Applier(client, { log, live: index });
      const [res, r] = await counted(() =>
        applier.apply(target('fast'), [cm('fast-a', { k: '1' }), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'fast-sa' } }]),
      );
      expect(actions(res)).toEqual({ [`${ns}/fast-a`]: 'created', [`${ns}/fast-sa`]: 'created' });
      // (and the install namespace, read once per process)
      expect(r).toEqual({ get: 1, apply: 2 });
      // created by server-side apply: one Apply entry, so a field the bundle drops later is removed
      const live = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'fast-a', ns);
      expect(live?.metadata.managedFields?.map((e) => `${(e as { manager: string }).manager}/${(e as { operation: string }).operation}`)).toEqual([
        'hoist-fast/Apply',
      ]);
      await indexed('fast-a');
      const [dropped] = await counted(() =>
        applier.apply({ ...target('fast'), revision: 2 }, [cm('fast-a', {}), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'fast-sa' } }]),
      );
      expect(actions(dropped)[`${ns}/fast-a`]).toBe('configured');
      expect(((await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'fast-a', ns)) as KubeObject & { data?: object }).data).toBeUndefined();
    });

    it('its own creation that the watch has not delivered yet is not mistaken for an object that existed (a retried reconcile)', async () => {
      // the kind is watched and synced, and the watch lags: it has not delivered this process's write
      const lagging = { get: () => undefined, knows: () => true };
      const applier = new Applier(client, { log, live: lagging });
      const first = await applier.apply(target('lag'), [cm('lag-a', { k: '1' })]);
      expect(actions(first)).toEqual({ [`${ns}/lag-a`]: 'created' });
      const [again, r] = await counted(() => applier.apply(target('lag'), [cm('lag-a', { k: '1' })]));
      expect(actions(again)).toEqual({ [`${ns}/lag-a`]: 'unchanged' });
      // the apply without force found it; nothing handed back, nothing read
      expect(r).toEqual({ apply: 1 });
      const live = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'lag-a', ns);
      expect(live?.metadata.labels).toMatchObject({ 'core.rukpak.io/owner-name': 'lag', 'core.rukpak.io/lineage': 'lag' });
      // a change applied meanwhile is configured, still without a hand-back
      const changed = await applier.apply({ ...target('lag'), revision: 2 }, [cm('lag-a', { k: '2' })]);
      expect(actions(changed)).toEqual({ [`${ns}/lag-a`]: 'configured' });
      const after = (await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'lag-a', ns)) as KubeObject & { data: object };
      expect(after.data).toEqual({ k: '2' });
      expect(after.metadata.labels?.['core.rukpak.io/owner-name']).toBe('lag');
    });

    it('an object that existed after all is handed back unchanged, and what the call created is deleted again, under Prevent', async () => {
      const applier = new Applier(client, { log, live: index });
      // equal values: the apply without force shares them instead of conflicting
      await client.create({ ...cm('theirs-same', { k: '1' }), metadata: { name: 'theirs-same', namespace: ns, labels: { team: 'x' } } });
      await client.create({ ...cm('theirs-diff', { k: 'theirs' }), metadata: { name: 'theirs-diff', namespace: ns } });
      const before = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'theirs-same', ns);
      for (const name of ['theirs-same', 'theirs-diff']) {
        const err = await applier
          .apply(target('late'), [cm('late-new', { k: '1' }), cm(name, name === 'theirs-same' ? { k: '1' } : { k: 'mine' })])
          .catch((e: unknown) => e);
        expect(isHoistError(err) && err.reason === 'ConflictingOwner' && err.terminal, JSON.stringify(err, Object.getOwnPropertyNames(err))).toBe(true);
        expect((err as Error).message).toContain(`${ns}/${name} is owned by none`);
        // what this call created is gone again
        expect(await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'late-new', ns).then((o) => o?.metadata.deletionTimestamp ?? o)).toBeFalsy();
      }
      // undoing makes watch events that reconcile the BD again: from now on it reads first and writes nothing
      const [again, r] = await counted(() =>
        applier.apply(target('late'), [cm('late-new', { k: '1' }), cm('theirs-diff', { k: 'mine' })]).catch((e: unknown) => e),
      );
      expect(isHoistError(again) && again.reason === 'ConflictingOwner').toBe(true);
      expect(r).toEqual({ get: 2 });
      const after = (await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'theirs-same', ns)) as KubeObject & { data: object };
      expect(after.metadata.labels).toEqual(before!.metadata.labels);
      expect(after.metadata.annotations ?? {}).toEqual(before!.metadata.annotations ?? {});
      expect(after.data).toEqual({ k: '1' });
      expect(after.metadata.managedFields?.map((e) => (e as { manager: string }).manager)).not.toContain('hoist-late');
      expect(((await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'theirs-diff', ns)) as KubeObject & { data: object }).data).toEqual({ k: 'theirs' });

      // IfNotOwned adopts it as the plan would have: fields taken over, the bundle's values applied
      const [adopted] = await counted(() => applier.apply(target('late', { protection: 'IfNotOwned' }), [cm('theirs-diff', { k: 'mine' })]));
      expect(actions(adopted)).toEqual({ [`${ns}/theirs-diff`]: 'adopted' });
      expect(((await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'theirs-diff', ns)) as KubeObject & { data: object }).data).toEqual({ k: 'mine' });
    });

    it('recreate-on-immutable never deletes an object this BundleDeployment did not own: a foreign immutable ConfigMap is refused under Prevent and left as it was', async () => {
      const applier = new Applier(client, { log, live: index });
      // as a PVC would be: an immutable object someone else made, holding their data
      const theirs = await client.create({
        ...cm('frozen-theirs', { k: '1' }),
        immutable: true,
        metadata: { name: 'frozen-theirs', namespace: ns },
      } as KubeObject);
      // equal values share fields (no conflict), the added key makes the update an immutable-field refusal
      const mine = { ...cm('frozen-theirs', { k: '1', more: '2' }, { [ANNOTATION_RECREATE]: 'true' }), immutable: true } as KubeObject;
      const err = await applier.apply(target('frozen-late'), [cm('frozen-new', { k: '1' }), mine]).catch((e: unknown) => e);
      expect(isHoistError(err) && err.reason === 'ConflictingOwner', String(err)).toBe(true);
      expect((err as Error).message).toContain(`${ns}/frozen-theirs is owned by none`);
      const after = (await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'frozen-theirs', ns)) as KubeObject & { data: object };
      expect(after.metadata.uid).toBe(theirs.metadata.uid);
      expect(after.data).toEqual({ k: '1' });
      expect(after.metadata.labels ?? {}).toEqual({});
      // and what the call created is gone again
      expect(await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'frozen-new', ns).then((o) => o?.metadata.deletionTimestamp ?? o)).toBeFalsy();
    });

    it('the undo of a create deletes only the object it created: one replaced in between (another uid) is left alone', async () => {
      const applier = new Applier(client, { log, live: index });
      await client.create({ ...cm('undo-theirs', { k: 'theirs' }), metadata: { name: 'undo-theirs', namespace: ns } });
      let replacement: KubeObject | undefined;
      // someone deletes the object the apply just created and creates their own by that name, right before the undo's DELETE
      const actor = swapBeforeDelete(client, 'undo-new', async () => {
        replacement = await client.create({ ...cm('undo-new', { k: 'replacement' }), metadata: { name: 'undo-new', namespace: ns } });
      });
      const err = await applier.apply(target('undo', { actor }), [cm('undo-new', { k: '1' }), cm('undo-theirs', { k: 'mine' })]).catch((e: unknown) => e);
      expect(isHoistError(err) && err.reason === 'ConflictingOwner', String(err)).toBe(true);
      expect(replacement).toBeDefined();
      const after = (await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'undo-new', ns)) as (KubeObject & { data: object }) | undefined;
      expect(after?.metadata.deletionTimestamp).toBeUndefined();
      expect(after?.metadata.uid).toBe(replacement!.metadata.uid);
      expect(after?.data).toEqual({ k: 'replacement' });
    });

    it('prune deletes only the object this BundleDeployment wrote: one replaced since (labels copied), or between its read and its delete, is left alone', async () => {
      const applier = new Applier(client, { log, live: index });
      const owner = { name: 'pruned', lineage: 'pruned' };
      await applier.apply(target('pruned'), [cm('prune-a', { k: '1' }), cm('prune-b', { k: '1' })]);
      const stale = (name: string): KubeObject => ({ ...cm(name, { k: '1' }), metadata: { name, namespace: ns } });
      // replaced since it was applied: deleted and created again by someone else, Hoist's labels and all
      const written = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'prune-a', ns);
      await client.delete({ apiVersion: 'v1', kind: 'ConfigMap' }, 'prune-a', ns);
      const copy = await client.create({
        ...cm('prune-a', { k: 'restored' }),
        metadata: { name: 'prune-a', namespace: ns, labels: written!.metadata.labels! },
      });
      const [res] = await deleteOwned(client, owner, [stale('prune-a')], { log, writtenUid: (o) => applier.writtenUid('pruned', o) });
      expect(res).toMatchObject({ action: 'skipped', message: expect.stringContaining('replaced since') });
      expect((await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'prune-a', ns))?.metadata.uid).toBe(copy.metadata.uid);

      // replaced between prune's read (labels checked) and its DELETE
      let replacement: KubeObject | undefined;
      const actor = swapBeforeDelete(client, 'prune-b', async () => {
        replacement = await client.create({
          ...cm('prune-b', { k: 'replacement' }),
          metadata: { name: 'prune-b', namespace: ns, labels: written!.metadata.labels! },
        });
      });
      const [raced] = await deleteOwned(actor, owner, [stale('prune-b')], { log });
      expect(raced).toMatchObject({ action: 'skipped', message: expect.stringContaining('uid precondition') });
      const after = (await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'prune-b', ns)) as (KubeObject & { data: object }) | undefined;
      expect(after?.metadata.uid).toBe(replacement!.metadata.uid);
      expect(after?.data).toEqual({ k: 'replacement' });
    });

    it('health waits for the watch to deliver a write: an upgraded Deployment is never judged by its previous generation', async () => {
      await index.watch([{ apiVersion: 'apps/v1', kind: 'Deployment' }]);
      const applier = new Applier(client, { log, live: index });
      const deployment = (image: string): KubeObject =>
        ({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'obs' },
          spec: {
            replicas: 0,
            selector: { matchLabels: { app: 'obs' } },
            template: { metadata: { labels: { app: 'obs' } }, spec: { containers: [{ name: 'c', image }] } },
          },
        }) as KubeObject;
      const id = `apps/Deployment/${ns}/obs`;
      const first = await applier.apply(target('obs'), [deployment('a:1')]);
      const created = first.results[0]!;
      expect(created).toMatchObject({ action: 'created', written: { uid: expect.any(String), generation: 1 } });
      expect(await index.observedWrites([{ id, ...created.written! }], 10_000, 'obs')).toBe(true);
      expect(index.get(id)).toMatchObject({ uid: created.written!.uid, generation: 1 });
      // the write's own event carried the version the apply returned, and the owner's reconcile saw it (taken once)
      const own = versionOf(id, created.written!.resourceVersion!);
      expect(told.filter((t) => t.owner === 'obs').map((t) => t.version)).toContain(own);
      expect(index.takeSeenWrites('obs')).toEqual(new Set([own]));
      expect(index.takeSeenWrites('obs')).toBeUndefined();

      const second = await applier.apply({ ...target('obs'), revision: 2 }, [deployment('a:2')]);
      expect(second.results[0]).toMatchObject({ action: 'configured', written: { uid: created.written!.uid, generation: 2 } });
      expect(await index.observedWrites([{ id, ...second.results[0]!.written! }], 10_000)).toBe(true);
      expect(index.get(id)?.generation).toBe(2);

      // nothing written, nothing to wait for
      const third = await applier.apply({ ...target('obs'), revision: 2 }, [deployment('a:2')]);
      expect(third.results[0]).toMatchObject({ action: 'unchanged' });
      expect(third.results[0]!.written).toBeUndefined();
      // a write the watch never delivers (another object by that name) gives up after the timeout
      expect(await index.observedWrites([{ id, uid: 'not-this-object' }], 300)).toBe(false);
    });

    it('a write that finds the install namespace deleted since creates it again and is sent again', async () => {
      const gone = `${ns}-gone`;
      const applier = new Applier(client, { log, live: index });
      await applier.apply(target('gone', { installNamespace: gone }), [cm('g', { k: '1' })]);
      await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, gone, undefined);
      while (await client.get({ apiVersion: 'v1', kind: 'Namespace' }, gone)) await sleep(50);
      const [res, r] = await counted(() => applier.apply(target('gone', { installNamespace: gone, revision: 2 }), [cm('g2', { k: '1' })]));
      expect(actions(res)).toEqual({ [`${gone}/g2`]: 'created' });
      // the apply (namespace missing), the namespace read and created, the apply again
      expect(r).toEqual({ apply: 2, get: 1, create: 1 });
      await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, gone, undefined);
    });
  });
});

/**
 * `client`, except that the first DELETE of `name` is preceded by someone else replacing that
 * object: it is deleted (unconditionally, waited gone) and `replace` creates another by that name.
 */
function swapBeforeDelete(client: KubeClient, name: string, replace: () => Promise<void>): KubeClient {
  let swapped = false;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'delete') return Reflect.get(target, prop, receiver) as unknown;
      return async (type: TypeRef, n: string, namespace: string | undefined, opts?: DeleteOptions) => {
        if (n === name && !swapped) {
          swapped = true;
          await target.delete(type, n, namespace);
          while (await target.get(type, n, namespace)) await sleep(20);
          await replace();
        }
        return target.delete(type, n, namespace, opts);
      };
    },
  });
}
