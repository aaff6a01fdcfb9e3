/**
 * The dependsOn gate: a new revision is applied only once every BundleDeployment in
 * spec.dependsOn is ready (src/reconciler/dependencies.ts). Resolve and render have run by then;
 * nothing of the new revision is stored or applied while it waits. Reads only the informer cache:
 * a wait makes no API request, and the manager re-queues the BundleDeployment when one of its
 * dependencies changes (an index over dependsOn), so nothing polls. A BundleDeployment on a
 * dependency cycle says so instead of waiting on it. Sets Progressing (and Installed while nothing
 * is installed) when it holds the revision back.
 */
import { isHoistError } from '../../util/errors.ts';
import { cycleThrough } from '../dependency-graph.ts';
import { dependencyVerdicts, describeWaiting } from '../dependencies.ts';
import type { StepContext } from './context.ts';
import type { ReconcileState } from './state.ts';
import { setBlocked, setDependencyNotReady, setInstalledActive, setInstalledPending } from '../status.ts';

/** true when a new revision may be applied now; otherwise the conditions say why */
export function dependenciesReady(ctx: StepContext, s: ReconcileState): boolean {
  const refs = s.spec.dependsOn ?? [];
  if (refs.length === 0) return true;
  const lookup = (name: string) => ctx.d.getBundleDeployment(name);
  const cycle = cycleThrough(s.name, (name) => (name === s.name ? refs : lookup(name)?.spec.dependsOn)?.map((r) => r.name));
  if (cycle) {
    hold(s, `dependency cycle ${cycle.join(' → ')}: no member of it can be applied first; remove one of these dependsOn entries`);
    return false;
  }
  let verdicts;
  try {
    verdicts = dependencyVerdicts(s.bd, refs, lookup);
  } catch (e) {
    if (!isHoistError(e)) throw e;
    setBlocked(s, `${e.message}; retried when the spec changes`);
    installedWhileHeld(s, 'a new revision is blocked: its dependsOn cannot be evaluated');
    s.note = 'dependsOn refused';
    return false;
  }
  if (verdicts.every((v) => v.ready)) return true;
  hold(s, `waiting for ${describeWaiting(verdicts)}; applied once ${verdicts.length === 1 ? 'it is' : 'they are'} ready`);
  return false;
}

function hold(s: ReconcileState, why: string): void {
  setDependencyNotReady(s, `a new revision is not applied: ${why}`);
  installedWhileHeld(s, 'a new revision waits for its dependencies');
  s.note = 'waiting for dependencies';
}

/** Installed keeps naming the installed revision, or says nothing is installed yet */
function installedWhileHeld(s: ReconcileState, why: string): void {
  const active = s.status.activeRevision;
  if (active) setInstalledActive(s, active, why);
  else setInstalledPending(s, `nothing installed: ${why}`);
}
