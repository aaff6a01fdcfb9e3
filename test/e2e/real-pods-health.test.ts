/**
 * Health from real pods (issue 27): the BundleDeployments' Deployments run on the real node
 * (containerd + kubelet), so readiness is the kubelet's verdict on a real probe, not a kwok stage.
 * A revision whose pods never become ready is Healthy=False, then rolled back at progressDeadline
 * to the previous revision, whose pods really serve again; a crash-looping container is reported
 * by the kubelet as CrashLoopBackOff, and src/health's podProblems names it from the live pods.
 * Skipped, with the reason, where the machine cannot run the real node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import { podProblems } from '../../src/health/pods.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, isDone, startTestController, type TestController } from '../support/controller.ts';
import { serveBundle, until } from '../support/e2e-bundles.ts';
import { servePinned } from '../support/upgrade-fixtures.ts';
import { startFileServer, type FileServer } from '../support/http-files.ts';
import { onRealNode, realNode, realNodeTitle, theRealNode } from '../support/real-node.ts';

let t: TestController;
let files: FileServer;
const POD = { apiVersion: 'v1', kind: 'Pod' } as const;

/** a Deployment of the web test image on the real node, with a readiness probe on /readyz */
function web(name: string, args: string[]): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          ...onRealNode(),
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'web',
              image: theRealNode().images.web,
              imagePullPolicy: 'Never',
              args,
              ports: [{ containerPort: 8080, name: 'http' }],
              readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 1, failureThreshold: 1 },
            },
          ],
        },
      },
    },
  } as KubeObject;
}

async function pods(ns: string, app: string): Promise<KubeObject[]> {
  return (await t.client.list(POD, { namespace: ns, labelSelector: `app=${app}` })).items.filter((p) => !p.metadata.deletionTimestamp);
}

/** what each ready pod of the app answers on GET / (from this machine, to the pod's bridge IP) */
async function answers(ns: string, app: string): Promise<string[]> {
  const out: string[] = [];
  for (const p of await pods(ns, app)) {
    const s = p.status as { podIP?: string; conditions?: { type: string; status: string }[] };
    if (!s.podIP || !s.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) continue;
    out.push((await (await fetch(`http://${s.podIP}:8080/`, { signal: AbortSignal.timeout(10_000) })).text()).trim());
  }
  return out;
}

// Skipped only where the real node cannot run (not Linux or root, containerd or the CNI plugins
// missing, another run holding it, or HOIST_REAL_NODE=0): the reason is in the title. On this
// project's machines and in CI it runs.
describe.skipIf(!realNode())(realNodeTitle('health from real pods'), () => {
  beforeAll(async () => {
    t = await startTestController();
    files = await startFileServer();
  });
  afterAll(async () => {
    await t?.stop();
    await files?.close();
  });

  it('a revision whose pods never become ready: Healthy=False, rolled back at progressDeadline, and the previous pods serve again', async () => {
    const bd = `real-rollback-${t.runId}`;
    const ns = bd;
    const v1 = await serveBundle(files, '/web-v1.tgz', [web('web', ['-text', 'revision 1'])]);
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [v1], upgrade: { onFailure: 'Rollback', progressDeadline: '45s' } });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'revision 1 healthy on real pods', 180_000);
    expect((await answers(ns, 'web'))[0]).toMatch(/^revision 1 from web-/);

    const v2 = await serveBundle(files, '/web-v2.tgz', [web('web', ['-text', 'revision 2', '-never-ready'])]);
    await t.patchSpec(bd, { sources: [v2] });
    // the new pod runs, but the kubelet's readiness probe never passes
    // (waitFor reads the status of generation 2 only: revision 1 was healthy)
    const unhealthy = await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'False', 'revision 2 unhealthy', 120_000);
    expect(cond(unhealthy, 'Healthy')!.message).toContain(`Deployment ${ns}/web`);
    const unready = await until(
      async () => {
        const p = (await pods(ns, 'web')).find(
          (x) => (x.status as { containerStatuses?: { state?: { running?: unknown } }[] }).containerStatuses?.[0]?.state?.running && podProblems([x]),
        );
        return p ? podProblems([p]) : undefined;
      },
      'a running, unready pod of revision 2',
      120_000,
    );
    expect(unready).toMatch(/Ready=False ContainersNotReady .*readiness probe of web failing/);
    // Healthy names it too, once the revision has been unready a while
    const named = await t.waitFor(
      bd,
      (b) => /readiness probe of web failing/.test(cond(b, 'Healthy')?.message ?? ''),
      'Healthy names the failing readiness probe',
      120_000,
    );
    expect(cond(named, 'Healthy')!.message).toMatch(new RegExp(`Deployment ${ns}/web: .*\\(pod web-\\S+: Ready=False ContainersNotReady`));

    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back at progressDeadline', 180_000);
    expect(cond(rolled, 'Progressing')!.message).toMatch(/not healthy within progressDeadline 45s/);
    expect(rolled.status?.activeRevision?.number).toBe(1);
    await t.waitFor(bd, (b) => cond(b, 'Healthy')?.status === 'True', 'healthy again on revision 1', 180_000);
    // revision 1's pods really serve again, and only they
    await until(
      async () => {
        const a = await answers(ns, 'web');
        return a.length === 1 && a[0]!.startsWith('revision 1') && (await pods(ns, 'web')).length === 1 ? true : undefined;
      },
      'revision 1 pods serving again, revision 2 pods gone',
      180_000,
    );
  }, 900_000);

  it('a crash-looping container: Healthy=False, the kubelet says CrashLoopBackOff and podProblems names it', async () => {
    const bd = `real-crash-${t.runId}`;
    const ns = bd;
    const src = await serveBundle(files, '/crash.tgz', [web('crasher', ['-crash-after', '1s'])]);
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [src], upgrade: { progressDeadline: '10m' } });
    const b: BundleDeployment = await t.waitFor(
      bd,
      (x) => cond(x, 'Installed')?.status === 'True' && cond(x, 'Healthy')?.status === 'False',
      'installed, not healthy',
      120_000,
    );
    expect(cond(b, 'Healthy')!.message).toContain(`Deployment ${ns}/crasher`);
    const problem = await until(
      async () => {
        const p = podProblems(await pods(ns, 'crasher'));
        return p?.includes('CrashLoopBackOff') ? p : undefined;
      },
      'the crasher pod in CrashLoopBackOff',
      180_000,
    );
    expect(problem).toMatch(/^pod crasher-\S+: container web is CrashLoopBackOff \(restarted \d+ times; last exit code 1 \(Error\)\)$/);
    // and Healthy says so
    // (between two back-offs the kubelet shows the exit itself: "crash-looping", with the restarts)
    const named = await t.waitFor(
      bd,
      (x) => /container web is (CrashLoopBackOff|crash-looping)/.test(cond(x, 'Healthy')?.message ?? ''),
      'Healthy names the crash loop',
      180_000,
    );
    expect(cond(named, 'Healthy')!.message).toMatch(
      new RegExp(
        `Deployment ${ns}/crasher: .*\\(pod crasher-\\S+: container web is (CrashLoopBackOff|crash-looping) \\(restarted \\d+ times; last exit code 1`,
      ),
    );
  }, 600_000);
  it('an upgrade whose container crash-loops fails at once on the real node: rolled back long before progressDeadline, the previous pods serve again', async () => {
    const bd = `real-crash-upgrade-${t.runId}`;
    const ns = bd;
    const v1 = await serveBundle(files, '/crash-up-v1.tgz', [web('app', ['-text', 'revision 1'])]);
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [v1], upgrade: { onFailure: 'Rollback', progressDeadline: '30m' } });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'revision 1 healthy on real pods', 180_000);

    const v2 = await serveBundle(files, '/crash-up-v2.tgz', [web('app', ['-text', 'revision 2', '-never-ready', '-crash-after', '1s'])]);
    await t.patchSpec(bd, { sources: [v2] });
    // three restarts of the kubelet's back-off (10 s, 20 s, 40 s) take about 75 s; the deadline is 30 minutes
    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rolled back for the crash loop', 420_000);
    const message = cond(rolled, 'Progressing')!.message;
    expect(message).toMatch(
      new RegExp(
        `^revision 2 rolled back to 1: observe revision 2: revision 2 failed before it was healthy: 1 failing: Deployment ${ns}/app: .*\\(pod app-\\S+: container web is (CrashLoopBackOff|crash-looping) \\(restarted [3-9] times`,
      ),
    );
    expect(message).not.toContain('progressDeadline');
    expect(rolled.status?.activeRevision?.number).toBe(1);
    await until(
      async () => {
        const a = await answers(ns, 'app');
        return a.length === 1 && a[0]!.startsWith('revision 1') && (await pods(ns, 'app')).length === 1 ? true : undefined;
      },
      'revision 1 pods serving again, revision 2 pods gone',
      180_000,
    );
  }, 900_000);

  it('a Helm pre-upgrade hook Job whose container really exits 1 fails the upgrade, which is rolled back; its pre-install run succeeded', async () => {
    const bd = `real-hook-${t.runId}`;
    const ns = bd;
    const node = theRealNode();
    const placement = JSON.stringify(onRealNode(node));
    // a chart: a ConfigMap, and a Job hook on the real node whose exit code comes from values
    const chart = (version: string, exitCode: number) =>
      servePinned(files, `/real-hook-${version}.tgz`, {
        'real-hook/Chart.yaml': `apiVersion: v2\nname: real-hook\nversion: ${version}\n`,
        'real-hook/templates/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: "${version}"\n`,
        'real-hook/templates/migrate.yaml': [
          'apiVersion: batch/v1',
          'kind: Job',
          'metadata:',
          '  name: migrate',
          '  annotations:',
          '    helm.sh/hook: pre-install,pre-upgrade',
          '    helm.sh/hook-delete-policy: before-hook-creation',
          'spec:',
          '  backoffLimit: 0',
          '  template:',
          '    spec:',
          `      nodeSelector: ${JSON.stringify(JSON.parse(placement).nodeSelector)}`,
          `      tolerations: ${JSON.stringify(JSON.parse(placement).tolerations)}`,
          '      restartPolicy: Never',
          '      terminationGracePeriodSeconds: 1',
          '      containers:',
          '        - name: migrate',
          `          image: ${node.images.job}`,
          '          imagePullPolicy: Never',
          `          args: ["-exit-code", "${exitCode}", "-message", "migrating to ${version}"]`,
          '',
        ].join('\n'),
      });
    await t.create(bd, { installNamespace: ns, format: 'helm', sources: await chart('1.0.0', 0), upgrade: { onFailure: 'Rollback' } });
    const installed = await t.waitFor(bd, isDone, 'installed after its pre-install Job really ran', 180_000);
    expect(installed.status?.revisions?.find((r) => r.number === 1)?.hooks).toEqual([
      expect.objectContaining({ event: 'pre-install', kind: 'Job', name: 'migrate', result: 'Succeeded' }),
    ]);

    await t.patchSpec(bd, { sources: await chart('2.0.0', 1) });
    const rolled = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'the failing pre-upgrade hook rolls the upgrade back', 180_000);
    expect(cond(rolled, 'Progressing')!.message).toMatch(new RegExp(`pre-upgrade hook batch/v1 Job ${ns}/migrate failed: job failed: BackoffLimitExceeded`));
    expect(rolled.status?.activeRevision?.number).toBe(1);
    expect(rolled.status?.revisions?.find((r) => r.number === 2)?.hooks).toEqual([
      expect.objectContaining({ event: 'pre-upgrade', name: 'migrate', result: 'Failed' }),
    ]);
    // the container really ran and exited 1 on the real node; revision 1's ConfigMap is untouched
    const [hookPod] = (await t.client.list(POD, { namespace: ns, labelSelector: 'job-name=migrate' })).items;
    expect((hookPod?.spec as { nodeName?: string } | undefined)?.nodeName).toBe(node.name);
    const terminated = (hookPod?.status as { containerStatuses?: Array<{ state?: { terminated?: { exitCode?: number } } }> }).containerStatuses?.[0]?.state
      ?.terminated;
    expect(terminated?.exitCode).toBe(1);
    expect((await t.client.get<KubeObject & { data?: Record<string, string> }>({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app', ns))?.data).toEqual({
      version: '1.0.0',
    });
  }, 600_000);
});
