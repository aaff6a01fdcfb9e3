/**
 * Spec defaults, applied the same way the API server applies the CRD's `default:` values, plus
 * durations parsed to milliseconds. The controller calls this on every spec it reads so that it
 * never depends on whether the object went through this CRD version's defaulting (objects created
 * before a default existed, `hoist render` on a local file that never saw an API server).
 */
import { HoistError } from '../../src/util/errors.ts';
import { SpecCode } from './errors.ts';
import type { BundleDeploymentSpec, CollisionProtection, CRDSafety, DeletionPolicy, HealthCheck, OnFailure, SourceSpec } from './types.ts';

// Keep in sync with the `default:` values in bundledeployment-crd.yaml; the unit test compares them.
export const DEFAULT_ON_FAILURE: OnFailure = 'Rollback';
export const DEFAULT_PROGRESS_DEADLINE = '10m';
export const DEFAULT_COLLISION_PROTECTION: CollisionProtection = 'Prevent';
export const DEFAULT_CRD_SAFETY: CRDSafety = 'Enforce';
export const DEFAULT_DELETION_POLICY: DeletionPolicy = 'Delete';
export const DEFAULT_REVISION_HISTORY_LIMIT = 3;
export const DEFAULT_HEALTH_CHECK_PERIOD_SECONDS = 10;
export const DEFAULT_HEALTH_CHECK_FAILURE_THRESHOLD = 3;
export const DEFAULT_HEALTH_CHECK_INITIAL_DELAY_SECONDS = 0;
/** the shortest pollInterval (the CRD refuses shorter ones; keep its rule in sync) */
export const MIN_POLL_INTERVAL = '10s';
export const MIN_POLL_INTERVAL_MS = 10_000;

export type DefaultedSource = SourceSpec & { destination: string };
export type DefaultedHealthCheck = HealthCheck & {
  periodSeconds: number;
  failureThreshold: number;
  initialDelaySeconds: number;
};

/** A spec with every defaulted member present and durations parsed. */
export interface DefaultedSpec extends BundleDeploymentSpec {
  paused: boolean;
  sources: DefaultedSource[];
  upgrade: { onFailure: OnFailure; progressDeadline: string; crdSafety: CRDSafety };
  healthChecks: DefaultedHealthCheck[];
  revisionHistoryLimit: number;
  collisionProtection: CollisionProtection;
  deleteCRDsOnUninstall: boolean;
  deletionPolicy: DeletionPolicy;
  /**
   * pollInterval in ms, at least MIN_POLL_INTERVAL_MS; undefined: floating refs are resolved once
   * per spec generation
   */
  pollIntervalMs: number | undefined;
  progressDeadlineMs: number;
}

/**
 * Pure: returns a new spec with defaults applied and never mutates its argument. Throws a
 * terminal HoistError (stage "spec") when a duration is malformed or not positive, which the API
 * server would have refused already.
 */
export function withDefaults(spec: BundleDeploymentSpec): DefaultedSpec {
  const progressDeadline = spec.upgrade?.progressDeadline ?? DEFAULT_PROGRESS_DEADLINE;
  return {
    ...spec,
    paused: spec.paused ?? false,
    sources: spec.sources.map((s) => ({ ...s, destination: s.destination ?? '' })),
    upgrade: { onFailure: spec.upgrade?.onFailure ?? DEFAULT_ON_FAILURE, progressDeadline, crdSafety: spec.upgrade?.crdSafety ?? DEFAULT_CRD_SAFETY },
    healthChecks: (spec.healthChecks ?? []).map((c) => ({
      ...c,
      periodSeconds: c.periodSeconds ?? DEFAULT_HEALTH_CHECK_PERIOD_SECONDS,
      failureThreshold: c.failureThreshold ?? DEFAULT_HEALTH_CHECK_FAILURE_THRESHOLD,
      initialDelaySeconds: c.initialDelaySeconds ?? DEFAULT_HEALTH_CHECK_INITIAL_DELAY_SECONDS,
    })),
    revisionHistoryLimit: spec.revisionHistoryLimit ?? DEFAULT_REVISION_HISTORY_LIMIT,
    collisionProtection: spec.collisionProtection ?? DEFAULT_COLLISION_PROTECTION,
    deleteCRDsOnUninstall: spec.deleteCRDsOnUninstall ?? false,
    deletionPolicy: spec.deletionPolicy ?? DEFAULT_DELETION_POLICY,
    // a shorter interval (stored before the CRD's minimum, or under a CRD without the rule) counts as the minimum
    pollIntervalMs: spec.pollInterval === undefined ? undefined : Math.max(MIN_POLL_INTERVAL_MS, positiveDuration('spec.pollInterval', spec.pollInterval)),
    progressDeadlineMs: positiveDuration('spec.upgrade.progressDeadline', progressDeadline),
  };
}

// The same grammar as the CRD's duration rule: a sequence of <number><unit> with units ms, s, m, h
// (a subset of Go's time.ParseDuration, which is what CEL's duration() and kubectl users know).
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * Parses a duration such as "10m", "1h30m", "1.5s" or "250ms" to whole milliseconds.
 * Pure. Throws a terminal HoistError on anything else, including the empty string.
 */
export function parseDuration(text: string, field = 'duration'): number {
  if (!DURATION.test(text)) {
    throw invalid(field, `${field} ${JSON.stringify(text)} is not a duration such as 30s, 10m or 1h30m (units ms, s, m, h)`);
  }
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(PART)) ms += Number(amount) * (UNIT_MS[unit ?? ''] ?? Number.NaN);
  // Round to whole ms, but never round a positive duration down to zero ("0.4ms" is valid for
  // the API server, whose rule only asks for > 0).
  const rounded = ms > 0 ? Math.max(1, Math.round(ms)) : 0;
  if (!Number.isSafeInteger(rounded)) throw invalid(field, `${field} ${JSON.stringify(text)} is too large`);
  return rounded;
}

function positiveDuration(field: string, text: string): number {
  const ms = parseDuration(text, field);
  if (ms <= 0) throw invalid(field, `${field} ${JSON.stringify(text)} must be greater than zero`);
  return ms;
}

function invalid(field: string, message: string): HoistError {
  return new HoistError(message, { stage: 'spec', reason: 'InvalidSpec', code: SpecCode.InvalidDuration, subject: field, terminal: true });
}
