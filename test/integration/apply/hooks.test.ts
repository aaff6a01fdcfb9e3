/**
 * The HookRunner against the real API server, with kube-controller-manager's Job and TTL
 * controllers and kwok completing Job pods: the order Helm runs hooks in, a Job waited until
 * Complete (also when its TTL of 0 deletes it at once), the delete policies, and what is never
 * deleted (an object that is not this BundleDeployment's hook).
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HookRun } from '../../../api/v1alpha2/types.ts';
import { HookRunner, type HookTarget } from '../../../src/apply/hooks.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { CancelledError, isHoistError } from '../../../src/util/errors.ts';
import { kubeconfigPath } from '../../support/env.ts';

const log = pino({ level: 'silent' });
const run = randomBytes(3).toString('hex');
const ns = `hooks-${run}`;
let client: RestKubeClient;

const annotated = (events: string, weight?: number, policy?: string): Record<string, string> => ({
  'core.rukpak.io/hook': events,
  'helm.sh/hook': events,
  ...(weight === undefined ? {} : { 'helm.sh/hook-weight': String(weight) }),
  ...(policy ? { 'helm.sh/hook-delete-policy': policy } : {}),
});
const job = (name: string, annotations: Record<string, string>, ttl?: number): KubeObject =>
  ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations },
    spec: {
      backoffLimit: 0,
      ...(ttl === undefined ? {} : { ttlSecondsAfterFinished: ttl }),
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } },
    },
  }) as KubeObject;
const sa = (name: string, annotations: Record<string, string>): KubeObject => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, annotations } });
const cm = (name: string, annotations: Record<string, string>): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, annotations } });
const pod = (name: string, annotations: Record<string, string>): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, annotations },
    spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] },
  }) as KubeObject;

const target = (name: string): HookTarget => ({ name, revision: 1, installNamespace: ns, actor: client });
const deadline = () => Date.now() + 120_000;

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});
afterAll(async () => {
  await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
  await client.close();
});

describe('HookRunner against the API server', () => {
  it('runs the hooks of one event in helm order, waits for the Job, and deletes by policy', async () => {
    const runner = new HookRunner({ log });
    const hooks = [
      job('migrate', annotated('pre-install,pre-upgrade', 0, 'before-hook-creation,hook-succeeded'), 0),
      cm('config', annotated('pre-install', 5)),
      sa('runner', annotated('pre-install', -10)),
      cm('not-this-event', annotated('post-install', -20)),
    ];
    const started: string[] = [];
    const r = await runner.run(target('app'), 'pre-install', hooks, { deadline: deadline(), onRun: (x) => x.result === 'Running' && started.push(x.name) });
    expect(r.failed).toBeUndefined();
    expect(started).toEqual(['runner', 'migrate', 'config']);
    expect(r.runs.map((x) => [x.name, x.result, x.deleted ?? false])).toEqual([
      ['runner', 'Succeeded', false],
      ['migrate', 'Succeeded', true],
      ['config', 'Succeeded', false],
    ]);
    // the Job's TTL (0) or hook-succeeded removed it; the others stay, labelled as this BD's hooks and nothing else
    expect(await client.get({ apiVersion: 'batch/v1', kind: 'Job' }, 'migrate', ns)).toBeUndefined();
    const kept = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'config', ns);
    expect(kept?.metadata.labels).toEqual({ 'core.rukpak.io/hook-of': 'app' });
    expect(await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'not-this-event', ns)).toBeUndefined();

    // a hook that already succeeded in this transition is not run again
    client.requests.reset();
    const again = await runner.run(target('app'), 'pre-install', hooks, { deadline: deadline(), done: r.runs });
    expect(again.runs).toEqual(r.runs);
    expect(client.requests.snapshot()).not.toHaveProperty('create');

    // the next transition: before-hook-creation (the default) deletes and re-creates
    const uid = kept?.metadata.uid;
    const next = await runner.run(target('app'), 'pre-install', hooks, { deadline: deadline() });
    expect(next.failed).toBeUndefined();
    expect((await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'config', ns))?.metadata.uid).not.toBe(uid);
  });

  // issue 23: the reconcile's time budget stops a wait for a hook; the retry waits on the same hook
  it('a wait cut short goes on with the hook it created: no second create, the same object', async () => {
    const runner = new HookRunner({ log });
    const hooks = [job('long-migrate', annotated('pre-upgrade', 0, 'before-hook-creation'))];
    const stop = new AbortController();
    const runs: HookRun[] = [];
    const cut = await runner
      .run(target('resume'), 'pre-upgrade', hooks, {
        deadline: deadline(),
        signal: stop.signal,
        onRun: (x) => {
          runs.push(x);
          if (x.result === 'Running') stop.abort(new Error('reconcile budget'));
        },
      })
      .catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(CancelledError);
    expect(runs.map((x) => x.result)).toEqual(['Running']);
    const uid = (await client.get({ apiVersion: 'batch/v1', kind: 'Job' }, 'long-migrate', ns))?.metadata.uid;
    expect(uid).toBeDefined();

    client.requests.reset();
    const resumed = await runner.run(target('resume'), 'pre-upgrade', hooks, { deadline: deadline(), done: runs });
    expect(resumed.failed).toBeUndefined();
    expect(resumed.runs).toMatchObject([{ name: 'long-migrate', result: 'Succeeded', startedAt: runs[0]!.startedAt }]);
    expect(client.requests.snapshot()).not.toHaveProperty('create');
    expect(client.requests.snapshot()).not.toHaveProperty('delete');
    expect((await client.get({ apiVersion: 'batch/v1', kind: 'Job' }, 'long-migrate', ns))?.metadata.uid).toBe(uid);
  });

  it("never deletes an object of the same name that is not this BundleDeployment's hook", async () => {
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'foreign', namespace: ns }, data: { mine: 'yes' } });
    const runner = new HookRunner({ log });
    const err = await runner.run(target('other'), 'pre-upgrade', [cm('foreign', annotated('pre-upgrade'))], { deadline: deadline() }).catch((e: unknown) => e);
    expect(isHoistError(err) && err.reason).toBe('ConflictingOwner');
    expect(String(err)).toContain('is not a hook of this BundleDeployment');
    expect((await client.get<KubeObject & { data?: Record<string, string> }>({ apiVersion: 'v1', kind: 'ConfigMap' }, 'foreign', ns))?.data).toEqual({
      mine: 'yes',
    });
  });

  it('fails a hook that does not complete before the deadline, and deletes it under hook-failed', async () => {
    // kwok runs pods not owned by a Job forever: this Pod hook never succeeds
    const runner = new HookRunner({ log });
    const runs: HookRun[] = [];
    const r = await runner.run(target('slow'), 'post-upgrade', [pod('never-done', annotated('post-upgrade', 0, 'hook-failed'))], {
      deadline: Date.now() + 3000,
      onRun: (x) => runs.push(x),
    });
    expect(r.failed?.subject).toBe(`post-upgrade hook v1 Pod ${ns}/never-done`);
    expect(r.failed?.run).toMatchObject({ result: 'Failed', message: 'did not complete within the progressDeadline', deleted: true });
    expect(runs.map((x) => x.result)).toEqual(['Running', 'Failed']);
  });
});
