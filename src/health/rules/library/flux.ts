/**
 * Flux (https://fluxcd.io/flux/components/): every toolkit kind follows the kstatus conventions
 * with its own twist (e.g. fluxcd/kustomize-controller/docs/spec/v1/kustomizations.md, "Kustomization
 * Status"):
 *
 * - `Ready=True` once reconciled (for a HelmRelease: installed or upgraded and its tests passed);
 *   `Reconciling=True` while working on it (the `Ready` condition is then `Unknown`);
 *   `Stalled=True` when it cannot go on without a change (e.g. a HelmRelease out of install or
 *   upgrade retries, a HelmChart whose version constraint matches nothing): Failed.
 * - `status.observedGeneration` is "the latest generation which resulted in either a ready state,
 *   or stalled": a new generation that fails and is retried (Ready=False, Reconciling=True
 *   ProgressingWithRetry) keeps the previous one, so it stays in progress, with the Ready
 *   condition's message.
 * - A suspended object (`spec.suspend: true`) is not reconciled: a new generation is never
 *   observed, and the message says it is suspended.
 *
 * A HelmRepository of `spec.type: oci` is a data container the controller does not reconcile
 * ("the existence of the object can be considered to be ready for use",
 * fluxcd/source-controller/docs/spec/v1/helmrepositories.md): ready as soon as it exists.
 */
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condField, firstOf, notCond } from './cel.ts';

const DOCS = 'https://fluxcd.io/flux/components';

const toolkit = (group: string, kind: string, docs: string, extra: Partial<HealthRuleSpec> = {}): HealthRuleSpec => ({
  name: `${group}/${kind}`,
  group,
  kinds: [kind],
  observedGeneration: 'self.status.observedGeneration',
  ready: `${cond('Ready')} && ${notCond('Reconciling')}`,
  failed: cond('Stalled'),
  message: firstOf(
    [
      [cond('Stalled'), condField('Stalled', 'message')],
      ['has(self.spec.suspend) && self.spec.suspend == true', '"suspended (spec.suspend): not reconciled"'],
      [`self.status.conditions.exists(c, c.type == "Ready" && c.status == "False")`, condField('Ready', 'message')],
      [cond('Reconciling'), condField('Reconciling', 'message')],
    ],
    condField('Ready', 'message'),
  ),
  source: `${DOCS}/${docs}`,
  ...extra,
});

export const FLUX: HealthRuleSpec[] = [
  toolkit('kustomize.toolkit.fluxcd.io', 'Kustomization', 'kustomize/kustomizations/#kustomization-status'),
  toolkit('helm.toolkit.fluxcd.io', 'HelmRelease', 'helm/helmreleases/#helmrelease-status'),
  toolkit('source.toolkit.fluxcd.io', 'GitRepository', 'source/gitrepositories/#gitrepository-status'),
  toolkit('source.toolkit.fluxcd.io', 'OCIRepository', 'source/ocirepositories/#ocirepository-status'),
  toolkit('source.toolkit.fluxcd.io', 'Bucket', 'source/buckets/#bucket-status'),
  toolkit('source.toolkit.fluxcd.io', 'HelmChart', 'source/helmcharts/#helmchart-status'),
  {
    name: 'source.toolkit.fluxcd.io/HelmRepository:oci',
    group: 'source.toolkit.fluxcd.io',
    kinds: ['HelmRepository'],
    when: 'has(self.spec.type) && self.spec.type == "oci"',
    ready: 'true',
    source: `${DOCS}/source/helmrepositories/#helm-oci-repository`,
  },
  toolkit('source.toolkit.fluxcd.io', 'HelmRepository', 'source/helmrepositories/#helmrepository-status'),
];
