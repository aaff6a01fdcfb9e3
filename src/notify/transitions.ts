/**
 * What a reconcile changed that people want to hear about: the transitions between the status a
 * BundleDeployment had and the one the reconcile wrote (docs/notifications.md, "Events"). Pure.
 *
 * A transition is a state of the status contract reached now that did not hold before (Progressing
 * became Succeeded, RolledBack, Blocked…), so a reconcile that writes the same status again, a
 * restart (the first reconcile compares with the stored status) and a status write that waits
 * produce none. The record is a snapshot of plain values — the dispatcher never reads the BD.
 */
import type { NotificationEvent, Severity } from '../../api/v1alpha2/notification-types.ts';
import type { BundleDeploymentStatus, Condition, ConditionType, ResolvedSourceStatus, SourceSpec } from '../../api/v1alpha2/types.ts';
import { redactUrl } from '../util/errors.ts';

/** what one reconcile knows beyond the two statuses (pipeline state) */
export interface ReconcileFacts {
  /** objects the apply created / changed / pruned in this reconcile */
  changes?: { created: number; configured: number; pruned: number };
  /** the failure this reconcile reported, as its typed error named it */
  failure?: { stage: string; subject?: string | undefined; code: string; message: string };
  /** objects a drift correction changed back (hand edits reverted), with their names */
  driftReverted?: readonly string[];
}

export interface NoticeSource {
  kind: string;
  /** repository / url / image ref without credentials or query */
  location?: string;
  commit?: string;
  digest?: string;
  sha256?: string;
}

/** one transition of one BundleDeployment, as the dispatcher receives it */
export interface TransitionRecord {
  event: NotificationEvent;
  severity: Severity;
  /** failure events open an incident, recovery events close it; the rest are news */
  kind: 'failure' | 'recovery' | 'news';
  bd: { name: string; uid?: string | undefined; labels: Readonly<Record<string, string>>; installNamespace?: string | undefined };
  revision?: { number: number; contentDigest: string } | undefined;
  sources: NoticeSource[];
  changes?: ReconcileFacts['changes'];
  failure?: ReconcileFacts['failure'];
  /** a one-line account, built from condition messages Hoist wrote (never object field values) */
  summary: string;
  at: string;
}

export const EVENT_SEVERITY: Record<NotificationEvent, Severity> = {
  InstallSucceeded: 'info',
  UpgradeSucceeded: 'info',
  RolloutStarted: 'info',
  RolledBack: 'error',
  Blocked: 'error',
  DriftReverted: 'warning',
  Paused: 'info',
  Resumed: 'info',
  Unhealthy: 'error',
  Recovered: 'info',
  DependencyNotReady: 'warning',
};

const KIND: Record<NotificationEvent, TransitionRecord['kind']> = {
  InstallSucceeded: 'recovery',
  UpgradeSucceeded: 'recovery',
  RolloutStarted: 'news',
  RolledBack: 'failure',
  Blocked: 'failure',
  DriftReverted: 'news',
  Paused: 'news',
  Resumed: 'news',
  Unhealthy: 'failure',
  Recovered: 'recovery',
  DependencyNotReady: 'failure',
};

export const SEVERITY_RANK: Record<Severity, number> = { info: 0, warning: 1, error: 2 };

const cond = (s: BundleDeploymentStatus | undefined, t: ConditionType): Condition | undefined => s?.conditions?.find((c) => c.type === t);
const reasonOf = (s: BundleDeploymentStatus | undefined, t: ConditionType): string | undefined => cond(s, t)?.reason;

/**
 * The transitions from `before` to `after` of BundleDeployment `bd`, in a fixed order. `now` is
 * the time recorded. Pure.
 */
export function transitionsOf(
  bd: {
    name: string;
    uid?: string | undefined;
    labels?: Record<string, string> | undefined;
    installNamespace?: string | undefined;
    sources?: readonly SourceSpec[];
  },
  before: BundleDeploymentStatus | undefined,
  after: BundleDeploymentStatus,
  facts: ReconcileFacts,
  now: Date,
): TransitionRecord[] {
  const events: Array<{ event: NotificationEvent; revision?: { number: number; contentDigest: string } | undefined; summary: string }> = [];
  const active = after.activeRevision ? { number: after.activeRevision.number, contentDigest: after.activeRevision.contentDigest } : undefined;
  const attempted = after.attemptedRevision ? { number: after.attemptedRevision.number, contentDigest: after.attemptedRevision.contentDigest } : active;
  const sameActive = before?.activeRevision?.number === active?.number && before?.activeRevision?.contentDigest === active?.contentDigest;
  const progressing = cond(after, 'Progressing');
  const was = reasonOf(before, 'Progressing');
  const now_ = progressing?.reason;
  const message = progressing?.message ?? '';

  if (now_ !== was || (now_ === 'Succeeded' && !sameActive)) {
    switch (now_) {
      case 'Succeeded':
        // back from a pause on the same revision is Resumed, not a second success
        if (was !== 'Paused' || !sameActive) {
          const upgrade = (after.revisions ?? []).some((r) => r.number !== active?.number);
          events.push({ event: upgrade ? 'UpgradeSucceeded' : 'InstallSucceeded', revision: active, summary: message });
        }
        break;
      case 'RollingOut':
        if (!sameActive || was === undefined || was === 'Succeeded' || was === 'RolledBack' || was === 'Blocked' || was === 'Retrying')
          events.push({ event: 'RolloutStarted', revision: active, summary: message });
        break;
      case 'RolledBack':
        events.push({ event: 'RolledBack', revision: attempted, summary: message });
        break;
      case 'Blocked':
        events.push({ event: 'Blocked', revision: attempted, summary: message });
        break;
      case 'DependencyNotReady':
        events.push({ event: 'DependencyNotReady', revision: attempted, summary: message });
        break;
      default:
        break;
    }
  }
  const paused = cond(after, 'Paused')?.status === 'True';
  const wasPaused = cond(before, 'Paused')?.status === 'True';
  if (paused && !wasPaused) events.push({ event: 'Paused', revision: active, summary: cond(after, 'Paused')?.message ?? 'paused' });
  if (!paused && wasPaused && before !== undefined) events.push({ event: 'Resumed', revision: active, summary: 'reconciling again' });

  // health of an installed revision (during a rollout the outcome above tells the story)
  const healthy = cond(after, 'Healthy');
  const wasHealthy = cond(before, 'Healthy');
  if (now_ === 'Succeeded' && was === 'Succeeded' && sameActive) {
    if (healthy?.reason === 'Unhealthy' && wasHealthy?.reason !== 'Unhealthy') events.push({ event: 'Unhealthy', revision: active, summary: healthy.message });
    if (healthy?.status === 'True' && wasHealthy?.reason === 'Unhealthy') events.push({ event: 'Recovered', revision: active, summary: healthy.message });
  }
  if (facts.driftReverted?.length) {
    const shown = facts.driftReverted.slice(0, 10).join(', ');
    const more = facts.driftReverted.length > 10 ? ` (+${facts.driftReverted.length - 10} more)` : '';
    events.push({ event: 'DriftReverted', revision: active, summary: `changed back to revision ${active?.number}: ${shown}${more}` });
  }

  const sources = noticeSources(bd.sources ?? [], after.resolvedSources ?? []);
  const at = now.toISOString();
  return events.map((e) => ({
    event: e.event,
    severity: EVENT_SEVERITY[e.event],
    kind: KIND[e.event],
    bd: { name: bd.name, uid: bd.uid, labels: { ...(bd.labels ?? {}) }, installNamespace: bd.installNamespace },
    revision: e.revision,
    sources,
    ...(facts.changes ? { changes: facts.changes } : {}),
    ...(facts.failure && KIND[e.event] === 'failure' ? { failure: facts.failure } : {}),
    summary: clipLine(e.summary),
    at,
  }));
}

/** the spec's sources with what they resolved to; locations without userinfo or query */
export function noticeSources(spec: readonly SourceSpec[], resolved: readonly ResolvedSourceStatus[]): NoticeSource[] {
  return spec.map((s, i) => {
    const r = resolved[i];
    const location = s.kind === 'git' ? s.git?.repository : s.kind === 'http' ? s.http?.url : s.image?.ref;
    return {
      kind: s.kind,
      ...(location ? { location: s.kind === 'image' ? location : redactUrl(location) } : {}),
      ...(r?.commit ? { commit: r.commit } : {}),
      ...(r?.digest ? { digest: r.digest } : {}),
      ...(r?.sha256 ? { sha256: r.sha256 } : {}),
    };
  });
}

function clipLine(s: string, max = 1000): string {
  return s.length <= max ? s : `${s.slice(0, max - 15)}… (truncated)`;
}
