/**
 * KEDA (https://keda.sh/docs/latest/reference/scaledobject-spec/, apis/keda/v1alpha1/condition_types.go,
 * controllers/keda/scaledobject_controller.go): a ScaledObject reports `Ready` (its scale target
 * and triggers check out), `Active` (whether it is scaling now: load, not health), `Fallback`
 * (a trigger is failing and the fallback replica count is in force) and `Paused`.
 *
 * Ready when Ready=True and no fallback is active. Never Failed: Ready=False
 * (ScaledObjectCheckFailed, TriggerError) is retried on every reconcile and often clears by
 * itself (a scale target or metrics server of a later phase). KEDA writes no observedGeneration,
 * neither on the object nor on its conditions, so a changed ScaledObject is judged by the
 * conditions last written; KEDA's admission webhook refuses invalid specs before they are stored.
 */
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condField, firstOf, notCond } from './cel.ts';

export const KEDA: HealthRuleSpec[] = [
  {
    name: 'keda.sh/ScaledObject',
    group: 'keda.sh',
    kinds: ['ScaledObject'],
    ready: `${cond('Ready')} && ${notCond('Fallback')}`,
    message: firstOf([[cond('Fallback'), condField('Fallback', 'message')]], condField('Ready', 'message')),
    source: 'https://keda.sh/docs/latest/reference/scaledobject-spec/',
  },
];
