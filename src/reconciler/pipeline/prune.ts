/**
 * Pruning what left the bundle, for each step that does it (a new revision promoted, a revision
 * abandoned half-way, a rollback): the objects of the revisions replaced that the current one
 * lacks are deleted (src/apply/prune.ts), except those a retention policy keeps
 * (src/apply/retention.ts), which are let go of, listed in `status.keptObjects` and named in a
 * `Kept` Event.
 */
import { lineageOf } from '../../../api/v1alpha2/types.ts';
import { deleteOwned, staleObjects } from '../../apply/prune.ts';
import type { ObjectResult } from '../../apply/result.ts';
import type { KubeObject } from '../../kube/types.ts';
import { describeKept, keptObjectsAfter } from '../kept-objects.ts';
import { actor, writtenUid, type StepContext } from './context.ts';
import type { ReconcileState } from './state.ts';

/** deletes (or keeps) the objects of `previous` that revision `revision`'s `current` objects lack; throws as deleteOwned does */
export async function pruneLeftOvers(
  ctx: StepContext,
  s: ReconcileState,
  previous: readonly KubeObject[],
  current: readonly KubeObject[],
  revision: number,
): Promise<ObjectResult[]> {
  const stale = staleObjects(previous, current);
  const results = await deleteOwned(actor(ctx, s.bd), { name: s.name, lineage: lineageOf(s.bd) }, stale, {
    keepCRDs: !s.spec.deleteCRDsOnUninstall,
    log: ctx.d.log,
    retained: current,
    writtenUid: writtenUid(ctx, s.bd),
    signal: s.signal,
  });
  s.status.keptObjects = keptObjectsAfter(s.status.keptObjects, results, stale, current, revision);
  const kept = describeKept(results);
  if (kept) {
    ctx.d.events.event(
      s.bd,
      'Normal',
      'Kept',
      `revision ${revision}: ${kept.count} object(s) that left the bundle kept by their retention policy, left in place and no longer managed: ${kept.names}`,
    );
  }
  return results;
}
