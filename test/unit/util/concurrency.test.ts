import { describe, expect, it } from 'vitest';
import { mapLimit, Semaphore } from '../../../src/util/concurrency.ts';
import { sleep } from '../../support/wait.ts';

describe('Semaphore', () => {
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
