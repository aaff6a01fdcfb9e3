/**
 * Built-in readiness (DESIGN §6) as kstatus computes it (sigs.k8s.io/cli-utils
 * pkg/kstatus/status, the library Flux, kpt and cli-utils use): a pure function from a live object
 * to a verdict. First the rules of every object — being deleted is Terminating; an
 * observedGeneration behind metadata.generation is InProgress; `Reconciling=True` is InProgress
 * and `Stalled=True` is Failed — then the rules of the built-in kinds (kinds.ts), then a `Ready`
 * condition; anything else is ready once it exists.
 *
 * Where Hoist deliberately judges otherwise, the difference is in DIFFERENCES below and in
 * docs/status.md, each asserted by the conformance test (test/unit/health/kstatus-conformance.test.ts).
 */
import type { KubeObject } from '../kube/types.ts';
import { cond, conditions, kindRule, type Status } from './kinds.ts';

/** kstatus's Current is Hoist's Ready; kstatus's Unknown (a status it cannot read) is InProgress here */
export type Readiness = 'Ready' | 'InProgress' | 'Failed' | 'Terminating';

export interface HealthVerdict {
  readiness: Readiness;
  message?: string;
  /** kstatus's reason: the condition's own (Stalled, Ready=False) or the rule's (LessReplicas, PodUnschedulable, JobFailed, …) */
  reason?: string;
  /** the verdict changes with time alone: from `at` (epoch ms) on it is `then` (a Pod's 15 s scheduling window) */
  until?: { at: number; then: HealthVerdict };
}

/** the rules where Hoist judges otherwise than kstatus, by name (docs/status.md "Deliberate differences") */
export const DIFFERENCES = {
  /** a Job is ready once Complete, as `helm install --wait --wait-for-jobs`; kstatus: Current once started */
  jobComplete: 'job-needs-complete',
  /** a LoadBalancer Service is ready once it has an ingress address, as `helm install --wait`; kstatus: once it has a clusterIP */
  loadBalancerAddress: 'loadbalancer-needs-address',
  /** an APIService is ready once Available=True (its backing server answers); kstatus: no rule, Current */
  apiServiceAvailable: 'apiservice-needs-available',
  /** a Pod in phase Failed is Failed (it will not run again); kstatus: Current ("completed, but not successfully") */
  podFailedPhase: 'pod-failed-phase-fails',
} as const;

export type Difference = (typeof DIFFERENCES)[keyof typeof DIFFERENCES];

const ready = (message: string): HealthVerdict => ({ readiness: 'Ready', message });

function groupKind(obj: KubeObject): string {
  const g = obj.apiVersion.includes('/') ? obj.apiVersion.split('/')[0] : '';
  return g ? `${g}/${obj.kind}` : obj.kind;
}

/** an integer field as the API server serializes it (JSON number); anything else is absent */
export function intField(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) ? v : undefined;
}

/** the rules of every object: deletion, generation, Reconciling, Stalled; undefined when they decide nothing */
function generic(obj: KubeObject, status: Status): HealthVerdict | undefined {
  if (obj.metadata.deletionTimestamp) return { readiness: 'Terminating', reason: 'Terminating', message: 'Resource scheduled for deletion' };
  const generation = intField(obj.metadata.generation);
  const observed = intField(status.observedGeneration);
  if (generation !== undefined && observed !== undefined && observed !== generation) {
    return {
      readiness: 'InProgress',
      reason: 'LatestGenerationNotObserved',
      message: `${obj.kind} generation is ${generation}, but latest observed generation is ${observed}`,
    };
  }
  for (const c of conditions(status)) {
    if (c.type === 'Reconciling' && c.status === 'True') return { readiness: 'InProgress', reason: c.reason ?? 'Reconciling', message: c.message ?? '' };
    if (c.type === 'Stalled' && c.status === 'True') return { readiness: 'Failed', reason: c.reason ?? 'Stalled', message: c.message ?? '' };
  }
  return undefined;
}

/** a `Ready` condition: True is ready, False or Unknown in progress with its reason and message */
function readyCondition(status: Status): HealthVerdict | undefined {
  const c = cond(status, 'Ready');
  if (c?.status === 'True') return ready('Resource is Ready');
  if (c?.status === 'False' || c?.status === 'Unknown') return { readiness: 'InProgress', reason: c.reason ?? '', message: c.message ?? '' };
  return undefined;
}

/**
 * The verdict on one live object at `now` (epoch ms; only a Pod's scheduling window reads it).
 * Never throws: a status it cannot read is in progress, as kstatus's Unknown is not ready.
 */
export function readinessOf(obj: KubeObject, now: number = Date.now()): HealthVerdict {
  const raw = obj.status;
  const status: Status = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Status) : {};
  const g = generic(obj, status);
  if (g) return g;
  const rule = kindRule(groupKind(obj));
  if (rule) return rule(obj, status, now);
  return readyCondition(status) ?? ready('Resource is current');
}

/** the verdict as it stands at `now`: a time-bound one (`until`) has become its successor once `at` has passed */
export function verdictAt(v: HealthVerdict, now: number): HealthVerdict {
  let out = v;
  while (out.until && now >= out.until.at) out = out.until.then;
  return out;
}
