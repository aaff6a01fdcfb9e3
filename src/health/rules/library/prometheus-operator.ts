/**
 * Prometheus Operator (https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.Condition,
 * pkg/apis/monitoring/v1/types.go, pkg/operator/statefulset_reporter.go): Prometheus and
 * Alertmanager report `Available` (True: every pod ready; Degraded: some; False: none) and
 * `Reconciled` (the operator applied the spec), each with the generation it was written for, and
 * `replicas` / `updatedReplicas` of their pods.
 *
 * Ready when both are True and every pod runs the current revision. Never Failed:
 * `Reconciled=False` (ReconciliationFailed) is retried, and its common causes (a Secret or
 * ConfigMap it references not there yet) clear by themselves.
 */
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condField, condGeneration, condSummary, firstOf, notCond } from './cel.ts';

const workload = (kind: 'Prometheus' | 'Alertmanager'): HealthRuleSpec => ({
  name: `monitoring.coreos.com/${kind}`,
  group: 'monitoring.coreos.com',
  kinds: [kind],
  observedGeneration: condGeneration('Available', 'Reconciled'),
  ready: `${cond('Available')} && ${cond('Reconciled')} && (!has(self.status.updatedReplicas) || self.status.updatedReplicas >= self.status.replicas)`,
  message: firstOf(
    [
      [notCond('Reconciled'), condField('Reconciled', 'message')],
      [notCond('Available'), condSummary('Available')],
      ['self.status.updatedReplicas < self.status.replicas', 'string(self.status.updatedReplicas) + "/" + string(self.status.replicas) + " pods updated"'],
    ],
    '""',
  ),
  source: `https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.${kind}Status`,
});

export const PROMETHEUS_OPERATOR: HealthRuleSpec[] = [workload('Prometheus'), workload('Alertmanager')];
