/** The dispatcher's noise control on a fake clock: what is sent when, never how long it took. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Dispatcher, type DeliveryOutcome, type RouteTarget } from '../../../src/notify/dispatcher.ts';
import { NotifyCode, notifyError } from '../../../src/notify/errors.ts';
import type { Message } from '../../../src/notify/message.ts';
import type { TransitionRecord } from '../../../src/notify/transitions.ts';
import { FakeClock, settle } from '../../support/fake-clock.ts';

const log = pino({ level: 'silent' });
const target = (provider = 'team-a/slack', type: RouteTarget['providerType'] = 'slack', minIntervalMs = 60_000): RouteTarget => ({
  route: `team-a/${provider.split('/')[1]}-route`,
  namespace: 'team-a',
  routeName: `${provider.split('/')[1]}-route`,
  provider,
  providerType: type,
  minIntervalMs,
});
const rec = (bd: string, event: TransitionRecord['event'], rev = 1): TransitionRecord => ({
  event,
  severity: event === 'RolledBack' || event === 'Blocked' ? 'error' : 'info',
  kind: event === 'RolledBack' || event === 'Blocked' ? 'failure' : 'recovery',
  bd: { name: bd, labels: {} },
  revision: { number: rev, contentDigest: `d${rev}` },
  sources: [],
  summary: '',
  at: '2025-01-01T00:00:00.000Z',
});

function setup(targets: RouteTarget[], send: (t: RouteTarget, m: Message) => Promise<void> = async () => {}, options = {}) {
  const clock = new FakeClock();
  const sent: Array<{ at: number; provider: string; message: Message }> = [];
  const outcomes: DeliveryOutcome[] = [];
  const d = new Dispatcher(
    {
      clock,
      log,
      match: () => targets,
      send: async (t, m) => {
        sent.push({ at: clock.now(), provider: t.provider, message: m });
        await send(t, m);
      },
      report: (o) => outcomes.push(o),
    },
    { burst: 3, digestWindowMs: 10_000, baseBackoffMs: 1000, maxAttempts: 4, ...options },
  );
  return { clock, d, sent, outcomes };
}
const events = (sent: Array<{ message: Message }>) =>
  sent.map((s) => (s.message.kind === 'single' ? `${s.message.record.bd.name}:${s.message.record.event}` : `digest:${s.message.records.length}`));

describe('Dispatcher', () => {
  it('sends a transition once: the same state of the same revision again is dropped', async () => {
    const { clock, d, sent } = setup([target()]);
    d.record([rec('web', 'RolledBack', 2)]);
    d.record([rec('web', 'RolledBack', 2)]);
    await clock.advance(120_000);
    d.record([rec('web', 'RolledBack', 2)]);
    await clock.advance(120_000);
    expect(events(sent)).toEqual(['web:RolledBack']);
  });

  it('holds a message inside the minimum interval; the latest state of a track wins', async () => {
    const { clock, d, sent } = setup([target()]);
    d.record([rec('web', 'RolledBack', 2)]);
    await clock.advance(1000);
    d.record([rec('web', 'UpgradeSucceeded', 3)]);
    d.record([rec('web', 'RolledBack', 4)]);
    await clock.advance(1000);
    expect(events(sent)).toEqual(['web:RolledBack']);
    await clock.advance(58_000);
    expect(events(sent)).toEqual(['web:RolledBack', 'web:RolledBack']);
    expect(sent[1]!.at - sent[0]!.at).toBe(60_000);
    expect((sent[1]!.message as { record: TransitionRecord }).record.revision?.number).toBe(4);
  });

  it('100 BDs failing at once: one digest', async () => {
    const { clock, d, sent } = setup([target()]);
    d.record(Array.from({ length: 100 }, (_, i) => rec(`bd-${i}`, 'Blocked')));
    await clock.advance(1);
    expect(events(sent)).toEqual(['digest:100']);
    expect(d.idle()).toBe(true);
  });

  it('a stream of failures: the burst one by one, then one digest per window', async () => {
    const { clock, d, sent } = setup([target()]);
    for (let i = 0; i < 40; i++) {
      d.record([rec(`bd-${i}`, 'Blocked')]);
      await clock.advance(500);
    }
    // 20 s: three alone, then what gathered in each 10 s window
    expect(events(sent)).toEqual(['bd-0:Blocked', 'bd-1:Blocked', 'bd-2:Blocked', 'digest:17', 'digest:20']);
    await clock.advance(10_000);
    expect(events(sent).slice(5)).toEqual([]);
  });

  it('commit statuses are never digested', async () => {
    const { clock, d, sent } = setup([target('team-a/gh', 'github')]);
    d.record(Array.from({ length: 10 }, (_, i) => rec(`bd-${i}`, 'Blocked')));
    await clock.advance(1);
    expect(sent).toHaveLength(10);
  });

  it('retries a transient failure with backoff, in order; a terminal one is reported at once', async () => {
    let failures = 2;
    const { clock, d, sent, outcomes } = setup([target()], async () => {
      if (failures-- > 0) throw notifyError('the provider answered HTTP 500', NotifyCode.HttpStatus, 'p', false);
    });
    d.record([rec('web', 'RolledBack', 2)]);
    await clock.advance(1);
    await clock.advance(1000);
    await clock.advance(2000);
    expect(sent.map((s) => s.at - sent[0]!.at)).toEqual([0, 1000, 3000]);
    expect(outcomes).toMatchObject([{ ok: true }]);

    const t = setup([target()], async () => {
      throw notifyError('the provider answered HTTP 404', NotifyCode.HttpStatus, 'p', true);
    });
    t.d.record([rec('web', 'RolledBack', 2)]);
    await t.clock.advance(60_000);
    expect(t.sent).toHaveLength(1);
    expect(t.outcomes).toMatchObject([{ ok: false, attempts: 1 }]);
  });

  it('gives up after maxAttempts and says so', async () => {
    const { clock, d, sent, outcomes } = setup([target()], async () => {
      throw notifyError('no answer within 15000 ms', NotifyCode.Timeout, 'p', false);
    });
    d.record([rec('web', 'RolledBack', 2)]);
    await clock.advance(60_000);
    expect(sent).toHaveLength(4);
    expect(outcomes).toMatchObject([{ ok: false, attempts: 4 }]);
  });

  it('a provider that never answers holds up only its own lane', async () => {
    const hung = target('team-a/dead', 'generic');
    const ok = target('team-a/slack', 'slack');
    const { clock, d, sent } = setup([hung, ok], (t) => (t.provider === hung.provider ? new Promise<void>(() => {}) : Promise.resolve()));
    d.record([rec('a', 'RolledBack', 2)]);
    await clock.advance(1);
    d.record([rec('b', 'RolledBack', 2)]);
    await clock.advance(1);
    await settle();
    expect(sent.filter((s) => s.provider === ok.provider).map((s) => (s.message as { record: TransitionRecord }).record.bd.name)).toEqual(['a', 'b']);
    expect(sent.filter((s) => s.provider === hung.provider)).toHaveLength(1);
  });

  it('record() never waits and a full intake drops the oldest', async () => {
    const { clock, d, sent } = setup([target('team-a/gh', 'github')], async () => {}, { queueLimit: 5 });
    d.record(Array.from({ length: 8 }, (_, i) => rec(`bd-${i}`, 'Blocked')));
    await clock.advance(1);
    expect(events(sent)).toEqual(['bd-3:Blocked', 'bd-4:Blocked', 'bd-5:Blocked', 'bd-6:Blocked', 'bd-7:Blocked']);
  });
});
