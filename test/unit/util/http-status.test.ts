import { describe, expect, it } from 'vitest';
import { classifyStatus, isRetryable, retryCannotHelp, type StatusClass } from '../../../src/util/http-status.ts';

describe('classifyStatus', () => {
  const table: [number, StatusClass, boolean][] = [
    // code, class, retrying cannot help (retryable: exactly the throttled and retryable classes)
    [200, 'ok', false],
    [201, 'ok', false],
    [202, 'ok', false],
    [204, 'ok', false],
    [206, 'ok', false],
    [301, 'failed', false],
    [304, 'not-modified', false],
    [400, 'failed', true],
    [401, 'unauthorized', true],
    [403, 'forbidden', true],
    [404, 'not-found', true],
    [405, 'failed', true],
    [408, 'retryable', false],
    [409, 'conflict', true],
    [410, 'failed', true],
    [422, 'failed', true],
    [425, 'retryable', false],
    [429, 'throttled', false],
    [500, 'retryable', false],
    [501, 'failed', false],
    [502, 'retryable', false],
    [503, 'retryable', false],
    [504, 'retryable', false],
    [505, 'failed', false],
    [599, 'failed', false],
  ];
  it.each(table)('%i is %s (terminal: %s)', (code, cls, terminal) => {
    expect(classifyStatus(code)).toBe(cls);
    expect(retryCannotHelp(code)).toBe(terminal);
    expect(isRetryable(code)).toBe(cls === 'throttled' || cls === 'retryable');
  });
});
