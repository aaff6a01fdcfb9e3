/**
 * Cancellation through apply against the real API server: a fired signal ends the applier's
 * verbs (apply, prune, hooks) and their waits with a typed CancelledError — while what they wait
 * for has not happened, so it is the signal that ended them — and what they had written is what
 * the next call finishes. Objects are held in deletion by a finalizer this test owns; the waits'
 * deadlines run on an injected clock.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_HOOK_OF } from '../../../api/v1alpha2/types.ts';
import { ANNOTATION_RECREATE, Applier, type ApplyTarget } from '../../../src/apply/applier.ts';
import { HookRunner } from '../../../src/apply/hooks.ts';
import { deleteOwned } from '../../../src/apply/prune.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { CancelledError, isHoistError } from '../../../src/util/errors.ts';
import { kubeconfigPath } from '../../support/env.ts';

const log = pino({ level: 'silent' });
const run = randomBytes(3).toString('hex');
const ns = `cancel-${run}`;
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const HOLD = 'hoist.test/hold';
let client: RestKubeClient;

const cm = (name: string, data: Record<string, string>, annotations?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  data,
});
const frozen = (k: string): KubeObject => ({ ...cm('frozen', { k }, { [ANNOTATION_RECREATE]: 'true' }), immutable: true });
const target = (name: string): ApplyTarget => ({ name, lineage: name, revision: 1, protection: 'Prevent', installNamespace: ns });
const data = async (name: string) => (await client.get<KubeObject & { data?: Record<string, string> }>(CM, name, ns))?.data;

/** holds the object in deletion until release() */
const hold = (name: string) => client.patch(CM, name, ns, { metadata: { finalizers: [HOLD] } }, 'merge');
const release = (name: string) => client.patch(CM, name, ns, { metadata: { finalizers: null } }, 'merge');

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; !(await check()); i++) {
    if (i > 600) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const deleting = (name: string) => until(`${name} is being deleted`, async () => !!(await client.get(CM, name, ns))?.metadata.deletionTimestamp);

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});
afterAll(async () => {
  for (const name of ['frozen', 'old-hook']) await release(name).catch(() => undefined);
  await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
  await client.close();
});

describe('cancelling the applier', () => {
  it('a signal that has fired: nothing is sent, CancelledError', async () => {
    const applier = new Applier(client, { log });
    client.requests.reset();
    const err = await applier.apply(target('early'), [cm('early', { k: '1' })], { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CancelledError);
    expect(isHoistError(err) && err.code === 'cancelled' && !err.terminal).toBe(true);
    expect(client.requests.snapshot()).toEqual({});
    // the kube client's own writes take the signal: an aborted one is not sent
    await expect(
      client.apply({ ...cm('early', { k: '1' }), metadata: { name: 'early', namespace: ns } }, { fieldManager: 'test', signal: AbortSignal.abort() }),
    ).rejects.toBeDefined();
    expect(await client.get(CM, 'early', ns)).toBeUndefined();
  });

  it('between apply steps: the later steps are not applied, and the next apply finishes the revision', async () => {
    const applier = new Applier(client, { log });
    const objects = [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'steps' } }, cm('steps', { k: '1' })];
    const ac = new AbortController();
    const err = await applier
      .apply(target('steps'), objects, {
        signal: ac.signal,
        // the reconciler's gate runs between steps: the controller stops while it looks
        gate: async () => {
          ac.abort(new Error('controller stopped'));
          return { ready: true };
        },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CancelledError);
    expect(await client.get({ apiVersion: 'v1', kind: 'ServiceAccount' }, 'steps', ns)).toBeDefined();
    expect(await client.get(CM, 'steps', ns)).toBeUndefined();

    const done = await applier.apply(target('steps'), objects);
    expect(done.results.map((r) => r.action)).toEqual(['unchanged', 'created']);
    expect(done.appliedDigest).toBeDefined();
  });

  it('while a re-create waits for the delete: ends at once, and the next apply re-creates the object', async () => {
    const applier = new Applier(client, { log });
    await applier.apply(target('frozen'), [frozen('1')]);
    const uid = (await client.get(CM, 'frozen', ns))?.metadata.uid;
    await hold('frozen');

    const ac = new AbortController();
    const applying = applier.apply(target('frozen'), [frozen('2')], { signal: ac.signal }).catch((e: unknown) => e);
    await deleting('frozen');
    ac.abort(new Error('controller stopped'));
    const err = await applying;
    expect(err).toBeInstanceOf(CancelledError);
    // the wait had not ended: the object is still there, in deletion
    expect((await client.get(CM, 'frozen', ns))?.metadata.uid).toBe(uid);

    await release('frozen');
    const res = await applier.apply(target('frozen'), [frozen('2')]);
    expect(res.results[0]?.action).toMatch(/created|configured/);
    expect(await data('frozen')).toEqual({ k: '2' });
    expect((await client.get(CM, 'frozen', ns))?.metadata.uid).not.toBe(uid);
  });

  it("a re-create's wait ends at its deadline on the applier's clock", async () => {
    await new Applier(client, { log }).apply(target('frozen'), [frozen('3')]);
    await hold('frozen');
    // a clock that has passed the deadline by the wait's first look
    let calls = 0;
    const applier = new Applier(client, { log, now: () => new Date(Date.now() + (calls++ === 0 ? 0 : 61_000)) });
    const err = await applier.apply(target('frozen'), [frozen('4')]).catch((e: unknown) => e);
    expect(isHoistError(err) && !err.terminal).toBe(true);
    expect(String(err)).toContain('still exists 60s after delete for re-creation');
    expect((await client.get(CM, 'frozen', ns))?.metadata.deletionTimestamp).toBeDefined();
    await release('frozen');
  });

  it('prune: a fired signal deletes nothing and says so; the next prune deletes', async () => {
    const applier = new Applier(client, { log });
    const objects = [cm('pruned-a', { k: '1' }), cm('pruned-b', { k: '1' })];
    await applier.apply(target('pruned'), objects);
    const owner = { name: 'pruned', lineage: 'pruned' };
    const placed = objects.map((o) => ({ ...o, metadata: { ...o.metadata, namespace: ns } }));
    const err = await deleteOwned(client, owner, placed, { log, signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CancelledError);
    expect(await data('pruned-a')).toEqual({ k: '1' });
    const results = await deleteOwned(client, owner, placed, { log });
    expect(results.map((r) => r.action)).toEqual(['deleted', 'deleted']);
  });
});

describe('cancelling the hook runner', () => {
  const hook = (name: string): KubeObject => cm(name, {}, { 'core.rukpak.io/hook': 'pre-upgrade', 'helm.sh/hook': 'pre-upgrade' });
  const hookTarget = () => ({ name: 'hooked', revision: 2, installNamespace: ns, actor: client });

  it('while before-hook-creation waits for the earlier object: ends at once; the next run creates the hook', async () => {
    const runner = new HookRunner({ log, pollMs: 50 });
    await client.create({ ...hook('old-hook'), metadata: { name: 'old-hook', namespace: ns, labels: { [LABEL_HOOK_OF]: 'hooked' }, finalizers: [HOLD] } });
    const t = hookTarget();
    const ac = new AbortController();
    const running = runner.run(t, 'pre-upgrade', [hook('old-hook')], { deadline: Date.now() + 600_000, signal: ac.signal }).catch((e: unknown) => e);
    await deleting('old-hook');
    ac.abort(new Error('controller stopped'));
    expect(await running).toBeInstanceOf(CancelledError);
    expect((await client.get(CM, 'old-hook', ns))?.metadata.deletionTimestamp).toBeDefined();

    await release('old-hook');
    const r = await runner.run(t, 'pre-upgrade', [hook('old-hook')], { deadline: Date.now() + 600_000 });
    expect(r.failed).toBeUndefined();
    expect(r.runs.map((x) => x.result)).toEqual(['Succeeded']);
    expect((await client.get(CM, 'old-hook', ns))?.metadata.deletionTimestamp).toBeUndefined();
  });

  it('while it waits for a hook Pod to complete: ends at once, the run reported as started', async () => {
    // kwok runs pods not owned by a Job forever: this one never completes
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'waits', annotations: { 'core.rukpak.io/hook': 'post-upgrade', 'helm.sh/hook': 'post-upgrade' } },
      spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] },
    } as KubeObject;
    const runner = new HookRunner({ log });
    const ac = new AbortController();
    const runs: string[] = [];
    const err = await runner
      .run(hookTarget(), 'post-upgrade', [pod], {
        deadline: Date.now() + 600_000,
        signal: ac.signal,
        onRun: (x) => {
          runs.push(x.result);
          if (x.result === 'Running') ac.abort(new Error('controller stopped'));
        },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CancelledError);
    // the transition keeps the run as Running: the next reconcile runs the hook again (before-hook-creation)
    expect(runs).toEqual(['Running']);
    expect(await client.get({ apiVersion: 'v1', kind: 'Pod' }, 'waits', ns)).toBeDefined();
  });
});
