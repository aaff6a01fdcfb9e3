/**
 * The parameter expansions of Flux's envsubst (github.com/fluxcd/pkg/envsubst funcs.go, forked
 * from drone/envsubst), on byte strings (go-text.ts) so that lengths and offsets are Go's byte
 * counts. Each is a port of the Go function of the same name; where Go would build a string far
 * larger than its input (`${var//x/y}` with many matches) the size is checked first.
 *
 * Pure but for the budget.
 */
import { BadPattern, globMatch, type StepBudget } from './glob.ts';
import { decodeRune, encodeRune, mapRunes, runesOf, toLowerRune, toUpperRune } from './go-text.ts';

export interface FuncBudget extends StepBudget {
  /** throws when a result of this many bytes would be over the output budget */
  allow(bytes: number): void;
}

type SubstituteFunc = (s: string, args: readonly string[], budget: FuncBudget) => string;

const toLen: SubstituteFunc = (s) => String(s.length);
const toLower: SubstituteFunc = (s) => mapRunes(s, toLowerRune);
const toUpper: SubstituteFunc = (s) => mapRunes(s, toUpperRune);

function firstMapped(s: string, f: (r: number) => number): string {
  if (s === '') return s;
  const [r, n] = decodeRune(s, 0);
  return encodeRune(f(r)) + s.slice(n);
}
const toLowerFirst: SubstituteFunc = (s) => firstMapped(s, toLowerRune);
const toUpperFirst: SubstituteFunc = (s) => firstMapped(s, toUpperRune);

/** the value, or when it is empty the arguments joined without a separator */
const toDefault: SubstituteFunc = (s, args) => (s.length === 0 && args.length > 0 ? args.join('') : s);

/** strconv.Atoi: an optional sign and decimal digits (underscores are not allowed by Atoi) */
function atoi(text: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) return undefined;
  const n = Number(text);
  // Atoi fails outside int64; beyond 2^53 the exact value no longer matters for a string offset
  return Math.abs(n) > 9.223372036854776e18 ? undefined : n;
}

const toSubstr: SubstituteFunc = (s, args) => {
  if (args.length === 0) return s;
  let pos = atoi(args[0]!);
  // bash returns the string when the position cannot be parsed
  if (pos === undefined) return s;
  if (pos < 0) pos = Math.max(s.length + pos, 0);
  if (args.length === 1) return pos < s.length ? s.slice(pos) : '';
  const length = atoi(args[1]!);
  if (length === undefined) return s;
  if (pos + length >= s.length) return pos < s.length ? s.slice(pos) : '';
  // Go slices s[pos:pos+length]; a negative length makes that slice panic in Go (recovered as
  // an error nowhere): treat it as the refusal it is
  if (length < 0) throw new BadLength();
  return s.slice(pos, pos + length);
};

/** a `${var:offset:length}` whose length is negative: Go's slice expression would panic */
export class BadLength extends Error {}

/** strings.Replace(s, old, new, n) with n < 0 for all, sized before it is built */
function replace(s: string, old: string, repl: string, n: number, budget: FuncBudget): string {
  if (old === repl || n === 0) return s;
  if (old === '') {
    // Go inserts repl before every rune and at the end (up to n times)
    const runes = runesOf(s).length;
    const count = n < 0 ? runes + 1 : Math.min(n, runes + 1);
    budget.allow(s.length + count * repl.length);
    const parts: string[] = [];
    let i = 0;
    let done = 0;
    while (done < count) {
      parts.push(repl);
      done++;
      if (i >= s.length) break;
      const [, w] = decodeRune(s, i);
      parts.push(s.slice(i, i + w));
      i += w;
    }
    parts.push(s.slice(i));
    return parts.join('');
  }
  let count = 0;
  for (let at = s.indexOf(old); at >= 0 && (n < 0 || count < n); at = s.indexOf(old, at + old.length)) count++;
  budget.allow(s.length + count * (repl.length - old.length));
  const parts: string[] = [];
  let from = 0;
  for (let k = 0; k < count; k++) {
    const at = s.indexOf(old, from);
    parts.push(s.slice(from, at), repl);
    from = at + old.length;
  }
  parts.push(s.slice(from));
  return parts.join('');
}

const replaceAll: SubstituteFunc = (s, args, budget) => {
  if (args.length === 0) return s;
  return replace(s, args[0]!, args[1] ?? '', -1, budget);
};
const replaceFirst: SubstituteFunc = (s, args, budget) => {
  if (args.length === 0) return s;
  return replace(s, args[0]!, args[1] ?? '', 1, budget);
};
const replacePrefix: SubstituteFunc = (s, args, budget) => {
  if (args.length !== 2) return s;
  return s.startsWith(args[0]!) ? replace(s, args[0]!, args[1]!, 1, budget) : s;
};
const replaceSuffix: SubstituteFunc = (s, args, budget) => {
  if (args.length !== 2) return s;
  const [old, repl] = args as [string, string];
  if (!s.endsWith(old)) return s;
  budget.allow(s.length - old.length + repl.length);
  return s.slice(0, s.length - old.length) + repl;
};

/** []rune reversed and back (invalid bytes become U+FFFD, as in Go) */
function reverse(s: string): string {
  return runesOf(s)
    .reverse()
    .map((r) => encodeRune(r))
    .join('');
}

/** whether arg matches name; undefined for a malformed pattern (the trim functions then return s) */
function matches(arg: string, name: string, budget: StepBudget): boolean | undefined {
  try {
    return globMatch(arg, name, budget);
  } catch (e) {
    if (e instanceof BadPattern) return undefined;
    throw e;
  }
}

function trimShortest(s: string, arg: string, budget: StepBudget): string {
  let shortest: string | undefined;
  for (let i = 0; i < s.length; i++) {
    const prefix = s.slice(0, s.length - i);
    const match = matches(arg, prefix, budget);
    if (match === undefined) return s;
    if (match) shortest = prefix;
  }
  return shortest ? s.slice(shortest.length) : s;
}

function trimLongest(s: string, arg: string, budget: StepBudget): string {
  for (let i = 0; i < s.length; i++) {
    const prefix = s.slice(0, s.length - i);
    const match = matches(arg, prefix, budget);
    if (match === undefined) return s;
    if (match) return s.slice(prefix.length);
  }
  return s;
}

const trimShortestPrefix: SubstituteFunc = (s, args, budget) => (args.length ? trimShortest(s, args[0]!, budget) : s);
const trimLongestPrefix: SubstituteFunc = (s, args, budget) => (args.length ? trimLongest(s, args[0]!, budget) : s);
const trimShortestSuffix: SubstituteFunc = (s, args, budget) => (args.length ? reverse(trimShortest(reverse(s), reverse(args[0]!), budget)) : s);
const trimLongestSuffix: SubstituteFunc = (s, args, budget) => (args.length ? reverse(trimLongest(reverse(s), reverse(args[0]!), budget)) : s);

/** lookupFunc(name, args): the function of an operator; unknown operators are the default */
export function lookupFunc(name: string, args: number): SubstituteFunc {
  switch (name) {
    case ',':
      return toLowerFirst;
    case ',,':
      return toLower;
    case '^':
      return toUpperFirst;
    case '^^':
      return toUpper;
    case '#':
      return args === 0 ? toLen : trimShortestPrefix;
    case '##':
      return trimLongestPrefix;
    case '%':
      return trimShortestSuffix;
    case '%%':
      return trimLongestSuffix;
    case ':':
      return toSubstr;
    case '/#':
      return replacePrefix;
    case '/%':
      return replaceSuffix;
    case '/':
      return replaceFirst;
    case '//':
      return replaceAll;
    default:
      return toDefault;
  }
}
