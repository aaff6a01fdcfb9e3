/**
 * Readiness as kstatus computes it (issue 35), through the real controller on the local control
 * plane: a custom resource that reports Stalled=True fails its revision at once (rolled back well
 * before progressDeadline, the old objects untouched); a Pod the scheduler cannot place is named in
 * Healthy as failed; a StatefulSet upgraded with a partition is healthy once the pods above the
 * partition are updated; a LoadBalancer Service without an address holds the phase after it.
 * The crash-looping container on the real node is in test/e2e/real-pods-health.test.ts.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { crdOf } from '../support/crds.ts';
import { serveBundle, uidOf, until } from '../support/e2e-bundles.ts';
import { cm, servePinned } from '../support/upgrade-fixtures.ts';

const { t, files } = controllerWithFiles();

// every revision here would wait half an hour for its deadline: what ends it early is the verdict
const upgrade = { progressDeadline: '30m' };

describe('kstatus readiness', () => {
  it('a custom resource reporting Stalled=True fails the revision at once: rolled back, the old objects untouched', async () => {
    const bd = `stalled-${t.runId}`;
    const ns = bd;
    const group = `s${t.runId}.hoist.test`;
    const crd = stringify(crdOf(group, 'Widget', { status: true }));
    const widget = (size: number) => stringify({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'main' }, spec: { size } });
    const v1 = await servePinned(files, `/${bd}-v1.tgz`, { 'crd.yaml': crd, 'widget.yaml': widget(1), 'cm.yaml': cm('settings', { v: '1' }) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: v1, upgrade });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'revision 1 installed and healthy', 90_000);
    const type = { apiVersion: `${group}/v1`, kind: 'Widget' };
    t.client.discovery.invalidate();
    // plays the widget operator: generation 1 is served
    const first = await t.client.get(type, 'main', ns);
    await t.client.updateStatus({
      ...first!,
      status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True', reason: 'Serving', message: 'serving' }] },
    });
    const cmUid = await uidOf(t.client, { apiVersion: 'v1', kind: 'ConfigMap' }, 'settings', ns);

    const v2 = await servePinned(files, `/${bd}-v2.tgz`, { 'crd.yaml': crd, 'widget.yaml': widget(2), 'cm.yaml': cm('settings', { v: '2' }) });
    await t.patchSpec(bd, { sources: v2 });
    // revision 2's widget is generation 2, not observed yet; the operator then gives up on it
    const live = await until(async () => {
      const w = await t.client.get(type, 'main', ns);
      return (w?.spec as { size?: number } | undefined)?.size === 2 ? w : undefined;
    }, 'revision 2 applied the widget');
    await t.client.updateStatus({
      ...live,
      status: {
        observedGeneration: live.metadata.generation,
        conditions: [{ type: 'Stalled', status: 'True', reason: 'InvalidSize', message: 'size 2 is not offered in this region' }],
      },
    });

    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'revision 2 rolled back for the stalled widget', 90_000);
    const message = cond(rolled, 'Progressing')!.message;
    expect(message).toContain('revision 2 failed before it was healthy');
    expect(message).toContain(`Widget ${ns}/main: size 2 is not offered in this region`);
    expect(message).not.toContain('progressDeadline');
    expect(rolled.status?.activeRevision?.number).toBe(1);
    expect(rolled.status?.attemptedRevision).toMatchObject({ number: 2, rolledBackTo: 1 });
    const settings = await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'settings', ns);
    expect(settings?.metadata.uid).toBe(cmUid);
    expect((settings as KubeObject & { data?: Record<string, string> }).data).toEqual({ v: '1' });
  }, 300_000);

  it('a Pod the scheduler cannot place is named in Healthy as failed, and the install is blocked without waiting for the deadline', async () => {
    const bd = `unschedulable-${t.runId}`;
    const ns = bd;
    const pod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'stuck' },
      spec: { nodeSelector: { 'hoist.test/no-such-node': 'true' }, containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
    } as KubeObject;
    const sources = [await serveBundle(files, `/${bd}.tgz`, [pod])];
    await t.create(bd, { installNamespace: ns, format: 'plain', sources, upgrade });
    const failed = await t.waitFor(bd, (b) => cond(b, 'Healthy')?.reason === 'Unhealthy', 'the pod is failed once its 15 s scheduling window passed', 90_000);
    expect(cond(failed, 'Healthy')!.message).toMatch(new RegExp(`^1 failing: Pod ${ns}/stuck: Pod could not be scheduled`));
    const blocked = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'Blocked', 'nothing to roll back to: blocked', 60_000);
    expect(cond(blocked, 'Progressing')!.message).toMatch(/^revision 1 failed before it was healthy: 1 failing: Pod .*; no earlier revision to roll back to$/);
  }, 300_000);

  it('a StatefulSet upgraded with a partition is healthy once the pods above the partition are updated', async () => {
    const bd = `partition-${t.runId}`;
    const ns = bd;
    const sts = (version: string, partition?: number): KubeObject =>
      ({
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'db' },
        spec: {
          replicas: 3,
          serviceName: 'db',
          selector: { matchLabels: { app: 'db' } },
          ...(partition === undefined ? {} : { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition } } }),
          template: {
            metadata: { labels: { app: 'db' }, annotations: { version } },
            spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
          },
        },
      }) as KubeObject;
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [await serveBundle(files, `/${bd}-v1.tgz`, [sts('1')])], upgrade });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'three replicas ready', 120_000);

    // stage version 2 on the highest ordinal only
    await t.patchSpec(bd, { sources: [await serveBundle(files, `/${bd}-v2.tgz`, [sts('2', 2)])] });
    const done = await t.waitFor(
      bd,
      (b) => isDone(b) && b.status?.activeRevision?.number === 2 && cond(b, 'Healthy')?.status === 'True',
      'revision 2 healthy with the partition rolled out',
      120_000,
    );
    expect(cond(done, 'Progressing')?.reason).toBe('Succeeded');
    const live = await t.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet' }, 'db', ns);
    const status = live?.status as { updatedReplicas?: number; currentRevision?: string; updateRevision?: string };
    // the staged rollout is as its user staged it: one pod updated, the revisions still differ
    expect(status.updatedReplicas).toBe(1);
    expect(status.currentRevision).not.toBe(status.updateRevision);
  }, 300_000);

  it('a LoadBalancer Service without an address holds the phase after it, as helm --wait waits for it', async () => {
    const bd = `lb-${t.runId}`;
    const ns = bd;
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'front' },
      spec: { type: 'LoadBalancer', selector: { app: 'front' }, ports: [{ port: 80 }] },
    } as KubeObject;
    const after = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'front' } } as const;
    const front = {
      ...after,
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'front' } },
        template: { metadata: { labels: { app: 'front' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } },
      },
    } as KubeObject;
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [await serveBundle(files, `/${bd}.tgz`, [service, front])], upgrade });
    const held = await t.waitFor(bd, (b) => b.status?.transition?.phase === 'deploy', 'the deploy phase waits for the Service', 60_000);
    expect(cond(held, 'Progressing')!.message).toContain(`Service ${ns}/front: no load balancer address assigned yet`);
    expect(await t.client.get(after, 'front', ns)).toBeUndefined();

    // plays the cloud provider's service controller
    const live = await t.client.get({ apiVersion: 'v1', kind: 'Service' }, 'front', ns);
    await t.client.updateStatus({ ...live!, status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } } });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'the Deployment applied once the Service has its address', 90_000);
    expect(await t.client.get(after, 'front', ns)).toBeDefined();
  }, 300_000);
});
