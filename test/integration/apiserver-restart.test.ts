/**
 * The runtime survives an API server restart: watches fail, the informers retry with backoff and
 * resume, and the controller keeps reconciling. Uses its own control plane, since restarting the
 * shared one would disturb the other test files.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../src/devcluster/control-plane.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { tarGz } from '../support/http-files.ts';
import { sleep } from '../support/wait.ts';

let cp: ControlPlane;

// a control plane of its own (it is restarted): started before, and stopped after, the controller
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
});
const { t, files } = controllerWithFiles(() => ({ kubeconfig: cp.kubeconfigPath }));

const bundle = (color: string) => tarGz({ 'cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: palette\ndata:\n  color: ${color}\n` });

describe('API server restart', () => {
  it('keeps reconciling after kube-apiserver restarts', async () => {
    files.set('/v1.tgz', await bundle('red'));
    files.set('/v2.tgz', await bundle('blue'));
    await t.create('restart', { installNamespace: 'restart', format: 'plain', sources: [{ kind: 'http', http: { url: files.url('/v1.tgz') } }] });
    await t.waitFor('restart', isDone, 'first install');

    await cp.restartApiServer();

    // a change made after the restart reaches the controller through its resumed watches
    await t.patchSpec('restart', { sources: [{ kind: 'http', http: { url: files.url('/v2.tgz') } }] });
    const bd = await t.waitFor('restart', (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'upgrade after restart', 90_000);
    expect(cond(bd, 'Installed')?.message).toBe('revision 2: 1 objects');
    const cm = (await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'palette', 'restart')) as { data?: Record<string, string> } | undefined;
    expect(cm?.data).toEqual({ color: 'blue' });

    // drift after the restart is still seen through the managed-object watches
    await t.client.delete({ apiVersion: 'v1', kind: 'ConfigMap' }, 'palette', 'restart');
    const deadline = Date.now() + 30_000;
    let back: unknown;
    while (!(back = await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'palette', 'restart')) && Date.now() < deadline) await sleep(200);
    expect(back, 'deleted ConfigMap re-created').toBeDefined();
  });
});
