/**
 * A new revision on its way in (status.transition): when it began (progressDeadline counts from
 * there), the apply phase it waits on, and the Helm hooks it ran — so a later reconcile (a watch
 * event, a retry, a restart) runs no hook twice and does not restart the clock. Also runs one
 * hook event for the revision and records it, and moves the runs into status.revisions when the
 * transition ends.
 */
import type { HookEvent, HookRun, Transition } from '../../../api/v1alpha2/types.ts';
import { hooksFor } from '../../apply/hooks.ts';
import type { KubeObject } from '../../kube/types.ts';
import { HoistError } from '../../util/errors.ts';
import { recordRevision } from '../../revisions/revision-history.ts';
import { actor, type StepContext } from './context.ts';
import type { ReconcileState } from './state.ts';
import { ReconcileCode } from '../errors.ts';

export type TransitionAction = NonNullable<Transition['action']>;

/** the transition of revision `rev` (kept when it is the one under way, else begun now) */
export function transitionOf(s: ReconcileState, rev: { number: number; contentDigest: string }, action: TransitionAction): Transition {
  const t = s.status.transition;
  if (t && t.revision === rev.number && t.contentDigest === rev.contentDigest) return t;
  const fresh: Transition = {
    revision: rev.number,
    contentDigest: rev.contentDigest,
    action,
    startedAt: s
      .now()
      .toISOString()
      .replace(/\.\d+Z$/, 'Z'),
  };
  s.status.transition = fresh;
  return fresh;
}

/** epoch ms by which the transition must be done (progressDeadline from its start) */
export function deadlineOf(s: ReconcileState, t: Transition): number {
  return Date.parse(t.startedAt) + s.spec.progressDeadlineMs;
}

/**
 * Runs the hooks of `event` for the transition, skipping those that already succeeded in it.
 * Returns the failure as a terminal HoistError naming the hook and why, undefined when every
 * hook succeeded (or there are none). API errors on the way throw (retried with backoff).
 */
export async function runHooks(
  ctx: StepContext,
  s: ReconcileState,
  t: Transition,
  event: HookEvent,
  hooks: readonly KubeObject[],
): Promise<HoistError | undefined> {
  if (hooksFor(hooks, event).length === 0) return undefined;
  const record = (run: HookRun) => {
    const runs = (t.hooks ?? []).filter((r) => !(r.event === run.event && r.kind === run.kind && r.name === run.name && r.namespace === run.namespace));
    t.hooks = [...runs, run].slice(-64);
  };
  const result = await s.time(
    `hooks ${event}`,
    ctx.d.hooks.run({ name: s.name, revision: t.revision, installNamespace: s.spec.installNamespace, actor: actor(ctx, s.bd) }, event, hooks, {
      done: t.hooks ?? [],
      deadline: deadlineOf(s, t),
      signal: s.signal,
      onRun: record,
    }),
  );
  for (const r of result.runs) record(r);
  if (!result.failed) return undefined;
  const { run, subject } = result.failed;
  ctx.d.events.event(s.bd, 'Warning', 'HookFailed', `revision ${t.revision}: ${subject} failed: ${run.message ?? ''}`);
  return new HoistError(`${subject} failed: ${run.message ?? 'failed'}`, { stage: 'apply', code: ReconcileCode.HookFailed, subject, terminal: true });
}

/** the transition is over: its hook runs go to the revision's entry in status.revisions */
export function endTransition(s: ReconcileState, phase: 'Active' | 'Failed'): void {
  const t = s.status.transition;
  if (!t) return;
  s.status.transition = undefined;
  if (!t.hooks?.length) return;
  const entry = s.status.revisions?.find((r) => r.number === t.revision);
  s.status.revisions = recordRevision(s.status.revisions, {
    ...(entry ?? { number: t.revision, contentDigest: t.contentDigest }),
    phase: entry?.phase ?? phase,
    hooks: t.hooks,
  });
}
