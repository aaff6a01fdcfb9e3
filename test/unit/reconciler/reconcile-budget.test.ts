// The reconcile's time budget (issue 23): a hand-fired timer, no waiting on the clock.
import { describe, expect, it } from 'vitest';
import { budgetError, ReconcileBudget } from '../../../src/reconciler/reconcile-budget.ts';
import { HoistError } from '../../../src/util/errors.ts';
import { manualTimer } from '../../support/manual-timer.ts';

describe('reconcile budget', () => {
  it('when it runs out, its signal fires with a transient error naming the budget, the flag and the step under way', () => {
    const timer = manualTimer();
    const budget = new ReconcileBudget(5 * 60_000, timer.start);
    budget.stage = 'fetch';
    expect(budget.signal.aborted).toBe(false);
    timer.fire();
    expect(budget.signal.aborted).toBe(true);
    const reason = budget.signal.reason as HoistError;
    expect(reason).toBeInstanceOf(HoistError);
    expect(reason).toBe(budget.exceeded);
    expect(reason).toMatchObject({ stage: 'fetch', reason: 'FetchFailed', code: 'reconcile-timeout', terminal: false });
    expect(reason.describe()).toBe('fetch reconcile: reconcile stopped: it ran longer than its time budget of 5m (hoist run --reconcile-timeout)');
  });

  it("the parent signal (controller stop) aborts it with the parent's reason, and is not the budget running out", () => {
    const timer = manualTimer();
    const parent = new AbortController();
    const budget = new ReconcileBudget(60_000, timer.start, parent.signal);
    parent.abort(new Error('controller stopped'));
    expect(budget.signal.aborted).toBe(true);
    expect((budget.signal.reason as Error).message).toBe('controller stopped');
    expect(budget.exceeded).toBeUndefined();
    timer.fire();
    expect(budget.exceeded).toBeUndefined();
  });

  it('dispose clears the timer: a finished reconcile is never stopped', () => {
    const timer = manualTimer();
    const budget = new ReconcileBudget(60_000, timer.start);
    expect(timer.armed()).toBe(1);
    budget.dispose();
    expect(timer.armed()).toBe(0);
    timer.fire();
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
