/**
 * The regular expressions of CEL's `matches()` in health checks, compiled by RE2 (re2js, a port of
 * the engine the Kubernetes API server's CEL uses): matching is linear in the text times the size
 * of the compiled program, with no backtracking, so `^(a+)+$` over a long `aaa…b` costs as much as
 * any other pattern of its size. RE2 syntax, as in Kubernetes: no backreferences, no lookaround.
 *
 * Bounds: a pattern longer than MAX_REGEX_LENGTH characters, or one whose compiled program has
 * more than MAX_REGEX_PROGRAM instructions (`(.*){1000}` is 10 characters and 4002 instructions),
 * is refused. The cost of one match is the text's length times the program's instructions, the
 * most steps RE2's NFA simulation takes (cel-cost.ts adds it to the expression's estimate).
 *
 * Pure apart from a small cache of compiled patterns.
 */
import { createRequire } from 'node:module';
import type * as Re2Js from 're2js';
import { CelRegexCode } from './errors.ts';

/** the longest pattern `matches()` accepts, in characters */
export const MAX_REGEX_LENGTH = 512;
/** the largest compiled program `matches()` accepts, in RE2 instructions */
export const MAX_REGEX_PROGRAM = 5000;

// loaded by the first pattern: most health checks use no regular expression
const require = createRequire(import.meta.url);
const re2 = (): typeof Re2Js.RE2JS => (require('re2js') as typeof Re2Js).RE2JS;

export interface CompiledRegex {
  /** whether the pattern matches anywhere in `text` (CEL's `matches` is a search, not a full match) */
  test(text: string): boolean;
  /** instructions of the compiled program: one match costs at most text length × this */
  programSize: number;
}

/** a pattern RE2 refuses or one over a bound; `code` is a CEL error code (no values in it) */
export class RegexError extends Error {
  constructor(
    readonly code: CelRegexCode,
    message: string,
  ) {
    super(message);
  }
}

const CACHE_SIZE = 64;
const cache = new Map<string, CompiledRegex>();

/** Compiles `pattern` with RE2, or throws a RegexError naming the bound it breaks. */
export function compileRegex(pattern: string): CompiledRegex {
  const hit = cache.get(pattern);
  if (hit) return hit;
  if (pattern.length > MAX_REGEX_LENGTH) {
    throw new RegexError(
      CelRegexCode.RegularExpressionTooLarge,
      `regular expression is ${pattern.length} characters long, more than the limit of ${MAX_REGEX_LENGTH}`,
    );
  }
  let re: Re2Js.RE2JS;
  try {
    re = re2().compile(pattern);
  } catch (e) {
    throw new RegexError(CelRegexCode.InvalidRegularExpression, `invalid regular expression (RE2 syntax): ${(e as Error).message}`);
  }
  const programSize = programSizeOf(re);
  if (programSize > MAX_REGEX_PROGRAM) {
    throw new RegexError(
      CelRegexCode.RegularExpressionTooLarge,
      `regular expression compiles to ${programSize} instructions, more than the limit of ${MAX_REGEX_PROGRAM}`,
    );
  }
  const out: CompiledRegex = { test: (text) => re.matcher(text).find(), programSize };
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(pattern, out);
  return out;
}

/** re2js keeps the compiled program on its RE2 object (typed loosely); without it, the bound itself */
function programSizeOf(re: Re2Js.RE2JS): number {
  const prog = (re.re2Input as { prog?: { numInst?: () => unknown } }).prog;
  const n = typeof prog?.numInst === 'function' ? prog.numInst() : undefined;
  return typeof n === 'number' ? n : MAX_REGEX_PROGRAM;
}
