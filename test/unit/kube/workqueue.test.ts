import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Controller, TerminalError } from '../../../src/kube/controller.ts';
import { ItemExponentialRateLimiter, MaxOfRateLimiter, TokenBucketRateLimiter } from '../../../src/kube/rate-limiter.ts';
import { WorkQueue } from '../../../src/kube/workqueue.ts';
import { HoistError } from '../../../src/util/errors.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    await sleep(5);
    expect(second).toBeUndefined();
    q.done(first!);
    await sleep(0);
    expect(second).toBe('a');
    q.done('a');
    expect(q.length).toBe(0); // the two re-adds collapsed into one
  });

  it('never runs the same key concurrently under a controller with many workers', async () => {
    let running = 0;
    let maxSameKey = 0;
    let calls = 0;
    const c = new Controller({
      name: 'concurrency',
      workers: 8,
      reconcile: async () => {
        calls++;
        running++;
        maxSameKey = Math.max(maxSameKey, running);
        await sleep(10);
        running--;
      },
    });
    c.start();
    for (let i = 0; i < 20; i++) {
      c.enqueue('same');
      await sleep(1);
    }
    await sleep(50);
    await c.stop(1000);
    expect(maxSameKey).toBe(1);
    // re-adds during processing collapse: far fewer reconciles than adds, at least two
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(calls).toBeLessThan(20);
  });

  it('delays with addAfter and keeps the earliest time for a waiting key', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 200);
    q.addAfter('a', 20);
    q.addAfter('a', 500);
    const t0 = performance.now();
    expect(await q.get()).toBe('a');
    const waited = performance.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(15);
    expect(waited).toBeLessThan(150);
    q.done('a');
    await sleep(250);
    expect(q.length).toBe(0); // the later timers were superseded, not added again
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

  it('rate limits overall with a token bucket', () => {
    let now = 0;
    const tb = new TokenBucketRateLimiter(10, 3, () => now);
    expect([tb.when('a'), tb.when('b'), tb.when('c')]).toEqual([0, 0, 0]);
    // bucket empty: each further reservation waits one more token interval (100ms at 10 qps)
    expect(tb.when('d')).toBeCloseTo(100);
    expect(tb.when('e')).toBeCloseTo(200);
    now += 1000; // refills 10 tokens, capped at burst 3, minus the 2 reserved
    expect(tb.when('f')).toBe(0);
    const both = new MaxOfRateLimiter(new ItemExponentialRateLimiter(5, 1000), new TokenBucketRateLimiter(10, 1, () => now));
    expect(both.when('x')).toBe(5);
    expect(both.when('x')).toBeCloseTo(100);
  });

  it('requeues failures with growing backoff through addRateLimited', async () => {
    const q = new WorkQueue({ rateLimiter: new ItemExponentialRateLimiter(10, 10_000) });
    const gaps: number[] = [];
    let last = performance.now();
    q.add('a');
    for (let i = 0; i < 4; i++) {
      const k = await q.get();
      const now = performance.now();
      gaps.push(now - last);
      last = now;
      q.addRateLimited(k!);
      q.done(k!);
    }
    expect(q.numRequeues('a')).toBe(4);
    // 10, 20, 40 ms between attempts (first gap is the immediate add)
    expect(gaps[1]).toBeGreaterThanOrEqual(8);
    expect(gaps[2]).toBeGreaterThanOrEqual(18);
    expect(gaps[3]).toBeGreaterThanOrEqual(38);
    q.shutDown();
  });

  it('shuts down: getters are released, adds are ignored, drain waits for in-flight work', async () => {
    const q = new WorkQueue();
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
    await sleep(20);
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
    const registry = new Registry();
    const attempts = new Map<string, number>();
    const c = new Controller({
      name: 'outcomes',
      workers: 2,
      registry,
      rateLimiter: new ItemExponentialRateLimiter(1, 50),
      reconcile: async (key) => {
        const n = (attempts.get(key) ?? 0) + 1;
        attempts.set(key, n);
        if (key === 'flaky' && n < 3) throw new Error('transient');
        if (key === 'terminal') throw new TerminalError('bad spec');
        if (key === 'hoist-terminal') throw new HoistError('bad bundle', { stage: 'process', reason: 'ProcessFailed', code: 'x', terminal: true });
        if (key === 'later' && n === 1) return { requeueAfter: 20 };
        return undefined;
      },
    });
    c.start();
    for (const k of ['ok', 'flaky', 'terminal', 'hoist-terminal', 'later']) c.enqueue(k);
    await sleep(150);
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

  it('lets in-flight reconciles finish on stop, and aborts them after the deadline', async () => {
    const finished: string[] = [];
    const c = new Controller({
      name: 'drain',
      workers: 2,
      reconcile: async (key, signal) => {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, key === 'slow' ? 5000 : 30);
          signal.addEventListener('abort', () => {
            clearTimeout(t);
            resolve();
          });
        });
        finished.push(`${key}${signal.aborted ? ' aborted' : ''}`);
      },
    });
    c.start();
    c.enqueue('quick');
    await sleep(5);
    expect(await c.stop(1000)).toBe(true);
    expect(finished).toEqual(['quick']);

    const c2 = new Controller({ name: 'deadline', reconcile: c['reconcileFn'] });
    c2.start();
    c2.enqueue('slow');
    c2.enqueue('never-started');
    await sleep(5);
    expect(await c2.stop(50)).toBe(false);
    expect(finished).toEqual(['quick', 'slow aborted']);
  });
});
