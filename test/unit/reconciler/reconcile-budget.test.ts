// The reconcile's time budget (issue 23), on a fake clock: no waiting on the real one.
import { describe, expect, it } from 'vitest';
import { budgetError, ReconcileBudget } from '../../../src/reconciler/reconcile-budget.ts';
import { HoistError } from '../../../src/util/errors.ts';
import { FakeClock } from '../../support/fake-clock.ts';

describe('reconcile budget', () => {
  it('when it runs out, its signal fires with a transient error naming the budget, the flag and the step under way', async () => {
    const clock = new FakeClock();
    const budget = new ReconcileBudget(5 * 60_000, clock);
    budget.stage = 'fetch';
    await clock.advance(5 * 60_000 - 1);
    expect(budget.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(budget.signal.aborted).toBe(true);
    const reason = budget.signal.reason as HoistError;
    expect(reason).toBeInstanceOf(HoistError);
    expect(reason).toBe(budget.exceeded);
    expect(reason).toMatchObject({ stage: 'fetch', reason: 'FetchFailed', code: 'reconcile-timeout', terminal: false });
    expect(reason.describe()).toBe('fetch reconcile: reconcile stopped: it ran longer than its time budget of 5m (hoist run --reconcile-timeout)');
  });

  it("the parent signal (controller stop) aborts it with the parent's reason, and is not the budget running out", async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    const budget = new ReconcileBudget(60_000, clock, parent.signal);
    parent.abort(new Error('controller stopped'));
    expect(budget.signal.aborted).toBe(true);
    expect((budget.signal.reason as Error).message).toBe('controller stopped');
    expect(budget.exceeded).toBeUndefined();
    await clock.advance(60_000);
    expect(budget.exceeded).toBeUndefined();
  });

  it('dispose clears the timer: a finished reconcile is never stopped', async () => {
    const clock = new FakeClock();
    const budget = new ReconcileBudget(60_000, clock);
    expect(clock.pending).toBe(1);
    budget.dispose();
    expect(clock.pending).toBe(0);
    await clock.advance(60_000);
    expect(budget.signal.aborted).toBe(false);
  });

  it.each([
    ['resolve', 'ResolveFailed'],
    ['fetch', 'FetchFailed'],
    ['process', 'ProcessFailed'],
    ['apply', 'ApplyFailed'],
  ] as const)('during %s the error maps to %s', (stage, reason) => {
    expect(budgetError(90_000, stage)).toMatchObject({ stage, reason, message: expect.stringContaining('time budget of 90s') });
  });
});
