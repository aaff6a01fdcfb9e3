/**
 * podProblem / podProblems over pod statuses shaped as the real node's kubelet writes them (the
 * fields and reasons seen on it: a crash-looping web container, a never-ready one, an image that
 * is not on the node, an unschedulable pod); test/e2e/real-pods-health.test.ts runs the same
 * functions on live pods.
 */
import { describe, expect, it } from 'vitest';
import { podProblem, podProblems, workloadFailure } from '../../../src/health/pods.ts';

const pod = (name: string, status: object) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'n' }, status });
const notReady = { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [web]' };

const crashLooping = pod('crasher-7d4b9-x2x9k', {
  phase: 'Running',
  conditions: [{ type: 'PodScheduled', status: 'True' }, notReady],
  containerStatuses: [
    {
      name: 'web',
      ready: false,
      restartCount: 3,
      state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container=web pod=crasher-7d4b9-x2x9k_n(…)' } },
      lastState: { terminated: { exitCode: 1, reason: 'Error' } },
    },
  ],
});
const neverReady = pod('web-5f6c7-abcde', {
  phase: 'Running',
  conditions: [{ type: 'PodScheduled', status: 'True' }, notReady],
  containerStatuses: [{ name: 'web', ready: false, restartCount: 0, state: { running: { startedAt: '2026-11-27T17:00:00Z' } } }],
});
const ready = pod('web-5f6c7-ready', {
  phase: 'Running',
  conditions: [{ type: 'Ready', status: 'True' }],
  containerStatuses: [{ name: 'web', ready: true, state: { running: {} } }],
});

describe('podProblem', () => {
  it('names a crash-looping container, its restarts and last exit code', () => {
    expect(podProblem(crashLooping)).toBe('pod crasher-7d4b9-x2x9k: container web is CrashLoopBackOff (restarted 3 times; last exit code 1 (Error))');
  });
  it('names the pod condition of a running container whose readiness probe fails', () => {
    expect(podProblem(neverReady)).toBe(
      'pod web-5f6c7-abcde: Ready=False ContainersNotReady (containers with unready status: [web]); running but not ready: readiness probe of web failing',
    );
  });
  it('an image that is not on the node, and an unschedulable pod', () => {
    const noImage = pod('p', {
      phase: 'Pending',
      containerStatuses: [
        { name: 'web', state: { waiting: { reason: 'ErrImageNeverPull', message: 'Container image "x" is not present with pull policy of Never' } } },
      ],
    });
    expect(podProblem(noImage)).toBe('pod p: container web is ErrImageNeverPull (Container image "x" is not present with pull policy of Never)');
    const unschedulable = pod('q', {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/2 nodes are available' }],
    });
    expect(podProblem(unschedulable)).toBe('pod q not scheduled: Unschedulable (0/2 nodes are available)');
  });
  it('nothing for a ready pod, a starting one, or one being deleted', () => {
    expect(podProblem(ready)).toBeUndefined();
    expect(
      podProblem(pod('s', { phase: 'Pending', containerStatuses: [{ name: 'web', state: { waiting: { reason: 'ContainerCreating' } } }] })),
    ).toBeUndefined();
    expect(podProblem({ ...crashLooping, metadata: { ...crashLooping.metadata, deletionTimestamp: '2026-11-27T17:00:00Z' } })).toBeUndefined();
  });
});

describe('podProblems', () => {
  it('worst first, at most two, and how many more', () => {
    expect(podProblems([ready, neverReady, crashLooping])).toBe(`${podProblem(crashLooping)}; ${podProblem(neverReady)}`);
    expect(podProblems([neverReady, neverReady, neverReady, crashLooping])).toMatch(/; 2 more$/);
    expect(podProblems([ready])).toBeUndefined();
  });
});

describe('podProblem between two back-offs of a crash loop', () => {
  it('names a restarted container that exited non-zero as crash-looping, with its last exit', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      status: { phase: 'Running', containerStatuses: [{ name: 'web', restartCount: 5, state: { terminated: { exitCode: 1, reason: 'Error' } } }] },
    };
    expect(podProblem(pod)).toBe('pod p: container web is crash-looping (restarted 5 times; last exit code 1 (Error))');
    const once = { ...pod, status: { phase: 'Running', containerStatuses: [{ name: 'web', restartCount: 0, state: { terminated: { exitCode: 2 } } }] } };
    expect(podProblem(once)).toBe('pod p: container web exited with code 2');
  });
});

describe('workloadFailure: kstatus Pod rule with a grace for workloads', () => {
  const applied = Date.parse('2026-12-03T12:00:00Z');
  const at = (s: number) => new Date(applied + s * 1000).toISOString();
  const live = (name: string, createdS: number, status: object) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'n', creationTimestamp: at(createdS) },
    status,
  });
  const looping = (restarts: number, createdS = 1) =>
    live('web-1', createdS, {
      phase: 'Running',
      conditions: [notReady],
      containerStatuses: [
        {
          name: 'web',
          restartCount: restarts,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
          lastState: { terminated: { exitCode: 1, reason: 'Error' } },
        },
      ],
    });
  const unschedulable = (sinceS: number) =>
    live('web-2', sinceS, {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/2 nodes are available', lastTransitionTime: at(sinceS) }],
    });
  const cases: Array<[string, object[], number, ReturnType<typeof workloadFailure>]> = [
    ['two restarts: a flap, look again', [looping(2)], 40, { recheckAt: applied + 50_000 }],
    [
      'three restarts: failed, naming the container',
      [looping(3)],
      80,
      { failure: { message: 'pod web-1: container web is CrashLoopBackOff (restarted 3 times; last exit code 1 (Error))' } },
    ],
    ['a crash-looping pod of the previous revision says nothing of this one', [looping(9, -60)], 80, {}],

    [
      'three restarts, seen between two back-offs (the exit itself): failed',
      [
        live('web-5', 1, {
          phase: 'Running',
          conditions: [notReady],
          containerStatuses: [{ name: 'web', restartCount: 3, state: { terminated: { exitCode: 1, reason: 'Error' } } }],
        }),
      ],
      80,
      { failure: { message: 'pod web-5: container web is crash-looping (restarted 3 times; last exit code 1 (Error))' } },
    ],
    [
      'restarted and running again, not ready: look again',
      [live('web-6', 1, { phase: 'Running', conditions: [notReady], containerStatuses: [{ name: 'web', restartCount: 2, state: { running: {} } }] })],
      40,
      { recheckAt: applied + 50_000 },
    ],
    ['unschedulable within its grace: look again when it ends', [unschedulable(2)], 30, { recheckAt: applied + 62_000 }],
    [
      'unschedulable past its grace: failed',
      [unschedulable(2)],
      62,
      { failure: { message: 'pod web-2 not scheduled: Unschedulable (0/2 nodes are available)' } },
    ],
    [
      'running, not ready, never restarted (its first crash changes no workload status): look again in 10 s',
      [live('web-7', 1, { phase: 'Running', conditions: [notReady], containerStatuses: [{ name: 'web', restartCount: 0, state: { running: {} } }] })],
      15,
      { recheckAt: applied + 25_000 },
    ],
    [
      '...and less often the longer it has taken: after half the time since the apply',
      [live('web-7', 1, { phase: 'Running', conditions: [notReady], containerStatuses: [{ name: 'web', restartCount: 0, state: { running: {} } }] })],
      300,
      { recheckAt: applied + 450_000 },
    ],
    ['a ready pod: nothing', [live('web-3', 1, { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] })], 80, {}],
    ['an evicted (Failed) pod is replaced by its workload: nothing', [live('web-4', 1, { phase: 'Failed', reason: 'Evicted' })], 80, {}],
  ];
  it.each(cases)('%s', (_name, pods, nowS, expected) => {
    expect(workloadFailure(pods as never, applied, applied + nowS * 1000)).toEqual(expected);
  });
  it('counts a pod created in the second of the apply (creationTimestamp has whole seconds)', () => {
    const pod = { ...looping(3), metadata: { name: 'web-1', namespace: 'n', creationTimestamp: at(0) } };
    expect(workloadFailure([pod] as never, applied + 700, applied + 80_000).failure).toBeDefined();
    expect(workloadFailure([pod] as never, applied + 1000, applied + 80_000).failure).toBeUndefined();
  });
});
