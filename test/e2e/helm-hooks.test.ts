/**
 * Helm hooks run as Helm runs them (issue 22), through a real controller on the test control plane
 * (kwok completes Job pods; its stage hoist-pod-fail fails a pod annotated hoist.test/exit-code):
 *
 * - ingress-nginx 4.15.0 → 4.15.1 (testdata/fixtures): its certificate Jobs (`before-hook-creation,
 *   hook-succeeded`, `ttlSecondsAfterFinished: 0`) are created exactly once per install and
 *   upgrade and never again over minutes afterwards (audit log), no reconcile follows their
 *   deletion, and the BundleDeployment stays done;
 * - hooked-app (testdata/helm, written for this test): pre-install hooks run one at a time to
 *   completion before any main object exists, post-install hooks after the main set is ready, an
 *   upgrade re-creates a changed hook Job (delete, then create), a failing pre-upgrade Job fails the
 *   upgrade and leaves the installed revision untouched (rolled back, with the old revision's
 *   post-rollback hook), `hook-succeeded` hooks are gone, a hook deleted by hand is not put back,
 *   uninstall runs pre-delete before deleting anything, an install into a new namespace creates it
 *   before the first hook;
 * - the same chart through the real helm (install --wait, upgrade --wait, a failing upgrade
 *   --atomic, uninstall) creates the same hooks in the same order, relative to the main objects, as
 *   Hoist did (both read from the audit log).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_HOOK_OF, LABEL_OWNER_NAME, type BundleDeployment, type BundleDeploymentSpec, type HookRun } from '../../api/v1alpha2/types.ts';
import { toolPath } from '../../src/devcluster/tools.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { auditEvents, auditOffset, auditRef, isCreate, showAudit, type AuditEvent } from '../support/audit.ts';
import { cond, describeStatus, isFailed, isSucceeded } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { isReconciled } from '../support/controller-log.ts';
import { deleteBundleDeployment } from '../support/e2e-bundles.ts';
import { auditLogPath, isLocalControlPlane, kubeconfigPath } from '../support/env.ts';
import { hasCondition, Timeline } from '../support/timeline.ts';
import { readTree, servePinned } from '../support/upgrade-fixtures.ts';
import { sleep, waitUntil } from '../support/wait.ts';

const run = promisify(execFile);
const FIXTURES = fileURLToPath(new URL('../../testdata/fixtures/helm/', import.meta.url));
const HOOKED_APP = fileURLToPath(new URL('../../testdata/helm/hooked-app', import.meta.url));

const JOB = { apiVersion: 'batch/v1', kind: 'Job' } as const;
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const SA = { apiVersion: 'v1', kind: 'ServiceAccount' } as const;
const SVC = { apiVersion: 'v1', kind: 'Service' } as const;
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
const hooksOf = (bd: BundleDeployment | undefined, revision: number): HookRun[] | undefined => bd?.status?.revisions?.find((r) => r.number === revision)?.hooks;
/** "<event> <Kind> <name> <result>[ deleted]", in the order recorded */
const runs = (hooks: readonly HookRun[] | undefined): string[] =>
  (hooks ?? []).map((h) => `${h.event} ${h.kind} ${h.name} ${h.result}${h.deleted ? ' deleted' : ''}`);

let audit: string;

const offset = (): Promise<number> => auditOffset(audit);
const hoist = (ua: string): boolean => ua === `hoist/test-${t.runId}`;
const anyone = (): boolean => true;

/** waits until BD `name` succeeded with `pred` holding; a failed BD (Blocked, RolledBack) fails at once, with its status */
async function waitSucceeded(name: string, what: string, timeoutMs: number, pred: (b: BundleDeployment) => boolean = () => true): Promise<BundleDeployment> {
  const b = await t.waitFor(name, (x) => (isSucceeded(x) && pred(x)) || isFailed(x), what, timeoutMs);
  if (isFailed(b)) throw new Error(`${name} failed instead of: ${what}\n${describeStatus(b)}`);
  return b;
}

/**
 * writes (create, apply, update, delete) to the bundle's objects in `ns` (and cluster-scoped ones
 * whose name starts with `clusterPrefix`) between two audit-log offsets, by the clients `agent` accepts
 */
async function writesIn(ns: string, agent: (ua: string) => boolean, from: number, to?: number, clusterPrefix?: string): Promise<AuditEvent[]> {
  const events = await auditEvents(audit, from, agent, to);
  return events.filter(
    (e) =>
      (e.objectRef?.namespace === ns || (clusterPrefix !== undefined && !e.objectRef?.namespace && !!e.objectRef?.name?.startsWith(clusterPrefix))) &&
      !!e.objectRef?.name &&
      !e.objectRef.subresource &&
      !['events', 'pods', 'namespaces', 'leases', 'endpointslices', 'endpoints', 'replicasets'].includes(e.objectRef.resource ?? '') &&
      !(e.objectRef.resource === 'secrets' && e.objectRef.name.startsWith('sh.helm.release.')) &&
      ['create', 'patch', 'update', 'delete'].includes(e.verb),
  );
}
const createdRefs = (events: readonly AuditEvent[]): string[] => events.filter(isCreate).map(auditRef);
// the deletes of what the tool had created or found (a delete answered 200), and of objects it had
// created and not deleted since, whatever the answer: a TTL-0 hook Job may be gone already (the TTL
// controller raced the tool's hook-succeeded delete), which either tool meets as a 404. Helm's
// before-hook-creation deletes of hooks that do not exist yet (404, before their create) are not
// decisions about an object, and Hoist reads before it deletes instead.
const deletes = (events: readonly AuditEvent[]): AuditEvent[] =>
  events.filter(
    (e, i) =>
      e.verb === 'delete' && ((e.responseStatus?.code ?? 0) < 300 || (e.responseStatus?.code === 404 && lastWriteBefore(events, i, auditRef(e)) === 'create')),
  );

/** whether the tool's last create or delete of `ref` before event i was a create (it holds the object) */
function lastWriteBefore(events: readonly AuditEvent[], i: number, ref: string): 'create' | 'delete' | undefined {
  for (let j = i - 1; j >= 0; j--) {
    const e = events[j]!;
    if (auditRef(e) !== ref) continue;
    if (isCreate(e)) return 'create';
    if (e.verb === 'delete') return 'delete';
  }
  return undefined;
}

const { t, files } = controllerWithFiles();
beforeAll(async () => {
  audit = auditLogPath();
});

// the audit log and kwok's stages exist on the suite's own control plane only
describe.runIf(isLocalControlPlane() && auditLogPath() !== '')('a public chart: ingress-nginx', () => {
  /**
   * The release name makes the chart's cluster-scoped names (ClusterRoles and their bindings, the
   * IngressClass, the admission webhook) unique to a release; the webhook (failurePolicy Fail, no pod
   * serves it under kwok) intercepts Ingresses of the release's namespace only.
   */
  const valuesFor = (release: string, ns: string) => ({
    controller: {
      ingressClassResource: { name: release, controllerValue: `k8s.io/${release}` },
      ingressClass: release,
      service: { type: 'ClusterIP' },
      admissionWebhooks: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } },
    },
  });
  /** the chart's hooks (no weights: helm runs them by name, equal names in kind order), with the release name as REL */
  const HOOKS = ['serviceaccounts', 'clusterroles', 'clusterrolebindings', 'roles', 'rolebindings']
    .map((r) => `${r}/REL-admission`)
    .concat('jobs/REL-admission-create', 'jobs/REL-admission-patch');
  /** Hoist's writes (namespaced and cluster-scoped objects of the release) in the install and the upgrade, release name as REL */
  const hoistSteps: Partial<Record<'install' | 'upgrade', AuditEvent[]>> = {};
  const normalize = (events: readonly AuditEvent[], release: string): AuditEvent[] =>
    events.map((e) => ({ ...e, objectRef: { ...e.objectRef, name: e.objectRef?.name?.replace(release, 'REL') } }));
  /** the hooks created before the first write of a main object, among those writes, and after the last one; and the main objects created */
  const around = (events: readonly AuditEvent[]) => {
    const seq = events.filter((e) => (HOOKS.includes(auditRef(e)) ? isCreate(e) : e.verb !== 'delete')).map(auditRef);
    const main = seq.flatMap((r, i) => (HOOKS.includes(r) ? [] : [i]));
    const hooksIn = (from: number, to: number) => seq.slice(from, to).filter((r) => HOOKS.includes(r));
    const [first, last] = [Math.min(...main), Math.max(...main)];
    return {
      before: hooksIn(0, first),
      among: hooksIn(first, last + 1),
      after: hooksIn(last + 1, seq.length),
      mainCreated: createdRefs(events)
        .filter((r) => !HOOKS.includes(r))
        .sort(),
    };
  };
  const chart = async (v: string) => servePinned(files, `/ingress-nginx-${v}.tgz`, await readTree(join(FIXTURES, `ingress-nginx-${v}`)));

  it('install and upgrade: each hook Job created exactly once per transition and never again; no reconcile follows; the BundleDeployment stays done', async () => {
    const bd = `ingress-${t.runId}`;
    const ns = `ingress-${t.runId}`;
    const release = `ingress-nginx-${t.runId}`;
    const createJob = `jobs/${release}-admission-create`;
    const patchJob = `jobs/${release}-admission-patch`;
    const spec: BundleDeploymentSpec = {
      installNamespace: ns,
      format: 'helm',
      sources: await chart('4.15.0'),
      config: { helm: { releaseName: release, values: valuesFor(release, ns) } },
      upgrade: { onFailure: 'Rollback' },
    };

    // the namespace exists (an install into a new one is a test of its own, below)
    await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const installFrom = await offset();
    const startMark = t.log.mark();
    await t.create(bd, spec);
    await waitSucceeded(bd, 'revision 1 installed and healthy', 240_000);
    const upgradeFrom = await offset();
    await t.patchSpec(bd, { sources: await chart('4.15.1') });
    await waitSucceeded(bd, 'revision 2 installed and healthy', 240_000, (b) => b.status?.activeRevision?.number === 2);
    await t.idle({ quietMs: 2000 });

    // the window: minutes of a running controller after the upgrade is done (the TTL controller
    // deleted the finished Jobs before); the BundleDeployment must stay done all along
    const windowFrom = await offset();
    hoistSteps.install = normalize(await writesIn(ns, hoist, installFrom, upgradeFrom, release), release);
    hoistSteps.upgrade = normalize(await writesIn(ns, hoist, upgradeFrom, windowFrom, release), release);
    const mark = t.log.mark();
    const flaps: string[] = [];
    const windowEnd = Date.now() + 150_000;
    while (Date.now() < windowEnd) {
      const b = await t.get(bd);
      if (!isSucceeded(b)) flaps.push(`${new Date().toISOString()} ${describeStatus(b)}`);
      await sleep(2000);
    }
    expect(flaps).toEqual([]);

    const jobs = async (from: number, to?: number) => (await writesIn(ns, anyone, from, to)).filter((e) => e.objectRef?.resource === 'jobs');
    const install = await jobs(installFrom, upgradeFrom);
    const upgrade = await jobs(upgradeFrom, windowFrom);
    const after = await jobs(windowFrom);
    // each hook Job created once per transition, by Hoist, the pre hook before the post hook
    for (const [what, w] of [
      ['install', install],
      ['upgrade', upgrade],
    ] as const) {
      expect(createdRefs(w), `${what}:\n${showAudit(w)}`).toEqual([createJob, patchJob]);
      expect(
        w.filter(isCreate).map((e) => e.userAgent),
        what,
      ).toEqual([`hoist/test-${t.runId}`, `hoist/test-${t.runId}`]);
    }
    // and never again: nobody creates or deletes a hook Job once the upgrade is done
    expect(showAudit(after)).toBe('');

    // no reconcile was ever queued for a change of a hook Job (their deletion by the TTL controller included)
    const hookJobEvents = t.log
      .since(startMark)
      .filter((r) => r.msg === 'managed object changed' && r.bd === bd && /admission-(create|patch)/.test(String(r.why)));
    expect(hookJobEvents.map((r) => String(r.why))).toEqual([]);
    // no reconcile and no status write after the upgrade was done: the hooks' deletion is nobody's business
    const lines = t.log.since(mark);
    expect(lines.filter((r) => r.msg === 'managed object changed' && r.bd === bd).map((r) => JSON.stringify(r.why))).toEqual([]);
    // no reconcile changed anything; a no-op one (changed=0) was seen once under load with no
    // managed-object event behind it (cause not found yet; see the closing note of issue 24) and
    // is tolerated, but never a write: the BD's own writes are checked right below
    expect(
      lines
        .filter((r) => isReconciled(r, bd) && Number(r.changed) > 0)
        .map((r) => `${new Date(r.time).toISOString()} changed=${String(r.changed)} note=${String(r.note)}`),
    ).toEqual([]);
    const bdWrites = (await auditEvents(audit, windowFrom, hoist)).filter(
      (e) => e.objectRef?.resource === 'bundledeployments' && e.objectRef.name === bd && !['get', 'list', 'watch'].includes(e.verb),
    );
    expect(showAudit(bdWrites)).toBe('');

    // status records each transition's runs; nothing is under way
    const final = await t.get(bd);
    const jobRuns = (n: number) => runs(hooksOf(final, n)).filter((r) => r.includes(' Job '));
    expect(jobRuns(1)).toEqual([
      expect.stringMatching(`^pre-install Job ${release}-admission-create Succeeded`),
      expect.stringMatching(`^post-install Job ${release}-admission-patch Succeeded`),
    ]);
    expect(jobRuns(2)).toEqual([
      expect.stringMatching(`^pre-upgrade Job ${release}-admission-create Succeeded`),
      expect.stringMatching(`^post-upgrade Job ${release}-admission-patch Succeeded`),
    ]);
    expect(final?.status?.transition).toBeUndefined();
    // hook-succeeded (and the TTL controller): no hook Job is left
    expect(await t.client.get(JOB, `${release}-admission-create`, ns)).toBeUndefined();
    expect(await t.client.get(JOB, `${release}-admission-patch`, ns)).toBeUndefined();

    await deleteBundleDeployment(t.client, bd, 180_000);
  }, 900_000);

  it('the real helm install --wait and upgrade --wait run the same hooks, in the same order relative to the main objects, as Hoist', async () => {
    const { install, upgrade } = hoistSteps;
    if (!install || !upgrade) throw new Error("Hoist's install and upgrade did not run (see the test above)");
    const ns = `helm-ingress-${t.runId}`;
    const release = `ingress-nginx-h${t.runId}`;
    const home = await mkdtemp(join(tmpdir(), 'hoist-helm-home-'));
    const valuesFile = join(home, 'values.json');
    await writeFile(valuesFile, JSON.stringify(valuesFor(release, ns)));
    try {
      const helmInstall = normalize(
        await helmStep(
          home,
          ns,
          ['install', release, join(FIXTURES, 'ingress-nginx-4.15.0'), '--create-namespace', '--wait', '--timeout', '4m', '--values', valuesFile],
          release,
        ),
        release,
      );
      const helmUpgrade = normalize(
        await helmStep(home, ns, ['upgrade', release, join(FIXTURES, 'ingress-nginx-4.15.1'), '--wait', '--timeout', '4m', '--values', valuesFile], release),
        release,
      );
      for (const [what, ours, theirs] of [
        ['install', install, helmInstall],
        ['upgrade', upgrade, helmUpgrade],
      ] as const) {
        const msg = `${what}\nHoist:\n${showAudit(ours)}\nhelm:\n${showAudit(theirs)}`;
        expect(
          createdRefs(ours).filter((r) => HOOKS.includes(r)),
          msg,
        ).toEqual(createdRefs(theirs).filter((r) => HOOKS.includes(r)));
        expect(around(theirs).before.length, msg).toBeGreaterThan(0);
        expect(around(ours), msg).toEqual(around(theirs));
        expect(around(ours).among, msg).toEqual([]);
        expect(deletes(ours).map(auditRef).sort(), msg).toEqual(deletes(theirs).map(auditRef).sort());
      }
      await helmStep(home, ns, ['uninstall', release, '--wait', '--timeout', '4m'], release);
    } finally {
      await t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
      await rm(home, { recursive: true, force: true });
    }
  }, 600_000);
});

/** runs the pinned helm against the test control plane with a private home; returns its writes in `ns` (and cluster-scoped objects named `clusterPrefix`…) while it ran (helm's requests carry User-Agent Helm/<version>) */
async function helmStep(home: string, ns: string, args: string[], clusterPrefix?: string, expectFailure = false): Promise<AuditEvent[]> {
  const from = await offset();
  const done = run(toolPath('helm'), [...args, '--namespace', ns, '--kubeconfig', kubeconfigPath()], {
    env: {
      PATH: process.env.PATH,
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    },
    timeout: 300_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  if (expectFailure)
    await done.then(
      () => expect.fail(`helm ${args.join(' ')} succeeded`),
      () => undefined,
    );
  else await done;
  return writesIn(ns, (ua) => /^helm\//i.test(ua), from, undefined, clusterPrefix);
}

/** hooked-app's hooks by event, in Helm's order (weight, then name) */
const RELEASE = 'hooked';
const PRE_INSTALL = ['serviceaccounts/hooked-hooks', 'jobs/hooked-migrate', 'jobs/hooked-schema'];
const MAIN = ['configmaps/hooked-config', 'services/hooked', 'deployments/hooked'];
const POST = ['jobs/hooked-check', 'configmaps/hooked-report'];
const PRE_UPGRADE = ['serviceaccounts/hooked-hooks', 'jobs/hooked-schema'];

/** pre hooks in order, then the main set (any order), then post hooks in order */
function expectHelmOrder(created: readonly string[], pre: readonly string[], what: string): void {
  const hooks = [...pre, ...POST];
  expect(
    created.filter((r) => hooks.includes(r)),
    what,
  ).toEqual(hooks);
  expect([...created.filter((r) => MAIN.includes(r))].sort(), what).toEqual([...MAIN].sort());
  const idx = (r: string) => created.indexOf(r);
  const lastPre = Math.max(...pre.map(idx));
  const firstPost = Math.min(...POST.map(idx));
  for (const m of MAIN) {
    expect(idx(m), `${what}: ${m} after every pre hook\n${created.join('\n')}`).toBeGreaterThan(lastPre);
    expect(idx(m), `${what}: ${m} before every post hook\n${created.join('\n')}`).toBeLessThan(firstPost);
  }
}

// runs against the suite's own control plane (not HOIST_TEST_KUBECONFIG's cluster), whose audit log it reads; skipped only there
describe.runIf(isLocalControlPlane() && auditLogPath() !== '')('a chart written for the test: hooked-app', () => {
  const bd = () => `hooked-${t.runId}`;
  const ns = () => `hooked-${t.runId}`;
  let tl: Timeline;
  /** Hoist's writes in each step, for the comparison with helm's */
  const hoistSteps: Partial<Record<'install' | 'upgrade' | 'failedUpgrade' | 'uninstall', AuditEvent[]>> = {};
  const chart = async (path: string) => servePinned(files, path, await readTree(HOOKED_APP));
  const values = (v: Record<string, unknown>) => ({ helm: { releaseName: RELEASE, values: v } });
  const rv = (e: { rv: bigint } | undefined, what: string): bigint => {
    if (!e) throw new Error(`no event: ${what}`);
    return e.rv;
  };

  beforeAll(async () => {
    // the namespace exists (an install into a new one is a test of its own, below)
    await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns() } });
    tl = await Timeline.start(t.client, [JOB, CM, SA, SVC, DEPLOY], { namespace: ns() });
  });
  afterAll(async () => {
    await tl?.stop();
  });

  it('install: pre-install hooks one at a time to completion before any main object exists, post-install hooks after the main set is ready', async () => {
    const from = await offset();
    await t.create(bd(), {
      installNamespace: ns(),
      format: 'helm',
      sources: await chart('/hooked-app.tgz'),
      config: values({ version: '1' }),
      upgrade: { onFailure: 'Rollback' },
    });
    const done = await waitSucceeded(bd(), 'revision 1 installed and healthy', 180_000);

    const w = (hoistSteps.install = await writesIn(ns(), hoist, from));
    expectHelmOrder(createdRefs(w), PRE_INSTALL, `Hoist's creates:\n${showAudit(w)}`);
    expect(createdRefs(w).length, showAudit(w)).toBe(PRE_INSTALL.length + MAIN.length + POST.length);

    // one at a time: each pre hook Job complete before the next hook is created, all of them before the first main object
    const complete = (name: string) =>
      rv(
        tl.first('Job', name, (o) => hasCondition(o, 'Complete')),
        `Job ${name} Complete`,
      );
    const created = (kind: string, name: string) => rv(tl.created(kind, name), `${kind} ${name} created`);
    expect(complete('hooked-migrate')).toBeLessThan(created('Job', 'hooked-schema'));
    const firstMain = [created('ConfigMap', 'hooked-config'), created('Service', 'hooked'), created('Deployment', 'hooked')].reduce((a, b) => (a < b ? a : b));
    expect(complete('hooked-schema')).toBeLessThan(firstMain);
    // post hooks once the main set is ready (helm --wait)
    const available = rv(
      tl.first('Deployment', 'hooked', (o) => hasCondition(o, 'Available')),
      'Deployment hooked Available',
    );
    expect(created('Job', 'hooked-check')).toBeGreaterThan(available);
    expect(complete('hooked-check')).toBeLessThan(created('ConfigMap', 'hooked-report'));

    // hook-succeeded hooks are gone; the others stay, marked as hooks of this BD and not as its objects
    expect(await t.client.get(JOB, 'hooked-migrate', ns())).toBeUndefined();
    expect(await t.client.get(JOB, 'hooked-check', ns())).toBeUndefined();
    for (const [type, name] of [
      [JOB, 'hooked-schema'],
      [SA, 'hooked-hooks'],
      [CM, 'hooked-report'],
    ] as const) {
      const o = await t.client.get(type, name, ns());
      expect(o?.metadata.labels?.[LABEL_HOOK_OF], `${type.kind} ${name}`).toBe(bd());
      expect(o?.metadata.labels?.[LABEL_OWNER_NAME], `${type.kind} ${name}`).toBeUndefined();
    }
    expect(runs(hooksOf(done, 1))).toEqual([
      'pre-install ServiceAccount hooked-hooks Succeeded',
      'pre-install Job hooked-migrate Succeeded deleted',
      'pre-install Job hooked-schema Succeeded',
      'post-install Job hooked-check Succeeded deleted',
      'post-install ConfigMap hooked-report Succeeded',
    ]);
    expect(done.status?.transition).toBeUndefined();
  }, 240_000);

  it('a hook deleted by hand is not put back (hooks are not managed objects)', async () => {
    const from = await offset();
    const mark = t.log.mark();
    await t.client.delete(CM, 'hooked-report', ns());
    await waitUntil('the report hook is gone', async () => (await t.client.get(CM, 'hooked-report', ns())) === undefined);
    await sleep(3000);
    await t.idle({ quietMs: 2000 });
    expect(await t.client.get(CM, 'hooked-report', ns())).toBeUndefined();
    expect(showAudit(await writesIn(ns(), hoist, from))).toBe('');
    expect(t.log.since(mark).filter((r) => isReconciled(r, bd()) && (r.changed ?? 0) > 0)).toEqual([]);
    expect(isSucceeded(await t.get(bd()))).toBe(true);
  });

  it('upgrade: pre-upgrade hooks re-created (delete, then create) before the main set changes, post-upgrade hooks after', async () => {
    const before = {
      config: await t.client.get(CM, 'hooked-config', ns()),
      deploy: await t.client.get(DEPLOY, 'hooked', ns()),
      svc: await t.client.get(SVC, 'hooked', ns()),
    };
    const from = await offset();
    await t.patchSpec(bd(), { config: values({ version: '2' }) });
    const done = await waitSucceeded(bd(), 'revision 2 installed and healthy', 180_000, (b) => b.status?.activeRevision?.number === 2);

    const w = (hoistSteps.upgrade = await writesIn(ns(), hoist, from));
    expect(createdRefs(w), showAudit(w)).toEqual([...PRE_UPGRADE, ...POST]);
    // the main set is updated (not created) after every pre-upgrade hook and before every post-upgrade hook
    const at = (pred: (e: AuditEvent) => boolean) => w.flatMap((e, i) => (pred(e) ? [i] : []));
    const mainWrites = at((e) => MAIN.includes(auditRef(e)) && e.verb === 'patch');
    expect(mainWrites.length, showAudit(w)).toBeGreaterThan(0);
    expect(Math.max(...at((e) => isCreate(e) && PRE_UPGRADE.includes(auditRef(e)))), showAudit(w)).toBeLessThan(Math.min(...mainWrites));
    expect(Math.min(...at((e) => isCreate(e) && POST.includes(auditRef(e)))), showAudit(w)).toBeGreaterThan(Math.max(...mainWrites));
    // before-hook-creation (the default): the old schema Job (its pod template is immutable) and
    // ServiceAccount are deleted, then created anew
    for (const r of ['jobs/hooked-schema', 'serviceaccounts/hooked-hooks']) {
      const del = w.findIndex((e) => auditRef(e) === r && e.verb === 'delete' && e.responseStatus?.code === 200);
      const create = w.findIndex((e) => auditRef(e) === r && isCreate(e));
      expect(del, `${r} deleted\n${showAudit(w)}`).toBeGreaterThanOrEqual(0);
      expect(del, `${r} deleted before created\n${showAudit(w)}`).toBeLessThan(create);
    }
    expect(createdRefs(w)).not.toContain('jobs/hooked-migrate'); // pre-install only

    // the schema Job ran to completion before the main ConfigMap changed
    const schema = (await t.client.get(JOB, 'hooked-schema', ns())) as KubeObject & {
      spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value: string }> }> } } };
    };
    expect(schema.spec.template.spec.containers[0]!.env).toContainEqual({ name: 'APP_VERSION', value: '2' });
    const schemaDone = tl.first('Job', 'hooked-schema', (o) => o.metadata.uid === schema.metadata.uid && hasCondition(o, 'Complete'));
    const configChanged = tl.first('ConfigMap', 'hooked-config', (o) => (o as KubeObject & { data?: Record<string, string> }).data?.version === '2');
    expect(rv(schemaDone, 'new schema Job Complete')).toBeLessThan(rv(configChanged, 'ConfigMap at version 2'));

    // the main objects were updated in place
    expect((await t.client.get(CM, 'hooked-config', ns()))?.metadata.uid).toBe(before.config?.metadata.uid);
    expect((await t.client.get(DEPLOY, 'hooked', ns()))?.metadata.uid).toBe(before.deploy?.metadata.uid);
    expect((await t.client.get(SVC, 'hooked', ns()))?.metadata.uid).toBe(before.svc?.metadata.uid);
    expect(await t.client.get(JOB, 'hooked-check', ns())).toBeUndefined();
    expect(runs(hooksOf(done, 2))).toEqual([
      'pre-upgrade ServiceAccount hooked-hooks Succeeded',
      'pre-upgrade Job hooked-schema Succeeded',
      'post-upgrade Job hooked-check Succeeded deleted',
      'post-upgrade ConfigMap hooked-report Succeeded',
    ]);
  }, 240_000);

  it('a failing pre-upgrade Job fails the upgrade: the installed revision untouched, rolled back per onFailure', async () => {
    const snap = async () => {
      const out: Record<string, { uid?: string; rv?: string; data?: unknown }> = {};
      for (const [type, name] of [
        [CM, 'hooked-config'],
        [DEPLOY, 'hooked'],
        [SVC, 'hooked'],
      ] as const) {
        const o = (await t.client.get(type, name, ns())) as (KubeObject & { data?: unknown }) | undefined;
        out[`${type.kind} ${name}`] = { uid: o?.metadata.uid, rv: o?.metadata.resourceVersion, data: o?.data };
      }
      return out;
    };
    const before = await snap();
    const from = await offset();
    await t.patchSpec(bd(), { config: values({ version: '3', failUpgradeHook: true }) });
    const rolled = await t.waitFor(bd(), (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'the failed upgrade rolled back', 180_000);
    const progressing = cond(rolled, 'Progressing')!;
    expect(progressing.status).toBe('False');
    // "<event> hook <apiVersion> <Kind> <ns>/<name>", as every failure names its object
    expect(progressing.message).toMatch(new RegExp(`pre-upgrade hook (batch/v1 )?Job ${ns()}/hooked-schema\\b`));
    expect(progressing.message).toContain('BackoffLimitExceeded');
    expect(cond(rolled, 'Installed')?.status).toBe('True');
    expect(rolled.status?.activeRevision?.number).toBe(2);
    expect(rolled.status?.attemptedRevision?.number).toBe(3);

    // the installed revision is as it was: same objects, same versions, old data
    expect(await snap()).toEqual(before);
    expect(before['ConfigMap hooked-config']?.data).toEqual({ version: '2' });
    // the Job failed as kwok's stage made it, and was deleted for it (hook-failed); no post-upgrade
    // hook ran; the revision rolled back to ran its post-rollback hook, as helm rollback does
    const failedJob = tl.first('Job', 'hooked-schema', (o) =>
      ((o.status as { conditions?: Array<{ type: string; status: string; reason?: string }> } | undefined)?.conditions ?? []).some(
        (c) => c.type === 'Failed' && c.status === 'True' && c.reason === 'BackoffLimitExceeded',
      ),
    );
    expect(failedJob, 'the schema Job Failed (BackoffLimitExceeded)').toBeDefined();
    await waitUntil('the failed schema Job deleted (hook-failed)', async () => (await t.client.get(JOB, 'hooked-schema', ns())) === undefined);
    const w = (hoistSteps.failedUpgrade = await writesIn(ns(), hoist, from));
    expect(createdRefs(w), showAudit(w)).toEqual(['serviceaccounts/hooked-hooks', 'jobs/hooked-schema', 'jobs/hooked-rollback']);
    const rollbackJob = tl.created('Job', 'hooked-rollback')?.object as
      (KubeObject & { spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value: string }> }> } } } }) | undefined;
    expect(rollbackJob?.spec.template.spec.containers[0]!.env, "revision 2's post-rollback hook").toContainEqual({ name: 'APP_VERSION', value: '2' });
    await waitUntil('the post-rollback Job deleted (hook-succeeded)', async () => (await t.client.get(JOB, 'hooked-rollback', ns())) === undefined);
    const allRuns = [...(rolled.status?.revisions ?? []).flatMap((r) => r.hooks ?? []), ...(rolled.status?.transition?.hooks ?? [])];
    const failedRuns = allRuns.filter((h) => h.event === 'pre-upgrade' && h.name === 'hooked-schema' && h.result === 'Failed');
    expect(failedRuns, JSON.stringify(rolled.status)).toHaveLength(1);
    expect(failedRuns[0]?.message).toContain('BackoffLimitExceeded');
    expect(failedRuns[0]?.deleted, 'hook-failed recorded').toBe(true);
    expect(runs(allRuns.filter((h) => h.event === 'post-rollback')), JSON.stringify(rolled.status)).toEqual([
      'post-rollback Job hooked-rollback Succeeded deleted',
    ]);
  }, 240_000);

  it('uninstall: the pre-delete hook runs to completion before any object is deleted', async () => {
    const from = await offset();
    await deleteBundleDeployment(t.client, bd(), 180_000);
    const w = (hoistSteps.uninstall = await writesIn(ns(), hoist, from));
    const cleanup = w.findIndex((e) => auditRef(e) === 'jobs/hooked-cleanup' && isCreate(e));
    const firstDelete = w.findIndex((e) => MAIN.includes(auditRef(e)) && e.verb === 'delete');
    expect(cleanup, showAudit(w)).toBeGreaterThanOrEqual(0);
    expect(firstDelete, showAudit(w)).toBeGreaterThan(cleanup);
    // complete before the first main object went (a deletionTimestamp or gone)
    const cleanupDone = rv(
      tl.first('Job', 'hooked-cleanup', (o) => hasCondition(o, 'Complete')),
      'cleanup Job Complete',
    );
    const firstGone = tl.events.find(
      (e) => MAIN.includes(`${e.kind.toLowerCase()}s/${e.name}`) && (e.type === 'DELETED' || !!e.object.metadata.deletionTimestamp),
    );
    expect(cleanupDone).toBeLessThan(rv(firstGone, 'a main object deleted'));
    // everything of the release is gone, the cleanup Job too (hook-succeeded)
    for (const [type, name] of [
      [CM, 'hooked-config'],
      [DEPLOY, 'hooked'],
      [SVC, 'hooked'],
      [JOB, 'hooked-cleanup'],
    ] as const) {
      await waitUntil(`${type.kind} ${name} gone`, async () => (await t.client.get(type, name, ns())) === undefined, 60_000);
    }
  }, 240_000);

  it('an install into a namespace that does not exist yet: Hoist creates it before the pre-install hooks (as helm install --create-namespace)', async () => {
    const name = `hooked-new-${t.runId}`;
    const from = await offset();
    await t.create(name, { installNamespace: name, format: 'helm', sources: await chart('/hooked-app.tgz'), config: values({ version: '1' }) });
    try {
      await waitSucceeded(name, 'installed into a new namespace', 180_000);
      const w = (await auditEvents(audit, from, hoist)).filter(
        (e) => isCreate(e) && (e.objectRef?.resource === 'namespaces' ? e.objectRef.name === name : e.objectRef?.namespace === name),
      );
      expect(w.map(auditRef)[0], showAudit(w)).toBe(`namespaces/${name}`);
      expect(
        w.map(auditRef).filter((r) => PRE_INSTALL.includes(r)),
        showAudit(w),
      ).toEqual(PRE_INSTALL);
    } finally {
      await deleteBundleDeployment(t.client, name, 180_000);
    }
  }, 300_000);

  it('the real helm (install --wait, upgrade --wait, a failing upgrade --atomic, uninstall) runs the same hooks in the same order as Hoist', async () => {
    const { install, upgrade, failedUpgrade, uninstall } = hoistSteps;
    if (!install || !upgrade || !failedUpgrade || !uninstall)
      throw new Error(`Hoist's steps did not all run (see the tests above): ${Object.keys(hoistSteps).join(', ')}`);
    const ns2 = `helm-${t.runId}`;
    const home = await mkdtemp(join(tmpdir(), 'hoist-helm-home-'));
    const step = (args: string[], expectFailure = false) => helmStep(home, ns2, args, undefined, expectFailure);
    const hooks = [...PRE_INSTALL, ...POST];
    try {
      const helmInstall = await step(['install', RELEASE, HOOKED_APP, '--create-namespace', '--wait', '--timeout', '4m', '--set', 'version=1']);
      expectHelmOrder(createdRefs(helmInstall), PRE_INSTALL, `helm's creates:\n${showAudit(helmInstall)}`);
      expect(createdRefs(install).filter((r) => hooks.includes(r))).toEqual(createdRefs(helmInstall).filter((r) => hooks.includes(r)));
      expect(deletes(install).map(auditRef).sort(), showAudit(install)).toEqual(deletes(helmInstall).map(auditRef).sort());

      const helmUpgrade = await step(['upgrade', RELEASE, HOOKED_APP, '--wait', '--timeout', '4m', '--set', 'version=2']);
      expect(createdRefs(upgrade), `Hoist:\n${showAudit(upgrade)}\nhelm:\n${showAudit(helmUpgrade)}`).toEqual(createdRefs(helmUpgrade));

      // helm's --atomic rolls a failed upgrade back, as onFailure: Rollback does
      const helmFailed = await step(
        ['upgrade', RELEASE, HOOKED_APP, '--atomic', '--wait', '--timeout', '2m', '--set', 'version=3', '--set', 'failUpgradeHook=true'],
        true,
      );
      expect(createdRefs(failedUpgrade), `Hoist:\n${showAudit(failedUpgrade)}\nhelm:\n${showAudit(helmFailed)}`).toEqual(createdRefs(helmFailed));
      expect(deletes(failedUpgrade).map(auditRef), `Hoist:\n${showAudit(failedUpgrade)}\nhelm:\n${showAudit(helmFailed)}`).toEqual(
        deletes(helmFailed).map(auditRef),
      );

      const helmUninstall = await step(['uninstall', RELEASE, '--wait', '--timeout', '4m']);
      for (const [who, w] of [
        ['Hoist', uninstall],
        ['helm', helmUninstall],
      ] as const) {
        const cleanup = w.findIndex((e) => auditRef(e) === 'jobs/hooked-cleanup' && isCreate(e));
        const firstDelete = w.findIndex((e) => MAIN.includes(auditRef(e)) && e.verb === 'delete');
        expect(cleanup, `${who}:\n${showAudit(w)}`).toBeGreaterThanOrEqual(0);
        expect(firstDelete, `${who}: the pre-delete hook first\n${showAudit(w)}`).toBeGreaterThan(cleanup);
      }
      expect(createdRefs(uninstall)).toEqual(createdRefs(helmUninstall));
      expect(
        deletes(uninstall)
          .map(auditRef)
          .filter((r) => MAIN.includes(r))
          .sort(),
      ).toEqual(
        deletes(helmUninstall)
          .map(auditRef)
          .filter((r) => MAIN.includes(r))
          .sort(),
      );
    } finally {
      await t.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns2, undefined).catch(() => undefined);
      await rm(home, { recursive: true, force: true });
    }
  }, 600_000);
});
