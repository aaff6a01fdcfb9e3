/** the pure readings of the test controller's log that e2e tests wait on instead of sleeping */
import { describe, expect, it } from 'vitest';
import { reconciledSince, settledAfterChange, type LogRecord } from '../../support/controller-log.ts';

const changed = (time: number, bd = 'app'): LogRecord => ({ level: 20, time, msg: 'managed object changed', bd });
const reconciled = (time: number, durationMs: number, changedObjects: number, bd = 'app'): LogRecord => ({
  level: 30,
  time,
  msg: 'reconciled',
  bd,
  durationMs,
  changed: changedObjects,
});

describe('settledAfterChange', () => {
  it.each([
    ['no change seen yet', [reconciled(100, 10, 0)], 1, false],
    ['a change, no reconcile after it', [changed(100)], 1, false],
    ['a reconcile that started before the change', [changed(100), reconciled(120, 30, 0)], 1, false],
    ['a reconcile after the change that changed nothing', [changed(100), reconciled(130, 30, 0)], 1, true],
    ['a reconcile after the change that reverted it: its own write is still to come', [changed(100), reconciled(130, 20, 1)], 1, false],
    ['the revert seen, a reconcile after it changed nothing', [changed(100), reconciled(130, 20, 1), changed(135), reconciled(160, 20, 0)], 1, true],
    ['fewer changes than expected', [changed(100), reconciled(130, 20, 0)], 2, false],
    ['another BD', [changed(100, 'other'), reconciled(130, 20, 0, 'other')], 1, false],
  ] as const)('%s', (_what, lines, changes, settled) => {
    expect(settledAfterChange(lines, 'app', changes)).toBe(settled);
  });
});

describe('reconciledSince', () => {
  it('finds the first reconcile of the BD that started at or after the time', () => {
    const lines = [reconciled(100, 50, 0), reconciled(200, 50, 2, 'other'), reconciled(300, 50, 1)];
    expect(reconciledSince(lines, 'app', 60)).toBe(lines[2]);
    expect(reconciledSince(lines, 'app', 50)).toBe(lines[0]);
    expect(reconciledSince(lines, 'app', 251)).toBeUndefined();
  });
});
