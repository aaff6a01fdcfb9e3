/**
 * Crossplane (https://docs.crossplane.io/latest/managed-resources/managed-resources/,
 * apis/core/v2/condition.go): managed resources, composite resources (XRs) and claims report
 * `Synced` (the last reconcile succeeded: ReconcileSuccess, ReconcileError, ReconcilePaused) and
 * `Ready` (Available, Unavailable, Creating, Deleting), each written with the generation it was
 * set for (`observedGeneration` on the condition). Ready means both are True.
 *
 * Never Failed: Crossplane retries every error with back-off, and the common ones clear by
 * themselves — references to resources still being created ("cannot resolve references"), a
 * provider or its credentials not installed yet, the cloud API throttling. `Synced=False` is in
 * progress with its message; `progressDeadline` decides.
 *
 * Which objects: a managed resource is any kind of a group under `crossplane.io` or `upbound.io`
 * with `spec.forProvider` (the Crossplane resource model's required field; Crossplane's own
 * kinds — Providers, Compositions, ProviderConfigs — have none). Claims and XRs live in groups
 * their XRD names (any group but Kubernetes' own), so they are recognised by the fields
 * Crossplane gives them — `spec.compositionRef`, `compositionSelector`, `compositionRevisionRef`,
 * `compositionUpdatePolicy`, `compositeDeletePolicy`, `resourceRefs` (v1), `spec.crossplane` (v2)
 * — or by a `Synced` condition. One whose manifest names no composition is
 * recognised once Crossplane first writes its status; until then kstatus judges it (a
 * cluster-wide rule for the XRD's group closes that gap).
 */
import type { KubeObject } from '../../../kube/types.ts';
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condField, condGeneration, condSummary, firstOf, notCond } from './cel.ts';

const judge = {
  observedGeneration: condGeneration('Synced', 'Ready'),
  ready: `${cond('Synced')} && ${cond('Ready')}`,
  message: firstOf(
    [
      [notCond('Synced'), condField('Synced', 'message')],
      [notCond('Ready'), condSummary('Ready')],
    ],
    '""',
  ),
} satisfies Partial<HealthRuleSpec>;

/** fields Crossplane gives claims and XRs (v1: pkg/xcrd/schemas.go of crossplane-runtime), or v2's `spec.crossplane` */
const CLAIM_OR_COMPOSITE_FIELDS = [
  'compositionRef',
  'compositionSelector',
  'compositionRevisionRef',
  'compositionUpdatePolicy',
  'compositeDeletePolicy',
  'resourceRefs',
  'crossplane',
];

const specOf = (obj: KubeObject): object | undefined => (obj.spec && typeof obj.spec === 'object' ? obj.spec : undefined);

function isManagedResource(obj: KubeObject): boolean {
  const spec = specOf(obj);
  return spec !== undefined && 'forProvider' in spec;
}

/** read without CEL: this rule is asked about objects of every group the others leave (not Kubernetes' own) */
function isClaimOrComposite(obj: KubeObject): boolean {
  const group = obj.apiVersion.includes('/') ? obj.apiVersion.slice(0, obj.apiVersion.indexOf('/')) : '';
  if (!group.includes('.') || group.endsWith('.k8s.io')) return false;
  const spec = specOf(obj);
  if (spec && CLAIM_OR_COMPOSITE_FIELDS.some((f) => f in spec)) return true;
  const conditions = (obj.status as { conditions?: unknown } | undefined)?.conditions;
  return Array.isArray(conditions) && conditions.some((c) => (c as { type?: unknown } | null)?.type === 'Synced');
}

export const CROSSPLANE: HealthRuleSpec[] = [
  {
    name: 'crossplane/managed-resource',
    group: ['*.crossplane.io', '*.upbound.io'],
    selects: isManagedResource,
    ...judge,
    source: 'https://docs.crossplane.io/latest/managed-resources/managed-resources/',
  },
  {
    name: 'crossplane/composite-or-claim',
    group: '*',
    selects: isClaimOrComposite,
    ...judge,
    source: 'https://docs.crossplane.io/latest/composition/composite-resources/',
  },
];
