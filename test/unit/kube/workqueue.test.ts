import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Backoff } from '../../../src/kube/backoff.ts';
import { Controller, TerminalError } from '../../../src/kube/controller.ts';
import { ItemExponentialRateLimiter, MaxOfRateLimiter, TokenBucketRateLimiter } from '../../../src/kube/rate-limiter.ts';
import { WorkQueue } from '../../../src/kube/workqueue.ts';
import type { Clock } from '../../../src/util/clock.ts';
import { HoistError } from '../../../src/util/errors.ts';
import { FakeClock, settle } from '../../support/fake-clock.ts';

/** resolves after ms on `clock`, or when the signal fires */
function wait(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = clock.setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clock.clearTimeout(timer);
      resolve();
    });
  });
}

describe('WorkQueue', () => {
  it('processes a key queued twice once', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
    q.done('a');
    q.done('b');
    expect(q.length).toBe(0);
  });

  it('never hands a key to two workers: a key re-added while processing waits for done', async () => {
    const q = new WorkQueue();
    q.add('a');
    const first = await q.get();
    q.add('a');
    q.add('a');
    expect(q.length).toBe(0); // not handed out while 'a' is in flight
    let second: string | undefined;
    void q.get().then((k) => (second = k));
    await settle();
    expect(second).toBeUndefined();
    q.done(first!);
    await settle();
    expect(second).toBe('a');
    q.done('a');
    expect(q.length).toBe(0); // the two re-adds collapsed into one
  });

  it('hands out higher priorities first, equal ones in the order added; a re-add with a higher priority moves a key up', async () => {
    const q = new WorkQueue();
    for (const k of ['fresh-1', 'fresh-2', 'fresh-3']) q.add(k);
    q.add('follow-up-1', 10);
    q.add('fresh-3', 10); // moves up, behind follow-up-1
    q.add('follow-up-2', 10);
    q.add('fresh-1'); // already queued: keeps its place
    q.add('follow-up-1'); // a lower priority never moves a key down
    expect(q.length).toBe(5);
    const order: string[] = [];
    for (let i = 0; i < 5; i++) order.push((await q.get())!);
    expect(order).toEqual(['follow-up-1', 'fresh-3', 'follow-up-2', 'fresh-1', 'fresh-2']);
    for (const k of order) q.done(k);
    expect(q.length).toBe(0);
  });

  it('a key re-added with a priority while it is processed is queued with that priority after done', async () => {
    const q = new WorkQueue();
    q.add('a');
    const a = await q.get();
    q.add('b');
    q.add('a', 10);
    q.add('a'); // the higher priority stays
    q.done(a!);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never runs the same key concurrently under a controller with many workers', async () => {
    const clock = new FakeClock();
    let running = 0;
    let maxSameKey = 0;
    let calls = 0;
    const c = new Controller({
      name: 'concurrency',
      workers: 8,
      clock,
      reconcile: async () => {
        calls++;
        running++;
        maxSameKey = Math.max(maxSameKey, running);
        await wait(clock, 10);
        running--;
      },
    });
    c.start();
    // an add every ms for 20 ms, each reconcile taking 10 ms
    for (let i = 0; i < 20; i++) {
      c.enqueue('same');
      await clock.advance(1);
    }
    await clock.advance(50);
    expect(await c.stop(1000)).toBe(true);
    expect(maxSameKey).toBe(1);
    // the adds during a reconcile collapse into one more: at 0, at 10 (adds 1-9) and at 20 (adds 10-19)
    expect(calls).toBe(3);
  });

  it('delays with addAfter and keeps the earliest time for a waiting key', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ clock });
    q.addAfter('a', 200);
    q.addAfter('a', 20);
    q.addAfter('a', 500);
    await clock.advance(19);
    expect(q.length).toBe(0);
    await clock.advance(1);
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('a');
    q.done('a');
    // the later times were superseded, not kept: nothing is added again
    expect(clock.pending).toBe(0);
    await clock.advance(1000);
    expect(q.length).toBe(0);
  });

  it('grows per-item backoff exponentially up to the cap and resets on forget', () => {
    const rl = new ItemExponentialRateLimiter(5, 1000);
    const delays = Array.from({ length: 10 }, () => rl.when('a'));
    expect(delays).toEqual([5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
    expect(rl.when('b')).toBe(5); // per item
    expect(rl.retries('a')).toBe(10);
    rl.forget('a');
    expect(rl.when('a')).toBe(5);
    // huge failure counts stay finite
    for (let i = 0; i < 2000; i++) rl.when('c');
    expect(rl.when('c')).toBe(1000);
  });

  it('grows the informer backoff by doubling up to the cap, with at most the jitter added, and resets', () => {
    const exact = new Backoff(800, 30_000, 0);
    expect(Array.from({ length: 8 }, () => exact.next())).toEqual([800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000]);
    expect(exact.attempts).toBe(8);
    exact.reset();
    expect(exact.next()).toBe(800);
    const jittered = new Backoff(800, 30_000, 0.2);
    for (const base of [800, 1600, 3200, 6400, 12_800, 25_600, 30_000]) {
      const d = jittered.next();
      expect(d).toBeGreaterThanOrEqual(base);
      expect(d).toBeLessThanOrEqual(base * 1.2);
    }
  });

  it('rate limits overall with a token bucket', async () => {
    const clock = new FakeClock();
    const tb = new TokenBucketRateLimiter(10, 3, clock);
    expect([tb.when('a'), tb.when('b'), tb.when('c')]).toEqual([0, 0, 0]);
    // bucket empty: each further reservation waits one more token interval (100ms at 10 qps)
    expect(tb.when('d')).toBeCloseTo(100);
    expect(tb.when('e')).toBeCloseTo(200);
    await clock.advance(1000); // refills 10 tokens, capped at burst 3, minus the 2 reserved
    expect(tb.when('f')).toBe(0);
    const both = new MaxOfRateLimiter(new ItemExponentialRateLimiter(5, 1000), new TokenBucketRateLimiter(10, 1, clock));
    expect(both.when('x')).toBe(5);
    expect(both.when('x')).toBeCloseTo(100);
  });

  it('requeues failures with growing backoff through addRateLimited', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const q = new WorkQueue({ clock, rateLimiter: new ItemExponentialRateLimiter(10, 10_000) });
    const handedOutAt: number[] = [];
    q.add('a');
    for (let i = 0; i < 5; i++) {
      const k = await q.get();
      handedOutAt.push(clock.now() - start);
      q.addRateLimited(k!);
      q.done(k!);
      expect(q.length).toBe(0); // waiting for its backoff, not queued
      await clock.fireNext();
    }
    expect(q.numRequeues('a')).toBe(5);
    // 10, 20, 40, 80 ms between attempts
    expect(handedOutAt).toEqual([0, 10, 30, 70, 150]);
    q.shutDown();
  });

  it('shuts down: getters are released, adds are ignored, drain waits for in-flight work', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ clock });
    const waiting = q.get();
    q.add('a');
    expect(await waiting).toBe('a');
    q.add('b');
    q.addAfter('c', 10);
    let drained = false;
    const drain = q.shutDownWithDrain().then(() => (drained = true));
    expect(await q.get()).toBeUndefined();
    q.add('d');
    expect(q.length).toBe(0);
    expect(clock.pending).toBe(0); // the delayed add was dropped with its timer
    await clock.advance(20);
    expect(drained).toBe(false); // 'a' still in flight
    q.done('a');
    await drain;
    expect(drained).toBe(true);
  });

  it('exports workqueue metrics with controller-runtime names', async () => {
    const registry = new Registry();
    const q = new WorkQueue({ name: 'bd', registry });
    q.add('a');
    q.add('b');
    const k = await q.get();
    q.addRateLimited('z');
    const text = await registry.metrics();
    expect(text).toContain('workqueue_depth{name="bd"} 1');
    expect(text).toContain('workqueue_adds_total{name="bd"} 2');
    expect(text).toContain('workqueue_retries_total{name="bd"} 1');
    expect(text).toMatch(/workqueue_longest_running_processor_seconds\{name="bd"\} \d/);
    expect(text).toContain('workqueue_queue_duration_seconds_count{name="bd"} 1');
    q.done(k!);
    q.shutDown();
  });
});

describe('Controller', () => {
  it('requeues thrown errors with backoff, drops terminal errors, forgets on success', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const attempts = new Map<string, number>();
    const c = new Controller({
      name: 'outcomes',
      workers: 2,
      registry,
      clock,
      rateLimiter: new ItemExponentialRateLimiter(1, 50),
      reconcile: async (key) => {
        const n = (attempts.get(key) ?? 0) + 1;
        attempts.set(key, n);
        if (key === 'flaky' && n < 3) throw new Error('transient');
        if (key === 'terminal') throw new TerminalError('bad spec');
        if (key === 'hoist-terminal') throw new HoistError('bad bundle', { stage: 'process', reason: 'ProcessFailed', code: 'invalid-bundle', terminal: true });
        if (key === 'later' && n === 1) return { requeueAfter: 20 };
        return undefined;
      },
    });
    c.start();
    for (const k of ['ok', 'flaky', 'terminal', 'hoist-terminal', 'later']) c.enqueue(k);
    await clock.advance(150);
    expect(await c.stop(1000)).toBe(true);
    expect(Object.fromEntries(attempts)).toEqual({ ok: 1, flaky: 3, terminal: 1, 'hoist-terminal': 1, later: 2 });
    expect(c.queue.numRequeues('flaky')).toBe(0); // forgotten after the success
    const text = await registry.metrics();
    expect(text).toContain('controller_runtime_reconcile_total{controller="outcomes",result="success"} 3');
    expect(text).toContain('controller_runtime_reconcile_total{controller="outcomes",result="error"} 4');
    expect(text).toContain('controller_runtime_reconcile_total{controller="outcomes",result="requeue_after"} 1');
    expect(text).toContain('controller_runtime_reconcile_errors_total{controller="outcomes"} 4');
    expect(text).toContain('controller_runtime_terminal_reconcile_errors_total{controller="outcomes"} 2');
    expect(text).toContain('controller_runtime_reconcile_time_seconds_count{controller="outcomes"} 8');
  });

  it("retries a failing key after the rate limiter's doubling delays, on its clock", async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const attemptsAt: number[] = [];
    // the default rate limiter, as the BundleDeployment controller has it: 5 ms doubling per key
    const c = new Controller({
      name: 'backoff',
      clock,
      reconcile: async () => {
        attemptsAt.push(clock.now() - start);
        throw new Error('still failing');
      },
    });
    c.start();
    c.enqueue('a');
    await clock.advance(3_000);
    const gaps = attemptsAt.slice(1).map((at, i) => at - attemptsAt[i]!);
    expect(gaps).toEqual([5, 10, 20, 40, 80, 160, 320, 640, 1280]);
    expect(c.queue.numRequeues('a')).toBe(10);
    // the next retry is due twice as long again after the last attempt
    expect(clock.now() - start + clock.nextDue()!).toBe(attemptsAt.at(-1)! + 2560);
    expect(await c.stop(1000)).toBe(true);
  });

  it('lets in-flight reconciles finish on stop, and aborts them after the deadline', async () => {
    const clock = new FakeClock();
    const finished: string[] = [];
    const reconcile = async (key: string, signal: AbortSignal) => {
      await wait(clock, key === 'slow' ? 5000 : 30, signal);
      finished.push(`${key}${signal.aborted ? ' aborted' : ''}`);
    };
    const c = new Controller({ name: 'drain', workers: 2, clock, reconcile });
    c.start();
    c.enqueue('quick');
    await clock.advance(5);
    const stopped = c.stop(1000);
    await clock.advance(25); // the reconcile's 30 ms are up, well within the deadline
    expect(await stopped).toBe(true);
    expect(finished).toEqual(['quick']);

    const c2 = new Controller({ name: 'deadline', clock, reconcile });
    c2.start();
    c2.enqueue('slow');
    c2.enqueue('never-started');
    await clock.advance(5);
    const stopped2 = c2.stop(50);
    await clock.advance(49);
    expect(finished).toEqual(['quick']); // still draining
    await clock.advance(1);
    expect(await stopped2).toBe(false);
    expect(finished).toEqual(['quick', 'slow aborted']);
  });
});
