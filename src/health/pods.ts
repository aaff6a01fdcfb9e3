/**
 * Why a workload's pods are not ready, from the pods' own status as the kubelet reports it: a
 * pure function over Pod objects. A Deployment's status only counts pods ("0/1 replicas
 * available"); the pods say which container is crash-looping, which cannot start its image, and
 * which runs but fails its readiness probe (Ready=False, ContainersNotReady).
 *
 * The reconciler's health step (src/reconciler/pipeline/health.ts) lists the pods of a workload
 * that stays unready and appends this to the workload's line in `Healthy`.
 */
import type { KubeObject } from '../kube/types.ts';
import { readinessOf, verdictAt } from './readiness.ts';

interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: { exitCode?: number; reason?: string };
}

interface ContainerStatus {
  name: string;
  ready?: boolean;
  restartCount?: number;
  state?: ContainerState;
  lastState?: ContainerState;
}

interface PodStatus {
  phase?: string;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
}

/** waiting reasons that mean the container will not start without a change (or a long back-off) */
const STUCK = new Set([
  'CrashLoopBackOff',
  'ErrImagePull',
  'ImagePullBackOff',
  'ErrImageNeverPull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

function lastExit(c: ContainerStatus): string {
  const t = c.lastState?.terminated ?? c.state?.terminated;
  if (!t) return '';
  return `; last exit code ${t.exitCode ?? '?'}${t.reason ? ` (${t.reason})` : ''}`;
}

/** One pod's problem in one line, or undefined when it is ready (or merely starting). */
export function podProblem(pod: KubeObject): string | undefined {
  const status = (pod.status ?? {}) as PodStatus;
  const name = `pod ${pod.metadata.name}`;
  if (pod.metadata.deletionTimestamp) return undefined;
  const scheduled = status.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False')
    return `${name} not scheduled: ${scheduled.reason ?? 'Unschedulable'}${scheduled.message ? ` (${scheduled.message})` : ''}`;
  for (const c of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
    const reason = c.state?.waiting?.reason;
    if (reason && STUCK.has(reason)) {
      const restarts = c.restartCount ? `restarted ${c.restartCount} times` : '';
      const detail = reason === 'CrashLoopBackOff' ? `${restarts}${lastExit(c)}` : (c.state?.waiting?.message ?? '');
      return `${name}: container ${c.name} is ${reason}${detail ? ` (${detail.replace(/^; /, '')})` : ''}`;
    }
    if (c.state?.terminated && (c.state.terminated.exitCode ?? 0) !== 0 && status.phase !== 'Succeeded') {
      // between two back-offs of a crash loop the kubelet shows the exit itself: still a crash loop
      if (c.restartCount) return `${name}: container ${c.name} is crash-looping (restarted ${c.restartCount} times${lastExit(c)})`;
      return `${name}: container ${c.name} exited with code ${c.state.terminated.exitCode}`;
    }
  }
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  if (status.phase === 'Running' && ready?.status === 'False') {
    const unready = (status.containerStatuses ?? []).filter((c) => c.state?.running && !c.ready).map((c) => c.name);
    const probe = unready.length ? `; running but not ready: readiness probe of ${unready.join(', ')} failing` : '';
    return `${name}: Ready=False ${ready.reason ?? ''}${ready.message ? ` (${ready.message})` : ''}${probe}`;
  }
  return undefined;
}

/**
 * The problems of a workload's pods, worst first (a container that cannot run before one that
 * runs unready), at most `max` of them; undefined when no pod has one.
 */
export function podProblems(pods: readonly KubeObject[], max = 2): string | undefined {
  const found = pods.map(podProblem).filter((p): p is string => p !== undefined);
  if (found.length === 0) return undefined;
  const rank = (p: string): number => (/ is [A-Z]| is crash-looping | exited with code /.test(p) ? 0 : p.includes('not scheduled') ? 1 : 2);
  found.sort((a, b) => rank(a) - rank(b));
  const more = found.length > max ? `; ${found.length - max} more` : '';
  return found.slice(0, max).join('; ') + more;
}

/** restarts after which a crash-looping container fails its workload: one or two crashes while a dependency starts are a flap */
export const CRASHLOOP_RESTARTS = 3;
/** how long a workload's pod may stay unschedulable before it fails the workload: a cluster autoscaler adds a node in about a minute */
export const UNSCHEDULABLE_GRACE_MS = 60_000;
/** the shortest wait before a new pod that is not ready yet (and never restarted) is looked at again */
export const NOT_READY_RECHECK_MS = 10_000;

export interface WorkloadFailure {
  /** the pod's problem, as podProblem says it */
  message: string;
}

/**
 * Whether a workload's pods say it failed, by kstatus's Pod rule (readinessOf) with a grace for
 * workloads: only pods created at or after `since` (the revision's apply: an old ReplicaSet's pods
 * say nothing of the new one), a crash loop once a container restarted CRASHLOOP_RESTARTS times,
 * unschedulable once UNSCHEDULABLE_GRACE_MS have passed since the scheduler said so.
 * `recheckAt`: a pod is on its way to such a failure (in its grace): look again then.
 */
export function workloadFailure(pods: readonly KubeObject[], since: number, now: number): { failure?: WorkloadFailure; recheckAt?: number } {
  let recheckAt: number | undefined;
  const later = (at: number) => (recheckAt = Math.min(recheckAt ?? at, at));
  // creationTimestamp has whole seconds: a pod created in the second of the apply counts
  const from = Math.floor(since / 1000) * 1000;
  for (const pod of pods) {
    const created = Date.parse(pod.metadata.creationTimestamp ?? '');
    if (Number.isNaN(created) || created < from || pod.metadata.deletionTimestamp) continue;
    const v = verdictAt(readinessOf(pod, now), now);
    const status = (pod.status ?? {}) as PodStatus;
    const containers = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
    const restarts = Math.max(0, ...containers.map((c) => c.restartCount ?? 0));
    // kstatus sees a crash loop only while the kubelet backs off (waiting CrashLoopBackOff); in
    // between it shows the exit itself, or the container running again: the restarts tell
    const looping =
      v.reason === 'ContainerCrashLooping' ||
      containers.some((c) => (c.restartCount ?? 0) > 0 && c.state?.terminated && (c.state.terminated.exitCode ?? 0) !== 0);
    if (looping && restarts >= CRASHLOOP_RESTARTS) return { failure: { message: podProblem(pod) ?? v.message ?? 'crash-looping' } };
    if (looping || (restarts > 0 && v.readiness !== 'Ready')) {
      later(now + 10_000);
    } else if (v.reason === 'PodUnschedulable' || v.reason === 'PodNotScheduled') {
      const c = status.conditions?.find((x) => x.type === 'PodScheduled' && x.status === 'False') as { lastTransitionTime?: string } | undefined;
      const pending = Date.parse(c?.lastTransitionTime ?? '') || created;
      if (now >= pending + UNSCHEDULABLE_GRACE_MS) return { failure: { message: podProblem(pod) ?? v.message ?? 'unschedulable' } };
      later(pending + UNSCHEDULABLE_GRACE_MS);
    } else if (v.readiness === 'Failed' && v.reason !== 'PodFailed') {
      // a Failed phase is a replaced pod of a workload, not the workload's verdict
      return { failure: { message: podProblem(pod) ?? v.message ?? 'failed' } };
    } else if (v.readiness === 'InProgress') {
      // starting, pulling or probing, not restarted yet: its first crash would change no workload
      // status that reconciles, so look again, less often the longer it has taken
      later(now + Math.max(NOT_READY_RECHECK_MS, (now - from) / 2));
    }
  }
  return recheckAt === undefined ? {} : { recheckAt };
}
