/**
 * Reading a BundleDeployment through its status contract (docs/status.md), the only thing this
 * controller knows about Hoist's internals. Pure.
 *
 * - done: `observedGeneration == metadata.generation`, `Installed=True`, `Progressing=False`;
 * - succeeded: done with `Progressing` reason `Succeeded` — the next step may start and the
 *   previous BundleDeployment of the lineage may be deleted;
 * - failed: `Progressing=False` with reason `Blocked` or `RolledBack` at the current generation
 *   (a terminal failure, not retried until the spec changes). The reason worth reporting upward
 *   is the one of the condition that failed: `Installed` (ApplyFailed, ConflictingOwner,
 *   UnsafeCRDUpgrade), else `Healthy` (Unhealthy), else `Unpacked`/`Resolved`;
 * - anything else is in progress (including `Conflict`: another member of the lineage applies).
 */
import type { BundleDeployment, Condition, ConditionType } from '../../api/v1alpha2/types.ts';

export type Verdict = { state: 'progressing'; message: string } | { state: 'succeeded' } | { state: 'failed'; reason: string; message: string };

const cond = (bd: BundleDeployment, type: ConditionType): Condition | undefined => bd.status?.conditions?.find((c) => c.type === type);

export function verdict(bd: BundleDeployment): Verdict {
  const gen = bd.metadata.generation;
  const prog = cond(bd, 'Progressing');
  if (bd.status?.observedGeneration !== gen || !prog || prog.observedGeneration !== gen) return { state: 'progressing', message: 'not observed yet' };
  if (prog.status === 'False' && prog.reason === 'Succeeded' && cond(bd, 'Installed')?.status === 'True') return { state: 'succeeded' };
  if (prog.status === 'False' && (prog.reason === 'Blocked' || prog.reason === 'RolledBack')) {
    const culprit = (['Installed', 'Healthy', 'Unpacked', 'Resolved'] as const)
      .map((t) => cond(bd, t))
      .find((c) => c && c.status === 'False' && c.reason !== 'Pending' && c.reason !== 'Progressing');
    return { state: 'failed', reason: culprit?.reason ?? prog.reason, message: culprit?.message ?? prog.message };
  }
  return { state: 'progressing', message: `${prog.reason}: ${prog.message}` };
}
