/**
 * Observe and roll out: after a successful apply, Healthy from the watches, then Progressing from
 * decideRollout (done, still rolling out, or past progressDeadline: roll back or block).
 */
import type { ReconcileResult } from '../../kube/controller.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { ActiveRevision } from '../../../api/v1alpha2/types.ts';
import { HoistError } from '../../util/errors.ts';
import { getCondition } from '../conditions.ts';
import { lastGoodRevision } from '../../revisions/revision-history.ts';
import { setBlocked, setRollingOut, setSucceeded } from '../status.ts';
import type { StepContext } from './context.ts';
import { decideRollout } from './decide.ts';
import { observeHealthVerdict } from './health.ts';
import { failedRevision } from './recover.ts';
import { endTransition, runHooks } from './transition.ts';
import type { ReconcileState } from './state.ts';
import { ReconcileCode } from '../errors.ts';

export async function rollOut(ctx: StepContext, s: ReconcileState, objects: readonly KubeObject[]): Promise<void> {
  const { status, spec } = s;
  const active = status.activeRevision;
  if (!active) return;
  const { healthy, failed } = await observeHealthVerdict(ctx, s, objects);
  const poll: ReconcileResult = spec.pollIntervalMs !== undefined ? { requeueAfter: spec.pollIntervalMs } : {};
  s.result = poll;
  // a requested reconcile tries a revision blocked at its progressDeadline once more: another deadline from now
  if (s.request !== undefined && active.healthyAt === undefined && getCondition(status.conditions, 'Progressing')?.reason === 'Blocked') {
    active.appliedAt = s.now().toISOString();
    s.note = 'blocked revision retried on request';
  }
  const decision = decideRollout({
    generation: s.generation,
    healthy,
    failed,
    active,
    attempted: status.attemptedRevision,
    onFailure: spec.upgrade.onFailure,
    progressDeadlineMs: spec.progressDeadlineMs,
    canRollBack: lastGoodRevision(status, active.contentDigest) !== undefined,
    now: s.now().getTime(),
  });
  switch (decision.kind) {
    case 'rolled-back':
      return;
    case 'succeeded':
      return succeeded(ctx, s, active, decision.first, poll);
    case 'installed':
      // healthy once since it was applied: Healthy=False tells the story, the rollout is done
      setSucceeded(s, `revision ${active.number} is installed`);
      return;
    case 'rolling-out':
      setRollingOut(s, `revision ${active.number} applied, waiting for it to become healthy`);
      s.result = { requeueAfter: Math.min(decision.checkAfterMs, poll.requeueAfter ?? decision.checkAfterMs) };
      return;
  }
  const why =
    decision.why === 'failed'
      ? `revision ${active.number} failed before it was healthy: ${failed ?? ''}`
      : `revision ${active.number} not healthy within progressDeadline ${spec.upgrade.progressDeadline}: ${getCondition(status.conditions, 'Healthy')?.message ?? ''}`;
  const code = decision.why === 'failed' ? ReconcileCode.ObjectFailed : ReconcileCode.ProgressDeadline;
  if (decision.kind === 'blocked') return blocked(ctx, s, active, why, code, decision);
  const err = new HoistError(why, { stage: 'observe', code, subject: `revision ${active.number}`, terminal: true });
  await failedRevision(ctx, s, err, active, await ctx.objects.of(s.name, active));
  s.result = poll;
}

/** healthy: post hooks once the revision is ready, as helm --wait runs them, then Succeeded */
async function succeeded(ctx: StepContext, s: ReconcileState, active: ActiveRevision, first: boolean, poll: ReconcileResult): Promise<void> {
  const t = s.status.transition;
  if (t && t.revision === active.number && t.contentDigest === active.contentDigest) {
    const event = t.action === 'install' ? 'post-install' : t.action === 'rollback' ? 'post-rollback' : 'post-upgrade';
    const failed = await runHooks(ctx, s, t, event, await ctx.objects.hooksOf(s.name, active));
    if (failed) {
      await failedRevision(ctx, s, failed, active, await ctx.objects.of(s.name, active));
      s.result = poll;
      return;
    }
    endTransition(s, 'Active');
  }
  if (first) active.healthyAt = s.now().toISOString();
  setSucceeded(s, `revision ${active.number} is installed and healthy`);
}

/** past its deadline (or failed) with nothing to roll back to, or onFailure Hold: Blocked, the Event once per miss */
function blocked(
  ctx: StepContext,
  s: ReconcileState,
  active: ActiveRevision,
  why: string,
  code: ReconcileCode,
  decision: Extract<ReturnType<typeof decideRollout>, { kind: 'blocked' }>,
): void {
  const before = getCondition(s.status.conditions, 'Progressing');
  s.facts.failure = { stage: 'observe', subject: `revision ${active.number}`, code, message: why };
  setBlocked(s, `${why}; ${decision.because === 'hold' ? 'onFailure Hold keeps it' : 'no earlier revision to roll back to'}`);
  // once per miss, not once per reconcile
  if (before?.reason !== 'Blocked') ctx.d.events.event(s.bd, 'Warning', decision.why === 'failed' ? 'RevisionFailed' : 'ProgressDeadlineExceeded', why);
}
