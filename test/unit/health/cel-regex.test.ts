// CEL `matches()` in health checks runs on RE2 (issue 23): linear in the text, no backtracking,
// RE2 syntax as in the Kubernetes API server, patterns bounded in length and compiled size.
import { describe, expect, it } from 'vitest';
import { ASSUMED_DATA_SIZES, estimateCost } from '../../../src/health/cel-cost.ts';
import { parseCel } from '../../../src/health/cel-env.ts';
import { compileRegex, MAX_REGEX_LENGTH, MAX_REGEX_PROGRAM, RegexError } from '../../../src/health/cel-regex.ts';
import { compileHealthChecks } from '../../../src/health/probes.ts';
import { HoistError } from '../../../src/util/errors.ts';

const obj = (spec: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'ns' }, spec });
const check = (cel: string) => compileHealthChecks([{ name: 're', match: { kind: 'ConfigMap' }, cel }])[0]!;
const compileError = (cel: string): HoistError => {
  try {
    check(cel);
  } catch (e) {
    expect(e).toBeInstanceOf(HoistError);
    return e as HoistError;
  }
  throw new Error('compiled');
};

describe('matches(): RE2 semantics', () => {
  it.each([
    // [text, pattern, matches] — CEL's matches is a search anywhere in the text, as RE2's PartialMatch
    ['abc', 'b', true],
    ['abc', '^b', false],
    ['abc', '^a.c$', true],
    ['ABC', '(?i)^abc$', true],
    ['v1.2.3', '^v[0-9]+\\.[0-9]+\\.[0-9]+$', true],
    ['v1.2', '^v[0-9]+\\.[0-9]+\\.[0-9]+$', false],
    ['grüße', '^\\p{L}+$', true],
    ['', '^$', true],
    ['line1\nline2', '^line2$', false],
    ['line1\nline2', '(?m)^line2$', true],
  ] as const)('%j.matches(%j) is %s', (text, pattern, want) => {
    expect(parseCel(`self.s.matches(${JSON.stringify(pattern)})`)({ self: { s: text } })).toBe(want);
    expect(check(`self.spec.s.matches(${JSON.stringify(pattern)})`).test(obj({ s: text })).ok).toBe(want);
  });

  it('a pattern read from the object is compiled when evaluated', () => {
    const c = check('self.spec.s.matches(self.spec.p)');
    expect(c.test(obj({ s: 'abc', p: 'b+' })).ok).toBe(true);
    expect(c.test(obj({ s: 'abc', p: 'x' })).ok).toBe(false);
  });
});

// A backtracking engine (JavaScript's RegExp, which the library used) takes exponential time on
// these: 2^50 steps for the shortest text below, so the test could not finish within its timeout.
// RE2 answers in one pass over the text.
describe('matches(): catastrophic-backtracking patterns finish', () => {
  const hostile = 'a'.repeat(50_000) + 'b';
  it.each([
    ['^(a+)+$', false],
    ['^(a|aa)+$', false],
    ['^(a*)*$', false],
    ['(a+)+b', true],
    ['^(a|a?)+$', false],
    ['^((a+)+)+c', false],
  ] as const)("%s on 50 000 a's and a b: %s", (pattern, want) => {
    expect(compileRegex(pattern).test(hostile)).toBe(want);
    const r = check(`self.spec.s.matches(${JSON.stringify(pattern)})`).test(obj({ s: hostile }));
    expect(r.ok).toBe(want);
    if (!want) expect(r.message).toBe(`cel self.spec.s.matches(${JSON.stringify(pattern)}) is false`);
  });
});

describe('matches(): bounds and bad patterns', () => {
  it.each([
    ['a backreference (not RE2)', '(a)\\1', /invalid regular expression \(RE2 syntax\)/],
    ['a lookahead (not RE2)', 'a(?=b)', /invalid regular expression \(RE2 syntax\)/],
    ['an unclosed group', '(a', /invalid regular expression/],
    ["a repeat count over 1000 (RE2's own limit)", 'a{1001}', /invalid regular expression/],
    [
      'a pattern over the length limit',
      'a'.repeat(MAX_REGEX_LENGTH + 1),
      new RegExp(`${MAX_REGEX_LENGTH + 1} characters long, more than the limit of ${MAX_REGEX_LENGTH}`),
    ],
    [
      'a pattern whose program is over the limit',
      '(.*){1000}(.*){1000}',
      new RegExp(`compiles to \\d+ instructions, more than the limit of ${MAX_REGEX_PROGRAM}`),
    ],
  ] as const)('a literal pattern with %s is a terminal spec error naming the check', (_what, pattern, message) => {
    const e = compileError(`self.spec.s.matches(${JSON.stringify(pattern)})`);
    expect(e.terminal).toBe(true);
    expect(e.message).toMatch(/^healthChecks\[re\]: cel: matches\(\): /);
    expect(e.message).toMatch(message);
  });

  it('at the length limit a pattern compiles', () => {
    expect(compileRegex('a'.repeat(MAX_REGEX_LENGTH)).programSize).toBeGreaterThan(MAX_REGEX_LENGTH);
  });

  it.each([
    ['invalid', '(', 'invalid regular expression'],
    ['over the program limit', '(.*){1000}(.*){1000}', 'regular expression too large'],
  ] as const)('a pattern read from the object that is %s fails the check by its code alone (no value of the object)', (_what, p, message) => {
    const r = check('self.spec.s.matches(self.spec.p)').test(obj({ s: 'abc', p }));
    expect(r).toEqual({ ok: false, message: `cel self.spec.s.matches(self.spec.p): ${message}` });
  });

  it('RegexError carries a CEL error code', () => {
    expect(() => compileRegex('(')).toThrow(RegexError);
  });
});

describe('matches(): cost = text length × program instructions', () => {
  it.each([
    // [expression, estimate with strings assumed at 100 characters]
    // 1 (call) + 100 × 5 instructions + 2 (self.s) + 1 (literal)
    ["self.s.matches('^a$')", 1 + 100 * compileRegex('^a$').programSize + 2 + 1],
    // a literal text: its own length
    ["'abc'.matches('b')", 1 + 3 * compileRegex('b').programSize + 1 + 1],
    // a pattern read from the object costs the largest program allowed
    ['self.s.matches(self.p)', 1 + 100 * MAX_REGEX_PROGRAM + 2 + 2],
  ] as const)('%s costs %d', (expr, want) => {
    expect(estimateCost(parseCel(expr).ast, ASSUMED_DATA_SIZES)).toBe(want);
  });

  it('a match too costly for this object is not evaluated', () => {
    const c = check("self.spec.s.matches('(.*){1000}')"); // 4002 instructions
    expect(c.test(obj({ s: 'x'.repeat(100) })).ok).toBe(true);
    const r = c.test(obj({ s: 'x'.repeat(10_000) }));
    expect(r.ok).toBe(false);
    expect(r.message).toMatch(/not evaluated: its cost on this object \(.*\) exceeds the limit of 1000000$/);
  });
});
