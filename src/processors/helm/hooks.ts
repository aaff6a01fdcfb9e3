/**
 * Helm hooks, turned into ordinary objects with an apply phase. Hoist applies a bundle
 * declaratively on every revision; there is no "install", "upgrade", "delete" or "rollback" event
 * to run a hook on, so the rule (documented in ./README.md) is:
 *
 *   - a test hook (`test`, `test-success`) is dropped;
 *   - a hook with `pre-install` or `pre-upgrade` is kept, annotated `apply-phase: pre`;
 *   - otherwise a hook with `post-install` or `post-upgrade` is kept, annotated `apply-phase: post`;
 *   - any other hook (only `*-delete` / `*-rollback` events, or no event Helm knows) is dropped,
 *     exactly as Helm never installs it during install or upgrade.
 *
 * Pure: no I/O. Objects are copied before the annotation is added; inputs are never mutated.
 */
import type { KubeObject } from '../../kube/types.ts';

/** Set on kept hook objects; the applier applies `pre` before and `post` after the other objects. */
export const ANNOTATION_APPLY_PHASE = 'core.rukpak.io/apply-phase';
export const HELM_HOOK = 'helm.sh/hook';
export const HELM_HOOK_WEIGHT = 'helm.sh/hook-weight';
export const HELM_HOOK_DELETE_POLICY = 'helm.sh/hook-delete-policy';

export type ApplyPhase = 'pre' | 'post';

export type HookDecision =
  | { action: 'keep-manifest' }
  | { action: 'keep-hook'; phase: ApplyPhase; weight: number; events: string[] }
  | { action: 'drop'; events: string[]; why: string };

/** Helm's event names (pkg/release/hook.go); `test-success` is Helm 2's spelling of `test`. */
const KNOWN_EVENTS = new Set([
  'pre-install',
  'post-install',
  'pre-delete',
  'post-delete',
  'pre-upgrade',
  'post-upgrade',
  'pre-rollback',
  'post-rollback',
  'test',
  'test-success',
]);

function annotation(obj: KubeObject, key: string): string | undefined {
  const v = obj.metadata.annotations?.[key];
  return typeof v === 'string' ? v : undefined;
}

/** The hook events an object declares, split and trimmed the way Helm's manifest sorter does. */
function hookEvents(obj: KubeObject): string[] | undefined {
  const raw = annotation(obj, HELM_HOOK);
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

/** What Hoist does with one rendered object under the hook rule. */
export function classifyHook(obj: KubeObject): HookDecision {
  const events = hookEvents(obj);
  // Helm treats only objects carrying the annotation as hooks; an empty value still makes a hook
  // (one with no events, which Helm never runs).
  if (events === undefined) return { action: 'keep-manifest' };
  const known = events.filter((e) => KNOWN_EVENTS.has(e));
  if (known.some((e) => e === 'test' || e === 'test-success')) {
    return { action: 'drop', events, why: 'test hooks are not installed' };
  }
  const weight = hookWeight(obj);
  if (known.includes('pre-install') || known.includes('pre-upgrade')) {
    return { action: 'keep-hook', phase: 'pre', weight, events };
  }
  if (known.includes('post-install') || known.includes('post-upgrade')) {
    return { action: 'keep-hook', phase: 'post', weight, events };
  }
  const why =
    known.length === 0
      ? 'no hook event helm knows, so helm never installs it'
      : 'delete and rollback hooks have no counterpart in a declarative apply';
  return { action: 'drop', events, why };
}

/** A rendered object with the template (or crds/ file) it came from. */
export interface RenderedObject {
  object: KubeObject;
  /** helm's "# Source:" path, e.g. mychart/templates/job.yaml */
  source: string;
}

export interface HookOrdering {
  /** crds/ objects, then `pre` hooks, then the chart's other objects, then `post` hooks */
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

/**
 * Applies the hook rule to objects in helm's output order. Within a phase hooks are ordered as
 * Helm runs them: stably by weight, then by name (action/hooks.go hookByWeight). The order of
 * everything else is helm's own, so the result is deterministic for deterministic input.
 */
export function orderHooks(rendered: readonly RenderedObject[]): HookOrdering {
  const crds: KubeObject[] = [];
  const main: KubeObject[] = [];
  const pre: Array<{ object: KubeObject; weight: number }> = [];
  const post: Array<{ object: KubeObject; weight: number }> = [];
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
      case 'keep-hook': {
        const object = withPhase(r.object, decision.phase);
        (decision.phase === 'pre' ? pre : post).push({ object, weight: decision.weight });
        const policies = (annotation(r.object, HELM_HOOK_DELETE_POLICY) ?? '')
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p === 'hook-succeeded' || p === 'hook-failed');
        if (policies.length > 0) {
          warnings.push(
            `helm hook ${label(r)} has delete policy ${policies.join(',')}: hoist keeps hook objects as managed objects until they leave the bundle`,
          );
        }
        break;
      }
    }
  }
  const byWeight = (a: { object: KubeObject; weight: number }, b: { object: KubeObject; weight: number }): number => {
    if (a.weight !== b.weight) return a.weight - b.weight;
    const an = a.object.metadata.name;
    const bn = b.object.metadata.name;
    return an < bn ? -1 : an > bn ? 1 : 0;
  };
  // Array.prototype.sort is stable, which keeps Helm's kind order among equal weights and names.
  pre.sort(byWeight);
  post.sort(byWeight);
  return { objects: [...crds, ...pre.map((h) => h.object), ...main, ...post.map((h) => h.object)], warnings };
}

function withPhase(obj: KubeObject, phase: ApplyPhase): KubeObject {
  return {
    ...obj,
    metadata: { ...obj.metadata, annotations: { ...obj.metadata.annotations, [ANNOTATION_APPLY_PHASE]: phase } },
  };
}
