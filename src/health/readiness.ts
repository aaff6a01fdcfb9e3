/**
 * Built-in readiness (DESIGN §6), in the spirit of kstatus: a pure function from a live object
 * to a small verdict. Kinds without a notion of readiness are ready once they exist.
 */
import type { KubeObject } from '../kube/types.ts';

export type Readiness = 'Ready' | 'InProgress' | 'Failed';

export interface HealthVerdict {
  readiness: Readiness;
  message?: string;
}

interface Cond {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

type Status = Record<string, unknown> & { conditions?: Cond[]; observedGeneration?: number };

const READY: HealthVerdict = { readiness: 'Ready' };

function cond(status: Status, type: string): Cond | undefined {
  return Array.isArray(status.conditions) ? status.conditions.find((c) => c.type === type) : undefined;
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

function groupKind(obj: KubeObject): string {
  const g = obj.apiVersion.includes('/') ? obj.apiVersion.split('/')[0] : '';
  return `${g}/${obj.kind}`;
}

export function readinessOf(obj: KubeObject): HealthVerdict {
  const status = (obj.status ?? {}) as Status;
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  const generation = obj.metadata.generation;
  const stale = generation !== undefined && status.observedGeneration !== undefined && status.observedGeneration < generation;
  switch (groupKind(obj)) {
    case 'apps/Deployment': {
      if (stale || status.observedGeneration === undefined) return { readiness: 'InProgress', message: 'rollout not observed yet' };
      const progressing = cond(status, 'Progressing');
      if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') {
        return { readiness: 'Failed', message: progressing.message ?? 'progress deadline exceeded' };
      }
      const want = spec.replicas === undefined ? 1 : num(spec.replicas);
      if (num(status.updatedReplicas) < want) return { readiness: 'InProgress', message: `${num(status.updatedReplicas)}/${want} replicas updated` };
      if (num(status.replicas) > num(status.updatedReplicas))
        return { readiness: 'InProgress', message: `${num(status.replicas) - num(status.updatedReplicas)} old replicas pending termination` };
      if (num(status.availableReplicas) < want) return { readiness: 'InProgress', message: `${num(status.availableReplicas)}/${want} replicas available` };
      return READY;
    }
    case 'apps/StatefulSet': {
      if (stale || status.observedGeneration === undefined) return { readiness: 'InProgress', message: 'rollout not observed yet' };
      const want = spec.replicas === undefined ? 1 : num(spec.replicas);
      if (num(status.readyReplicas) < want) return { readiness: 'InProgress', message: `${num(status.readyReplicas)}/${want} replicas ready` };
      const strategy = (spec.updateStrategy as { type?: string } | undefined)?.type ?? 'RollingUpdate';
      if (strategy === 'RollingUpdate' && status.updateRevision && status.currentRevision !== status.updateRevision) {
        return { readiness: 'InProgress', message: `${num(status.updatedReplicas)}/${want} replicas updated` };
      }
      return READY;
    }
    case 'apps/DaemonSet': {
      if (stale || status.observedGeneration === undefined) return { readiness: 'InProgress', message: 'rollout not observed yet' };
      const want = num(status.desiredNumberScheduled);
      if (num(status.updatedNumberScheduled) < want) return { readiness: 'InProgress', message: `${num(status.updatedNumberScheduled)}/${want} pods updated` };
      if (num(status.numberAvailable) < want) return { readiness: 'InProgress', message: `${num(status.numberAvailable)}/${want} pods available` };
      return READY;
    }
    case 'batch/Job': {
      if (cond(status, 'Failed')?.status === 'True') return { readiness: 'Failed', message: cond(status, 'Failed')?.message ?? 'job failed' };
      if (cond(status, 'Complete')?.status === 'True') return READY;
      return { readiness: 'InProgress', message: 'job not complete' };
    }
    case 'apiextensions.k8s.io/CustomResourceDefinition':
      return cond(status, 'Established')?.status === 'True' ? READY : { readiness: 'InProgress', message: 'not established' };
    case 'apiregistration.k8s.io/APIService': {
      const c = cond(status, 'Available');
      return c?.status === 'True' ? READY : { readiness: 'InProgress', message: c?.message ?? 'not available' };
    }
    case '/PersistentVolumeClaim':
      return status.phase === 'Bound' ? READY : { readiness: 'InProgress', message: `phase ${String(status.phase ?? 'Pending')}` };
    default: {
      const ready = cond(status, 'Ready');
      if (!ready) return READY;
      if (stale) return { readiness: 'InProgress', message: 'status not observed yet' };
      return ready.status === 'True' ? READY : { readiness: 'InProgress', message: ready.message ?? `Ready=${ready.status}` };
    }
  }
}
