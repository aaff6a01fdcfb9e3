import { describe, expect, it } from 'vitest';
import { mapLimit, Semaphore } from '../../../src/util/concurrency.ts';
import { sleep } from '../../support/wait.ts';

describe('Semaphore', () => {
  it('a waiter whose signal fires leaves the queue, rejected with its reason; the slot goes to the next waiter', async () => {
    const slot = new Semaphore(1);
    const holder = Promise.withResolvers<void>();
    const held = slot.run(() => holder.promise);
    const ac = new AbortController();
    const order: string[] = [];
    const aborted = slot.run(async () => void order.push('aborted one ran'), ac.signal);
    const next = slot.run(async () => void order.push('next ran'));
    ac.abort(new Error('budget'));
    await expect(aborted).rejects.toThrow('budget');
    holder.resolve();
    await held;
    await next;
    expect(order).toEqual(['next ran']);
    // an already-aborted signal never takes a slot
    await expect(slot.run(async () => 1, AbortSignal.abort(new Error('late')))).rejects.toThrow('late');
    expect(await slot.run(async () => 2)).toBe(2);
  });

  it.each([1, 2, 4])('lets at most %i run at once, in arrival order, and frees the slot when one throws', async (size) => {
    const slots = new Semaphore(size);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const gates = Array.from({ length: 10 }, () => Promise.withResolvers<void>());
    const runs = gates.map((g, i) =>
      slots.run(async () => {
        started.push(i);
        most = Math.max(most, ++running);
        await g.promise;
        running--;
        if (i === 0) throw new Error('boom');
        return i;
      }),
    );
    // observed here, settled below
    for (const r of runs) r.catch(() => {});
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(Array.from({ length: size }, (_, i) => i));
    for (const g of gates) {
      g.resolve();
      await new Promise((r) => setImmediate(r));
    }
    const outcomes = await Promise.allSettled(runs);
    expect(outcomes[0]!.status).toBe('rejected');
    expect(outcomes.slice(1).map((o) => (o as PromiseFulfilledResult<number>).value)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(most).toBe(size);
    // every slot was given back: a new holder starts at once
    let ran = false;
    await slots.run(async () => {
      ran = true;
    });
    expect(ran).toBe(true);
  });
});

describe('mapLimit', () => {
  it('keeps input order with at most `limit` in flight', async () => {
    let running = 0;
    let most = 0;
    const out = await mapLimit([5, 1, 3, 2], 2, async (x) => {
      most = Math.max(most, ++running);
      await sleep(x);
      running--;
      return x * 10;
    });
    expect(out).toEqual([50, 10, 30, 20]);
    expect(most).toBe(2);
  });
});
