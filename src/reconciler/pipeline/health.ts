/**
 * Healthy: the active revision's health from the managed-object watches — built-in readiness and
 * the verdicts of `spec.healthChecks`, the worse of the two per object. Reads caches only.
 */
import { objectId } from '../../apply/object-id.ts';
import type { KubeObject } from '../../kube/types.ts';
import { watchObjects, type StepContext } from './context.ts';
import type { ReconcileState } from './state.ts';

/** sets Healthy; true when every object of the active revision is ready */
export async function observeHealth(ctx: StepContext, s: ReconcileState, objects?: readonly KubeObject[]): Promise<boolean> {
  const active = s.status.activeRevision;
  if (!active) {
    s.set({ type: 'Healthy', status: 'Unknown', reason: 'Unknown', message: 'nothing installed' });
    return false;
  }
  const objs = objects ?? (await ctx.objects.of(s.name, active).catch(() => undefined));
  if (!objs) {
    s.set({ type: 'Healthy', status: 'Unknown', reason: 'Unknown', message: `revision ${active.number} objects not found in the revision store` });
    return false;
  }
  const managed = ctx.d.managed;
  managed.setProbes(s.name, s.bd.spec.healthChecks);
  await watchObjects(ctx, objs);
  await managed.settled();
  const probeError = managed.probeError(s.name);
  if (probeError) {
    s.set({ type: 'Healthy', status: 'False', reason: 'Unhealthy', message: probeError.message });
    return false;
  }
  const { failed, waiting } = assess(ctx, s, objs);
  const more = firstFive;
  if (failed.length) s.set({ type: 'Healthy', status: 'False', reason: 'Unhealthy', message: `${failed.length} failing: ${more(failed)}` });
  else if (waiting.length) s.set({ type: 'Healthy', status: 'False', reason: 'Progressing', message: `${waiting.length} not ready: ${more(waiting)}` });
  else s.set({ type: 'Healthy', status: 'True', reason: 'Healthy', message: `${objs.length} objects ready` });
  return failed.length === 0 && waiting.length === 0;
}

/** what is failing and what is not ready yet among `objs`, from the watch caches (no request) */
export function assess(ctx: StepContext, s: ReconcileState, objs: readonly KubeObject[]): { failed: string[]; waiting: string[] } {
  const managed = ctx.d.managed;
  const failed: string[] = [];
  const waiting: string[] = [];
  const skipped = s.status.skippedOptional ?? [];
  for (const o of objs) {
    const ns = o.metadata.namespace;
    const id = objectId(o);
    const subject = `${o.kind} ${ns ? `${ns}/` : ''}${o.metadata.name}`;
    if (skipped.some((k) => k.endsWith(subject))) continue;
    const h = managed.health(id);
    if (!h) {
      waiting.push(`${subject}: not observed`);
      continue;
    }
    if (h.readiness === 'Failed') failed.push(`${subject}: ${h.message ?? 'failed'}`);
    else if (h.readiness === 'InProgress') waiting.push(`${subject}: ${h.message ?? 'in progress'}`);
    for (const v of managed.checkVerdicts(id)) {
      if (v.changesAt !== undefined) s.recheckAt = Math.min(s.recheckAt ?? v.changesAt, v.changesAt);
      if (v.readiness === 'Failed') failed.push(`${subject}: health check ${v.check}: ${v.message ?? 'failed'}`);
      else if (v.readiness === 'InProgress') waiting.push(`${subject}: health check ${v.check}: ${v.message ?? 'in progress'}`);
    }
  }
  return { failed, waiting };
}

/** at most five of a list, and how many more */
export function firstFive(list: readonly string[]): string {
  return list.slice(0, 5).join('; ') + (list.length > 5 ? ` (+${list.length - 5} more)` : '');
}
