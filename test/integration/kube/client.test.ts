import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, KindNotServedError, isConflict } from '../../../src/kube/api-error.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { kubeconfigPath } from '../../support/env.ts';

const CM = { apiVersion: 'v1', kind: 'ConfigMap' };
const NS = { apiVersion: 'v1', kind: 'Namespace' };

describe('kube client against a real api server', () => {
  let client: RestKubeClient;
  const ns = `client-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    client = createKubeClient(loadKubeConfig(kubeconfigPath()));
    await client.create({ ...NS, metadata: { name: ns } });
  });
  afterAll(async () => {
    await client.delete(NS, ns, undefined);
    await client.close();
  });

  it('discovers core, group and aggregated kinds and caches them', async () => {
    const d = createKubeClient(loadKubeConfig(kubeconfigPath()));
    try {
      expect(await d.discovery.resourceFor({ apiVersion: 'apps/v1', kind: 'Deployment' })).toEqual({
        group: 'apps',
        version: 'v1',
        resource: 'deployments',
        kind: 'Deployment',
        namespaced: true,
        verbs: expect.arrayContaining(['list', 'watch', 'patch']),
      });
      expect(await d.discovery.resourceFor(NS)).toMatchObject({ resource: 'namespaces', namespaced: false });
      expect(await d.discovery.apiVersions()).toEqual(expect.arrayContaining(['v1', 'apps/v1', 'coordination.k8s.io/v1']));
      // listable: each group once, no subresources, only kinds that support list
      const listable = (await d.discovery.listable()).map((r) => `${r.group}/${r.resource}`);
      expect(listable).toEqual(expect.arrayContaining(['apps/deployments', '/configmaps', '/namespaces']));
      expect(listable.filter((r) => r === 'apps/deployments')).toHaveLength(1);
      expect(listable.some((r) => r.includes('/status') || r.endsWith('subjectaccessreviews') || r.endsWith('tokenreviews'))).toBe(false);
      // aggregated discovery: everything in two requests, then served from the cache
      expect(d.requests.count('discovery')).toBe(2);
      await d.discovery.resourceFor({ apiVersion: 'batch/v1', kind: 'Job' });
      expect(d.requests.count('discovery')).toBe(2);
      d.discovery.invalidate();
      await d.discovery.resourceFor({ apiVersion: 'batch/v1', kind: 'Job' });
      expect(d.requests.count('discovery')).toBe(4);
    } finally {
      await d.close();
    }
  });

  it('refreshes discovery on a miss and reports unserved kinds', async () => {
    const d = createKubeClient(loadKubeConfig(kubeconfigPath()), { missRefreshIntervalMs: 0 });
    try {
      expect(await d.discovery.resourceFor({ apiVersion: 'example.com/v1', kind: 'Nope' })).toBeUndefined();
      expect(d.requests.count('discovery')).toBe(4); // initial load + one refresh
      await expect(d.get({ apiVersion: 'example.com/v1', kind: 'Nope' }, 'x')).rejects.toBeInstanceOf(KindNotServedError);
    } finally {
      await d.close();
    }
  });

  it('creates, gets, updates, patches, lists and deletes', async () => {
    const created = await client.create({ ...CM, metadata: { name: 'a', namespace: ns }, data: { k: '1' } });
    expect(created.metadata.uid).toBeTruthy();
    const got = await client.get(CM, 'a', ns);
    expect(got?.data).toEqual({ k: '1' });
    expect(await client.get(CM, 'missing', ns)).toBeUndefined();

    const updated = await client.update({ ...got!, data: { k: '2' } });
    expect(updated.data).toEqual({ k: '2' });
    // stale resourceVersion: optimistic concurrency conflict, typed
    const stale = await client.update({ ...got!, data: { k: '3' } }).catch((e: unknown) => e);
    expect(isConflict(stale)).toBe(true);
    expect((stale as ApiError).message).toContain('the object has been modified');

    const merged = await client.patch(CM, 'a', ns, { data: { m: 'x' } }, 'merge');
    expect(merged.data).toEqual({ k: '2', m: 'x' });
    const jsoned = await client.patch(CM, 'a', ns, [{ op: 'remove', path: '/data/m' }], 'json');
    expect(jsoned.data).toEqual({ k: '2' });

    for (let i = 0; i < 5; i++) await client.create({ ...CM, metadata: { name: `p${i}`, namespace: ns, labels: { page: 'y' } } });
    const small = createKubeClient(loadKubeConfig(kubeconfigPath()), { listPageSize: 2 });
    try {
      const all = await small.list(CM, { namespace: ns, labelSelector: 'page=y' });
      expect(all.items.map((o) => o.metadata.name).sort()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
      expect(all.items[0]).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap' });
      expect(small.requests.count('list')).toBe(3);
      const one = await small.list(CM, { namespace: ns, labelSelector: 'page=y', limit: 3 });
      expect(one.items).toHaveLength(3);
      expect(one.continue).toBeTruthy();
    } finally {
      await small.close();
    }

    // preconditions: wrong uid refuses the delete, right uid deletes, a second delete says "gone"
    const wrong = await client.delete(CM, 'a', ns, { uid: '00000000-0000-0000-0000-000000000000' }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(ApiError);
    expect((wrong as ApiError).statusCode).toBe(409);
    expect(await client.delete(CM, 'a', ns, { uid: created.metadata.uid! })).toBe(true);
    expect(await client.delete(CM, 'a', ns)).toBe(false);
  });

  it('server-side applies with a field manager and reports field conflicts', async () => {
    const before = client.requests.snapshot();
    const obj: KubeObject = { ...CM, metadata: { name: 'ssa', namespace: ns }, data: { a: '1' } };
    const applied = await client.apply(obj, { fieldManager: 'hoist-test' });
    expect(applied.data).toEqual({ a: '1' });
    expect(JSON.stringify(applied.metadata.managedFields)).toContain('hoist-test');
    expect(client.requests.count('apply')).toBe((before.apply ?? 0) + 1);

    // another manager changing an owned field conflicts unless forced
    const conflict = await client.apply({ ...obj, data: { a: '2' } }, { fieldManager: 'other' }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ApiError);
    expect((conflict as ApiError).statusCode).toBe(409);
    expect((conflict as ApiError).causes.length).toBeGreaterThan(0);
    const forced = await client.apply({ ...obj, data: { a: '2' } }, { fieldManager: 'other', force: true });
    expect(forced.data).toEqual({ a: '2' });

    const dry = await client.apply({ ...obj, data: { a: '3' } }, { fieldManager: 'other', dryRun: true });
    expect(dry.data).toEqual({ a: '3' });
    expect((await client.get(CM, 'ssa', ns))?.data).toEqual({ a: '2' });
  });

  it('includes the api server message in errors', async () => {
    const bad = await client.create({ ...CM, metadata: { name: 'Not_Valid', namespace: ns } }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ApiError);
    const err = bad as ApiError;
    expect(err.statusCode).toBe(422);
    expect(err.reason).toBe('Invalid');
    expect(err.message).toContain('v1 ConfigMap');
    expect(err.message).toContain('Not_Valid');
    expect(err.causes[0]?.field).toBe('metadata.name');
  });

  it('writes status through the status subresource', async () => {
    // Namespaces have a status subresource in every cluster
    const name = `${ns}-status`;
    const created = await client.create({ ...NS, metadata: { name } });
    try {
      const withStatus = { ...created, status: { phase: 'Active', conditions: [{ type: 'Hoist', status: 'True', reason: 'Test', message: 'm' }] } };
      const before = client.requests.count('updateStatus');
      const updated = await client.updateStatus(withStatus);
      expect(client.requests.count('updateStatus')).toBe(before + 1);
      expect((updated.status as { conditions: unknown[] }).conditions).toHaveLength(1);
    } finally {
      await client.delete(NS, name, undefined);
    }
  });

  it('impersonates a user, and RBAC applies to the impersonated requests', async () => {
    const events: string[] = [];
    const off = client.onRequest((e) => events.push(`${e.verb} ${e.statusCode} ${e.impersonate ?? ''}`));
    const nobody = client.impersonate('system:serviceaccount:default:nobody');
    const denied = await nobody.get(CM, 'x', ns).catch((e: unknown) => e);
    off();
    expect(denied).toBeInstanceOf(ApiError);
    expect((denied as ApiError).statusCode).toBe(403);
    expect((denied as ApiError).message).toContain('system:serviceaccount:default:nobody');
    expect(events).toContain('get 403 system:serviceaccount:default:nobody');
  });

  it('streams watch events and stops on abort', async () => {
    const list = await client.list(CM, { namespace: ns });
    const ac = new AbortController();
    const seen: string[] = [];
    const done = (async () => {
      for await (const ev of client.watch(CM, { namespace: ns, resourceVersion: list.resourceVersion, signal: ac.signal })) {
        seen.push(`${ev.type} ${ev.object.metadata.name}`);
        if (seen.length === 2) ac.abort();
      }
    })();
    await client.create({ ...CM, metadata: { name: 'w1', namespace: ns } });
    await client.delete(CM, 'w1', ns);
    await done;
    expect(seen).toEqual(['ADDED w1', 'DELETED w1']);
  });
});
