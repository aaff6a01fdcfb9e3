/**
 * Health checks cost no requests of their own (issue 12): 1,000 installed objects under a CEL
 * probe; while ten of them turn unhealthy and healthy again, the API server's audit log shows the
 * controller reading none of them (no GET, no LIST: the probe runs on watch events), and writing
 * only its status and the drift correction of the ten edited objects.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { AuditReader } from '../support/audit.ts';
import { auditLogPath } from '../support/env.ts';
import { servePinned } from '../support/upgrade-fixtures.ts';

const N = 1000;

const { t, files } = controllerWithFiles({ workers: 2 });

// runs on the suite's own control plane, which writes an audit log; against an existing cluster or
// K3s (USE_EXISTING_CLUSTER, HOIST_TEST_K3S) there is no audit log to count requests in
describe.runIf(auditLogPath() !== '')('health check request budget', () => {
  it(`${N} objects under a probe: flipping their health reads none of them (the probe runs on watch events)`, { timeout: 300_000 }, async () => {
    const bd = `probe-budget-${t.runId}`;
    const ns = `probe-budget-${t.runId}`;
    const docs = Array.from({ length: N }, (_, i) => stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` }, data: { ready: 'ok' } }));
    const sources = await servePinned(files, `/${bd}.tgz`, { 'all.yaml': docs.join('---\n') });
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources,
      healthChecks: [{ name: 'ready', match: { kind: 'ConfigMap' }, cel: '!("broken" in self.data)', periodSeconds: 1, failureThreshold: 2 }],
    });
    const done = await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', `${N} objects installed and healthy`, 240_000);
    expect(done.status?.activeRevision?.objects).toBe(N);

    const audit = new AuditReader(auditLogPath(), `hoist/test-${t.runId}`);
    const from = await audit.offset();
    // another writer (the test, its own user agent and field manager) breaks ten objects with a
    // key the bundle does not set (so Hoist's drift correction leaves it), then mends them
    const CM = { apiVersion: 'v1', kind: 'ConfigMap' };
    for (let i = 0; i < 10; i++) await t.client.patch(CM, `c${i * 97}`, ns, { data: { broken: 'yes' } }, 'merge');
    // each object crosses failureThreshold × periodSeconds on its own clock: wait for all ten
    const failing = await t.waitFor(
      bd,
      (b) => cond(b, 'Healthy')?.reason === 'Unhealthy' && cond(b, 'Healthy')!.message.startsWith('10 failing'),
      'ten unhealthy after the threshold',
      60_000,
    );
    expect(cond(failing, 'Healthy')!.message).toMatch(/^10 failing: ConfigMap .*health check ready: cel .* is false/);
    for (let i = 0; i < 10; i++) await t.client.patch(CM, `c${i * 97}`, ns, { data: { broken: null } }, 'merge');
    await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'True', 'healthy again', 60_000);

    const events = await audit.since(from);
    const onConfigMaps = events.filter((e) => e.objectRef?.resource === 'configmaps' && e.verb !== 'watch');
    expect(
      onConfigMaps.filter((e) => e.verb === 'get' || e.verb === 'list'),
      'reads of the probed objects',
    ).toEqual([]);
    // the edits changed the ten objects, so drift correction re-applies those ten (no-op patches,
    // after checking the install namespace); nothing else is asked of the API server
    const edited = new Set(Array.from({ length: 10 }, (_, i) => `c${i * 97}`));
    expect(
      onConfigMaps.filter((e) => !(e.verb === 'patch' && edited.has(e.objectRef?.name ?? ''))),
      'requests for other objects',
    ).toEqual([]);
    // discovery (GET /api, /apis) is refreshed when a CRD becomes Established anywhere in the
    // cluster (other test files make CRDs meanwhile): per CRD, not per object, so not counted here
    const discovery = (e: (typeof events)[number]) => e.verb === 'get' && !e.objectRef && /^\/apis?(\?|$)/.test(e.requestURI);
    const other = events.filter(
      (e) =>
        !discovery(e) &&
        e.objectRef?.resource !== 'configmaps' &&
        !(e.objectRef?.resource === 'bundledeployments' && e.objectRef.subresource === 'status') &&
        e.objectRef?.resource !== 'events' &&
        !(e.verb === 'get' && e.objectRef?.resource === 'namespaces' && e.objectRef.name === ns),
    );
    expect(
      other.map((e) => `${e.verb} ${e.requestURI}`),
      'requests besides drift correction, status writes and events',
    ).toEqual([]);
  });
});
