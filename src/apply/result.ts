/** The shared vocabulary of what the applier did to each object (after fluxcd/pkg/ssa), and to a revision's steps. */
import type { KubeObject } from '../kube/types.ts';

export type ObjectAction =
  | 'created'
  | 'configured'
  | 'unchanged'
  | 'adopted'
  | 'skipped'
  | 'deleted'
  | 'orphaned'
  /** left in place by a retention policy (or deletionPolicy Orphan) and let go of: no longer Hoist's (retention.ts) */
  | 'kept'
  | 'failed';

export interface ObjectResult {
  /** group/kind/namespace/name, see objectId */
  id: string;
  /** "apps/v1 Deployment ns/name" for messages */
  subject: string;
  action: ObjectAction;
  message?: string;
  /** a failure worth retrying as is (no response, 5xx, throttling, a conflict), decided from the error's type, not its text */
  transient?: boolean;
  /** the API server refused the actor the write (RBAC) */
  forbidden?: boolean;
  /** fields of interactive managers (kubectl edit/set/patch...) taken over and so reverted: "kubectl-set: spec.template..." */
  reverted?: string[];
  /** kept: the policy that kept it, `annotation: value` (`helm.sh/resource-policy: keep`) or `deletionPolicy: Orphan` */
  policy?: string;
  /** a write's result as the API server returned it: health is read only once the watch has delivered it */
  written?: WrittenObject;
}

/** the object's uid, resourceVersion and generation (when its kind has one) after a write */
export interface WrittenObject {
  uid: string;
  /** the version the write made: its watch event is this write's own */
  resourceVersion?: string;
  generation?: number;
}

export function countChanged(results: readonly ObjectResult[]): number {
  return results.filter((r) => r.action === 'created' || r.action === 'configured' || r.action === 'adopted' || r.action === 'deleted').length;
}

/**
 * Called after each step of a phased apply but the last, once its writes are done: whether the
 * next step may be applied (every object so far ready), or what it waits for.
 */
export type StepGate = (step: {
  name: string;
  next: string;
  objects: readonly KubeObject[];
  results: readonly ObjectResult[];
}) => Promise<{ ready: true } | { ready: false; waiting: string; failed?: boolean }>;

export interface ApplyReport {
  results: ObjectResult[];
  /** "group/version Kind ns/name" of optional objects whose API is not served */
  skippedOptional: string[];
  /**
   * digest of what was applied and how the live objects looked right after (hash + live
   * fingerprint of each): recorded in status, it lets the next process that reconciles the BD (a
   * shard taking over, a restart) see that nothing changed without applying again
   */
  appliedDigest?: string;
  /**
   * set when a gate stopped the apply before step `step`: `after` is not ready yet (`waiting`
   * says which objects and why; `failed`: one of them failed and will not become ready); the
   * objects of `step` and later steps were not applied
   */
  pending?: { step: string; after: string; waiting: string; failed?: boolean };
}
