/**
 * kstatus's rules for the built-in kinds (pkg/kstatus/status core.go), with kstatus's reasons and
 * messages, plus Hoist's deliberate differences (readiness.ts DIFFERENCES): a Job needs Complete,
 * a LoadBalancer Service an address, an APIService Available, and a Pod in phase Failed fails.
 * Each rule runs after the generic ones (deletion, generation, Reconciling, Stalled).
 */
import type { KubeObject } from '../kube/types.ts';
import type { HealthVerdict } from './readiness.ts';

export interface Cond {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export type Status = Record<string, unknown> & { conditions?: unknown };

type Rule = (obj: KubeObject, status: Status, now: number) => HealthVerdict;

/** how long a Pod may stay unscheduled before kstatus calls it unschedulable (its ScheduleWindow) */
export const SCHEDULE_WINDOW_MS = 15_000;

export function conditions(status: Status): Cond[] {
  const list = status.conditions;
  if (!Array.isArray(list)) return [];
  return list.filter((c): c is Cond => !!c && typeof c === 'object' && typeof (c as Cond).type === 'string' && typeof (c as Cond).status === 'string');
}

export function cond(status: Status, type: string): Cond | undefined {
  return conditions(status).find((c) => c.type === type);
}

/** a number at a path, or the default (kstatus's GetIntField) */
function int(o: unknown, path: string, dflt: number): number {
  let cur: unknown = o;
  for (const k of path.split('.')) {
    if (!cur || typeof cur !== 'object') return dflt;
    cur = (cur as Record<string, unknown>)[k];
  }
  return typeof cur === 'number' && Number.isFinite(cur) ? cur : dflt;
}

function str(o: unknown, path: string, dflt: string): string {
  let cur: unknown = o;
  for (const k of path.split('.')) {
    if (!cur || typeof cur !== 'object') return dflt;
    cur = (cur as Record<string, unknown>)[k];
  }
  return typeof cur === 'string' ? cur : dflt;
}

const current = (message: string): HealthVerdict => ({ readiness: 'Ready', message });
const inProgress = (reason: string, message: string): HealthVerdict => ({ readiness: 'InProgress', reason, message });
const failed = (reason: string, message: string): HealthVerdict => ({ readiness: 'Failed', reason, message });

const alwaysReady: Rule = () => current('Resource is always ready');

const statefulSet: Rule = (obj) => {
  if (str(obj, 'spec.updateStrategy.type', '') === 'OnDelete') return current('StatefulSet is using the ondelete update strategy');
  const spec = int(obj, 'spec.replicas', 1);
  const readyN = int(obj, 'status.readyReplicas', 0);
  const currentN = int(obj, 'status.currentReplicas', 0);
  const updated = int(obj, 'status.updatedReplicas', 0);
  const replicas = int(obj, 'status.replicas', 0);
  const partition = int(obj, 'spec.updateStrategy.rollingUpdate.partition', -1);
  if (spec > replicas) return inProgress('LessReplicas', `Replicas: ${replicas}/${spec}`);
  if (spec > readyN) return inProgress('LessReady', `Ready: ${readyN}/${spec}`);
  if (replicas > spec) return inProgress('ExtraPods', `Pending termination: ${replicas - spec}`);
  // a staged rollout: done once the pods at or above the partition are updated
  if (partition !== -1) {
    if (updated < spec - partition) return inProgress('PartitionRollout', `updated: ${updated}/${spec - partition}`);
    return current(`Partition rollout complete. updated: ${updated}`);
  }
  if (spec > currentN) return inProgress('LessCurrent', `current: ${currentN}/${spec}`);
  if (str(obj, 'status.currentRevision', '') !== str(obj, 'status.updateRevision', '')) {
    return inProgress('RevisionMismatch', 'Waiting for updated revision to match current');
  }
  return current(`All replicas scheduled as expected. Replicas: ${replicas}`);
};

const deployment: Rule = (obj, status) => {
  // without progressDeadlineSeconds the controller never sets Progressing (it defaults to 600)
  let progressing = int(obj, 'spec.progressDeadlineSeconds', 2 ** 31 - 1) === 2 ** 31 - 1;
  let available = false;
  for (const c of conditions(status)) {
    if (c.type === 'Progressing') {
      if (c.reason === 'ProgressDeadlineExceeded') return failed('ProgressDeadlineExceeded', c.message ? c.message : 'Progress deadline exceeded');
      if (c.status === 'True' && c.reason === 'NewReplicaSetAvailable') progressing = true;
    } else if (c.type === 'Available' && c.status === 'True') available = true;
  }
  const spec = int(obj, 'spec.replicas', 1);
  const replicas = int(obj, 'status.replicas', 0);
  const updated = int(obj, 'status.updatedReplicas', 0);
  const readyN = int(obj, 'status.readyReplicas', 0);
  const availableN = int(obj, 'status.availableReplicas', 0);
  if (spec > replicas) return inProgress('LessReplicas', `Replicas: ${replicas}/${spec}`);
  if (spec > updated) return inProgress('LessUpdated', `Updated: ${updated}/${spec}`);
  if (replicas > spec) return inProgress('ExtraPods', `Pending termination: ${replicas - spec}`);
  if (updated > availableN) return inProgress('LessAvailable', `Available: ${availableN}/${updated}`);
  if (spec > readyN) return inProgress('LessReady', `Ready: ${readyN}/${spec}`);
  if (!progressing) return inProgress('ReplicaSetNotAvailable', 'ReplicaSet not Available');
  if (!available) return inProgress('DeploymentNotAvailable', 'Deployment not Available');
  return current(`Deployment is available. Replicas: ${replicas}`);
};

const replicaSet: Rule = (obj, status) => {
  if (conditions(status).some((c) => c.type === 'ReplicaFailure' && c.status === 'True')) {
    return inProgress('ReplicaFailure', 'Replica Failure condition. Check Pods');
  }
  const spec = int(obj, 'spec.replicas', 1);
  const replicas = int(obj, 'status.replicas', 0);
  const readyN = int(obj, 'status.readyReplicas', 0);
  const availableN = int(obj, 'status.availableReplicas', 0);
  const labelled = int(obj, 'status.fullyLabeledReplicas', 0);
  if (spec > labelled) return inProgress('LessLabelled', `Labelled: ${labelled}/${spec}`);
  if (spec > availableN) return inProgress('LessAvailable', `Available: ${availableN}/${spec}`);
  if (spec > readyN) return inProgress('LessReady', `Ready: ${readyN}/${spec}`);
  if (replicas > spec) return inProgress('ExtraPods', `Pending termination: ${replicas - spec}`);
  return current(`ReplicaSet is available. Replicas: ${replicas}`);
};

const daemonSet: Rule = (obj, status) => {
  // the daemonset controller always sets both once it acted: without them it has not
  if (typeof obj.metadata.generation !== 'number') return inProgress('NoGeneration', `${obj.kind} metadata.generation not found`);
  if (typeof status.observedGeneration !== 'number') return inProgress('NoObservedGeneration', `${obj.kind} status.observedGeneration not found`);
  const desired = int(obj, 'status.desiredNumberScheduled', -1);
  const currentN = int(obj, 'status.currentNumberScheduled', 0);
  const updated = int(obj, 'status.updatedNumberScheduled', 0);
  const availableN = int(obj, 'status.numberAvailable', 0);
  const readyN = int(obj, 'status.numberReady', 0);
  if (desired === -1) return inProgress('NoDesiredNumber', 'Missing .status.desiredNumberScheduled');
  if (desired > currentN) return inProgress('LessCurrent', `Current: ${currentN}/${desired}`);
  if (desired > updated) return inProgress('LessUpdated', `Updated: ${updated}/${desired}`);
  if (desired > availableN) return inProgress('LessAvailable', `Available: ${availableN}/${desired}`);
  if (desired > readyN) return inProgress('LessReady', `Ready: ${readyN}/${desired}`);
  return current(`All replicas scheduled as expected. Replicas: ${desired}`);
};

const pvc: Rule = (obj) => {
  const phase = str(obj, 'status.phase', 'unknown');
  return phase === 'Bound' ? current('PVC is Bound') : inProgress('NotBound', `PVC is not Bound. phase: ${phase}`);
};

interface ContainerStatus {
  name?: string;
  restartCount?: number;
  state?: { waiting?: { reason?: string } };
}

/** the containers whose state is waiting in CrashLoopBackOff */
export function crashLooping(status: Status): ContainerStatus[] {
  const list = status.containerStatuses;
  if (!Array.isArray(list)) return [];
  return (list as ContainerStatus[]).filter((c) => c && typeof c.name === 'string' && c.state?.waiting?.reason === 'CrashLoopBackOff');
}

const pod: Rule = (obj, status, now) => {
  const phase = str(obj, 'status.phase', '');
  switch (phase) {
    case 'Succeeded':
      return current('Pod has completed successfully');
    case 'Failed':
      // deliberate difference (pod-failed-phase-fails): kstatus calls it Current
      return failed('PodFailed', `Pod has completed, but not successfully${status.reason ? ` (${String(status.reason)})` : ''}`);
    case 'Running': {
      if (cond(status, 'Ready')?.status === 'True') return current('Pod is Ready');
      const looping = crashLooping(status);
      if (looping.length) return failed('ContainerCrashLooping', `Containers in CrashLoop state: ${looping.map((c) => c.name).join(',')}`);
      return inProgress('PodRunningNotReady', 'Pod is running but is not Ready');
    }
    case 'Pending': {
      const scheduled = conditions(status).find((c) => c.type === 'PodScheduled' && c.status === 'False');
      if (scheduled?.reason === 'Unschedulable') {
        const unschedulable = failed('PodUnschedulable', `Pod could not be scheduled${scheduled.message ? `: ${scheduled.message}` : ''}`);
        const created = Date.parse(obj.metadata.creationTimestamp ?? '');
        // kstatus gives a pod 15 s to be scheduled; a pod without a creation time is past it
        if (!Number.isNaN(created) && now < created + SCHEDULE_WINDOW_MS) {
          return { ...inProgress('PodNotScheduled', 'Pod has not been scheduled'), until: { at: created + SCHEDULE_WINDOW_MS, then: unschedulable } };
        }
        return unschedulable;
      }
      return inProgress('PodPending', 'Pod is in the Pending phase');
    }
    case '':
      return inProgress('PodNotObserved', 'Pod phase not available');
    default:
      return inProgress('UnknownPhase', `unknown phase ${phase}`);
  }
};

const job: Rule = (obj, status) => {
  const parallelism = int(obj, 'spec.parallelism', 1);
  const completions = int(obj, 'spec.completions', parallelism);
  const succeeded = int(obj, 'status.succeeded', 0);
  const failedN = int(obj, 'status.failed', 0);
  const active = int(obj, 'status.active', 0);
  const suspended = (obj.spec as { suspend?: unknown } | undefined)?.suspend === true;
  for (const c of conditions(status)) {
    if (c.type === 'Complete' && c.status === 'True') return current(`Job Completed. succeeded: ${succeeded}/${completions}`);
    if (c.type === 'Failed' && c.status === 'True')
      return failed('JobFailed', `Job Failed. failed: ${failedN}/${completions}${c.message ? `: ${c.message}` : ''}`);
    if (c.type === 'Suspended' && c.status === 'True' && suspended) return current('Job is suspended');
  }
  if (str(obj, 'status.startTime', '') === '') return inProgress('JobNotStarted', 'Job not started');
  // deliberate difference (job-needs-complete): kstatus calls a started Job Current
  return inProgress('JobRunning', `Job in progress. success: ${succeeded}, active: ${active}, failed: ${failedN}`);
};

const service: Rule = (obj) => {
  if (str(obj, 'spec.type', 'ClusterIP') !== 'LoadBalancer') return current('Service is ready');
  if (str(obj, 'spec.clusterIP', '') === '') return inProgress('NoIPAssigned', 'ClusterIP not set. Service type: LoadBalancer');
  // deliberate difference (loadbalancer-needs-address): as `helm install --wait` (helm pkg/kube
  // ready.go serviceReady), an address must be assigned, unless spec.externalIPs gives one
  const externalIPs = (obj.spec as { externalIPs?: unknown } | undefined)?.externalIPs;
  if (Array.isArray(externalIPs) && externalIPs.length > 0) return current('Service is ready');
  const ingress = (obj.status as { loadBalancer?: { ingress?: unknown } } | undefined)?.loadBalancer?.ingress;
  if (!Array.isArray(ingress) || ingress.length === 0) return inProgress('NoAddressAssigned', 'no load balancer address assigned yet');
  return current('Service is ready');
};

const crd: Rule = (_obj, status) => {
  for (const c of conditions(status)) {
    if (c.type === 'NamesAccepted' && c.status === 'False') return failed(c.reason ?? 'NamesNotAccepted', c.message ?? 'names not accepted');
    if (c.type === 'Established') {
      if (c.status === 'False' && c.reason !== 'Installing') return failed(c.reason ?? 'NotEstablished', c.message ?? 'not established');
      if (c.status === 'True') return current('CRD is established');
    }
  }
  return inProgress('Installing', 'Install in progress');
};

const apiService: Rule = (_obj, status) => {
  // deliberate difference (apiservice-needs-available): kstatus has no rule for it
  const c = cond(status, 'Available');
  if (c?.status === 'True') return current('APIService is available');
  return inProgress(c?.reason ?? 'NotAvailable', c?.message ?? 'not available');
};

const RULES: Record<string, Rule> = {
  Service: service,
  Pod: pod,
  Secret: alwaysReady,
  ConfigMap: alwaysReady,
  PersistentVolumeClaim: pvc,
  'apps/StatefulSet': statefulSet,
  'apps/DaemonSet': daemonSet,
  'extensions/DaemonSet': daemonSet,
  'apps/Deployment': deployment,
  'extensions/Deployment': deployment,
  'apps/ReplicaSet': replicaSet,
  'extensions/ReplicaSet': replicaSet,
  // kstatus: current once the disruption controller observed its generation (the generic rule)
  'policy/PodDisruptionBudget': () => current('AllowedDisruptions has been computed.'),
  'batch/CronJob': alwaysReady,
  'batch/Job': job,
  'apiextensions.k8s.io/CustomResourceDefinition': crd,
  'apiregistration.k8s.io/APIService': apiService,
};

/** the rule of a built-in kind ("group/Kind", or "Kind" for the core group), or undefined */
export function kindRule(groupKind: string): Rule | undefined {
  return Object.hasOwn(RULES, groupKind) ? RULES[groupKind] : undefined;
}
