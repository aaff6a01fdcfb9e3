/**
 * The plain per-reconcile state the steps read and fill in, in pipeline order. A step sets the
 * conditions of its own stage through `set`; the reconciler writes `status` once at the end.
 */
import { withDefaults, type DefaultedSpec } from '../../../api/v1alpha2/defaults.ts';
import type { BundleDeployment, BundleDeploymentStatus } from '../../../api/v1alpha2/types.ts';
import type { ObjectResult } from '../../apply/result.ts';
import type { ReconcileResult } from '../../kube/controller.ts';
import type { ConditionInput } from '../conditions.ts';
import { setCondition } from '../status.ts';
import type { ReconcileFacts } from '../../notify/transitions.ts';

/** times a stage's promise into the reconcile's timings */
export type Stopwatch = <T>(stage: string, p: Promise<T>) => Promise<T>;

export interface ReconcileState {
  readonly bd: BundleDeployment;
  readonly name: string;
  readonly generation: number;
  readonly spec: DefaultedSpec;
  /** the status being built: a copy of the cached one, written once at the end */
  readonly status: BundleDeploymentStatus;
  readonly now: () => Date;
  readonly signal: AbortSignal | undefined;
  set(c: ConditionInput): void;
  readonly time: Stopwatch;
  /**
   * a core.rukpak.io/requested-at value not handled yet: floating refs are re-resolved and a
   * RolledBack or Blocked revision of this spec is tried once more; echoed in
   * status.lastHandledRequest when the reconcile ends without an error to retry
   */
  request?: string;

  // filled in by the steps, in order
  /** the revision this reconcile applies; isNew when its content is not the active revision's */
  revision?: { number: number; isNew: boolean };
  results?: ObjectResult[];
  appliedDigest?: string | undefined;
  /** when a health check's verdict changes by time alone */
  recheckAt?: number;
  /** what notifications say beyond the status: counts of changes, the failure, reverted drift (src/notify) */
  readonly facts: ReconcileFacts;

  // the outcome, for the controller and the reconcile log line
  result: ReconcileResult;
  changed: number;
  note: string;
  timings: Record<string, number>;
}

/** the state a reconcile of bd starts from; throws a terminal spec error for a malformed spec */
export function newState(bd: BundleDeployment, now: () => Date, signal?: AbortSignal): ReconcileState {
  const generation = bd.metadata.generation ?? 0;
  const status: BundleDeploymentStatus = structuredClone(bd.status ?? {});
  status.observedGeneration = generation;
  const timings: Record<string, number> = {};
  return {
    bd,
    name: bd.metadata.name,
    generation,
    spec: withDefaults(bd.spec),
    status,
    now,
    signal,
    set(c) {
      status.conditions = setCondition(status.conditions ?? [], c, generation, now());
    },
    time: async (stage, p) => {
      const t0 = performance.now();
      try {
        return await p;
      } finally {
        timings[stage] = Math.round(performance.now() - t0);
      }
    },
    facts: {},
    result: {},
    changed: 0,
    note: '',
    timings,
  };
}
