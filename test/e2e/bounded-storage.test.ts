/**
 * Bounded storage and status writes (issue 23) through a real controller and API server: a
 * revision whose stored form is over the cap (--max-revision-size) is refused before anything is
 * written, the installed revision untouched; failed revisions are pruned from the revision store
 * by revisionHistoryLimit like successful ones; a BundleDeployment whose status changes on every
 * event — another party flips a label of its managed object as fast as it can, which moves the
 * applied fingerprint (activeRevision.appliedDigest) and a health check's input — writes its
 * status at most once a second, sustained, and what holds at the end is still written.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { LABEL_REVISION, LABEL_REVISION_OF } from '../../src/revisions/revision-store.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { MIN_STATUS_WRITE_INTERVAL_MS } from '../../src/reconciler/status-writes.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { cm, servePinned } from '../support/upgrade-fixtures.ts';

/** small enough that one ConfigMap of random data goes over it */
const CAP = 64 * 1024;

const { t, files, sent } = controllerWithFiles({ maxRevisionBytes: CAP });

const CM = { apiVersion: 'v1', kind: 'ConfigMap' };
const serve = (path: string, content: Record<string, string>) => servePinned(files, path, content);

/** the revision Secrets of BD `bd` in the controller's namespace */
async function revisionSecrets(bd: string): Promise<KubeObject[]> {
  const res = await t.client.list({ apiVersion: 'v1', kind: 'Secret' }, { namespace: t.namespace, labelSelector: `${LABEL_REVISION_OF}=${bd}` });
  return res.items;
}

async function storedNumbers(bd: string): Promise<number[]> {
  const numbers = new Set((await revisionSecrets(bd)).map((s) => Number(s.metadata.labels?.[LABEL_REVISION])));
  return [...numbers].sort((a, b) => a - b);
}

/** a Deployment the API server refuses (no containers): its apply fails terminally */
const refused = (name: string): string =>
  stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [] } } },
  });

describe('a revision over --max-revision-size', () => {
  it('is refused before anything is stored or applied: Unpacked=False naming the limit and the size, Progressing Blocked, the installed revision untouched', async () => {
    const bd = `cap-${t.runId}`;
    const ns = `cap-${t.runId}`;
    const v1 = await serve('/cap-v1.tgz', { 'app.yaml': cm('app-config', { color: 'blue' }) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: v1 });
    await t.waitFor(bd, isDone, 'revision 1 installed', 90_000);
    const before = await revisionSecrets(bd);
    expect(await storedNumbers(bd)).toEqual([1]);

    // random data does not compress: 200 KiB of it is far over a 64 KiB cap
    const big = randomBytes(200 * 1024).toString('base64');
    const v2 = await serve('/cap-v2.tgz', { 'app.yaml': cm('app-config', { color: 'green' }), 'big.yaml': cm('big', { blob: big }) });
    await t.patchSpec(bd, { sources: v2 });
    const blocked = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'Blocked', 'refused as too large');

    expect(cond(blocked, 'Unpacked')).toMatchObject({ status: 'False', reason: 'ProcessFailed' });
    const message = cond(blocked, 'Unpacked')!.message;
    expect(message).toMatch(
      /the rendered objects \(\d+ characters of JSON\) compress to more than 65536 bytes, over the limit of 64 KiB per revision \(hoist run --max-revision-size\)/,
    );
    const size = Number(/\((\d+) characters of JSON\)/.exec(message)![1]);
    expect(size).toBeGreaterThan(CAP);
    expect(cond(blocked, 'Progressing')).toMatchObject({ status: 'False', reason: 'Blocked' });
    expect(cond(blocked, 'Installed')).toMatchObject({ status: 'True', reason: 'Installed' });
    expect(blocked.status?.activeRevision?.number).toBe(1);
    expect(blocked.status?.attemptedRevision).toBeUndefined();

    // nothing was written: the revision Secrets are revision 1's, the objects are revision 1's
    expect((await revisionSecrets(bd)).map((s) => s.metadata.uid).sort()).toEqual(before.map((s) => s.metadata.uid).sort());
    expect(await t.client.get(CM, 'big', ns)).toBeUndefined();
    const app = (await t.client.get(CM, 'app-config', ns)) as (KubeObject & { data?: Record<string, string> }) | undefined;
    expect(app?.data).toEqual({ color: 'blue' });

    // a spec under the cap goes on as usual, numbered after revision 1
    const v3 = await serve('/cap-v3.tgz', { 'app.yaml': cm('app-config', { color: 'green' }) });
    await t.patchSpec(bd, { sources: v3 });
    const done = await t.waitFor(bd, isDone, 'revision 2 installed');
    expect(done.status?.activeRevision?.number).toBe(2);
    expect(cond(done, 'Unpacked')?.status).toBe('True');
  });
});

describe('failed revisions', () => {
  it('are pruned from the revision store by revisionHistoryLimit like successful ones', async () => {
    const bd = `failing-${t.runId}`;
    const ns = `failing-${t.runId}`;
    const v1 = await serve('/failing-v1.tgz', { 'app.yaml': cm('app-config', { color: 'blue' }) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: v1, revisionHistoryLimit: 1 });
    await t.waitFor(bd, isDone, 'revision 1 installed', 90_000);

    // four spec edits, each refused by the API server and rolled back to revision 1
    for (let i = 2; i <= 5; i++) {
      const v = await serve(`/failing-v${i}.tgz`, { 'app.yaml': cm('app-config', { color: 'blue' }), 'refused.yaml': refused(`no-containers-${i}`) });
      await t.patchSpec(bd, { sources: v, revisionHistoryLimit: 1 });
      const rolled = await t.waitFor(
        bd,
        (b) => cond(b, 'Progressing')?.reason === 'RolledBack' && b.status?.attemptedRevision?.number === i,
        `revision ${i} rolled back`,
      );
      expect(rolled.status?.activeRevision?.number).toBe(1);
    }

    // the active revision plus the one newest other (limit 1): revisions 2..4 are gone, in status and in the store
    expect(await storedNumbers(bd)).toEqual([1, 5]);
    const last = await t.get(bd);
    expect(last?.status?.revisions?.map((r) => `${r.number}:${r.phase}`)).toEqual(['1:Active', '5:Failed']);
  });
});

describe('status writes per BundleDeployment', () => {
  it('a status that changes on every event is written at most once a second, sustained, and ends at the last verdict', async () => {
    const bd = `flap-${t.runId}`;
    const ns = `flap-${t.runId}`;
    const sources = await serve(`/${bd}.tgz`, { 'app.yaml': cm('flag', { a: '1' }) });
    // the label is not in the bundle: flipping it is no drift, only the check's verdict changes
    const healthChecks = [
      {
        name: 'flag-on',
        match: { kind: 'ConfigMap', name: 'flag' },
        cel: "has(self.metadata.labels) && has(self.metadata.labels.flip) && self.metadata.labels.flip == 'on'",
      },
    ];
    await t.create(bd, { installNamespace: ns, format: 'plain', sources, healthChecks });
    await t.waitFor(bd, (b) => cond(b, 'Installed')?.status === 'True' && cond(b, 'Healthy')?.status !== 'True', 'installed, check failing', 90_000);
    await t.client.patch(CM, 'flag', ns, { metadata: { labels: { flip: 'on' } } }, 'merge');
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'healthy once the label is on');
    await t.idle({ quietMs: 300 });

    const statusWrites = () => sent.filter((e) => e.verb === 'updateStatus' && e.path.endsWith(`/${bd}/status`));
    const before = statusWrites().length;
    const started = Date.now();
    // 60 flips, each awaited: every one is a watch event that changes Healthy
    for (let i = 0; i < 60; i++) await t.client.patch(CM, 'flag', ns, { metadata: { labels: { flip: i % 2 === 0 ? 'off' : 'on' } } }, 'merge');
    // the last flip set it on: that verdict is written, however the writes were spaced
    await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'True', 'the last verdict written');
    await t.idle({ quietMs: 2 * MIN_STATUS_WRITE_INTERVAL_MS });
    const elapsed = Date.now() - started;
    const writes = statusWrites().slice(before);
    // a rate, not a duration: however long the flips took, no more than one write per interval
    // started, plus the one the first flip may write at once
    expect(writes.length).toBeLessThanOrEqual(Math.ceil(elapsed / MIN_STATUS_WRITE_INTERVAL_MS) + 1);
    expect(cond(await t.get(bd), 'Healthy')?.status).toBe('True');
  });
});
