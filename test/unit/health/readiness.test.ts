/**
 * Built-in readiness, rule by rule, on states as the controllers leave them: the generic rules
 * (deletion, generation lag, Reconciling, Stalled, Ready) and each kind's, with the deliberate
 * differences from kstatus named.
 */
import { describe, expect, it } from 'vitest';
import { readinessOf, verdictAt, type Readiness } from '../../../src/health/readiness.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const NOW = Date.parse('2026-12-03T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

const obj = (apiVersion: string, kind: string, rest: Partial<KubeObject> & { spec?: unknown; status?: unknown } = {}): KubeObject => ({
  apiVersion,
  kind,
  ...rest,
  metadata: { name: 'x', namespace: 'n', ...rest.metadata },
});

const deployStatus = (o: object) => ({
  observedGeneration: 2,
  replicas: 2,
  updatedReplicas: 2,
  readyReplicas: 2,
  availableReplicas: 2,
  conditions: [
    { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
    { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
  ],
  ...o,
});
const deploy = (status: object, generation = 2, spec: object = { replicas: 2, progressDeadlineSeconds: 600 }) =>
  obj('apps/v1', 'Deployment', { metadata: { name: 'd', generation }, spec, status: deployStatus(status) });

type Row = [name: string, o: KubeObject, readiness: Readiness, reason?: string];

const rows: Row[] = [
  // generic rules, any kind
  [
    'deleting: Terminating, whatever the status',
    { ...deploy({}), metadata: { name: 'd', generation: 2, deletionTimestamp: ago(1) } },
    'Terminating',
    'Terminating',
  ],
  [
    'custom resource Stalled=True without Ready: Failed',
    obj('example.io/v1', 'Widget', {
      metadata: { name: 'w', generation: 1 },
      status: { conditions: [{ type: 'Stalled', status: 'True', reason: 'BadSpec', message: 'x' }] },
    }),
    'Failed',
    'BadSpec',
  ],
  [
    'custom resource Reconciling=True: InProgress',
    obj('example.io/v1', 'Widget', { status: { conditions: [{ type: 'Reconciling', status: 'True', reason: 'Progressing' }] } }),
    'InProgress',
    'Progressing',
  ],
  [
    'custom resource with observedGeneration behind and no Ready: InProgress',
    obj('example.io/v1', 'Widget', { metadata: { name: 'w', generation: 3 }, status: { observedGeneration: 2 } }),
    'InProgress',
    'LatestGenerationNotObserved',
  ],
  [
    'Flux Kustomization as kustomize-controller leaves a failed build: Stalled=True, Ready=False',
    obj('kustomize.toolkit.fluxcd.io/v1', 'Kustomization', {
      metadata: { name: 'k', generation: 1 },
      status: {
        observedGeneration: 1,
        conditions: [
          { type: 'Ready', status: 'False', reason: 'BuildFailed', message: 'kustomize build failed' },
          { type: 'Stalled', status: 'True', reason: 'BuildFailed', message: 'kustomize build failed' },
        ],
      },
    }),
    'Failed',
    'BuildFailed',
  ],
  [
    'custom resource Ready=Unknown: InProgress',
    obj('example.io/v1', 'Widget', { status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'Init' }] } }),
    'InProgress',
    'Init',
  ],
  ['custom resource without conditions: Ready', obj('example.io/v1', 'Widget', { status: {} }), 'Ready'],
  ['malformed status (a list): treated as empty', obj('example.io/v1', 'Widget', { status: [] as unknown as object }), 'Ready'],
  ['malformed conditions (not a list)', obj('example.io/v1', 'Widget', { status: { conditions: 'Ready' } }), 'Ready'],
  // PodDisruptionBudget
  [
    'PDB right after an upgrade: previous generation observed',
    obj('policy/v1', 'PodDisruptionBudget', { metadata: { name: 'p', generation: 2 }, status: { observedGeneration: 1, disruptionsAllowed: 1 } }),
    'InProgress',
    'LatestGenerationNotObserved',
  ],
  ['PDB observed', obj('policy/v1', 'PodDisruptionBudget', { metadata: { name: 'p', generation: 2 }, status: { observedGeneration: 2 } }), 'Ready'],
  // Deployment
  ['Deployment rolled out', deploy({}), 'Ready'],
  ['Deployment: generation not observed yet after an upgrade', deploy({ observedGeneration: 1 }), 'InProgress', 'LatestGenerationNotObserved'],
  ['Deployment: old replicas terminating', deploy({ replicas: 3 }), 'InProgress', 'ExtraPods'],
  ['Deployment: one available', deploy({ availableReplicas: 1 }), 'InProgress', 'LessAvailable'],
  [
    'Deployment past its progress deadline',
    deploy({
      availableReplicas: 1,
      conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "d-1" has timed out progressing.' }],
    }),
    'Failed',
    'ProgressDeadlineExceeded',
  ],
  [
    'Deployment whose new ReplicaSet is not available yet (Progressing=True ReplicaSetUpdated)',
    deploy({
      conditions: [
        { type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated' },
        { type: 'Available', status: 'True' },
      ],
    }),
    'InProgress',
    'ReplicaSetNotAvailable',
  ],
  // ReplicaSet
  [
    'ReplicaSet with too few available',
    obj('apps/v1', 'ReplicaSet', { spec: { replicas: 2 }, status: { replicas: 2, fullyLabeledReplicas: 2, availableReplicas: 1, readyReplicas: 1 } }),
    'InProgress',
    'LessAvailable',
  ],
  [
    'ReplicaSet with a ReplicaFailure (quota)',
    obj('apps/v1', 'ReplicaSet', { spec: { replicas: 1 }, status: { conditions: [{ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate' }] } }),
    'InProgress',
    'ReplicaFailure',
  ],
  [
    'ReplicaSet complete',
    obj('apps/v1', 'ReplicaSet', { spec: { replicas: 2 }, status: { replicas: 2, fullyLabeledReplicas: 2, availableReplicas: 2, readyReplicas: 2 } }),
    'Ready',
  ],
  // StatefulSet
  [
    'StatefulSet staged with partition 2 of 3: ready once the one pod above the partition is updated',
    obj('apps/v1', 'StatefulSet', {
      metadata: { name: 's', generation: 2 },
      spec: { replicas: 3, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } },
      status: { observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: 's-1', updateRevision: 's-2' },
    }),
    'Ready',
  ],
  [
    'StatefulSet staged with partition: not yet updated',
    obj('apps/v1', 'StatefulSet', {
      metadata: { name: 's', generation: 2 },
      spec: { replicas: 3, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } },
      status: { observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 0, currentRevision: 's-1', updateRevision: 's-2' },
    }),
    'InProgress',
    'PartitionRollout',
  ],
  [
    'StatefulSet mid rolling update',
    obj('apps/v1', 'StatefulSet', {
      metadata: { name: 's', generation: 2 },
      spec: { replicas: 3 },
      status: { observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 1, currentRevision: 's-1', updateRevision: 's-2' },
    }),
    'InProgress',
    'RevisionMismatch',
  ],
  // DaemonSet
  [
    'DaemonSet not observed by its controller yet',
    obj('apps/v1', 'DaemonSet', { metadata: { name: 'ds', generation: 1 }, status: { desiredNumberScheduled: 0 } }),
    'InProgress',
    'NoObservedGeneration',
  ],
  [
    'DaemonSet updating',
    obj('apps/v1', 'DaemonSet', {
      metadata: { name: 'ds', generation: 2 },
      status: { observedGeneration: 2, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 1, numberAvailable: 2, numberReady: 2 },
    }),
    'InProgress',
    'LessUpdated',
  ],
  // Pod
  ['Pod without status', obj('v1', 'Pod'), 'InProgress', 'PodNotObserved'],
  [
    'Pod Succeeded (Ready=False PodCompleted)',
    obj('v1', 'Pod', { status: { phase: 'Succeeded', conditions: [{ type: 'Ready', status: 'False', reason: 'PodCompleted' }] } }),
    'Ready',
  ],
  ['Pod Failed: deliberate difference, Failed', obj('v1', 'Pod', { status: { phase: 'Failed', reason: 'Evicted' } }), 'Failed', 'PodFailed'],
  [
    'Pod crash-looping',
    obj('v1', 'Pod', {
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }],
        containerStatuses: [{ name: 'web', restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } } }],
      },
    }),
    'Failed',
    'ContainerCrashLooping',
  ],
  [
    'Pod running, readiness probe failing',
    obj('v1', 'Pod', {
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }],
        containerStatuses: [{ name: 'web', state: { running: {} } }],
      },
    }),
    'InProgress',
    'PodRunningNotReady',
  ],
  [
    'Pod unschedulable for 20 s: Failed',
    obj('v1', 'Pod', {
      metadata: { name: 'p', creationTimestamp: ago(20) },
      status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/2 nodes are available' }] },
    }),
    'Failed',
    'PodUnschedulable',
  ],
  [
    'Pod pending, scheduled',
    obj('v1', 'Pod', { status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] } }),
    'InProgress',
    'PodPending',
  ],
  // Job: deliberate difference, Complete needed
  [
    'Job running: deliberate difference, not ready until Complete',
    obj('batch/v1', 'Job', { status: { startTime: ago(5), active: 1 } }),
    'InProgress',
    'JobRunning',
  ],
  ['Job Complete', obj('batch/v1', 'Job', { status: { startTime: ago(5), succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] } }), 'Ready'],
  [
    'Job Failed (BackoffLimitExceeded)',
    obj('batch/v1', 'Job', {
      status: {
        startTime: ago(5),
        failed: 7,
        conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }],
      },
    }),
    'Failed',
    'JobFailed',
  ],
  ['Job suspended on purpose', obj('batch/v1', 'Job', { spec: { suspend: true }, status: { conditions: [{ type: 'Suspended', status: 'True' }] } }), 'Ready'],
  ['CronJob', obj('batch/v1', 'CronJob', { status: {} }), 'Ready'],
  // Service
  ['ClusterIP Service', obj('v1', 'Service', { spec: { type: 'ClusterIP', clusterIP: '10.0.0.1' } }), 'Ready'],
  [
    'LoadBalancer Service without an address: deliberate difference, waits as helm --wait does',
    obj('v1', 'Service', { spec: { type: 'LoadBalancer', clusterIP: '10.0.0.1' }, status: { loadBalancer: {} } }),
    'InProgress',
    'NoAddressAssigned',
  ],
  [
    'LoadBalancer Service with spec.externalIPs and no ingress: ready, as helm --wait (ready.go serviceReady)',
    obj('v1', 'Service', { spec: { type: 'LoadBalancer', clusterIP: '10.0.0.1', externalIPs: ['192.0.2.7'] }, status: { loadBalancer: {} } }),
    'Ready',
  ],
  [
    'LoadBalancer Service with an address',
    obj('v1', 'Service', { spec: { type: 'LoadBalancer', clusterIP: '10.0.0.1' }, status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } }),
    'Ready',
  ],
  // CRD
  [
    'CRD whose names are not accepted: Failed with its message',
    obj('apiextensions.k8s.io/v1', 'CustomResourceDefinition', {
      status: {
        conditions: [
          { type: 'NamesAccepted', status: 'False', reason: 'MultipleNamesNotAllowed', message: '"widgets" is already in use' },
          { type: 'Established', status: 'False', reason: 'NotAccepted' },
        ],
      },
    }),
    'Failed',
    'MultipleNamesNotAllowed',
  ],
  [
    'CRD installing',
    obj('apiextensions.k8s.io/v1', 'CustomResourceDefinition', { status: { conditions: [{ type: 'Established', status: 'False', reason: 'Installing' }] } }),
    'InProgress',
    'Installing',
  ],
  // APIService: deliberate difference
  [
    'APIService not available',
    obj('apiregistration.k8s.io/v1', 'APIService', { status: { conditions: [{ type: 'Available', status: 'False', reason: 'MissingEndpoints' }] } }),
    'InProgress',
    'MissingEndpoints',
  ],
  ['APIService available', obj('apiregistration.k8s.io/v1', 'APIService', { status: { conditions: [{ type: 'Available', status: 'True' }] } }), 'Ready'],
  ['PVC pending', obj('v1', 'PersistentVolumeClaim', { status: { phase: 'Pending' } }), 'InProgress', 'NotBound'],
  ['Secret', obj('v1', 'Secret'), 'Ready'],
];

describe('readinessOf', () => {
  for (const [name, o, readiness, reason] of rows) {
    it(name, () => {
      const v = readinessOf(o, NOW);
      expect(v.readiness).toBe(readiness);
      if (reason !== undefined) expect(v.reason).toBe(reason);
    });
  }

  it('keeps the message of the condition that decided', () => {
    const v = readinessOf(
      deploy({
        conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "d-1" has timed out progressing.' }],
      }),
      NOW,
    );
    expect(v.message).toBe('ReplicaSet "d-1" has timed out progressing.');
  });

  it('a Pod within its 15 s scheduling window: InProgress now, Failed once the window has passed', () => {
    const pod = obj('v1', 'Pod', {
      metadata: { name: 'p', creationTimestamp: ago(5) },
      status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/2 nodes are available' }] },
    });
    const v = readinessOf(pod, NOW);
    expect(v).toMatchObject({ readiness: 'InProgress', reason: 'PodNotScheduled', until: { at: NOW + 10_000 } });
    expect(verdictAt(v, NOW + 9_999).readiness).toBe('InProgress');
    expect(verdictAt(v, NOW + 10_000)).toMatchObject({
      readiness: 'Failed',
      reason: 'PodUnschedulable',
      message: 'Pod could not be scheduled: 0/2 nodes are available',
    });
  });
});
