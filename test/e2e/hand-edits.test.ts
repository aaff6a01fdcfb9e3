/**
 * Hand edits reverted (issue 15) through the real controller and the real kubectl: fields that
 * kubectl's interactive field managers (set, label, edit, patch...) own are taken over by Hoist
 * before each apply, so the apply removes what the bundle does not contain — on resume (with an
 * Event naming the object and fields) and by the drift watch — while a field another controller
 * owns (a stand-in for an HPA writing spec.replicas) is left alone.
 */
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/kube/types.ts';
import { configMap, kubectl, serveBundle } from '../support/e2e-bundles.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { waitUntil } from '../support/wait.ts';

const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
const EVENT = { apiVersion: 'v1', kind: 'Event' } as const;

const { t, files, cleanup } = controllerWithFiles();

/** a Deployment that sets no replicas: an autoscaler may own them */
function web(): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', labels: { tier: 'web' } },
    spec: {
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1', env: [{ name: 'COLOR', value: 'blue' }] }] },
      },
    },
  } as KubeObject;
}

interface Live {
  env: Record<string, string>;
  labels: Record<string, string>;
  replicas?: number;
}

async function live(ns: string): Promise<Live> {
  const d = await t.client.get(DEPLOY, 'web', ns);
  const spec = d!.spec as { replicas?: number; template: { spec: { containers: Array<{ env?: Array<{ name: string; value: string }> }> } } };
  return {
    env: Object.fromEntries((spec.template.spec.containers[0]!.env ?? []).map((e) => [e.name, e.value])),
    labels: d!.metadata.labels ?? {},
    replicas: spec.replicas,
  };
}

async function driftEvents(uid: string, since: string): Promise<string[]> {
  const list = await t.client.list(EVENT, { namespace: 'default', fieldSelector: `involvedObject.uid=${uid}` });
  return list.items
    .map((e) => e as unknown as { reason: string; message: string; lastTimestamp: string })
    .filter((e) => e.reason === 'DriftCorrected' && e.lastTimestamp >= since.slice(0, 19))
    .map((e) => e.message);
}

describe('hand edits', () => {
  it('kept while paused, reverted within seconds of resume with an Event naming them; reverted by the drift watch when not paused; an autoscaler-owned field is left alone', async () => {
    const ns = `hand-${t.runId}`;
    cleanup(() => t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined));
    const name = `hand-${t.runId}`;
    const src = await serveBundle(files, '/hand.tgz', [web(), configMap('web-config', { color: 'blue' })]);
    await t.create(name, { installNamespace: ns, format: 'plain', sources: [src] });
    let bd = await t.waitFor(name, isDone, 'installed', 90_000);
    expect((await live(ns)).env).toEqual({ COLOR: 'blue' });

    // paused: a hotfix by kubectl set env (manager kubectl-set) and kubectl label stays
    await t.patchSpec(name, { paused: true });
    await t.waitFor(name, (b) => cond(b, 'Paused')?.status === 'True', 'paused');
    let mark = t.log.mark();
    await kubectl(['-n', ns, 'set', 'env', 'deployment/web', 'HOTFIX=1']);
    await kubectl(['-n', ns, 'label', 'deployment/web', 'hotfix=yes']);
    await t.settled(name, mark, 'the paused BD reconciled after both edits', { changes: 2 });
    expect(await live(ns)).toMatchObject({ env: { COLOR: 'blue', HOTFIX: '1' }, labels: { hotfix: 'yes' } });

    // resumed: both go within seconds, and an Event names the object and the fields
    const since = new Date(Date.now() - 1000).toISOString();
    const resumed = Date.now();
    await t.patchSpec(name, { paused: false });
    await waitUntil('hotfix reverted after resume', async () => !('HOTFIX' in (await live(ns)).env), 15_000);
    const revertMs = Date.now() - resumed;
    const after = await live(ns);
    expect(after.env).toEqual({ COLOR: 'blue' });
    expect(after.labels).not.toHaveProperty('hotfix');
    expect(after.labels).toMatchObject({ tier: 'web' });
    bd = await t.waitFor(name, (b) => isDone(b) && cond(b, 'Paused')?.status === 'False', 'resumed');
    let events: string[] = [];
    await waitUntil('DriftCorrected event', async () => (events = await driftEvents(bd.metadata.uid!, since)).length > 0, 10_000);
    const message = events.join('\n');
    expect(message).toContain(`apps/v1 Deployment ${ns}/web reverted (`);
    expect(message).toContain('kubectl-set: spec.template.spec.containers[name=web].env[name=HOTFIX]');
    expect(message).toContain('kubectl-label: metadata.labels.hotfix');
    expect(message).not.toContain('web-config');
    console.log(`hand edit reverted ${revertMs} ms after resume`);

    // an autoscaler stand-in owns spec.replicas (the bundle sets none): never taken over
    await t.client.patch(DEPLOY, 'web', ns, { spec: { replicas: 3 } }, 'merge', { fieldManager: 'hpa-stand-in' });
    // not paused: the drift watch reverts the next hotfix, and the autoscaler's field stays
    const edited = Date.now();
    mark = t.log.mark();
    await kubectl(['-n', ns, 'set', 'env', 'deployment/web', 'HOTFIX=2']);
    await waitUntil('hotfix reverted by the drift watch', async () => !('HOTFIX' in (await live(ns)).env), 15_000);
    console.log(`hand edit reverted ${Date.now() - edited} ms after it was made (drift watch)`);
    await t.settled(name, mark, 'the revert is the last change: a reconcile after it changed nothing');
    expect(await live(ns)).toMatchObject({ env: { COLOR: 'blue' }, replicas: 3 });
    const d = await t.client.get(DEPLOY, 'web', ns);
    const managers = (d!.metadata.managedFields as Array<{ manager: string }>).map((m) => m.manager);
    expect(managers).toContain('hpa-stand-in');
    expect(managers).not.toContain('kubectl-set');
  }, 240_000);
});
