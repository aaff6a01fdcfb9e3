/**
 * The status contract's conditions (DESIGN §1): six types, each with observedGeneration and a
 * reason from the fixed list below. Setting a condition keeps lastTransitionTime unless the
 * status changes, so writing the same conditions twice is a no-op.
 */
import type { Condition, ConditionType } from '../../api/v1alpha2/types.ts';

/** Every reason Hoist sets, by condition type. Documented in docs/status.md. */
export const REASONS = {
  Resolved: ['Resolved', 'ResolveFailed', 'VerificationFailed'],
  Unpacked: ['Unpacked', 'FetchFailed', 'ProcessFailed', 'Pending'],
  Installed: ['Installed', 'Drifted', 'ApplyFailed', 'ConflictingOwner', 'UnsafeCRDUpgrade', 'Conflict', 'Pending', 'TargetUnreachable'],
  Healthy: ['Healthy', 'Unhealthy', 'Progressing', 'Unknown'],
  Progressing: [
    'Succeeded',
    'RollingOut',
    'Retrying',
    'RolledBack',
    'Blocked',
    'Paused',
    'Conflict',
    'DependencyNotReady',
    'WaitingForDependents',
    'TargetUnreachable',
  ],
  Paused: ['Paused', 'Reconciling'],
} as const satisfies Record<ConditionType, readonly string[]>;

export type Reason<T extends ConditionType> = (typeof REASONS)[T][number];

export const CONDITION_ORDER: readonly ConditionType[] = ['Resolved', 'Unpacked', 'Installed', 'Healthy', 'Progressing', 'Paused'];

export interface ConditionInput<T extends ConditionType = ConditionType> {
  type: T;
  status: 'True' | 'False' | 'Unknown';
  reason: Reason<T>;
  message: string;
}

/** Condition messages are bounded (the CRD caps them at 32768); keep them readable. */
export function clip(message: string, max = 4000): string {
  return message.length <= max ? message : `${message.slice(0, max - 15)}… (truncated)`;
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

export function getCondition(conditions: readonly Condition[] | undefined, type: ConditionType): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
