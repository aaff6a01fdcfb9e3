/**
 * Knative Serving (https://github.com/knative/specs/blob/main/specs/serving/knative-api-specification-1.0.md,
 * pkg/apis/serving/v1/service_lifecycle.go): a Service's `Ready` condition summarises
 * `ConfigurationsReady` and `RoutesReady`; Knative's own `IsReady` / `IsFailed` read it only at
 * the observed generation (`status.observedGeneration == metadata.generation`). Unknown is work in
 * progress; False is a failure Knative reports (RevisionFailed, ContainerMissing, NotOwned, …).
 */
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condField } from './cel.ts';

export const KNATIVE: HealthRuleSpec[] = [
  {
    name: 'serving.knative.dev/Service',
    group: 'serving.knative.dev',
    kinds: ['Service'],
    observedGeneration: 'self.status.observedGeneration',
    ready: cond('Ready'),
    failed: cond('Ready', 'False'),
    message: condField('Ready', 'message'),
    source: 'https://github.com/knative/specs/blob/main/specs/serving/knative-api-specification-1.0.md#service',
  },
];
