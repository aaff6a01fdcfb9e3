/**
 * The request of each provider type for one message, field by field as each provider documents it
 * (docs/notifications.md names the documentation followed).
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/notify/message.ts';
import { renderLink } from '../../../src/notify/message.ts';
import { requestFor } from '../../../src/notify/providers.ts';
import type { TransitionRecord } from '../../../src/notify/transitions.ts';

const COMMIT = 'c'.repeat(40);
const rec = (event: TransitionRecord['event'], kind: TransitionRecord['kind'], severity: TransitionRecord['severity'] = 'error'): TransitionRecord => ({
  event,
  kind,
  severity,
  bd: { name: 'web', labels: {} },
  revision: { number: 2, contentDigest: 'sha256:' + 'd'.repeat(64) },
  sources: [{ kind: 'git', location: 'https://github.com/acme/app', commit: COMMIT }],
  changes: { created: 1, configured: 0, pruned: 0 },
  ...(kind === 'failure' ? { failure: { stage: 'apply', subject: 'apps/v1 Deployment team-a/web', code: 'apply-failed', message: 'refused' } } : {}),
  summary: 'revision 2 rolled back to 1: refused',
  at: '2025-01-01T00:00:10.000Z',
});
const single = (r: TransitionRecord): Message => ({ kind: 'single', record: r, namespace: 'team-a', link: 'https://dash.example.com/bd/web' });
const failed = single(rec('RolledBack', 'failure'));
const fixed = single(rec('UpgradeSucceeded', 'recovery', 'info'));
const body = (m: Message, p: Parameters<typeof requestFor>[0]) => JSON.parse(requestFor(p, m)!.body) as Record<string, unknown>;

describe('generic', () => {
  it('posts the record as JSON, signed with X-Signature sha256=HMAC(body) when a token is set', () => {
    const r = requestFor({ type: 'generic', address: 'https://hooks.example.com/x', token: 'k' }, failed)!;
    expect(r.url).toBe('https://hooks.example.com/x');
    expect(r.headers['x-signature']).toBe(`sha256=${createHmac('sha256', 'k').update(r.body).digest('hex')}`);
    expect(JSON.parse(r.body)).toMatchObject({
      event: 'RolledBack',
      bundleDeployment: 'web',
      namespace: 'team-a',
      revision: { number: 2 },
      failure: { stage: 'apply' },
    });
    expect(requestFor({ type: 'generic', address: 'https://hooks.example.com/x' }, failed)!.headers['x-signature']).toBeUndefined();
  });
});

describe('slack incoming webhook', () => {
  it('posts text and blocks to the webhook URL', () => {
    const r = requestFor({ type: 'slack', address: 'https://hooks.slack.com/services/T/B/X' }, failed)!;
    expect(r).toMatchObject({ method: 'POST', url: 'https://hooks.slack.com/services/T/B/X', headers: { 'content-type': 'application/json' } });
    const b = JSON.parse(r.body) as { text: string; blocks: Array<{ type: string; text: { text: string } }> };
    expect(b.text).toBe('BundleDeployment web: upgrade rolled back (revision 2)');
    expect(b.blocks.map((x) => x.type)).toEqual(['header', 'section', 'section']);
    expect(b.blocks[1]!.text.text).toContain(`commit ${COMMIT}`);
    expect(b.blocks[2]!.text.text).toBe('<https://dash.example.com/bd/web|details>');
  });
});

describe('msteams workflow webhook', () => {
  it('posts a message with one Adaptive Card attachment', () => {
    const b = body(failed, { type: 'msteams', address: 'https://x.logic.azure.com/workflows/1' }) as {
      type: string;
      attachments: Array<{ contentType: string; content: { type: string; version: string } }>;
    };
    expect(b.type).toBe('message');
    expect(b.attachments[0]).toMatchObject({ contentType: 'application/vnd.microsoft.card.adaptive', content: { type: 'AdaptiveCard', version: '1.4' } });
  });
});

describe('pagerduty events v2', () => {
  it('triggers on failure and resolves on recovery with one dedup_key per BD; news sends nothing', () => {
    const p = { type: 'pagerduty' as const, token: 'R' };
    const t = requestFor(p, failed)!;
    expect(t.url).toBe('https://events.pagerduty.com/v2/enqueue');
    expect(JSON.parse(t.body)).toMatchObject({
      routing_key: 'R',
      event_action: 'trigger',
      dedup_key: 'hoist/team-a/web',
      payload: {
        summary: 'BundleDeployment web: upgrade rolled back (revision 2)',
        source: 'hoist',
        severity: 'error',
        component: 'web',
        group: 'team-a',
        class: 'RolledBack',
      },
      links: [{ href: 'https://dash.example.com/bd/web', text: 'Details' }],
    });
    expect(JSON.parse(requestFor(p, fixed)!.body)).toEqual({ routing_key: 'R', event_action: 'resolve', dedup_key: 'hoist/team-a/web' });
    expect(requestFor(p, single(rec('Paused', 'news', 'info')))).toBeUndefined();
  });
});

describe('opsgenie', () => {
  it('creates an alert with the alias and closes it by alias', () => {
    const p = { type: 'opsgenie' as const, token: 'G' };
    const t = requestFor(p, failed)!;
    expect(t.url).toBe('https://api.opsgenie.com/v2/alerts');
    expect(t.headers.authorization).toBe('GenieKey G');
    expect(JSON.parse(t.body)).toMatchObject({ alias: 'hoist/team-a/web', source: 'hoist', priority: 'P2' });
    expect(requestFor(p, fixed)!.url).toBe('https://api.opsgenie.com/v2/alerts/hoist%2Fteam-a%2Fweb/close?identifierType=alias');
  });
});

describe('alertmanager', () => {
  it('posts one alert per BD to /api/v2/alerts; recovery ends it', () => {
    const p = { type: 'alertmanager' as const, address: 'https://am.example.com' };
    const t = requestFor(p, failed)!;
    expect(t.url).toBe('https://am.example.com/api/v2/alerts');
    const [a] = JSON.parse(t.body) as Array<Record<string, unknown>>;
    expect(a).toMatchObject({
      labels: { alertname: 'HoistBundleDeploymentFailed', bundledeployment: 'web', namespace: 'team-a' },
      startsAt: '2025-01-01T00:00:10.000Z',
    });
    const [r] = JSON.parse(requestFor(p, fixed)!.body) as Array<Record<string, unknown>>;
    expect(r).toMatchObject({ labels: a!.labels, endsAt: '2025-01-01T00:00:10.000Z' });
  });
});

describe('commit statuses', () => {
  it('github: POST /repos/{owner}/{repo}/statuses/{sha} on api.github.com, or /api/v3 of an Enterprise host', () => {
    const r = requestFor({ type: 'github', address: 'https://github.com/acme/app', token: 'T' }, failed)!;
    expect(r.url).toBe(`https://api.github.com/repos/acme/app/statuses/${COMMIT}`);
    expect(r.headers).toMatchObject({ authorization: 'Bearer T', accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' });
    expect(JSON.parse(r.body)).toEqual({
      state: 'failure',
      target_url: 'https://dash.example.com/bd/web',
      description: 'upgrade rolled back (revision 2): apply failed',
      context: 'hoist/web',
    });
    expect(JSON.parse(requestFor({ type: 'github', address: 'https://github.com/acme/app', token: 'T' }, fixed)!.body)).toMatchObject({ state: 'success' });
    const ghe = single({ ...rec('RolledBack', 'failure'), sources: [{ kind: 'git', location: 'https://ghe.example.com:8443/acme/app.git', commit: COMMIT }] });
    expect(requestFor({ type: 'github', address: 'https://ghe.example.com:8443/acme/app' }, ghe)!.url).toBe(
      `https://ghe.example.com:8443/api/v3/repos/acme/app/statuses/${COMMIT}`,
    );
  });
  it('only on the commit of the git source of that repository', () => {
    expect(requestFor({ type: 'github', address: 'https://github.com/acme/other', token: 'T' }, failed)).toBeUndefined();
    expect(requestFor({ type: 'github', address: 'https://github.com/acme/app', token: 'T' }, single(rec('Paused', 'news')))).toBeUndefined();
  });
  it('gitlab: /api/v4/projects/<path>/statuses/<sha> with PRIVATE-TOKEN and state failed', () => {
    const m = single({ ...rec('RolledBack', 'failure'), sources: [{ kind: 'git', location: 'https://gitlab.example.com/g/sub/app', commit: COMMIT }] });
    const r = requestFor({ type: 'gitlab', address: 'https://gitlab.example.com/g/sub/app', token: 'T' }, m)!;
    expect(r.url).toBe(`https://gitlab.example.com/api/v4/projects/g%2Fsub%2Fapp/statuses/${COMMIT}`);
    expect(r.headers['private-token']).toBe('T');
    expect(JSON.parse(r.body)).toMatchObject({ state: 'failed', name: 'hoist/web' });
  });
  it('gitea: /api/v1/repos/<owner>/<repo>/statuses/<sha> with Authorization token', () => {
    const m = single({ ...rec('RolloutStarted', 'news', 'info'), sources: [{ kind: 'git', location: 'https://gitea.example.com/acme/app', commit: COMMIT }] });
    const r = requestFor({ type: 'gitea', address: 'https://gitea.example.com/acme/app', token: 'T' }, m)!;
    expect(r.url).toBe(`https://gitea.example.com/api/v1/repos/acme/app/statuses/${COMMIT}`);
    expect(r.headers.authorization).toBe('token T');
    expect(JSON.parse(r.body)).toMatchObject({ state: 'pending', context: 'hoist/web' });
  });
});

describe('digest', () => {
  it('one message naming the count and at most 20 BDs', () => {
    const records = Array.from({ length: 30 }, (_, i) => ({ ...rec('Blocked', 'failure'), bd: { name: `bd-${i}`, labels: {} } }));
    const b = body({ kind: 'digest', records, namespace: 'team-a', route: 'r' }, { type: 'slack', address: 'https://hooks.slack.com/x' }) as {
      text: string;
      blocks: Array<{ text: { text: string } }>;
    };
    expect(b.text).toBe('30 BundleDeployments changed state (30 failed)');
    expect(b.blocks[1]!.text.text).toContain('bd-19 (blocked) (+10 more)');
    const pd = body({ kind: 'digest', records, namespace: 'team-a', route: 'r' }, { type: 'pagerduty', token: 'R' });
    expect(pd).toMatchObject({ event_action: 'trigger', dedup_key: 'hoist/team-a/digest/r' });
  });
});

describe('renderLink', () => {
  it('fills in the placeholders URL-encoded', () => {
    expect(
      renderLink('https://d.example.com/?bd={{name}}&ns={{ namespace }}&rev={{revision}}&e={{event}}', {
        name: 'a b',
        namespace: 'n',
        revision: 3,
        event: 'RolledBack',
      }),
    ).toBe('https://d.example.com/?bd=a%20b&ns=n&rev=3&e=RolledBack');
  });
});
