/**
 * The one module that writes conditions (after operator-controller's condition setters): a
 * function per condition and reason, each naming the status it goes with, so a reason is never
 * paired with the wrong status and no other module builds a condition
 * (test/unit/reconciler/condition-writers.test.ts checks). The vocabulary — the six types and their
 * reasons — is conditions.ts's, documented in docs/status.md. Setting a condition keeps
 * lastTransitionTime unless the status changes, so writing the same conditions twice is a no-op.
 */
import type { ActiveRevision, Condition, ConditionType } from '../../api/v1alpha2/types.ts';
import { clip, CONDITION_ORDER, type ConditionInput, type Reason } from './conditions.ts';

/** where a setter writes: the reconcile's state (pipeline/state.ts) */
export interface ConditionSink {
  set(c: ConditionInput): void;
}

type Status = ConditionInput['status'];

function put<T extends ConditionType>(s: ConditionSink, type: T, status: Status, reason: Reason<T>, message: string): void {
  s.set({ type, status, reason, message } as ConditionInput);
}

/** Returns a new list with `input` set; lastTransitionTime changes only with the status. */
export function setCondition(conditions: readonly Condition[], input: ConditionInput, generation: number, now: Date): Condition[] {
  const prev = conditions.find((c) => c.type === input.type);
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: clip(input.message),
    observedGeneration: generation,
    lastTransitionTime: prev && prev.status === input.status ? prev.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  const rest = conditions.filter((c) => c.type !== input.type);
  return [...rest, next].sort((a, b) => CONDITION_ORDER.indexOf(a.type) - CONDITION_ORDER.indexOf(b.type));
}

// ---- Resolved / Unpacked: the stages before apply

export function setResolved(s: ConditionSink, message: string): void {
  put(s, 'Resolved', 'True', 'Resolved', message);
}

export function setUnpacked(s: ConditionSink, message: string): void {
  put(s, 'Unpacked', 'True', 'Unpacked', message);
}

/** Unpacked waits behind a failed resolve */
export function setUnpackedPending(s: ConditionSink, message: string): void {
  put(s, 'Unpacked', 'Unknown', 'Pending', message);
}

/** the stage before apply that failed (decide.ts decideBeforeApply names it and its reason) */
export function setStageFailed(
  s: ConditionSink,
  type: 'Resolved' | 'Unpacked',
  reason: 'ResolveFailed' | 'VerificationFailed' | 'FetchFailed' | 'ProcessFailed',
  message: string,
): void {
  s.set({ type, status: 'False', reason, message } as ConditionInput);
}

// ---- Installed

/** Installed=True Installed, the message as given */
export function setInstalled(s: ConditionSink, message: string): void {
  put(s, 'Installed', 'True', 'Installed', message);
}

/** Installed=True Installed for revision `number` with `objects` objects, and why it is (still) the one when `note` says */
export function setInstalledRevision(s: ConditionSink, number: number | undefined, objects: number, note?: string): void {
  setInstalled(s, `revision ${number}: ${objects} objects${note ? ` (${note})` : ''}`);
}

/** the active revision stays installed: `note` says why it is still the one */
export function setInstalledActive(s: ConditionSink, active: Pick<ActiveRevision, 'number' | 'objects'>, note: string): void {
  setInstalledRevision(s, active.number, active.objects ?? 0, note);
}

/** Installed=True Drifted: installed, but not all objects as installed (correcting drift failed) */
export function setInstalledDrifted(s: ConditionSink, message: string): void {
  put(s, 'Installed', 'True', 'Drifted', message);
}

/** Installed=False Pending: nothing installed yet */
export function setInstalledPending(s: ConditionSink, message: string): void {
  put(s, 'Installed', 'False', 'Pending', message);
}

/** Installed=False with a failure reason (ApplyFailed, ConflictingOwner, UnsafeCRDUpgrade, Conflict) */
export function setInstalledFailed(s: ConditionSink, reason: 'ApplyFailed' | 'ConflictingOwner' | 'UnsafeCRDUpgrade' | 'Conflict', message: string): void {
  put(s, 'Installed', 'False', reason, message);
}

/** Installed=Unknown TargetUnreachable: the target cluster does not answer */
export function setInstalledUnreachable(s: ConditionSink, message: string): void {
  put(s, 'Installed', 'Unknown', 'TargetUnreachable', message);
}

// ---- Healthy

export function setHealthy(s: ConditionSink, message: string): void {
  put(s, 'Healthy', 'True', 'Healthy', message);
}

export function setUnhealthy(s: ConditionSink, message: string): void {
  put(s, 'Healthy', 'False', 'Unhealthy', message);
}

/** Healthy=False Progressing: objects not ready yet */
export function setHealthProgressing(s: ConditionSink, message: string): void {
  put(s, 'Healthy', 'False', 'Progressing', message);
}

export function setHealthUnknown(s: ConditionSink, message: string): void {
  put(s, 'Healthy', 'Unknown', 'Unknown', message);
}

// ---- Progressing

export function setSucceeded(s: ConditionSink, message: string): void {
  put(s, 'Progressing', 'False', 'Succeeded', message);
}

export function setRollingOut(s: ConditionSink, message: string): void {
  put(s, 'Progressing', 'True', 'RollingOut', message);
}

/** Progressing=True Retrying, the message as given (most end in "; retrying with backoff") */
export function setRetrying(s: ConditionSink, message: string): void {
  put(s, 'Progressing', 'True', 'Retrying', message);
}

/** Progressing=True Retrying: `what`, then "; retrying with backoff" */
export function setRetryingWithBackoff(s: ConditionSink, what: string): void {
  setRetrying(s, `${what}; retrying with backoff`);
}

export function setRolledBack(s: ConditionSink, message: string): void {
  put(s, 'Progressing', 'False', 'RolledBack', message);
}

export function setBlocked(s: ConditionSink, message: string): void {
  put(s, 'Progressing', 'False', 'Blocked', message);
}

export function setProgressingPaused(s: ConditionSink): void {
  put(s, 'Progressing', 'False', 'Paused', 'paused');
}

/** Installed=False and Progressing=False Conflict: another member of the lineage applies */
export function setLineageConflict(s: ConditionSink, message: string): void {
  setInstalledFailed(s, 'Conflict', message);
  put(s, 'Progressing', 'False', 'Conflict', message);
}

export function setDependencyNotReady(s: ConditionSink, message: string): void {
  put(s, 'Progressing', 'False', 'DependencyNotReady', message);
}

export function setProgressingUnreachable(s: ConditionSink, message: string): void {
  put(s, 'Progressing', 'True', 'TargetUnreachable', message);
}

/** a deleted BD waits for its dependents: the conditions of `conditions` with Progressing=True WaitingForDependents */
export function waitingForDependents(conditions: readonly Condition[], message: string, generation: number, now: Date): Condition[] {
  return setCondition(conditions, { type: 'Progressing', status: 'True', reason: 'WaitingForDependents', message }, generation, now);
}

// ---- Paused

export function setPaused(s: ConditionSink): void {
  put(s, 'Paused', 'True', 'Paused', 'spec.paused: no fetch, apply, prune or drift correction');
}

export function setNotPaused(s: ConditionSink): void {
  put(s, 'Paused', 'False', 'Reconciling', 'not paused');
}
