/**
 * Pause and deletion end to end through the real controller (DESIGN §4, §5): a paused
 * BundleDeployment leaves a hand edit of its Deployment alone while still reporting health;
 * unpausing reverts the edit and says so in an Event; deleting a paused BD orphans its objects;
 * deleting a BD that never installed, or one stuck in a failing state, completes.
 */
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/kube/types.ts';
import { CM, configMap, deleteBundleDeployment, serveBundle, uidOf } from '../support/e2e-bundles.ts';
import { BD_TYPE, cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { sleep } from '../support/wait.ts';

const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
const EVENT = { apiVersion: 'v1', kind: 'Event' } as const;

const { t, files, cleanup } = controllerWithFiles();

function unique(prefix: string): string {
  return `${prefix}-${t.runId}`;
}

function webDeployment(): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' }, annotations: { 'hoist.test/color': 'blue' } },
        spec: { nodeSelector: { type: 'kwok' }, containers: [{ name: 'web', image: 'registry.invalid/web:1', env: [{ name: 'COLOR', value: 'blue' }] }] },
      },
    },
  } as KubeObject;
}

interface PodTemplate {
  metadata: { annotations?: Record<string, string> };
  spec: { nodeSelector?: Record<string, string>; containers: Array<{ env?: Array<{ name: string; value: string }> }> };
}

async function templateOf(ns: string): Promise<{ color?: string; env?: string; node?: string; generation?: number; uid?: string }> {
  const d = await t.client.get(DEPLOY, 'web', ns);
  const tpl = (d?.spec as { template: PodTemplate }).template;
  return {
    color: tpl.metadata.annotations?.['hoist.test/color'],
    env: tpl.spec.containers[0]?.env?.find((e) => e.name === 'COLOR')?.value,
    node: tpl.spec.nodeSelector?.type,
    generation: d?.metadata.generation,
    uid: d?.metadata.uid,
  };
}

describe('paused', () => {
  it('keeps a hand edit through reconciles while reporting health; unpause reverts it with an Event; deleting a paused BD orphans its objects', async () => {
    const ns = unique('paused');
    cleanup(() => t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined));
    const name = unique('web');
    const src = await serveBundle(files, '/web.tgz', [webDeployment(), configMap('web-config', { color: 'blue' })]);
    await t.create(name, { installNamespace: ns, format: 'plain', sources: [src] });
    await t.waitFor(name, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'installed and healthy', 90_000);
    const installed = await templateOf(ns);
    expect(installed).toMatchObject({ color: 'blue', env: 'blue', node: 'kwok' });

    await t.patchSpec(name, { paused: true });
    let bd = await t.waitFor(name, (b) => cond(b, 'Paused')?.status === 'True', 'paused');
    expect(cond(bd, 'Paused')).toMatchObject({ status: 'True', reason: 'Paused' });

    // a hotfix by hand: pod template annotation, env var, and a node selector that leaves the new pod pending
    await t.client.patch(
      DEPLOY,
      'web',
      ns,
      [
        { op: 'replace', path: '/spec/template/metadata/annotations/hoist.test~1color', value: 'red' },
        { op: 'replace', path: '/spec/template/spec/containers/0/env/0/value', value: 'red' },
        { op: 'replace', path: '/spec/template/spec/nodeSelector/type', value: 'nowhere' },
      ],
      'json',
    );
    const edited = await templateOf(ns);
    expect(edited).toMatchObject({ color: 'red', env: 'red', node: 'nowhere' });

    // health is still observed while paused: the stuck rollout shows
    bd = await t.waitFor(name, (b) => cond(b, 'Healthy')?.status === 'False', 'Healthy=False while paused', 60_000);
    expect(cond(bd, 'Paused')?.status).toBe('True');
    expect(cond(bd, 'Healthy')!.message).toContain(`Deployment ${ns}/web`);

    // reconciles happen (label touches, managed-object events) and change nothing
    for (let i = 0; i < 3; i++) {
      const touched = Date.now();
      await t.client.patch(BD_TYPE, name, undefined, { metadata: { labels: { 'hoist.test/touch': String(i) } } }, 'merge');
      await t.reconciled(name, touched, `paused reconcile after touch ${i}`);
    }
    expect(await templateOf(ns)).toEqual(edited);

    const since = new Date(Date.now() - 1000).toISOString();
    await t.patchSpec(name, { paused: false });
    bd = await t.waitFor(
      name,
      (b) => isDone(b) && cond(b, 'Paused')?.status === 'False' && cond(b, 'Healthy')?.status === 'True',
      'unpaused, reverted, healthy',
      90_000,
    );
    const reverted = await templateOf(ns);
    expect(reverted).toMatchObject({ color: 'blue', env: 'blue', node: 'kwok', uid: installed.uid });

    const uid = bd.metadata.uid!;
    let events: KubeObject[] = [];
    for (let i = 0; i < 50 && events.length === 0; i++) {
      const list = await t.client.list(EVENT, { namespace: 'default', fieldSelector: `involvedObject.uid=${uid}` });
      events = list.items.filter(
        (e) =>
          (e as unknown as { reason: string }).reason === 'DriftCorrected' && (e as unknown as { lastTimestamp: string }).lastTimestamp >= since.slice(0, 19),
      );
      if (events.length === 0) await sleep(100);
    }
    expect(events, 'a DriftCorrected event after unpause').toHaveLength(1);
    const ev = events[0] as unknown as { message: string; type: string; involvedObject: { kind: string; name: string } };
    expect(ev.involvedObject).toMatchObject({ kind: 'BundleDeployment', name });
    expect(ev.message).toContain(`apps/v1 Deployment ${ns}/web`);
    expect(ev.message).not.toContain('web-config'); // only what was changed back

    // deleting a paused BD orphans its objects
    await t.patchSpec(name, { paused: true });
    await t.waitFor(name, (b) => cond(b, 'Paused')?.status === 'True', 'paused again');
    const cmUid = await uidOf(t.client, CM, 'web-config', ns);
    await deleteBundleDeployment(t.client, name);
    expect(await uidOf(t.client, DEPLOY, 'web', ns)).toBe(installed.uid);
    expect(await uidOf(t.client, CM, 'web-config', ns)).toBe(cmUid);
  }, 240_000);
});

describe('deletion always completes', () => {
  it('a BD that never installed anything (its source is 404)', async () => {
    const name = unique('never');
    await t.create(name, { installNamespace: unique('never'), format: 'plain', sources: [{ kind: 'http', http: { url: files.url('/missing.tgz') } }] });
    await t.waitFor(name, (b) => cond(b, 'Resolved')?.status === 'False' || cond(b, 'Unpacked')?.status === 'False', 'fetch failure');
    await deleteBundleDeployment(t.client, name, 30_000);
  });

  it('a BD retrying a transient failure (connection refused) with nothing installed', async () => {
    const name = unique('refused');
    await t.create(name, { installNamespace: unique('refused'), format: 'plain', sources: [{ kind: 'http', http: { url: 'http://127.0.0.1:1/bundle.tgz' } }] });
    await t.waitFor(name, (b) => cond(b, 'Progressing')?.reason === 'Retrying' || cond(b, 'Resolved')?.status === 'False', 'retrying');
    await deleteBundleDeployment(t.client, name, 30_000);
  });

  it('an installed BD whose newer spec fails to fetch: uninstalls the active revision', async () => {
    const ns = unique('failing');
    cleanup(() => t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined));
    const name = unique('failing');
    const src = await serveBundle(files, '/failing.tgz', [configMap('keep-me-not', { a: '1' })]);
    await t.create(name, { installNamespace: ns, format: 'plain', sources: [src] });
    await t.waitFor(name, isDone, 'installed');
    await t.patchSpec(name, { sources: [{ kind: 'http', http: { url: 'http://127.0.0.1:1/next.tgz' } }] });
    await t.waitFor(name, (b) => cond(b, 'Progressing')?.reason === 'Retrying' || cond(b, 'Resolved')?.status === 'False', 'failing');
    expect(await uidOf(t.client, CM, 'keep-me-not', ns)).toBeDefined();
    await deleteBundleDeployment(t.client, name, 30_000);
    expect(await uidOf(t.client, CM, 'keep-me-not', ns)).toBeUndefined();
  });
});
