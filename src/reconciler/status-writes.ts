/**
 * How often a BundleDeployment's status is written. A BD whose status changes on every event (a
 * health check flapping with an object another controller rewrites, a message naming objects
 * still waiting) would otherwise cost one API write per event, with the etcd churn and watch
 * traffic of every status reader; and so would one whose managed objects another party keeps
 * relabelling (each change moves `activeRevision.appliedDigest`, the fingerprint of what was
 * applied). So a write that changes only conditions and appliedDigest waits until at least
 * `minIntervalMs` after the BD's previous status write: the reconcile asks to be run again then,
 * and that reconcile writes what holds at that moment (a stale appliedDigest costs at most one
 * no-op apply per object after a restart). A write that changes anything else
 * (observedGeneration, the revisions, the resolved sources, a transition) goes at once: the next
 * reconcile starts from the status it reads back, so that bookkeeping must not wait.
 * Pure.
 */
import { isDeepStrictEqual } from 'node:util';
import type { BundleDeploymentStatus } from '../../api/v1alpha2/types.ts';

/** at most one conditions-only status write per BD per second, sustained */
export const MIN_STATUS_WRITE_INTERVAL_MS = 1000;

export type StatusWriteDecision =
  /** nothing changed: no write */
  | { kind: 'unchanged' }
  | { kind: 'write' }
  /** only conditions changed, too soon after the last write: reconcile again after `afterMs` */
  | { kind: 'defer'; afterMs: number };

export function decideStatusWrite(input: {
  /** as JSON would carry it: no undefined members */
  next: BundleDeploymentStatus;
  current: BundleDeploymentStatus | undefined;
  /** monotonic ms of the BD's last status write by this process, if any */
  lastWriteAt: number | undefined;
  now: number;
  minIntervalMs?: number;
}): StatusWriteDecision {
  const current = input.current ?? {};
  // both are plain JSON (the status as written, the status as read): compared as such, not hashed
  if (isDeepStrictEqual(input.next, current)) return { kind: 'unchanged' };
  const min = input.minIntervalMs ?? MIN_STATUS_WRITE_INTERVAL_MS;
  const since = input.lastWriteAt === undefined ? Infinity : input.now - input.lastWriteAt;
  if (since >= min) return { kind: 'write' };
  if (!isDeepStrictEqual(bookkeeping(input.next), bookkeeping(current))) return { kind: 'write' };
  return { kind: 'defer', afterMs: Math.max(1, Math.ceil(min - since)) };
}

/** the status without what may wait: conditions and the applied fingerprint */
function bookkeeping(status: BundleDeploymentStatus): BundleDeploymentStatus {
  const { conditions: _conditions, ...rest } = status;
  if (!rest.activeRevision) return rest;
  const { appliedDigest: _applied, ...active } = rest.activeRevision;
  return { ...rest, activeRevision: active };
}
