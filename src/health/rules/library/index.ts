/**
 * The shipped library of health rules, in precedence order (the first that selects an object
 * judges it). Each project's file says what its kinds' conditions mean, from the kind's own
 * documentation and source; docs/status.md lists them.
 */
import type { HealthRuleSpec } from '../rule.ts';
import { ARGO_ROLLOUTS } from './argo-rollouts.ts';
import { CERT_MANAGER } from './cert-manager.ts';
import { CLUSTER_API } from './cluster-api.ts';
import { CROSSPLANE } from './crossplane.ts';
import { FLUX } from './flux.ts';
import { GATEWAY_API } from './gateway-api.ts';
import { KEDA } from './keda.ts';
import { KNATIVE } from './knative.ts';
import { PROMETHEUS_OPERATOR } from './prometheus-operator.ts';

export const LIBRARY: readonly HealthRuleSpec[] = Object.freeze([
  ...CERT_MANAGER,
  ...ARGO_ROLLOUTS,
  ...FLUX,
  ...GATEWAY_API,
  ...KNATIVE,
  ...KEDA,
  ...PROMETHEUS_OPERATOR,
  ...CLUSTER_API,
  // last: the composite/claim rule is asked about every group the rules above leave
  ...CROSSPLANE,
]);
