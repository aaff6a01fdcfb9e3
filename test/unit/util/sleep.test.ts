import { describe, expect, it } from 'vitest';
import { sleep } from '../../../src/util/sleep.ts';

describe('sleep', () => {
  it('resolves as soon as its signal fires, without throwing, however long it was asked to wait', async () => {
    const ac = new AbortController();
    const slept = sleep(3_600_000, ac.signal);
    ac.abort(new Error('stop'));
    await expect(slept).resolves.toBeUndefined();
  });

  it('resolves at once on a signal that has already fired', async () => {
    await expect(sleep(3_600_000, AbortSignal.abort())).resolves.toBeUndefined();
  });

  it('without a signal, after the time', async () => {
    await expect(sleep(1)).resolves.toBeUndefined();
  });
});
