/**
 * A 5xx from the API server is transient (issue 10): the apply is retried with backoff and the BD
 * says Retrying, never Blocked. The 500s are real ones, for the selected objects only: an
 * admission webhook the API server cannot reach (`failed calling webhook`), and a webhook that
 * answers with a 500 status whose text names no network trouble at all (as `… range is full`
 * did), so only the status code can tell that it is worth retrying.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/kube/types.ts';
import { guardConfigMaps as guard, startAdmissionWebhook, WEBHOOK_CONFIG as WEBHOOK, type AdmissionWebhook } from '../support/admission-webhook.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { servePinned } from '../support/upgrade-fixtures.ts';
import { stringify } from 'yaml';

let webhook: AdmissionWebhook | undefined;

const { t, files } = controllerWithFiles();
afterAll(async () => {
  await t?.client.delete(WEBHOOK, `hoist-test-5xx-${t.runId}`, undefined).catch(() => undefined);
  await t?.client.delete(WEBHOOK, `hoist-test-500-${t.runId}`, undefined).catch(() => undefined);
  await webhook?.close();
});

const guardConfigMaps = (
  name: string,
  label: Record<string, string>,
  clientConfig?: { url: string; caBundle?: string },
  timeoutSeconds?: number,
): Promise<void> => guard(t.client, name, label, clientConfig, timeoutSeconds);

describe('API server errors during an upgrade (onFailure: Rollback)', () => {
  const configMap = (label: Record<string, string>, value: string) => ({
    'cm.yaml': stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', labels: label }, data: { value } }),
  });

  it('a 500 is retried, not rolled back: the upgrade lands once the server recovers', async () => {
    const bd = `upg5xx-${t.runId}`;
    const ns = `upg5xx-${t.runId}`;
    const label = { 'hoist.test/upgrade-5xx': t.runId };
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: await servePinned(files, `/${bd}-v1.tgz`, configMap(label, 'one')) });
    await t.waitFor(bd, isDone, 'revision 1 installed', 60_000);
    const hook = `hoist-test-upg5xx-${t.runId}`;
    await guardConfigMaps(hook, label);
    try {
      await t.patchSpec(bd, { sources: await servePinned(files, `/${bd}-v2.tgz`, configMap(label, 'two')) });
      const failing = await t.waitFor(
        bd,
        (b) => b.status?.attemptedRevision?.failingSince !== undefined && cond(b, 'Progressing')?.reason === 'Retrying',
        'revision 2 retrying after a 500',
        60_000,
      );
      expect(cond(failing, 'Progressing')?.message).toMatch(/failed calling webhook/);
      expect(cond(failing, 'Progressing')?.message).toMatch(/rolled back to revision 1 if still failing 10m after/);
      // the installed revision is still the one in use, and reported as such
      expect(cond(failing, 'Installed')).toMatchObject({ status: 'True', reason: 'Installed' });
      expect(failing.status?.activeRevision?.number).toBe(1);
      expect(failing.status?.attemptedRevision).toMatchObject({ number: 2, reason: 'ApplyFailed' });
      expect(failing.status?.attemptedRevision?.rolledBackTo).toBeUndefined();
    } finally {
      await t.client.delete(WEBHOOK, hook, undefined);
    }
    const done = await t.waitFor(bd, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'revision 2 installed once the webhook is gone', 90_000);
    expect(done.status?.attemptedRevision).toBeUndefined();
    expect(((await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'settings', ns)) as KubeObject & { data: object }).data).toEqual({ value: 'two' });
  });

  it('still failing progressDeadline after the first 500: rolled back to the last good revision', async () => {
    const bd = `upg5xxdl-${t.runId}`;
    const ns = `upg5xxdl-${t.runId}`;
    const label = { 'hoist.test/upgrade-5xx-deadline': t.runId };
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      upgrade: { progressDeadline: '3s' },
      sources: await servePinned(files, `/${bd}-v1.tgz`, configMap(label, 'one')),
    });
    await t.waitFor(bd, isDone, 'revision 1 installed', 60_000);
    const hook = `hoist-test-upg5xxdl-${t.runId}`;
    await guardConfigMaps(hook, label);
    try {
      await t.patchSpec(bd, { sources: await servePinned(files, `/${bd}-v2.tgz`, configMap(label, 'two')) });
      await t.waitFor(
        bd,
        (b) => cond(b, 'Progressing')?.reason === 'Retrying' && b.status?.attemptedRevision?.number === 2,
        'revision 2 retrying first',
        60_000,
      );
      const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back past the deadline', 60_000);
      expect(cond(rolled, 'Progressing')?.message).toMatch(/failed calling webhook/);
      expect(rolled.status?.activeRevision?.number).toBe(1);
      expect(rolled.status?.attemptedRevision).toMatchObject({ number: 2, rolledBackTo: 1 });
      expect(((await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'settings', ns)) as KubeObject & { data: object }).data).toEqual({ value: 'one' });
    } finally {
      await t.client.delete(WEBHOOK, hook, undefined);
    }
  });
});

describe('API server errors', () => {
  it("a 500 for content server-side apply cannot type is the bundle's error: Blocked, naming the object and field, not retried", async () => {
    const bd = `untyped-${t.runId}`;
    const ns = `untyped-${t.runId}`;
    // YAML 1.1 (as kubectl reads manifests): `enabled: yes` is a boolean, a ConfigMap's data must be strings
    const sources = await servePinned(files, `/${bd}.tgz`, { 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\ndata:\n  enabled: yes\n' });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources });
    const blocked = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'Blocked', 'Blocked', 60_000);
    expect(cond(blocked, 'Installed')).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    expect(cond(blocked, 'Installed')?.message).toContain(`v1 ConfigMap ${ns}/flags`);
    expect(cond(blocked, 'Installed')?.message).toMatch(/\.data\.enabled: expected string/);
    expect(cond(blocked, 'Progressing')?.message).toMatch(/retried when the spec changes/);
  });

  it('an InternalError (500) on apply is retried with backoff and the BD installs once the server recovers', async () => {
    const bd = `transient-${t.runId}`;
    const ns = `transient-${t.runId}`;
    const label = { 'hoist.test/fail-5xx': t.runId };
    // nothing listens on port 1: every call fails, so the API server answers 500 (failurePolicy Fail)
    await guardConfigMaps(`hoist-test-5xx-${t.runId}`, label);
    const sources = await servePinned(files, `/${bd}.tgz`, {
      'cm.yaml': stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'guarded', labels: label }, data: { a: '1' } }),
    });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources });

    const failing = await t.waitFor(
      bd,
      (b) => cond(b, 'Installed')?.status === 'False' && cond(b, 'Progressing')?.reason === 'Retrying',
      'Retrying after a 500',
      60_000,
    );
    expect(cond(failing, 'Installed')?.message).toContain(`v1 ConfigMap ${ns}/guarded`);
    expect(cond(failing, 'Installed')?.message).toMatch(/failed calling webhook/);
    expect(cond(failing, 'Progressing')?.reason).not.toBe('Blocked');

    // the server recovers; nothing about the BD changes, the retry installs it
    await t.client.delete(WEBHOOK, `hoist-test-5xx-${t.runId}`, undefined);
    const done = await t.waitFor(bd, isDone, 'installed after the webhook is gone', 90_000);
    expect(done.status?.activeRevision?.number).toBe(1);
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'guarded', ns)).toBeDefined();
  });

  it('a 500 whose message names no network trouble is still retried (decided by the status code, not the text)', async () => {
    const bd = `status500-${t.runId}`;
    const ns = `status500-${t.runId}`;
    const label = { 'hoist.test/status-500': t.runId };
    let healthy = false;
    webhook = await startAdmissionWebhook(() =>
      healthy ? { allowed: true } : { allowed: false, status: { code: 500, reason: 'InternalError', message: 'the quota service behind this policy is down' } },
    );
    const { url, caBundle } = webhook;
    await guardConfigMaps(`hoist-test-500-${t.runId}`, label, { url, caBundle }, 5);
    const sources = await servePinned(files, `/${bd}.tgz`, {
      'cm.yaml': stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'quota', labels: label }, data: { a: '1' } }),
    });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources });

    const failing = await t.waitFor(
      bd,
      (b) => cond(b, 'Installed')?.status === 'False' && cond(b, 'Progressing')?.reason === 'Retrying',
      'Retrying after a 500',
      60_000,
    );
    expect(cond(failing, 'Installed')?.message).toContain('the quota service behind this policy is down');
    expect(cond(failing, 'Installed')?.message).not.toMatch(/connect|timeout|throttl|conflict|try again|ECONN|socket/i);

    healthy = true;
    const done = await t.waitFor(bd, isDone, 'installed once the webhook allows it', 90_000);
    expect(done.status?.activeRevision?.number).toBe(1);
  });
});
