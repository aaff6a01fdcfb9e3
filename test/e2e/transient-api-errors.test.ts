/**
 * A 5xx from the API server is transient (issue 10): the apply is retried with backoff and the BD
 * says Retrying, never Blocked. The 500 is a real one: an admission webhook the API server cannot
 * reach makes it answer `InternalError … failed calling webhook` for the selected objects only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, isDone, startTestController, type TestController } from '../support/controller.ts';
import { startFileServer, type FileServer } from '../support/http-files.ts';
import { servePinned } from '../support/upgrade-fixtures.ts';
import { stringify } from 'yaml';

let t: TestController;
let files: FileServer;
const WEBHOOK = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' };

beforeAll(async () => {
  t = await startTestController();
  files = await startFileServer();
});
afterAll(async () => {
  await t?.client.delete(WEBHOOK, `hoist-test-5xx-${t.runId}`, undefined).catch(() => undefined);
  await t?.stop();
  await files?.close();
});

describe('API server errors', () => {
  it('an InternalError (500) on apply is retried with backoff and the BD installs once the server recovers', async () => {
    const bd = `transient-${t.runId}`;
    const ns = `transient-${t.runId}`;
    const label = { 'hoist.test/fail-5xx': t.runId };
    // nothing listens on port 1: every call fails, so the API server answers 500 (failurePolicy Fail)
    await t.client.create({
      ...WEBHOOK,
      metadata: { name: `hoist-test-5xx-${t.runId}` },
      webhooks: [
        {
          name: 'refuse.hoist.test',
          clientConfig: { url: 'https://127.0.0.1:1/validate' },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }],
          objectSelector: { matchLabels: label },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 1,
        },
      ],
    } as unknown as KubeObject);
    const sources = await servePinned(files, `/${bd}.tgz`, { 'cm.yaml': stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'guarded', labels: label }, data: { a: '1' } }) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources });

    const failing = await t.waitFor(bd, (b) => cond(b, 'Installed')?.status === 'False' && cond(b, 'Progressing')?.reason === 'Retrying', 'Retrying after a 500', 60_000);
    expect(cond(failing, 'Installed')?.message).toContain(`v1 ConfigMap ${ns}/guarded`);
    expect(cond(failing, 'Installed')?.message).toMatch(/failed calling webhook/);
    expect(cond(failing, 'Progressing')?.reason).not.toBe('Blocked');

    // the server recovers; nothing about the BD changes, the retry installs it
    await t.client.delete(WEBHOOK, `hoist-test-5xx-${t.runId}`, undefined);
    const done = await t.waitFor(bd, isDone, 'installed after the webhook is gone', 90_000);
    expect(done.status?.activeRevision?.number).toBe(1);
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'guarded', ns)).toBeDefined();
  });
});
