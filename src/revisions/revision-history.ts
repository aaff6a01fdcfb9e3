/**
 * `status.revisions` bookkeeping (DESIGN §3), as pure functions over status data: recording a
 * revision's phase, choosing the last good revision to roll back to, and trimming the history to
 * `revisionHistoryLimit`.
 */
import type { BundleDeploymentStatus, RevisionStatus } from '../../api/v1alpha2/types.ts';

/** status lists at most this many revisions, whatever the history limit */
export const MAX_HISTORY_STATUS = 10;

/** `list` with `entry` recorded; a new Active entry supersedes the previous Active one */
export function recordRevision(list: readonly RevisionStatus[] | undefined, entry: RevisionStatus): RevisionStatus[] {
  const before = (list ?? []).find((r) => r.number === entry.number);
  const others = (list ?? [])
    .filter((r) => r.number !== entry.number)
    .map((r) => (entry.phase === 'Active' && r.phase === 'Active' ? { ...r, phase: 'Superseded' as const } : r));
  // the hooks a revision ran stay with it until a later transition to it runs others
  const kept = entry.hooks === undefined && before?.hooks ? { ...entry, hooks: before.hooks } : entry;
  return [...others, kept].sort((a, b) => a.number - b.number).slice(-MAX_HISTORY_STATUS);
}

/** the revision to roll back to when `failedDigest` fails: the active one, else the newest good one */
export function lastGoodRevision(status: BundleDeploymentStatus, failedDigest: string): { number: number; contentDigest: string } | undefined {
  if (status.activeRevision && status.activeRevision.contentDigest !== failedDigest) return status.activeRevision;
  const candidates = (status.revisions ?? []).filter((r) => r.phase !== 'Failed' && r.contentDigest !== failedDigest);
  return candidates.sort((a, b) => b.number - a.number)[0];
}

/**
 * The revision numbers whose stored objects must stay: those status lists (already trimmed),
 * the active one, the one being attempted (Hold retries it under the same number) and the one
 * whose transition is under way. Everything else of the BD is pruned from the revision store.
 */
export function keptRevisions(status: BundleDeploymentStatus): Set<number> {
  const kept = new Set((status.revisions ?? []).map((r) => r.number));
  for (const n of [status.activeRevision?.number, status.attemptedRevision?.number, status.transition?.revision]) if (n !== undefined) kept.add(n);
  return kept;
}

/** the Active revisions plus the `limit` newest others (Superseded and Failed alike), oldest first */
export function trimHistory(list: readonly RevisionStatus[] | undefined, limit: number): RevisionStatus[] {
  const revs = list ?? [];
  const active = revs.filter((r) => r.phase === 'Active');
  const rest = revs
    .filter((r) => r.phase !== 'Active')
    .sort((a, b) => b.number - a.number)
    .slice(0, limit);
  return [...active, ...rest].sort((a, b) => a.number - b.number);
}
