/**
 * spec.healthChecks (issue 12, DESIGN §6) through the real controller: a probe on a custom
 * resource's status condition moves Healthy both ways honouring failureThreshold; a probe that
 * never passes past progressDeadline fires onFailure (Rollback keeps UIDs; Hold blocks); probes
 * are evaluated from the watches, so they cost no requests of their own.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { HealthCheck } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, isDone, startTestController } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { crdOf } from '../support/crds.ts';
import { isReconciled } from '../support/controller-log.ts';
import { cm, servePinned } from '../support/upgrade-fixtures.ts';
import { sleep } from '../support/wait.ts';

const { t, files, sent, replace } = controllerWithFiles();

/** a CRD for Widgets in a group of its own, with a status subresource (the "operator" writes status) */
const widgetCrd = (group: string): string => stringify(crdOf(group, 'Widget', { status: true }));
const widget = (group: string, name: string, size = 1) => stringify({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name }, spec: { size } });

/** plays the widget operator: writes the Ready condition into the status subresource */
async function setReady(group: string, ns: string, name: string, status: 'True' | 'False'): Promise<void> {
  // the kind appeared with the bundle's CRD: the test client's discovery may predate it
  t.client.discovery.invalidate();
  const live = await t.client.get({ apiVersion: `${group}/v1`, kind: 'Widget' }, name, ns);
  expect(live, `widget ${ns}/${name}`).toBeDefined();
  await t.client.updateStatus({
    ...live!,
    status: { conditions: [{ type: 'Ready', status, reason: status === 'True' ? 'Serving' : 'Broken', message: `set by the test (${status})` }] },
  });
}

const check = (group: string, extra: Partial<HealthCheck> = {}): HealthCheck[] => [
  { name: 'widget-ready', match: { group, kind: 'Widget' }, condition: { type: 'Ready', status: 'True' }, periodSeconds: 1, failureThreshold: 3, ...extra },
];

describe('spec.healthChecks', () => {
  it('a condition probe on a custom resource moves Healthy both ways, honouring failureThreshold, with no requests of its own', async () => {
    const bd = `probe-${t.runId}`;
    const ns = `probe-${t.runId}`;
    const group = `p${t.runId}.hoist.test`;
    const sources = await servePinned(files, `/${bd}.tgz`, { 'crd.yaml': widgetCrd(group), 'widget.yaml': widget(group, 'main') });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources, healthChecks: check(group) });

    const waiting = await t.waitFor(
      bd,
      (b) => cond(b, 'Installed')?.status === 'True' && cond(b, 'Healthy')?.reason === 'Progressing',
      'installed, widget not ready yet',
      60_000,
    );
    expect(cond(waiting, 'Healthy')!.message).toBe(`1 not ready: Widget ${ns}/main: health check widget-ready: condition Ready not reported`);
    expect(cond(waiting, 'Progressing')).toMatchObject({ status: 'True', reason: 'RollingOut' });

    await setReady(group, ns, 'main', 'True');
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'healthy once the widget is Ready', 30_000);

    // from here on the probe works from the watch alone
    const from = sent.length;
    await setReady(group, ns, 'main', 'False');
    const failed = await t.waitFor(bd, (b) => cond(b, 'Healthy')?.reason === 'Unhealthy', 'unhealthy after failureThreshold x periodSeconds', 30_000);
    const message = cond(failed, 'Healthy')!.message;
    expect(message).toMatch(
      new RegExp(
        `^1 failing: Widget ${ns}/main: health check widget-ready: condition Ready is not True \\(for \\d+s, failureThreshold 3 × periodSeconds 1\\)$`,
      ),
    );
    // tolerated for 3 × 1 s first, as the controller's clock tells (the timing itself: test/unit/health)
    expect(Number(/\(for (\d+)s,/.exec(message)![1])).toBeGreaterThanOrEqual(3);
    // an installed revision that turns unhealthy is not a failed rollout
    expect(cond(failed, 'Progressing')).toMatchObject({ status: 'False', reason: 'Succeeded' });

    await setReady(group, ns, 'main', 'True');
    await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'True', 'healthy again', 30_000);
    const widgetReads = sent.slice(from).filter((e) => e.path.includes('/widgets') && e.verb !== 'watch');
    expect(widgetReads, 'requests for widgets beyond the watch').toEqual([]);
  });

  it('a changed check takes effect without a new revision', async () => {
    const bd = `probe-change-${t.runId}`;
    const ns = `probe-change-${t.runId}`;
    const group = `c${t.runId}.hoist.test`;
    const sources = await servePinned(files, `/${bd}.tgz`, { 'crd.yaml': widgetCrd(group), 'widget.yaml': widget(group, 'main', 2) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'healthy without checks', 60_000);

    await t.patchSpec(bd, { healthChecks: [{ name: 'size', match: { kind: 'Widget' }, cel: 'self.spec.size > 2' }] });
    const waiting = await t.waitFor(bd, (b) => cond(b, 'Healthy')?.reason === 'Progressing', 'the new check applies', 30_000);
    expect(cond(waiting, 'Healthy')!.message).toContain('health check size: cel self.spec.size > 2 is false');
    expect(waiting.status?.activeRevision?.number).toBe(1);

    await t.patchSpec(bd, { healthChecks: [{ name: 'size', match: { kind: 'Widget' }, jsonPath: { path: '{.spec.size}', value: '2' } }] });
    await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'True', 'the changed check passes', 30_000);

    await t.patchSpec(bd, { healthChecks: [{ name: 'bad', match: { kind: 'Widget' }, cel: 'self.spec.((' }] });
    const bad = await t.waitFor(bd, (b) => cond(b, 'Healthy')?.reason === 'Unhealthy', 'a bad expression is reported', 30_000);
    expect(cond(bad, 'Healthy')!.message).toMatch(/^healthChecks\[bad\]: cel: /);
  });

  it('a hostile check (nested comprehensions, issue 23) is refused before any evaluation, and another BD installs meanwhile', async () => {
    const hostile = `probe-hostile-${t.runId}`;
    const group = `h${t.runId}.hoist.test`;
    const sources = await servePinned(files, `/${hostile}.tgz`, { 'crd.yaml': widgetCrd(group), 'widget.yaml': widget(group, 'main') });
    // depth 9 over ten-element lists: 10^9 steps; evaluated on every watch event it blocked the event loop 39 s
    const ten = `[${Array.from({ length: 10 }, (_, i) => i).join(',')}]`;
    let cel = 'self.spec.size > 0';
    for (let d = 9; d >= 1; d--) cel = `${ten}.all(x${d}, ${cel})`;
    await t.create(hostile, { installNamespace: hostile, format: 'plain', sources, healthChecks: [{ name: 'bomb', match: { kind: 'Widget' }, cel }] });

    const healthy = `probe-neighbour-${t.runId}`;
    const other = await servePinned(files, `/${healthy}.tgz`, { 'app.yaml': cm('app', { v: '1' }) });
    await t.create(healthy, { installNamespace: healthy, format: 'plain', sources: other });
    await t.waitFor(healthy, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'the neighbour installs and is healthy', 30_000);

    const refused = await t.waitFor(
      hostile,
      (b) => cond(b, 'Installed')?.status === 'True' && cond(b, 'Healthy')?.reason === 'Unhealthy',
      'the hostile check is refused',
      30_000,
    );
    expect(cond(refused, 'Healthy')).toMatchObject({ status: 'False' });
    expect(cond(refused, 'Healthy')!.message).toMatch(/^healthChecks\[bomb\]: cel: estimated cost .* exceeds the limit of 1000000 /);
  });

  it('a probe that never passes within progressDeadline: Rollback restores the last good revision in place, Hold blocks', async () => {
    const bd = `probe-deadline-${t.runId}`;
    const ns = `probe-deadline-${t.runId}`;
    const group = `d${t.runId}.hoist.test`;
    const v1 = await servePinned(files, `/${bd}-v1.tgz`, {
      'crd.yaml': widgetCrd(group),
      'widget.yaml': widget(group, 'main'),
      'app.yaml': cm('app', { v: '1' }),
    });
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources: v1,
      healthChecks: check(group),
      upgrade: { progressDeadline: '4s', onFailure: 'Rollback' },
    });
    await t.waitFor(bd, (b) => cond(b, 'Installed')?.status === 'True', 'installed', 60_000);
    await setReady(group, ns, 'main', 'True');
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'revision 1 healthy', 30_000);
    const uid = async (kind: string, apiVersion: string, name: string) =>
      ((await t.client.get({ apiVersion, kind }, name, ns)) as KubeObject | undefined)?.metadata.uid;
    const before = { widget: await uid('Widget', `${group}/v1`, 'main'), app: await uid('ConfigMap', 'v1', 'app') };

    // revision 2 adds a widget nobody makes Ready
    const v2 = await servePinned(files, `/${bd}-v2.tgz`, {
      'crd.yaml': widgetCrd(group),
      'widget.yaml': widget(group, 'main'),
      'new.yaml': widget(group, 'extra'),
      'app.yaml': cm('app', { v: '2' }),
    });
    await t.patchSpec(bd, { sources: v2 });
    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back after the deadline', 60_000);
    expect(cond(rolled, 'Progressing')!.message).toMatch(/not healthy within progressDeadline 4s/);
    expect(cond(rolled, 'Progressing')!.message).toContain(`Widget ${ns}/extra: health check widget-ready`);
    expect(rolled.status?.activeRevision?.number).toBe(1);
    const app = (await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app', ns)) as (KubeObject & { data?: Record<string, string> }) | undefined;
    expect(app?.data).toEqual({ v: '1' });
    expect({ widget: await uid('Widget', `${group}/v1`, 'main'), app: app?.metadata.uid }).toEqual(before);

    // Hold: the same failing revision is kept and reported Blocked
    await t.patchSpec(bd, { upgrade: { progressDeadline: '4s', onFailure: 'Hold' } });
    const failedDigest = rolled.status?.attemptedRevision?.contentDigest;
    expect(failedDigest).toBeDefined();
    const held = await t.waitFor(
      bd,
      (b) => cond(b, 'Progressing')?.reason === 'Blocked' && b.status?.activeRevision?.contentDigest === failedDigest,
      'held after the deadline',
      60_000,
    );
    expect(cond(held, 'Progressing')!.message).toMatch(/onFailure Hold keeps it/);
  });
});

describe('rollout timing', () => {
  it('a controller restart in the middle of a rollout neither resets nor shortens progressDeadline', async () => {
    const bd = `restart-${t.runId}`;
    const ns = `restart-${t.runId}`;
    const group = `r${t.runId}.hoist.test`;
    const v1 = await servePinned(files, `/${bd}-v1.tgz`, { 'crd.yaml': widgetCrd(group), 'widget.yaml': widget(group, 'main') });
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources: v1,
      healthChecks: check(group),
      upgrade: { progressDeadline: '12s', onFailure: 'Rollback' },
    });
    await t.waitFor(bd, (b) => cond(b, 'Installed')?.status === 'True', 'installed', 60_000);
    await setReady(group, ns, 'main', 'True');
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'revision 1 healthy', 30_000);

    const v2 = await servePinned(files, `/${bd}-v2.tgz`, {
      'crd.yaml': widgetCrd(group),
      'widget.yaml': widget(group, 'main'),
      'new.yaml': widget(group, 'never-ready'),
    });
    await t.patchSpec(bd, { sources: v2 });
    const rolling = await t.waitFor(
      bd,
      (b) => cond(b, 'Progressing')?.reason === 'RollingOut' && b.status?.activeRevision?.number === 2,
      'revision 2 rolling out',
      30_000,
    );
    const appliedAt = Date.parse(rolling.status!.activeRevision!.appliedAt!);

    // the controller goes away for 5 s in the middle of the rollout, and a new one takes over
    const runId = t.runId;
    await t.ctl.stop();
    expect(cond(await t.get(bd), 'Progressing')?.reason, 'stopped in the middle of the rollout').toBe('RollingOut');
    await sleep(5_000);
    const restartedAt = Date.now();
    const restarted = await startTestController({ runId });
    try {
      // not reset: the restarted controller's first look at the BD waits only for what is left of the
      // deadline counted from appliedAt (less, the later it looks), or has already rolled back
      const first = (await restarted.log.waitFor(0, (l) => l.some((r) => isReconciled(r, bd)), 'the first reconcile after the restart')).find((r) =>
        isReconciled(r, bd),
      )!;
      if (first.revision === 2) expect(first.requeueAfterMs, 'requeued for the rest of the deadline').toBeLessThanOrEqual(appliedAt + 12_000 - restartedAt);
      else expect(first.revision, 'rolled back at once').toBe(1);
      const rolled = await restarted.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back after the deadline', 60_000);
      // not shortened: the controller's own record of the rollback (second precision) is not before the deadline
      expect(Date.parse(cond(rolled, 'Progressing')!.lastTransitionTime)).toBeGreaterThanOrEqual(appliedAt + 12_000 - 1_000);
      expect(rolled.status?.activeRevision?.number).toBe(1);
    } finally {
      // hand the rest of the file its controller back
      await replace(restarted);
    }
  });
});
