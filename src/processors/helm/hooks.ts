/**
 * Helm hooks: which rendered objects are hooks Hoist runs, and in what order (documented in
 * ./README.md). Hoist runs hooks as Helm does (src/apply/hooks.ts): `pre-install`/`post-install`
 * on a BundleDeployment's first revision, `pre-upgrade`/`post-upgrade` on a new one,
 * `pre-rollback`/`post-rollback` when a failed revision is rolled back, `pre-delete`/
 * `post-delete` on uninstall. Here:
 *
 *   - a test hook (`test`, `test-success`) is dropped (helm's `--skip-tests`);
 *   - a hook with at least one event Helm knows is kept, annotated `core.rukpak.io/hook` with
 *     those events, so the applier never applies it as a managed object;
 *   - a hook with no event Helm knows is dropped, as Helm never runs it.
 *
 * Pure: no I/O. Objects are copied before the annotation is added; inputs are never mutated.
 */
import { ANNOTATION_HOOK, type HookEvent } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../kube/types.ts';

export { ANNOTATION_HOOK };
export const HELM_HOOK = 'helm.sh/hook';
export const HELM_HOOK_WEIGHT = 'helm.sh/hook-weight';
export const HELM_HOOK_DELETE_POLICY = 'helm.sh/hook-delete-policy';

export const HOOK_EVENTS: readonly HookEvent[] = [
  'pre-install',
  'post-install',
  'pre-upgrade',
  'post-upgrade',
  'pre-rollback',
  'post-rollback',
  'pre-delete',
  'post-delete',
];

export type HookDecision =
  { action: 'keep-manifest' } | { action: 'keep-hook'; events: HookEvent[]; weight: number } | { action: 'drop'; events: string[]; why: string };

function annotation(obj: KubeObject, key: string): string | undefined {
  const v = obj.metadata.annotations?.[key];
  return typeof v === 'string' ? v : undefined;
}

/** a comma-separated annotation split and trimmed the way Helm's manifest sorter does */
function list(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  return raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
}

/** helm.sh/hook-weight as Helm reads it: strconv.Atoi, and 0 when it does not parse. */
export function hookWeight(obj: KubeObject): number {
  const raw = annotation(obj, HELM_HOOK_WEIGHT)?.trim();
  if (raw === undefined || !/^[+-]?\d+$/.test(raw)) return 0;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : 0;
}

export type HookDeletePolicy = 'before-hook-creation' | 'hook-succeeded' | 'hook-failed';

/** helm.sh/hook-delete-policy; Helm's default when none is given is before-hook-creation */
export function hookDeletePolicies(obj: KubeObject): HookDeletePolicy[] {
  const known = (list(annotation(obj, HELM_HOOK_DELETE_POLICY)) ?? []).filter(
    (p): p is HookDeletePolicy => p === 'before-hook-creation' || p === 'hook-succeeded' || p === 'hook-failed',
  );
  return known.length > 0 ? known : ['before-hook-creation'];
}

/** the events Hoist runs a kept hook object for (core.rukpak.io/hook); undefined for other objects */
export function hookEventsOf(obj: KubeObject): HookEvent[] | undefined {
  const raw = list(annotation(obj, ANNOTATION_HOOK));
  return raw?.filter((e): e is HookEvent => (HOOK_EVENTS as readonly string[]).includes(e));
}

/** What Hoist does with one rendered object under the hook rule. */
export function classifyHook(obj: KubeObject): HookDecision {
  const events = list(annotation(obj, HELM_HOOK));
  // Helm treats only objects carrying the annotation as hooks; an empty value still makes a hook
  // (one with no events, which Helm never runs).
  if (events === undefined) return { action: 'keep-manifest' };
  if (events.some((e) => e === 'test' || e === 'test-success')) return { action: 'drop', events, why: 'test hooks are not installed' };
  const known = events.filter((e): e is HookEvent => (HOOK_EVENTS as readonly string[]).includes(e));
  if (known.length === 0) return { action: 'drop', events, why: 'no hook event helm knows, so helm never runs it' };
  return { action: 'keep-hook', events: known, weight: hookWeight(obj) };
}

/** A rendered object with the template (or crds/ file) it came from. */
export interface RenderedObject {
  object: KubeObject;
  /** helm's "# Source:" path, e.g. mychart/templates/job.yaml */
  source: string;
}

export interface HookOrdering {
  /** crds/ objects, the chart's other objects, then the hooks in the order Helm runs them */
  objects: KubeObject[];
  warnings: string[];
}

/** "group/version Kind name" of a rendered object for warnings. */
function label(r: RenderedObject): string {
  const ns = r.object.metadata.namespace ? `${r.object.metadata.namespace}/` : '';
  return `${r.object.apiVersion} ${r.object.kind} ${ns}${r.object.metadata.name} (${r.source})`;
}

/** A chart's (or subchart's) crds/ directory, as opposed to templates that happen to render CRDs. */
const CRDS_DIR_SOURCE = /^[^/]+(\/charts\/[^/]+)*\/crds\//;

/** Helm's InstallOrder (pkg/releaseutil/kind_sorter.go): hooks of equal weight and name run in this kind order */
const HELM_INSTALL_ORDER = [
  'PriorityClass',
  'Namespace',
  'NetworkPolicy',
  'ResourceQuota',
  'LimitRange',
  'PodSecurityPolicy',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'SecretList',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleList',
  'ClusterRoleBinding',
  'ClusterRoleBindingList',
  'Role',
  'RoleList',
  'RoleBinding',
  'RoleBindingList',
  'Service',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'HorizontalPodAutoscaler',
  'StatefulSet',
  'Job',
  'CronJob',
  'IngressClass',
  'Ingress',
  'APIService',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
];

function kindRank(kind: string): number {
  const i = HELM_INSTALL_ORDER.indexOf(kind);
  return i < 0 ? HELM_INSTALL_ORDER.length : i;
}

/**
 * Helm's hook order: by weight, then name (action/hooks.go hookByWeight, a stable sort over hooks
 * already sorted by kind install order, then kind name for unknown kinds).
 */
export function compareHooks(a: KubeObject, b: KubeObject): number {
  const wa = hookWeight(a);
  const wb = hookWeight(b);
  if (wa !== wb) return wa - wb;
  const an = a.metadata.name;
  const bn = b.metadata.name;
  if (an !== bn) return an < bn ? -1 : 1;
  const ka = kindRank(a.kind);
  const kb = kindRank(b.kind);
  if (ka !== kb) return ka - kb;
  return a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0;
}

/**
 * Applies the hook rule to objects in helm's output order: hooks are kept (annotated) after the
 * other objects, in the order Helm runs them; the order of everything else is helm's own, so the
 * result is deterministic for deterministic input.
 */
export function orderHooks(rendered: readonly RenderedObject[]): HookOrdering {
  const crds: KubeObject[] = [];
  const main: KubeObject[] = [];
  const hooks: KubeObject[] = [];
  const warnings: string[] = [];
  for (const r of rendered) {
    const decision = classifyHook(r.object);
    switch (decision.action) {
      case 'keep-manifest':
        (CRDS_DIR_SOURCE.test(r.source) ? crds : main).push(r.object);
        break;
      case 'drop':
        warnings.push(`helm hook ${label(r)} [${decision.events.join(',')}] dropped: ${decision.why}`);
        break;
      case 'keep-hook':
        hooks.push(withHookEvents(r.object, decision.events));
        break;
    }
  }
  hooks.sort(compareHooks);
  return { objects: [...crds, ...main, ...hooks], warnings };
}

function withHookEvents(obj: KubeObject, events: readonly HookEvent[]): KubeObject {
  return {
    ...obj,
    metadata: { ...obj.metadata, annotations: { ...obj.metadata.annotations, [ANNOTATION_HOOK]: events.join(',') } },
  };
}
