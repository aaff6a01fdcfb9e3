/**
 * Probe timing, as a pod's readiness probe behaves but driven by watch events instead of a
 * timer: results arrive whenever the object changes, and time decides what they mean.
 *
 * - Before `initialDelaySeconds` have passed since Hoist first saw the object under the check,
 *   the check is pending (not ready, not failed).
 * - Until it has passed once, a failing check is in progress (a new object becoming ready).
 * - Once it has passed, a failure is tolerated for `failureThreshold × periodSeconds` (the time a
 *   pod probe needs for that many consecutive failures); after that the check has failed.
 * - A passing result counts at once (successThreshold 1).
 *
 * Pure: the state is plain data carried by the caller; `now` is an argument.
 */
import type { HealthVerdict } from './readiness.ts';
import type { ProbeResult } from './probes.ts';

export interface ProbeTrack {
  ok: boolean;
  message?: string;
  /** when this ok-ness began (ms) */
  since: number;
  /** when Hoist first saw the object under this check (ms) */
  firstSeen: number;
  /** the check has passed at least once since first seen */
  everOk: boolean;
}

export interface ProbeTiming {
  periodMs: number;
  failureThreshold: number;
  initialDelayMs: number;
}

/** the track after a new result observed at `now` */
export function track(prev: ProbeTrack | undefined, result: ProbeResult, now: number): ProbeTrack {
  if (!prev) return { ok: result.ok, ...(result.message ? { message: result.message } : {}), since: now, firstSeen: now, everOk: result.ok };
  return {
    ok: result.ok,
    ...(result.message ? { message: result.message } : {}),
    since: prev.ok === result.ok ? prev.since : now,
    firstSeen: prev.firstSeen,
    everOk: prev.everOk || result.ok,
  };
}

export interface ProbeVerdict extends HealthVerdict {
  /** when the verdict changes by time alone (ms), if it will */
  changesAt?: number;
}

/** what a check's track means at `now` */
export function verdictOf(t: ProbeTrack, timing: ProbeTiming, now: number): ProbeVerdict {
  const ready = t.firstSeen + timing.initialDelayMs;
  if (now < ready) return { readiness: 'InProgress', message: `initial delay (${Math.ceil((ready - now) / 1000)}s left)`, changesAt: ready };
  if (t.ok) return { readiness: 'Ready' };
  if (!t.everOk) return { readiness: 'InProgress', message: t.message ?? 'not passed yet' };
  // failing since `since`, but no earlier than the end of the initial delay
  const failingFrom = Math.max(t.since, ready);
  const failedAt = failingFrom + timing.failureThreshold * timing.periodMs;
  if (now < failedAt) return { readiness: 'Ready', changesAt: failedAt };
  return {
    readiness: 'Failed',
    message: `${t.message ?? 'failing'} (for ${Math.round((now - failingFrom) / 1000)}s, failureThreshold ${timing.failureThreshold} × periodSeconds ${timing.periodMs / 1000})`,
  };
}
