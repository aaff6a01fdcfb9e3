/**
 * Failed upgrades (issue 5, DESIGN §3) through a real controller and API server: an object the
 * API server refuses, rolled back (onFailure Rollback) or held and retried with backoff (Hold); a
 * revision that does not become healthy within progressDeadline; rolling back by spec reusing the
 * stored revision without a fetch.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { RequestEvent } from '../../src/kube/request-counter.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { deployment as deploymentObject } from '../support/e2e-bundles.ts';
import { cm, servePinned } from '../support/upgrade-fixtures.ts';
import { sleep, waitUntil } from '../support/wait.ts';

const { t, files, sent } = controllerWithFiles();

const CM = { apiVersion: 'v1', kind: 'ConfigMap' };
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' };

const deployment = (name: string, podSpec: Record<string, unknown> = {}, labels: Record<string, string> = {}): string =>
  stringify(deploymentObject(name, podSpec, { labels }));
const REFUSED = deployment('no-containers', { containers: [] });

const serve = (path: string, content: Record<string, string>) => servePinned(files, path, content);

/** uid, data/spec of an object, for "back as it was" comparisons */
async function snapshot(type: { apiVersion: string; kind: string }, name: string, ns: string): Promise<{ uid: string; body: unknown }> {
  const o = (await t.client.get(type, name, ns)) as (KubeObject & { data?: unknown; spec?: unknown }) | undefined;
  expect(o, `${type.kind} ${ns}/${name} exists`).toBeDefined();
  return { uid: o!.metadata.uid!, body: o!.data ?? o!.spec };
}

function writesIn(ns: string, from: number): RequestEvent[] {
  return sent.slice(from).filter((e) => e.path.includes(`/namespaces/${ns}/`) && ['apply', 'create', 'update', 'patch', 'delete'].includes(e.verb));
}

describe('an upgrade the API server refuses', () => {
  it('Rollback: the old revision is back as it was, the failed content is not retried, the old spec reuses the stored revision', async () => {
    const bd = `rollback-${t.runId}`;
    const ns = `rollback-${t.runId}`;
    const v1 = await serve('/rb-v1.tgz', {
      'app.yaml': cm('app-config', { color: 'blue' }),
      'keep.yaml': cm('keep', { a: '1' }),
      'web.yaml': deployment('web', {}, { tier: 'one' }),
    });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: v1 });
    await t.waitFor(bd, isDone, 'revision 1 installed', 90_000);
    const before = {
      app: await snapshot(CM, 'app-config', ns),
      keep: await snapshot(CM, 'keep', ns),
      web: await snapshot(DEPLOY, 'web', ns),
    };

    // revision 2 changes two objects, adds one, and has one the API server refuses
    const v2 = await serve('/rb-v2.tgz', {
      'app.yaml': cm('app-config', { color: 'green' }),
      'keep.yaml': cm('keep', { a: '1' }),
      'added.yaml': cm('added-by-v2', { new: 'added' }),
      'web.yaml': deployment('web', { terminationGracePeriodSeconds: 7 }, { tier: 'two' }),
      'refused.yaml': REFUSED,
    });
    const mark = t.log.mark();
    await t.patchSpec(bd, { sources: v2 });
    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back', 60_000);
    expect(cond(rolled, 'Progressing')).toMatchObject({ status: 'False', reason: 'RolledBack' });
    expect(cond(rolled, 'Progressing')!.message).toContain(`apps/v1 Deployment ${ns}/no-containers`);
    expect(cond(rolled, 'Progressing')!.message).toMatch(/spec\.template\.spec\.containers: Required value/);
    expect(cond(rolled, 'Installed')).toMatchObject({ status: 'True' });
    expect(rolled.status?.attemptedRevision).toMatchObject({ number: 2, reason: 'ApplyFailed' });
    expect(rolled.status?.activeRevision?.number).toBe(1);

    // every object of revision 1 is back as it was, the object revision 2 created is pruned
    expect(await snapshot(CM, 'app-config', ns)).toEqual(before.app);
    expect(await snapshot(CM, 'keep', ns)).toEqual(before.keep);
    expect(await snapshot(DEPLOY, 'web', ns)).toEqual(before.web);
    expect((await t.client.get(DEPLOY, 'web', ns))?.metadata.labels?.tier).toBe('one');
    expect(await t.client.get(CM, 'added-by-v2', ns)).toBeUndefined();
    expect(await t.client.get(DEPLOY, 'no-containers', ns)).toBeUndefined();

    // the failed content is not retried while the spec is unchanged: from the fixed point after the
    // rollback's writes, a window of 4 s (retries back off from ms, so a retry loop shows) sees no write
    await t.settled(bd, mark, "the rollback's own writes seen, a reconcile after them changed nothing");
    const from = sent.length;
    const applies = t.ctl.client.requests.count('apply');
    files.requests = 0;
    await sleep(4000);
    expect(writesIn(ns, from).map((e) => `${e.verb} ${e.path}`)).toEqual([]);
    // this is the only BundleDeployment of this controller so far: its counter must not move either
    expect(t.ctl.client.requests.count('apply') - applies).toBe(0);
    expect(files.requests).toBe(0);
    expect((await t.get(bd))?.status?.attemptedRevision?.number).toBe(2);

    // setting the spec back to the old source reuses stored revision 1: no fetch, no new number
    files.requests = 0;
    await t.patchSpec(bd, { sources: v1 });
    const back = await t.waitFor(bd, isDone, 'back on revision 1');
    expect(cond(back, 'Progressing')?.reason).toBe('Succeeded');
    expect(back.status?.activeRevision?.number).toBe(1);
    expect(back.status?.attemptedRevision).toBeUndefined();
    expect(Math.max(...(back.status?.revisions ?? []).map((r) => r.number))).toBe(2);
    expect(files.requests).toBe(0);
    expect(await snapshot(CM, 'app-config', ns)).toEqual(before.app);
  });

  it('Hold: objects outside the failed apply stay, the error is reported, it retries with backoff', async () => {
    const bd = `hold-${t.runId}`;
    const ns = `hold-${t.runId}`;
    const v1 = await serve('/hold-v1.tgz', { 'app.yaml': cm('app-config', { color: 'blue' }), 'old.yaml': cm('old-only', { x: '1' }) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: v1, upgrade: { onFailure: 'Hold' } });
    await t.waitFor(bd, isDone, 'revision 1 installed');
    const oldOnly = await snapshot(CM, 'old-only', ns);

    const v2 = await serve('/hold-v2.tgz', { 'app.yaml': cm('app-config', { color: 'green' }), 'refused.yaml': REFUSED });
    const from = sent.length;
    await t.patchSpec(bd, { sources: v2, upgrade: { onFailure: 'Hold' } });
    const held = await t.waitFor(bd, (b) => cond(b, 'Installed')?.status === 'False', 'apply failure reported');
    expect(cond(held, 'Installed')).toMatchObject({ reason: 'ApplyFailed' });
    expect(cond(held, 'Installed')!.message).toContain(`apps/v1 Deployment ${ns}/no-containers`);
    expect(cond(held, 'Installed')!.message).toMatch(/spec\.template\.spec\.containers: Required value/);
    expect(cond(held, 'Progressing')).toMatchObject({ status: 'True', reason: 'Retrying' });
    expect(held.status?.attemptedRevision).toMatchObject({ number: 2, reason: 'ApplyFailed' });
    expect(held.status?.activeRevision?.number).toBe(1);

    const attempts = (): number => sent.slice(from).filter((e) => e.verb === 'apply' && e.path.endsWith(`/namespaces/${ns}/deployments/no-containers`)).length;
    // retried, and not given up: the attempts go on (how the delays between them grow is the rate
    // limiter's, tested on a fake clock in test/unit/kube/workqueue.test.ts)
    const queue = t.ctl.manager.controller.queue;
    await waitUntil('five apply attempts', async () => attempts() >= 5);
    const seen = attempts();
    const requeued = queue.numRequeues(bd);
    // the retries go through the controller's rate limiter (per-key backoff), not straight back
    // into the queue: its count for the BD grows with them (a watch event may add an attempt of
    // its own, so the two counts need not be equal)
    expect(requeued).toBeGreaterThan(0);
    await waitUntil('another apply attempt, requeued through the rate limiter', async () => attempts() > seen && queue.numRequeues(bd) > requeued);
    // the object that left the bundle is not pruned: revision 2 never applied completely
    expect(await snapshot(CM, 'old-only', ns)).toEqual(oldOnly);
    const still = await t.get(bd);
    expect(cond(still, 'Progressing')).toMatchObject({ status: 'True', reason: 'Retrying' });
    expect(still?.status?.activeRevision?.number).toBe(1);
  });
});

describe('progressDeadline', () => {
  // no node matches: the new ReplicaSet's pod never schedules, the Deployment never completes
  const stuck = (name: string) => deployment(name, { nodeSelector: { 'hoist.test/no-such-node': 'true' } });

  it('a revision not healthy within the deadline is rolled back to the last good one', async () => {
    const bd = `deadline-${t.runId}`;
    const ns = `deadline-${t.runId}`;
    const v1 = await serve('/dl-v1.tgz', { 'web.yaml': deployment('web'), 'app.yaml': cm('app-config', { color: 'blue' }) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: v1, upgrade: { progressDeadline: '5s' } });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'revision 1 healthy', 90_000);
    const web = await snapshot(DEPLOY, 'web', ns);

    const v2 = await serve('/dl-v2.tgz', { 'web.yaml': stuck('web'), 'app.yaml': cm('app-config', { color: 'blue' }) });
    await t.patchSpec(bd, { sources: v2 });
    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back after the deadline', 60_000);
    expect(cond(rolled, 'Progressing')!.message).toMatch(/not healthy within progressDeadline 5s/);
    expect(cond(rolled, 'Progressing')!.message).toContain('Deployment');
    expect(rolled.status?.activeRevision?.number).toBe(1);
    expect(rolled.status?.attemptedRevision?.number).toBe(2);
    expect(await snapshot(DEPLOY, 'web', ns)).toEqual(web);
    await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'True', 'healthy again on revision 1', 60_000);
  });

  it('a first install that misses the deadline is Blocked, and stays Installed', async () => {
    const bd = `deadline-first-${t.runId}`;
    const ns = `deadline-first-${t.runId}`;
    const v1 = await serve('/dl-first.tgz', { 'web.yaml': stuck('web') });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: v1, upgrade: { progressDeadline: '5s' } });
    const blocked = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'Blocked', 'blocked after the deadline', 60_000);
    expect(cond(blocked, 'Progressing')).toMatchObject({ status: 'False' });
    expect(cond(blocked, 'Progressing')!.message).toMatch(/not healthy within progressDeadline 5s/);
    expect(cond(blocked, 'Installed')).toMatchObject({ status: 'True', reason: 'Installed' });
    expect(cond(blocked, 'Healthy')?.status).toBe('False');
    expect(blocked.status?.activeRevision?.number).toBe(1);
    expect(await t.client.get(DEPLOY, 'web', ns)).toBeDefined();
  });
});
