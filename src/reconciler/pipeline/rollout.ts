/**
 * Observe and roll out: after a successful apply, Healthy from the watches, then Progressing from
 * decideRollout (done, still rolling out, or past progressDeadline: roll back or block).
 */
import type { ReconcileResult } from '../../kube/controller.ts';
import type { KubeObject } from '../../kube/types.ts';
import { HoistError } from '../../util/errors.ts';
import { getCondition } from '../conditions.ts';
import { lastGoodRevision } from '../revision-history.ts';
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
    case 'succeeded': {
      // post hooks once the revision is ready, as helm --wait runs them
      const t = status.transition;
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
      if (decision.first) active.healthyAt = s.now().toISOString();
      s.set({ type: 'Progressing', status: 'False', reason: 'Succeeded', message: `revision ${active.number} is installed and healthy` });
      return;
    }
    case 'installed':
      // healthy once since it was applied: Healthy=False tells the story, the rollout is done
      s.set({ type: 'Progressing', status: 'False', reason: 'Succeeded', message: `revision ${active.number} is installed` });
      return;
    case 'rolling-out':
      s.set({ type: 'Progressing', status: 'True', reason: 'RollingOut', message: `revision ${active.number} applied, waiting for it to become healthy` });
      s.result = { requeueAfter: Math.min(decision.checkAfterMs, poll.requeueAfter ?? decision.checkAfterMs) };
      return;
  }
  const why =
    decision.why === 'failed'
      ? `revision ${active.number} failed before it was healthy: ${failed ?? ''}`
      : `revision ${active.number} not healthy within progressDeadline ${spec.upgrade.progressDeadline}: ${getCondition(status.conditions, 'Healthy')?.message ?? ''}`;
  if (decision.kind === 'blocked') {
    const before = getCondition(status.conditions, 'Progressing');
    s.facts.failure = {
      stage: 'observe',
      subject: `revision ${active.number}`,
      code: decision.why === 'failed' ? ReconcileCode.ObjectFailed : ReconcileCode.ProgressDeadline,
      message: why,
    };
    s.set({
      type: 'Progressing',
      status: 'False',
      reason: 'Blocked',
      message: `${why}; ${decision.because === 'hold' ? 'onFailure Hold keeps it' : 'no earlier revision to roll back to'}`,
    });
    // once per miss, not once per reconcile
    if (before?.reason !== 'Blocked') ctx.d.events.event(s.bd, 'Warning', decision.why === 'failed' ? 'RevisionFailed' : 'ProgressDeadlineExceeded', why);
    return;
  }
  const code = decision.why === 'failed' ? ReconcileCode.ObjectFailed : ReconcileCode.ProgressDeadline;
  const err = new HoistError(why, { stage: 'observe', code, subject: `revision ${active.number}`, terminal: true });
  await failedRevision(ctx, s, err, active, await ctx.objects.of(s.name, active));
  s.result = poll;
}
