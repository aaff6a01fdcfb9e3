/**
 * The status contract's conditions (DESIGN §1): six types, each with observedGeneration and a
 * reason from the fixed list below: the vocabulary. They are written by status.ts alone.
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

export function getCondition(conditions: readonly Condition[] | undefined, type: ConditionType): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
