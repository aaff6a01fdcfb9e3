/**
 * Apply phases: the order in which a revision's objects reach the cluster, by kind, after OLM
 * v1's boxcutter phases (operator-controller's applier) and Helm's install order. A new revision
 * applies a phase only once every object of the phases before it is ready, so a webhook
 * configuration never intercepts writes before the Deployment that serves it is Available, and a
 * custom resource never meets a CRD that is not Established. Within a phase,
 * `core.rukpak.io/apply-wave` orders objects further (lower first, default 0). Pure; the table is
 * documented in docs/decisions.md.
 */
import { ANNOTATION_APPLY_WAVE } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../kube/types.ts';
import { groupOf } from './object-id.ts';

export const PHASES = [
  'namespaces',
  'policies',
  'identity',
  'configuration',
  'storage',
  'crds',
  'roles',
  'bindings',
  'infrastructure',
  'deploy',
  'publish',
] as const;
export type PhaseName = (typeof PHASES)[number];

/** group/Kind (core group empty) → phase; every kind not listed is `deploy` */
const KIND_PHASE: Readonly<Record<string, PhaseName>> = {
  '/Namespace': 'namespaces',
  'networking.k8s.io/NetworkPolicy': 'policies',
  '/ResourceQuota': 'policies',
  '/LimitRange': 'policies',
  'policy/PodDisruptionBudget': 'policies',
  'scheduling.k8s.io/PriorityClass': 'policies',
  '/ServiceAccount': 'identity',
  '/Secret': 'configuration',
  '/ConfigMap': 'configuration',
  'storage.k8s.io/StorageClass': 'storage',
  '/PersistentVolume': 'storage',
  '/PersistentVolumeClaim': 'storage',
  'apiextensions.k8s.io/CustomResourceDefinition': 'crds',
  'rbac.authorization.k8s.io/ClusterRole': 'roles',
  'rbac.authorization.k8s.io/Role': 'roles',
  'rbac.authorization.k8s.io/ClusterRoleBinding': 'bindings',
  'rbac.authorization.k8s.io/RoleBinding': 'bindings',
  '/Service': 'infrastructure',
  '/Endpoints': 'infrastructure',
  'discovery.k8s.io/EndpointSlice': 'infrastructure',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration': 'publish',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration': 'publish',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy': 'publish',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding': 'publish',
  'apiregistration.k8s.io/APIService': 'publish',
  'networking.k8s.io/Ingress': 'publish',
  'networking.k8s.io/IngressClass': 'publish',
};

/** a CRD whose conversion is served by a webhook: applied once that webhook's server runs */
function hasConversionWebhook(obj: KubeObject): boolean {
  const conversion = (obj as { spec?: { conversion?: { strategy?: unknown } } }).spec?.conversion;
  return conversion?.strategy === 'Webhook';
}

export function phaseOf(obj: KubeObject): PhaseName {
  const phase = KIND_PHASE[`${groupOf(obj.apiVersion)}/${obj.kind}`] ?? 'deploy';
  return phase === 'crds' && hasConversionWebhook(obj) ? 'publish' : phase;
}

/** the apply-wave annotation as an integer; undefined when it is not one */
export function waveOf(obj: KubeObject): number | undefined {
  const raw = obj.metadata.annotations?.[ANNOTATION_APPLY_WAVE];
  if (raw === undefined) return 0;
  const s = String(raw).trim();
  if (!/^[+-]?\d{1,9}$/.test(s)) return undefined;
  return Number(s);
}

/** one step of a phased apply: a phase, or one wave of it */
export interface ApplyStep<T> {
  phase: PhaseName;
  wave: number;
  /** "deploy", or "deploy wave 2" when the phase has more than one wave */
  name: string;
  items: T[];
}

/**
 * The steps of an apply, in order: phases as in PHASES, waves ascending within a phase; empty
 * steps left out. Objects keep their relative order within a step. An apply-wave value that is
 * not an integer is a bundle error, returned rather than guessed.
 */
export function planSteps<T>(items: readonly T[], objectOf: (item: T) => KubeObject): { steps: ApplyStep<T>[]; invalid: KubeObject[] } {
  const byKey = new Map<string, ApplyStep<T>>();
  const invalid: KubeObject[] = [];
  for (const item of items) {
    const obj = objectOf(item);
    const wave = waveOf(obj);
    if (wave === undefined) {
      invalid.push(obj);
      continue;
    }
    const phase = phaseOf(obj);
    const key = `${phase}/${wave}`;
    let step = byKey.get(key);
    if (!step) byKey.set(key, (step = { phase, wave, name: phase, items: [] }));
    step.items.push(item);
  }
  const steps = [...byKey.values()].sort((a, b) => PHASES.indexOf(a.phase) - PHASES.indexOf(b.phase) || a.wave - b.wave);
  const waves = new Map<PhaseName, number>();
  for (const s of steps) waves.set(s.phase, (waves.get(s.phase) ?? 0) + 1);
  for (const s of steps) if ((waves.get(s.phase) ?? 0) > 1) s.name = `${s.phase} wave ${s.wave}`;
  return { steps, invalid };
}
