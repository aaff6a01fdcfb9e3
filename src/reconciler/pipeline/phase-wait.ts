/**
 * A new revision phase by phase: the gate the revision engine asks between its steps (every
 * object of the step so far ready), and what a stop at it means — the revision waits (Progressing
 * RollingOut naming the phase and what it waits for), or fails once an object failed or
 * progressDeadline passed (recover.ts).
 */
import { isCRD } from '../../apply/object-id.ts';
import type { ApplyReport, StepGate } from '../../apply/result.ts';
import type { Transition } from '../../../api/v1alpha2/types.ts';
import { HoistError } from '../../util/errors.ts';
import { clip } from '../conditions.ts';
import { setInstalledActive, setInstalledPending, setRollingOut } from '../status.ts';
import type { StepContext } from './context.ts';
import { assess, firstFive, observeHealth } from './health.ts';
import { failedRevision } from './recover.ts';
import { deadlineOf } from './transition.ts';
import type { ReconcileState } from './state.ts';
import type { Rendered } from '../../revisions/revision-objects.ts';
import { ReconcileCode } from '../errors.ts';

/** how long health waits for the watches to deliver the apply's writes (usually milliseconds) */
export const OBSERVE_WRITES_MS = 2000;

/**
 * The gate between the phases of a new revision: once a step's writes are in the watch caches,
 * the next step may go when every object of this one is ready (the health rules of Healthy).
 * CRDs are waited for by the applier (Established and served). PersistentVolumeClaims are not waited for: one of a WaitForFirstConsumer class binds only
 * once a pod of a later phase uses it.
 */
export function phaseGate(ctx: StepContext, s: ReconcileState): StepGate {
  return async ({ objects, results }) => {
    const writes = results.flatMap((r) => (r.written ? [{ id: r.id, ...r.written }] : []));
    if (writes.length) await s.time('observe', ctx.d.managed.observedWrites(writes, OBSERVE_WRITES_MS, s.name));
    // CRDs: the applier itself waited until they are Established (their watch may lag behind)
    const { failed, waiting } = assess(
      ctx,
      s,
      objects.filter((o) => o.kind !== 'PersistentVolumeClaim' && !isCRD(o)),
    );
    if (failed.length) return { ready: false, waiting: firstFive(failed), failed: true };
    return waiting.length === 0 ? { ready: true } : { ready: false, waiting: firstFive(waiting) };
  };
}

/** a phase waits for the ones before it: say so, and fail the revision once one of them failed or progressDeadline has passed */
export async function waitForPhase(
  ctx: StepContext,
  s: ReconcileState,
  t: Transition,
  pending: NonNullable<ApplyReport['pending']>,
  rendered: Rendered,
): Promise<false> {
  const { status, spec } = s;
  t.phase = pending.step;
  t.waiting = clip(`${pending.after}: ${pending.waiting}`, 4000);
  const left = deadlineOf(s, t) - s.now().getTime();
  const what = `revision ${t.revision}: phase ${pending.step} is applied once ${pending.after} is ready`;
  // an object that failed will not become ready: the revision fails now, not at the deadline
  if (pending.failed || left <= 0) {
    const message = pending.failed
      ? `${what}, and it failed: ${pending.waiting}`
      : `${what}, and it was not within progressDeadline ${spec.upgrade.progressDeadline}: ${pending.waiting}`;
    const err = new HoistError(message, {
      stage: 'observe',
      code: pending.failed ? ReconcileCode.ObjectFailed : ReconcileCode.ProgressDeadline,
      subject: `revision ${t.revision}`,
      terminal: true,
    });
    await failedRevision(ctx, s, err, { number: t.revision, contentDigest: t.contentDigest }, rendered.objects);
    return false;
  }
  const active = status.activeRevision;
  if (active) setInstalledActive(s, active, `revision ${t.revision} being applied, phase by phase`);
  else setInstalledPending(s, what);
  setRollingOut(s, `${what}: ${pending.waiting}`);
  await observeHealth(ctx, s);
  s.result = { requeueAfter: left };
  s.note = `phase ${pending.step} waits for ${pending.after}`;
  return false;
}
