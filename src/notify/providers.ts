/**
 * The HTTP request each provider type's documented API expects for a message (docs/notifications.md
 * lists the endpoints and the documentation each follows). Pure: no I/O, no clock (the time is the
 * record's); the sender adds the transport rules (TLS, proxy, timeout, host binding).
 *
 * - generic: POST address, the record as JSON; with a token, `X-Signature: sha256=<hex>` (HMAC-SHA256
 *   of the body with the token, as Flux's generic-hmac).
 * - slack: POST the incoming webhook URL, `{text, blocks}`.
 * - msteams: POST the Workflows webhook URL, `{type: "message", attachments: [Adaptive Card]}`.
 * - pagerduty: POST /v2/enqueue (Events API v2): trigger on failure, resolve on recovery, dedup_key
 *   `hoist/<namespace>/<bd>`; news is not sent.
 * - opsgenie: POST /v2/alerts (alias as above) on failure, POST /v2/alerts/<alias>/close?identifierType=alias
 *   on recovery, `Authorization: GenieKey <token>`.
 * - alertmanager: POST /api/v2/alerts, one alert per BD (labels alertname, bundledeployment,
 *   namespace); recovery sends it with endsAt = now.
 * - github / gitlab / gitea: a commit status on the commit the BD's git source of that repository
 *   resolved: pending while rolling out, success / failure after; context `<context>/<bd>`.
 */
import { createHmac } from 'node:crypto';
import type { ProviderType } from '../../api/v1alpha2/notification-types.ts';
import { normalizeRepoUrl } from '../util/repo-url.ts';
import { eventPhrase, factsOf, textOf, titleOf, type Message } from './message.ts';
import type { TransitionRecord } from './transitions.ts';

export interface ProviderSettings {
  type: ProviderType;
  /** spec.address or the Secret's `address`; undefined for pagerduty/opsgenie means their public API */
  address?: string | undefined;
  token?: string | undefined;
  /** commit status context prefix (default hoist) */
  context?: string | undefined;
}

export interface OutboundRequest {
  method: 'POST';
  url: string;
  headers: Record<string, string>;
  body: string;
}

export const PAGERDUTY_URL = 'https://events.pagerduty.com/v2/enqueue';
export const OPSGENIE_URL = 'https://api.opsgenie.com';
/** the types whose messages are one per BD by nature (a commit status per context): never digested */
export const COMMIT_STATUS_TYPES: ReadonlySet<ProviderType> = new Set(['github', 'gitlab', 'gitea']);

const json = (headers: Record<string, string> = {}): Record<string, string> => ({ 'content-type': 'application/json', ...headers });

/** the request for `m`, or undefined when this provider has nothing to say about it (news to an incident tool, no matching commit) */
export function requestFor(p: ProviderSettings, m: Message): OutboundRequest | undefined {
  switch (p.type) {
    case 'generic':
      return generic(p, m);
    case 'slack':
      return slack(p, m);
    case 'msteams':
      return teams(p, m);
    case 'pagerduty':
      return pagerduty(p, m);
    case 'opsgenie':
      return opsgenie(p, m);
    case 'alertmanager':
      return alertmanager(p, m);
    case 'github':
    case 'gitlab':
    case 'gitea':
      return m.kind === 'single' ? commitStatus(p, m.record, m.link) : undefined;
  }
}

function need(address: string | undefined, type: string): string {
  if (!address) throw new Error(`provider type ${type} has no address`);
  return address;
}

/** the JSON a generic webhook receives (documented in docs/notifications.md) */
export function genericPayload(m: Message): Record<string, unknown> {
  const one = (r: TransitionRecord) => ({
    event: r.event,
    severity: r.severity,
    kind: r.kind,
    bundleDeployment: r.bd.name,
    revision: r.revision,
    sources: r.sources,
    changes: r.changes,
    failure: r.failure,
    summary: r.summary,
    at: r.at,
  });
  if (m.kind === 'single') return { apiVersion: 'hoist.notify/v1', namespace: m.namespace, ...one(m.record), link: m.link, title: titleOf(m) };
  return {
    apiVersion: 'hoist.notify/v1',
    namespace: m.namespace,
    event: 'Digest',
    title: titleOf(m),
    text: textOf(m),
    link: m.link,
    records: m.records.map(one),
  };
}

function generic(p: ProviderSettings, m: Message): OutboundRequest {
  const body = JSON.stringify(genericPayload(m));
  const headers = json(p.token ? { 'x-signature': `sha256=${createHmac('sha256', p.token).update(body).digest('hex')}` } : {});
  return { method: 'POST', url: need(p.address, p.type), headers, body };
}

/** Slack escapes: &, < and > (https://api.slack.com/reference/surfaces/formatting#escaping) */
const slackEscape = (s: string): string => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function slack(p: ProviderSettings, m: Message): OutboundRequest {
  const title = titleOf(m);
  const text = textOf(m);
  const blocks: unknown[] = [
    { type: 'header', text: { type: 'plain_text', text: title.slice(0, 150) } },
    { type: 'section', text: { type: 'mrkdwn', text: slackEscape(text).slice(0, 3000) } },
  ];
  if (m.link) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `<${m.link}|details>` } });
  return { method: 'POST', url: need(p.address, p.type), headers: json(), body: JSON.stringify({ text: slackEscape(title), blocks }) };
}

function teams(p: ProviderSettings, m: Message): OutboundRequest {
  const facts = m.kind === 'single' ? factsOf(m.record).map(([title, value]) => ({ title, value })) : [{ title: 'summary', value: textOf(m) }];
  const card = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.4',
    body: [
      { type: 'TextBlock', text: titleOf(m), weight: 'Bolder', size: 'Medium', wrap: true },
      { type: 'FactSet', facts },
    ],
    ...(m.link ? { actions: [{ type: 'Action.OpenUrl', title: 'Details', url: m.link }] } : {}),
  };
  const body = { type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }] };
  return { method: 'POST', url: need(p.address, p.type), headers: json(), body: JSON.stringify(body) };
}

/** the incident key of one BD (or of a route's digest), shared by trigger and resolve */
export function incidentKey(m: Message): string {
  return m.kind === 'single' ? `hoist/${m.namespace}/${m.record.bd.name}` : `hoist/${m.namespace}/digest/${m.route}`;
}

/** trigger / resolve / nothing, from the record kinds */
function incidentAction(m: Message): 'trigger' | 'resolve' | undefined {
  const kinds = m.kind === 'single' ? [m.record.kind] : m.records.map((r) => r.kind);
  if (kinds.includes('failure')) return 'trigger';
  if (kinds.includes('recovery')) return 'resolve';
  return undefined;
}

function pagerduty(p: ProviderSettings, m: Message): OutboundRequest | undefined {
  const action = incidentAction(m);
  if (!action) return undefined;
  const base = { routing_key: p.token ?? '', event_action: action, dedup_key: incidentKey(m) };
  const severity = m.kind === 'single' ? (m.record.severity === 'info' ? 'info' : m.record.severity) : 'error';
  const body =
    action === 'resolve'
      ? base
      : {
          ...base,
          payload: {
            summary: titleOf(m).slice(0, 1024),
            source: 'hoist',
            severity,
            component: m.kind === 'single' ? m.record.bd.name : 'bundledeployments',
            group: m.namespace,
            class: m.kind === 'single' ? m.record.event : 'Digest',
            custom_details: m.kind === 'single' ? Object.fromEntries(factsOf(m.record)) : { summary: textOf(m) },
          },
          client: 'Hoist',
          ...(m.link ? { client_url: m.link, links: [{ href: m.link, text: 'Details' }] } : {}),
        };
  return { method: 'POST', url: p.address ?? PAGERDUTY_URL, headers: json(), body: JSON.stringify(body) };
}

function opsgenie(p: ProviderSettings, m: Message): OutboundRequest | undefined {
  const action = incidentAction(m);
  if (!action) return undefined;
  const base = (p.address ?? OPSGENIE_URL).replace(/\/+$/, '').replace(/\/v2\/alerts$/, '');
  const headers = json({ authorization: `GenieKey ${p.token ?? ''}` });
  const alias = incidentKey(m);
  if (action === 'resolve') {
    return {
      method: 'POST',
      url: `${base}/v2/alerts/${encodeURIComponent(alias)}/close?identifierType=alias`,
      headers,
      body: JSON.stringify({ source: 'hoist', note: titleOf(m) }),
    };
  }
  const body = {
    message: titleOf(m).slice(0, 130),
    alias,
    description: textOf(m).slice(0, 15000),
    source: 'hoist',
    entity: m.kind === 'single' ? m.record.bd.name : 'bundledeployments',
    tags: ['hoist', m.kind === 'single' ? m.record.event : 'Digest'],
    priority: m.kind === 'single' && m.record.severity !== 'error' ? 'P3' : 'P2',
    ...(m.kind === 'single' ? { details: Object.fromEntries(factsOf(m.record)) } : {}),
  };
  return { method: 'POST', url: `${base}/v2/alerts`, headers, body: JSON.stringify(body) };
}

function alertmanager(p: ProviderSettings, m: Message): OutboundRequest | undefined {
  const action = incidentAction(m);
  if (!action) return undefined;
  const address = need(p.address, p.type).replace(/\/+$/, '');
  const url = address.endsWith('/api/v2/alerts') ? address : `${address}/api/v2/alerts`;
  const records = m.kind === 'single' ? [m.record] : m.records;
  const alerts = records
    .filter((r) => r.kind !== 'news')
    .map((r) => ({
      labels: { alertname: 'HoistBundleDeploymentFailed', bundledeployment: r.bd.name, namespace: m.namespace },
      annotations: {
        summary: titleOf({ kind: 'single', record: r, namespace: m.namespace }),
        description: textOf({ kind: 'single', record: r, namespace: m.namespace }),
        severity: r.severity,
      },
      ...(r.kind === 'failure' ? { startsAt: r.at } : { endsAt: r.at }),
      ...(m.link ? { generatorURL: m.link } : {}),
    }));
  return { method: 'POST', url, headers: json(p.token ? { authorization: `Bearer ${p.token}` } : {}), body: JSON.stringify(alerts) };
}

/** pending / success / failure for a commit status, or undefined when the event says nothing about the commit */
export function commitState(r: TransitionRecord): 'pending' | 'success' | 'failure' | undefined {
  switch (r.event) {
    case 'RolloutStarted':
    case 'DependencyNotReady':
      return 'pending';
    case 'InstallSucceeded':
    case 'UpgradeSucceeded':
    case 'Recovered':
      return 'success';
    case 'RolledBack':
    case 'Blocked':
    case 'Unhealthy':
      return 'failure';
    default:
      return undefined;
  }
}

/** owner/repo path and API base of a forge repository URL */
function forge(address: string): { origin: string; host: string; path: string } {
  const u = new URL(address);
  const path = u.pathname
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/i, '');
  return { origin: u.origin, host: u.hostname.toLowerCase(), path };
}

function commitStatus(p: ProviderSettings, r: TransitionRecord, link: string | undefined): OutboundRequest | undefined {
  const state = commitState(r);
  if (!state) return undefined;
  const address = need(p.address, p.type);
  const repo = normalizeRepoUrl(address);
  const commit = r.sources.find((s) => s.kind === 'git' && s.commit && s.location && normalizeRepoUrl(s.location) === repo)?.commit;
  if (!commit) return undefined;
  const context = `${p.context ?? 'hoist'}/${r.bd.name}`;
  const description = `${eventPhrase(r.event)}${r.revision ? ` (revision ${r.revision.number})` : ''}${r.failure ? `: ${r.failure.stage} failed` : ''}`.slice(
    0,
    140,
  );
  const { origin, host, path } = forge(address);
  const target = link ? { target_url: link } : {};
  if (p.type === 'github') {
    const api = host === 'github.com' ? 'https://api.github.com' : `${origin}/api/v3`;
    return {
      method: 'POST',
      url: `${api}/repos/${path}/statuses/${commit}`,
      headers: json({ accept: 'application/vnd.github+json', authorization: `Bearer ${p.token ?? ''}`, 'x-github-api-version': '2022-11-28' }),
      body: JSON.stringify({ state, ...target, description, context }),
    };
  }
  if (p.type === 'gitlab') {
    return {
      method: 'POST',
      url: `${origin}/api/v4/projects/${encodeURIComponent(path)}/statuses/${commit}`,
      headers: json({ 'private-token': p.token ?? '' }),
      body: JSON.stringify({ state: state === 'failure' ? 'failed' : state, name: context, ...target, description }),
    };
  }
  return {
    method: 'POST',
    url: `${origin}/api/v1/repos/${path}/statuses/${commit}`,
    headers: json({ authorization: `token ${p.token ?? ''}` }),
    body: JSON.stringify({ state, ...target, description, context }),
  };
}
