/**
 * Content-store garbage collection through the real controller: content that no
 * BundleDeployment's current resolution needs is removed (periodically, on demand and shortly
 * after a BundleDeployment is deleted); content in use is kept; removed content is fetched again
 * when a BundleDeployment needs it after all.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { FsContentStore } from '../../src/cache/fs-content-store.ts';
import { BD_TYPE, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { sha256, tarGz } from '../support/http-files.ts';

let store: FsContentStore;

const cm = (name: string, v: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  v: "${v}"\n`;
const keys = async (): Promise<string[]> => (await store.list()).map((m) => m.key).sort();

async function serve(path: string, v: string): Promise<string> {
  const body = await tarGz({ 'cm.yaml': cm('gc-config', v) });
  files.set(path, body);
  return sha256(body);
}

const spec = (ns: string, path: string, pin: string) => ({
  installNamespace: ns,
  format: 'plain' as const,
  sources: [{ kind: 'http' as const, http: { url: files.url(path), sha256: pin } }],
});

// periodic gc every 1.5 s so the test can see it; the default is 10 minutes
const { t, files } = controllerWithFiles({ gcIntervalMs: 1500 });
beforeAll(() => {
  store = new FsContentStore({ root: t.cacheDir });
});

describe('content-store gc', () => {
  it('keeps what current resolutions need, removes what they no longer need, re-fetches on demand', async () => {
    const a1 = await serve('/a1.tgz', 'a1');
    const b1 = await serve('/b1.tgz', 'b1');
    const a2 = await serve('/a2.tgz', 'a2');
    await t.create('gc-a', spec(`gc-a-${t.runId}`, '/a1.tgz', a1));
    await t.create('gc-b', spec(`gc-b-${t.runId}`, '/b1.tgz', b1));
    await t.waitFor('gc-a', isDone, 'a installed');
    await t.waitFor('gc-b', isDone, 'b installed');
    expect(await keys()).toEqual([`sha256:${a1}`, `sha256:${b1}`].sort());

    // everything is in use: nothing goes
    expect(await t.ctl.manager.collectGarbage()).toEqual({ removed: [], evicted: [] });

    // a's new revision no longer needs a1 (its stored revision keeps a rollback possible without it)
    await t.patchSpec('gc-a', { sources: spec('', '/a2.tgz', a2).sources });
    await t.waitFor('gc-a', (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'a revision 2');
    const r = await t.ctl.manager.collectGarbage();
    // the periodic gc (every 1.5 s) may have removed it just before this call
    expect([[`sha256:${a1}`], []]).toContainEqual(r.removed);
    expect(await keys()).toEqual([`sha256:${a2}`, `sha256:${b1}`].sort());

    // content nobody asked for (e.g. left by an earlier run) goes with the periodic gc
    await store.put('sha256:' + 'f'.repeat(64), async () => {});
    await expect.poll(keys, { timeout: 10_000, interval: 200 }).toEqual([`sha256:${a2}`, `sha256:${b1}`].sort());

    // deleting b: its content goes shortly after, without waiting for the period
    await t.client.delete(BD_TYPE, 'gc-b', undefined);
    await expect.poll(keys, { timeout: 10_000, interval: 100 }).toEqual([`sha256:${a2}`]);

    // rolling a back by spec reuses its stored revision: no fetch, and a1 is not needed in the store
    files.requests = 0;
    await t.patchSpec('gc-a', { sources: spec('', '/a1.tgz', a1).sources });
    const back = await t.waitFor('gc-a', (b) => isDone(b) && b.status?.activeRevision?.number === 1, 'a back on revision 1');
    expect(back.status?.activeRevision?.number).toBe(1);
    expect(files.requests).toBe(0);
  });

  it('does nothing until every BundleDeployment has been reconciled since start', async () => {
    // a reconciler that has not heard of a BD yet does not know what it needs
    const before = t.ctl.manager.reconciler.contentInUse();
    expect(before).toBeDefined();
    t.ctl.manager.reconciler.forget('gc-a'); // as after a restart: gc-a not reconciled yet
    await t.ctl.manager.collectGarbage(); // (a periodic run may have been under way)
    const kept = await keys();
    const r = await t.ctl.manager.collectGarbage();
    expect(r.skipped).toMatch(/not every BundleDeployment/);
    expect(r.removed).toEqual([]);
    expect(await keys()).toEqual(kept);
    await t.ctl.manager.reconciler.reconcile('gc-a');
    expect(t.ctl.manager.reconciler.contentInUse()).toBeDefined();
  });
});
