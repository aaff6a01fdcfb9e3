/**
 * Argo Rollouts (utils/rollout/rolloututil.go, GetRolloutPhase: "use this instead of
 * CalculateRolloutPhase"): since v1.0 the controller writes `status.phase` (Healthy, Progressing,
 * Paused, Degraded) and `status.message`, and `status.observedGeneration` as a *string*: the
 * decimal generation (v0.10 on), a pod-template hash before. The phase counts only once the
 * generation is observed, the controller has acted on a resume (`controllerPause` with no
 * pause conditions left) and, for a `workloadRef` Rollout, the referenced workload's generation
 * (annotation `rollout.argoproj.io/workload-generation` against
 * `status.workloadObservedGeneration`) is observed.
 *
 * Degraded is only written for an `InvalidSpec` condition, an aborted rollout (`RolloutAborted`)
 * and `ProgressDeadlineExceeded`: each waits for a change, so it is Failed. Paused (a pause step
 * or `spec.paused`) waits for a promotion: in progress, and the revision is rolled back at
 * `progressDeadline` unless the Rollout is promoted first (or a `spec.healthChecks` check says
 * otherwise).
 */
import type { HealthRuleSpec } from '../rule.ts';
import { firstOf } from './cel.ts';

const WORKLOAD_GENERATION = 'rollout.argoproj.io/workload-generation';
const unpausing =
  'has(self.status.controllerPause) && self.status.controllerPause == true && (!has(self.status.pauseConditions) || size(self.status.pauseConditions) == 0)';
const workloadLag = `has(self.spec.workloadRef) && has(self.metadata.annotations) && ${JSON.stringify(WORKLOAD_GENERATION)} in self.metadata.annotations && has(self.status.workloadObservedGeneration) && self.status.workloadObservedGeneration != self.metadata.annotations[${JSON.stringify(WORKLOAD_GENERATION)}]`;

export const ARGO_ROLLOUTS: HealthRuleSpec[] = [
  {
    name: 'argoproj.io/Rollout',
    group: 'argoproj.io',
    kinds: ['Rollout'],
    observedGeneration: 'self.status.observedGeneration',
    ready: `self.status.phase == "Healthy" && !(${unpausing}) && !(${workloadLag})`,
    failed: 'self.status.phase == "Degraded"',
    message: firstOf(
      [
        [unpausing, '"waiting for rollout to unpause"'],
        [workloadLag, '"waiting for rollout spec update to be observed for the reference workload"'],
        ['has(self.status.message) && self.status.message != ""', 'self.status.phase + ": " + self.status.message'],
      ],
      'self.status.phase',
    ),
    source: 'https://github.com/argoproj/argo-rollouts/blob/9f8d111d8f8e3e88b6d7f8bbdf62fd3cd863ef9d/utils/rollout/rolloututil.go',
  },
];
