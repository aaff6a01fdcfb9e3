/**
 * Cluster API (https://cluster-api.sigs.k8s.io/reference/api/crd-api-reference and its v1beta1
 * page; kubernetes-sigs/cluster-api/docs/proposals/20240916-improve-status-in-CAPI-resources.md;
 * kubernetes-sigs/cluster-api/api/core/v1beta1, v1beta2):
 * Hoist reads an object in the API version its bundle names, and the two versions put the
 * conditions in different places, so each has its own rule.
 *
 * - v1beta2: `Available` summarises everything that must hold (for a Cluster: infrastructure,
 *   control plane, workers, remote connection, availability gates; for a MachineDeployment:
 *   enough available replicas), written with its generation; a MachineDeployment is ready once
 *   no `RollingOut`, `ScalingUp` or `ScalingDown` is True either. v1beta2 controllers no longer
 *   set the Failed phase; it is still read (converted v1beta1 objects).
 * - v1beta1: `status.phase` (Cluster: Provisioned; MachineDeployment: Running, with every replica
 *   updated) and the `Ready` condition; `phase: Failed` with `failureReason`/`failureMessage` is
 *   "a fatal problem … that requires user intervention": Failed.
 *
 * Both versions write `status.observedGeneration`.
 */
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condSummary, firstOf, notCond } from './cel.ts';

const GROUP = 'cluster.x-k8s.io';
const BOOK = 'https://cluster-api.sigs.k8s.io/reference/api';
const failureMessage = 'has(self.status.failureMessage) ? self.status.failureMessage : "phase Failed"';

export const CLUSTER_API: HealthRuleSpec[] = [
  {
    name: `${GROUP}/Cluster:v1beta2`,
    group: GROUP,
    kinds: ['Cluster'],
    versions: ['v1beta2'],
    observedGeneration: 'self.status.observedGeneration',
    ready: cond('Available'),
    failed: 'self.status.phase == "Failed"',
    message: firstOf(
      [
        ['self.status.phase == "Failed"', '"phase Failed"'],
        [notCond('Available'), condSummary('Available')],
      ],
      '""',
    ),
    source: `${BOOK}/crd-api-reference#clusterstatus`,
  },
  {
    name: `${GROUP}/Cluster:v1beta1`,
    group: GROUP,
    kinds: ['Cluster'],
    versions: ['v1beta1'],
    observedGeneration: 'self.status.observedGeneration',
    ready: `self.status.phase == "Provisioned" && ${cond('Ready')}`,
    failed: 'self.status.phase == "Failed"',
    message: firstOf(
      [
        ['self.status.phase == "Failed"', failureMessage],
        [notCond('Ready'), condSummary('Ready')],
        ['self.status.phase != "Provisioned"', '"phase " + self.status.phase'],
      ],
      '""',
    ),
    source: `${BOOK}/crd-api-reference-v1beta1#clusterstatus`,
  },
  {
    name: `${GROUP}/MachineDeployment:v1beta2`,
    group: GROUP,
    kinds: ['MachineDeployment'],
    versions: ['v1beta2'],
    observedGeneration: 'self.status.observedGeneration',
    ready: `${cond('Available')} && ${notCond('RollingOut')} && ${notCond('ScalingUp')} && ${notCond('ScalingDown')}`,
    failed: 'self.status.phase == "Failed"',
    message: firstOf(
      [
        [notCond('Available'), condSummary('Available')],
        [cond('RollingOut'), condSummary('RollingOut')],
        [cond('ScalingUp'), condSummary('ScalingUp')],
        [cond('ScalingDown'), condSummary('ScalingDown')],
      ],
      '""',
    ),
    source: `${BOOK}/crd-api-reference#machinedeploymentstatus`,
  },
  {
    name: `${GROUP}/MachineDeployment:v1beta1`,
    group: GROUP,
    kinds: ['MachineDeployment'],
    versions: ['v1beta1'],
    observedGeneration: 'self.status.observedGeneration',
    ready: `self.status.phase == "Running" && self.status.updatedReplicas == self.spec.replicas && self.status.availableReplicas >= self.spec.replicas && ${notCond('Ready', 'False')}`,
    failed: 'self.status.phase == "Failed"',
    message: firstOf(
      [
        ['self.status.phase == "Failed"', '"phase Failed"'],
        ['self.status.phase != "Running"', '"phase " + self.status.phase'],
        [
          'self.status.updatedReplicas < self.spec.replicas || self.status.availableReplicas < self.spec.replicas',
          'string(self.status.updatedReplicas) + "/" + string(self.spec.replicas) + " replicas updated, " + string(self.status.availableReplicas) + " available"',
        ],
      ],
      condSummary('Ready'),
    ),
    source: `${BOOK}/crd-api-reference-v1beta1#machinedeploymentstatus`,
  },
];
