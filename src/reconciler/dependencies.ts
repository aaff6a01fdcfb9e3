/**
 * Whether the BundleDeployments a BundleDeployment depends on are ready (`spec.dependsOn`, after
 * Flux's): the built-in check is the status contract's Succeeded — done with Progressing reason
 * Succeeded at the dependency's current generation (docs/status.md); a `readyExpr` replaces it.
 * Each dependency that is not ready is named with why: not found, being deleted, paused, failed
 * (Blocked, RolledBack), not done yet. Messages name states and reasons, never a condition's
 * message (the dependency's readers and the dependent's need not be the same). Pure, but for
 * compiling readyExpr (cached).
 */
import type { BundleDeployment, DependencyRef } from '../../api/v1alpha2/types.ts';
import { getCondition } from './conditions.ts';
import { compileReadyExpr } from './ready-expr.ts';

export interface DependencyVerdict {
  name: string;
  ready: boolean;
  /** why it is not ready, e.g. "not found", "failed (Progressing=False/RolledBack)" */
  why?: string;
}

/** the state of a dependency as a person reads it, and whether it counts as ready by the built-in check */
export function dependencyState(dep: BundleDeployment | undefined): { succeeded: boolean; state: string } {
  if (!dep) return { succeeded: false, state: 'not found' };
  if (dep.metadata.deletionTimestamp) return { succeeded: false, state: 'being deleted' };
  if (dep.spec.paused) return { succeeded: false, state: 'paused' };
  const generation = dep.metadata.generation ?? 0;
  if (dep.status?.observedGeneration !== generation) return { succeeded: false, state: `not reconciled at generation ${generation} yet` };
  const installed = getCondition(dep.status.conditions, 'Installed');
  const progressing = getCondition(dep.status.conditions, 'Progressing');
  const current = (c: typeof progressing) => c?.observedGeneration === generation;
  const p = progressing ? `Progressing=${progressing.status}/${progressing.reason}` : 'Progressing not reported';
  if (current(progressing) && progressing?.status === 'False') {
    if (progressing.reason === 'Succeeded' && installed?.status === 'True' && current(installed)) return { succeeded: true, state: 'ready' };
    if (progressing.reason === 'Blocked' || progressing.reason === 'RolledBack') return { succeeded: false, state: `failed (${p})` };
    if (progressing.reason === 'DependencyNotReady') return { succeeded: false, state: `waiting for its own dependencies (${p})` };
  }
  return { succeeded: false, state: `not done yet (${p})` };
}

/**
 * Each dependency's verdict, in spec order. `lookup` reads the informer cache. Throws the
 * terminal spec error of a readyExpr that does not compile or is over the cost limit.
 */
export function dependencyVerdicts(
  self: BundleDeployment,
  refs: readonly DependencyRef[],
  lookup: (name: string) => BundleDeployment | undefined,
): DependencyVerdict[] {
  return refs.map((ref) => {
    const dep = lookup(ref.name);
    const { succeeded, state } = dependencyState(dep);
    if (!ref.readyExpr) return succeeded ? { name: ref.name, ready: true } : { name: ref.name, ready: false, why: state };
    const expr = compileReadyExpr(ref.name, ref.readyExpr);
    if (!dep) return { name: ref.name, ready: false, why: state };
    const r = expr.evaluate(dep, self);
    return r.ok ? { name: ref.name, ready: true } : { name: ref.name, ready: false, why: `${r.message ?? 'readyExpr is false'}; state: ${state}` };
  });
}

/** "operator (failed (Progressing=False/Blocked)), db (not found)" */
export function describeWaiting(verdicts: readonly DependencyVerdict[]): string {
  return verdicts
    .filter((v) => !v.ready)
    .map((v) => `${v.name} (${v.why ?? 'not ready'})`)
    .join(', ');
}
