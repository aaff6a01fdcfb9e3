/**
 * What a notification says, once for every provider: a title, short lines of facts and a link
 * (docs/notifications.md, "Content"). Built only from the transition record — names, revision,
 * digests, commits, counts and the condition message Hoist wrote — never from a Secret or from a
 * field value of a managed object. Pure.
 */
import type { NotificationEvent } from '../../api/v1alpha2/notification-types.ts';
import type { TransitionRecord } from './transitions.ts';

/** one BundleDeployment's transition, or a digest of many, as one provider receives it */
export type Message =
  | { kind: 'single'; record: TransitionRecord; namespace: string; link?: string | undefined }
  | { kind: 'digest'; records: readonly TransitionRecord[]; namespace: string; route: string; link?: string | undefined };

const WHAT: Record<NotificationEvent, string> = {
  InstallSucceeded: 'installed',
  UpgradeSucceeded: 'upgraded',
  RolloutStarted: 'rolling out',
  RolledBack: 'upgrade rolled back',
  Blocked: 'blocked',
  DriftReverted: 'drift reverted',
  Paused: 'paused',
  Resumed: 'resumed',
  Unhealthy: 'unhealthy',
  Recovered: 'healthy again',
  DependencyNotReady: 'waiting for a dependency',
};

/** how many BundleDeployments a digest names before "+N more" */
export const DIGEST_NAMES = 20;

export function eventPhrase(event: NotificationEvent): string {
  return WHAT[event];
}

export function titleOf(m: Message): string {
  if (m.kind === 'digest') {
    const failures = m.records.filter((r) => r.kind === 'failure').length;
    return `${m.records.length} BundleDeployments changed state${failures ? ` (${failures} failed)` : ''}`;
  }
  const r = m.record;
  return `BundleDeployment ${r.bd.name}: ${WHAT[r.event]}${r.revision ? ` (revision ${r.revision.number})` : ''}`;
}

const short = (s: string): string => (s.startsWith('sha256:') ? `sha256:${s.slice(7, 19)}` : s.slice(0, 12));

/** the facts of one record as label → value, in a fixed order; empty values are left out */
export function factsOf(r: TransitionRecord): Array<[string, string]> {
  const facts: Array<[string, string]> = [];
  if (r.revision) facts.push(['revision', `${r.revision.number} (${short(r.revision.contentDigest)})`]);
  for (const s of r.sources) {
    const at = s.commit ? `commit ${s.commit}` : s.digest ? s.digest : s.sha256 ? `sha256:${s.sha256}` : '';
    facts.push([`source (${s.kind})`, [s.location, at].filter(Boolean).join(' @ ')]);
  }
  if (r.changes) facts.push(['changes', `${r.changes.created} created, ${r.changes.configured} changed, ${r.changes.pruned} pruned`]);
  if (r.failure) {
    facts.push(['failed at', r.failure.stage]);
    if (r.failure.subject) facts.push(['object', r.failure.subject]);
  }
  if (r.summary) facts.push(['message', r.summary]);
  return facts.filter(([, v]) => v !== '');
}

/** plain text of a message (Slack mrkdwn-safe, Teams, Opsgenie descriptions) */
export function textOf(m: Message): string {
  if (m.kind === 'single')
    return factsOf(m.record)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
  const byEvent = new Map<string, number>();
  for (const r of m.records) byEvent.set(WHAT[r.event], (byEvent.get(WHAT[r.event]) ?? 0) + 1);
  const names = m.records.slice(0, DIGEST_NAMES).map((r) => `${r.bd.name} (${WHAT[r.event]})`);
  const more = m.records.length > DIGEST_NAMES ? ` (+${m.records.length - DIGEST_NAMES} more)` : '';
  return [`${[...byEvent].map(([w, n]) => `${n} ${w}`).join(', ')}`, `${names.join(', ')}${more}`].join('\n');
}

/** the route's link template with {{name}}, {{namespace}}, {{revision}}, {{event}} filled in (URL-encoded) */
export function renderLink(
  template: string | undefined,
  vars: { name: string; namespace: string; revision?: number | undefined; event: string },
): string | undefined {
  if (!template) return undefined;
  const values: Record<string, string> = {
    name: vars.name,
    namespace: vars.namespace,
    revision: vars.revision === undefined ? '' : String(vars.revision),
    event: vars.event,
  };
  return template.replace(/\{\{\s*(name|namespace|revision|event)\s*\}\}/g, (_m, k: string) => encodeURIComponent(values[k] ?? ''));
}
