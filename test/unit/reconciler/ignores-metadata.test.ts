/**
 * Which metadata-only changes of a BD's objects re-queue nothing (docs/decisions.md): a label or
 * annotation neither the bundle nor Hoist sets, unless the BD has health checks of its own — a
 * CEL or JSONPath check, or a match selector, may read any label or annotation, so such a change
 * can turn its verdict and has to be looked at. Through the real reconciler over the fakes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { BundleDeploymentSpec } from '../../../api/v1alpha2/types.ts';
import { FakeWorld } from '../../support/fakes/world.ts';

const URL = 'https://bundles.example/v1.tgz';
const ID = '/ConfigMap/app/app';
const worlds: FakeWorld[] = [];
afterEach(async () => {
  await Promise.all(worlds.splice(0).map((w) => w.dispose()));
});

async function installed(spec: BundleDeploymentSpec): Promise<FakeWorld> {
  const w = await FakeWorld.create();
  worlds.push(w);
  w.source.publish(URL, [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app', namespace: 'app', labels: { app: 'web' } }, data: { v: '1' } }]);
  w.put('demo', spec);
  const outcome = await w.reconcile('demo');
  expect(outcome.error).toBeUndefined();
  return w;
}

const plain: BundleDeploymentSpec = { format: 'plain', sources: [{ kind: 'http', http: { url: URL } }] };
const foreign = { labels: ['env'], annotations: ['controller.example/seen'] };

describe('BundleDeploymentReconciler.ignoresMetadata', () => {
  it('ignores a foreign label or annotation of an object of the revision', async () => {
    const w = await installed(plain);
    expect(w.reconciler.ignoresMetadata('demo', ID, foreign)).toBe(true);
  });

  it('does not ignore a label the bundle sets', async () => {
    const w = await installed(plain);
    expect(w.reconciler.ignoresMetadata('demo', ID, { labels: ['app'], annotations: [] })).toBe(false);
  });

  it('does not ignore any metadata change when the BD has health checks of its own', async () => {
    const w = await installed({
      ...plain,
      healthChecks: [
        { name: 'seen', match: { kind: 'ConfigMap' }, cel: "has(self.metadata.annotations) && 'controller.example/seen' in self.metadata.annotations" },
      ],
    });
    expect(w.reconciler.ignoresMetadata('demo', ID, foreign)).toBe(false);
  });
});
