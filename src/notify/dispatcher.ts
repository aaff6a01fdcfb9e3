/**
 * Delivery of transition records, off the reconcile path (docs/notifications.md, "Noise control").
 *
 * - `record()` only appends to a bounded intake and returns: a reconcile never waits for a
 *   provider. When the intake is full the oldest record is dropped (counted).
 * - Only transitions: per route, BD and track (outcome, health, pause), the state last accepted
 *   (`event@revision:digest`) is remembered and the same state again is dropped.
 * - Minimum interval per route (one provider) and BD: a message due earlier is held; a newer one of
 *   the same track replaces it (the latest state wins), and the held ones go when the interval ends.
 * - A lane per provider sends one request at a time, in order, retrying transient failures (network,
 *   timeout, 429, 5xx) with exponential backoff up to `maxAttempts`; a dead provider holds up only
 *   its own lane. Each lane's outbox is bounded like the intake.
 * - Digest: a lane sends when it holds a token: `burst` tokens, one more per `digestWindowMs`.
 *   What it sends is everything waiting: one record alone, several as one digest message per route
 *   (not for commit statuses, which are one per BD by nature and are not token-limited). So N BDs
 *   failing at once are one message per route, and a stream of failures is at most `burst`
 *   messages, then one per window, per route.
 *
 * All timing is on the injected clock; `send` is the only I/O.
 */
import type { Logger } from 'pino';
import type { ProviderType } from '../../api/v1alpha2/notification-types.ts';
import type { Clock, ClockTimer } from '../util/clock.ts';
import { HoistError } from '../util/errors.ts';
import { NotifyCode, notifyError } from './errors.ts';
import { renderLink, type Message } from './message.ts';
import { COMMIT_STATUS_TYPES } from './providers.ts';
import type { TransitionRecord } from './transitions.ts';

/** one route that wants a record, as the matcher resolves it */
export interface RouteTarget {
  /** "namespace/name" of the route */
  route: string;
  namespace: string;
  routeName: string;
  /** "namespace/name" of its provider: the lane */
  provider: string;
  providerType: ProviderType;
  minIntervalMs: number;
  linkTemplate?: string | undefined;
}

export type DeliveryOutcome =
  | { ok: true; target: RouteTarget; records: readonly TransitionRecord[]; at: Date }
  | { ok: false; target: RouteTarget; records: readonly TransitionRecord[]; at: Date; error: HoistError; attempts: number };

export interface DispatcherOptions {
  /** records waiting to be matched, and messages waiting per lane (default 1000 each) */
  queueLimit?: number;
  /** messages a lane sends at once before digesting (default 3) */
  burst?: number;
  /** after the burst, one flush per window (default 10 s) */
  digestWindowMs?: number;
  /** attempts per message, including the first (default 5) */
  maxAttempts?: number;
  /** first retry delay, doubling (default 1 s); capped at maxBackoffMs (default 60 s) */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
}

export interface DispatcherDeps {
  clock: Clock;
  log: Logger;
  /** the routes that want this record (namespace scope, selector, events, severity, suspend) */
  match(record: TransitionRecord): RouteTarget[];
  /** delivers one message through the target's provider; throws a HoistError (terminal: no retry) */
  send(target: RouteTarget, message: Message): Promise<void>;
  /** after each message: delivered, or given up on */
  report(outcome: DeliveryOutcome): void;
  /** counts (metrics) */
  count?(what: 'dropped' | 'duplicate' | 'superseded' | 'retried' | 'digested', providerType: string, n?: number): void;
}

interface Pending {
  target: RouteTarget;
  record: TransitionRecord;
}

interface Lane {
  outbox: Pending[];
  tokens: number;
  refillAt: number;
  timer?: ClockTimer | undefined;
  busy: boolean;
}

type Track = 'outcome' | 'health' | 'pause' | 'drift';

const TRACK: Record<TransitionRecord['event'], Track> = {
  InstallSucceeded: 'outcome',
  UpgradeSucceeded: 'outcome',
  RolloutStarted: 'outcome',
  RolledBack: 'outcome',
  Blocked: 'outcome',
  DependencyNotReady: 'outcome',
  Unhealthy: 'health',
  Recovered: 'health',
  Paused: 'pause',
  Resumed: 'pause',
  DriftReverted: 'drift',
};

/** the state a record reaches, for "never the same state of the same revision twice" */
export function stateKey(r: TransitionRecord): string {
  const rev = r.revision ? `${r.revision.number}:${r.revision.contentDigest}` : '-';
  // every drift correction is news of its own (another hand edit reverted)
  return r.event === 'DriftReverted' ? `${r.event}@${rev}@${r.at}` : `${r.event}@${rev}`;
}

export class Dispatcher {
  private readonly intake: TransitionRecord[] = [];
  private draining = false;
  /** route|bd|track → state key last accepted */
  private readonly lastState = new Map<string, string>();
  /** route|bd → when its last message left the interval gate (clock ms) */
  private readonly lastSent = new Map<string, number>();
  /** route|bd → track → the message held by the minimum interval */
  private readonly held = new Map<string, Map<Track, Pending>>();
  private readonly heldTimers = new Map<string, ClockTimer>();
  private readonly lanes = new Map<string, Lane>();
  private readonly o: Required<DispatcherOptions>;
  private stopped = false;
  /** resolves when every lane is idle (tests, shutdown) */
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly d: DispatcherDeps,
    options: DispatcherOptions = {},
  ) {
    this.o = {
      queueLimit: options.queueLimit ?? 1000,
      burst: options.burst ?? 3,
      digestWindowMs: options.digestWindowMs ?? 10_000,
      maxAttempts: options.maxAttempts ?? 5,
      baseBackoffMs: options.baseBackoffMs ?? 1000,
      maxBackoffMs: options.maxBackoffMs ?? 60_000,
    };
  }

  /** takes the records of one reconcile; never blocks, never throws */
  record(records: readonly TransitionRecord[]): void {
    if (this.stopped || records.length === 0) return;
    for (const r of records) {
      if (this.intake.length >= this.o.queueLimit) {
        this.intake.shift();
        this.d.count?.('dropped', 'intake');
      }
      this.intake.push(r);
    }
    if (!this.draining) {
      this.draining = true;
      this.d.clock.setTimeout(() => this.drain(), 0);
    }
  }

  /** forgets what was remembered about a deleted BD */
  forget(bd: string): void {
    for (const map of [this.lastState, this.lastSent]) for (const k of map.keys()) if (k.split('|')[1] === bd) map.delete(k);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.heldTimers.values()) this.d.clock.clearTimeout(t);
    for (const l of this.lanes.values()) this.d.clock.clearTimeout(l.timer);
    this.resolveIdle(true);
  }

  /** true when nothing is queued, held or being sent */
  idle(): boolean {
    return this.intake.length === 0 && !this.draining && this.held.size === 0 && [...this.lanes.values()].every((l) => !l.busy && l.outbox.length === 0);
  }

  /** resolves once idle() holds */
  whenIdle(): Promise<void> {
    if (this.idle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private resolveIdle(force = false): void {
    if (!force && !this.idle()) return;
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }

  private drain(): void {
    this.draining = false;
    const records = this.intake.splice(0);
    for (const r of records) {
      let targets: RouteTarget[];
      try {
        targets = this.d.match(r);
      } catch (e) {
        this.d.log.warn({ bd: r.bd.name, err: e instanceof Error ? e.message : String(e) }, 'notification routes not matched');
        continue;
      }
      for (const target of targets) this.accept({ target, record: r });
    }
    this.resolveIdle();
  }

  private accept(p: Pending): void {
    const { target, record } = p;
    const track = TRACK[record.event];
    const stateAt = `${target.route}|${record.bd.name}|${track}`;
    const state = stateKey(record);
    if (this.lastState.get(stateAt) === state) {
      this.d.count?.('duplicate', target.providerType);
      return;
    }
    this.lastState.set(stateAt, state);
    const gate = `${target.route}|${record.bd.name}`;
    const now = this.d.clock.now();
    const last = this.lastSent.get(gate);
    const heldHere = this.held.get(gate);
    if (last === undefined || (now - last >= target.minIntervalMs && !heldHere)) {
      this.lastSent.set(gate, now);
      this.enqueue(p);
      return;
    }
    let tracks = heldHere;
    if (!tracks) this.held.set(gate, (tracks = new Map()));
    if (tracks.has(track)) this.d.count?.('superseded', target.providerType);
    tracks.set(track, p);
    if (!this.heldTimers.has(gate)) {
      const wait = Math.max(0, (last ?? now) + target.minIntervalMs - now);
      const timer = this.d.clock.setTimeout(() => this.release(gate), wait);
      timer.unref();
      this.heldTimers.set(gate, timer);
    }
  }

  private release(gate: string): void {
    this.heldTimers.delete(gate);
    const tracks = this.held.get(gate);
    this.held.delete(gate);
    if (!tracks || this.stopped) return;
    this.lastSent.set(gate, this.d.clock.now());
    for (const p of tracks.values()) this.enqueue(p);
    this.resolveIdle();
  }

  private lane(provider: string): Lane {
    let l = this.lanes.get(provider);
    if (!l) this.lanes.set(provider, (l = { outbox: [], tokens: this.o.burst, refillAt: this.d.clock.now() + this.o.digestWindowMs, busy: false }));
    return l;
  }

  private enqueue(p: Pending): void {
    const l = this.lane(p.target.provider);
    if (l.outbox.length >= this.o.queueLimit) {
      l.outbox.shift();
      this.d.count?.('dropped', p.target.providerType);
    }
    l.outbox.push(p);
    this.schedule(p.target.provider, l);
  }

  /** runs the lane now when it has a token (or sends commit statuses, which are never digested), else at the next refill */
  private schedule(provider: string, l: Lane): void {
    if (l.busy || l.timer || l.outbox.length === 0 || this.stopped) return;
    this.refill(l);
    const first = l.outbox[0]!;
    // what arrives in the same turn of the event loop goes together
    const now = l.tokens > 0 || COMMIT_STATUS_TYPES.has(first.target.providerType);
    l.timer = this.d.clock.setTimeout(
      () => {
        l.timer = undefined;
        if (now) void this.run(provider, l);
        else this.schedule(provider, l);
      },
      now ? 0 : Math.max(0, l.refillAt - this.d.clock.now()),
    );
    l.timer.unref();
  }

  private refill(l: Lane): void {
    const now = this.d.clock.now();
    while (now >= l.refillAt && l.tokens < this.o.burst) {
      l.tokens++;
      l.refillAt += this.o.digestWindowMs;
    }
    if (l.tokens >= this.o.burst && now >= l.refillAt) l.refillAt = now + this.o.digestWindowMs;
  }

  /** sends what the lane holds: one message with a token, or (without one, after the window) a digest per route */
  private async run(provider: string, l: Lane): Promise<void> {
    if (l.busy || l.outbox.length === 0) return;
    l.busy = true;
    try {
      const commitStatuses = COMMIT_STATUS_TYPES.has(l.outbox[0]!.target.providerType);
      if (commitStatuses) {
        while (l.outbox.length > 0 && !this.stopped) {
          const p = l.outbox.shift()!;
          await this.deliver(p.target, [p.record], this.single(p));
        }
        return;
      }
      l.tokens = Math.max(0, l.tokens - 1);
      if (l.outbox.length === 1) {
        const p = l.outbox.shift()!;
        await this.deliver(p.target, [p.record], this.single(p));
        return;
      }
      // several waiting (at once, or gathered while the lane had no token): one message per route
      const batch = l.outbox.splice(0);
      const byRoute = new Map<string, Pending[]>();
      for (const p of batch) byRoute.set(p.target.route, [...(byRoute.get(p.target.route) ?? []), p]);
      for (const group of byRoute.values()) {
        const target = group[0]!.target;
        if (group.length === 1) {
          await this.deliver(target, [group[0]!.record], this.single(group[0]!));
          continue;
        }
        this.d.count?.('digested', target.providerType, group.length);
        const records = group.map((g) => g.record);
        const link = renderLink(target.linkTemplate, { name: '', namespace: target.namespace, event: 'Digest' });
        await this.deliver(target, records, { kind: 'digest', records, namespace: target.namespace, route: target.routeName, link });
      }
    } finally {
      l.busy = false;
      this.schedule(provider, l);
      this.resolveIdle();
    }
  }

  private single(p: Pending): Message {
    const r = p.record;
    const link = renderLink(p.target.linkTemplate, { name: r.bd.name, namespace: p.target.namespace, revision: r.revision?.number, event: r.event });
    return { kind: 'single', record: r, namespace: p.target.namespace, link };
  }

  /** one message with its retries; reports how it ended */
  private async deliver(target: RouteTarget, records: readonly TransitionRecord[], message: Message): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.d.send(target, message);
        this.d.report({ ok: true, target, records, at: new Date(this.d.clock.now()) });
        return;
      } catch (e) {
        const error = e instanceof HoistError ? e : notifyError(e instanceof Error ? e.message : String(e), NotifyCode.DeliveryFailed, target.provider, false);
        if (error.terminal || attempt >= this.o.maxAttempts || this.stopped) {
          this.d.report({ ok: false, target, records, at: new Date(this.d.clock.now()), error, attempts: attempt });
          return;
        }
        this.d.count?.('retried', target.providerType);
        const delay = Math.min(this.o.maxBackoffMs, this.o.baseBackoffMs * 2 ** (attempt - 1));
        this.d.log.debug(
          { route: target.route, provider: target.provider, attempt, delayMs: delay, err: error.message },
          'notification delivery failed: retrying',
        );
        await new Promise<void>((resolve) => this.d.clock.setTimeout(resolve, delay).unref());
      }
    }
  }
}
