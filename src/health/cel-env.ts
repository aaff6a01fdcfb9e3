/**
 * The CEL environment of health checks: @marcbachmann/cel-js's standard one (undeclared
 * variables are `dyn`, as its global `parse`), except that `string.matches(string)` runs on RE2
 * (cel-regex.ts) instead of JavaScript's backtracking RegExp.
 *
 * cel-js refuses a second overload of an existing signature, so `matches` is replaced by a macro
 * (its documented extension point): a macro is found by name and arity at parse time, before any
 * overload, and it type-checks and evaluates the call itself. It is declared on a receiver type of
 * our own that no value has, so it does not collide with the library's `string.matches(string)`
 * (which then is never reached). A literal pattern is compiled when the expression is parsed: a
 * bad or oversized one is a parse error; a pattern read from the object is compiled (cached) when
 * the call is evaluated.
 */
import { createRequire } from 'node:module';
import type * as CelJs from '@marcbachmann/cel-js';
import { compileRegex, RegexError } from './cel-regex.ts';

// loaded (synchronously) by the first check that uses CEL: most bundles have none (issue 10)
const require = createRequire(import.meta.url);

type Node = CelJs.ASTNode;
interface CelType {
  kind?: string;
  name?: string;
}
interface Checker {
  check(node: Node, ctx: unknown): CelType;
  getType(name: string): CelType;
  createError(code: string, message: string, node: Node): Error;
}
interface Evaluator {
  run(node: Node, ctx: unknown): unknown;
  createError(code: string, message: string, node: Node): Error;
}
interface MatchesMacro {
  call: Node;
  receiver: Node;
  pattern: Node;
  typeCheck(chk: Checker, m: MatchesMacro, ctx: unknown): CelType;
  evaluate(ev: Evaluator, m: MatchesMacro, ctx: unknown): boolean;
}

const isStringish = (t: CelType) => t.kind === 'dyn' || t.name === 'string';

function matchesMacro({ ast, args, receiver }: { ast: Node; args: Node[]; receiver: Node }): MatchesMacro {
  const pattern = args[0]!;
  if (pattern.op === 'value' && typeof pattern.args === 'string') {
    try {
      compileRegex(pattern.args);
    } catch (e) {
      if (e instanceof RegexError) throw new Error(`matches(): ${e.message}`, { cause: e });
      throw e;
    }
  }
  return {
    call: ast,
    receiver,
    pattern,
    typeCheck(chk, m, ctx) {
      const r = chk.check(m.receiver, ctx);
      const p = chk.check(m.pattern, ctx);
      if (!isStringish(r) || !isStringish(p)) {
        throw chk.createError('no_matching_overload', `found no matching overload for '${r.name ?? '?'}.matches(${p.name ?? '?'})'`, m.call);
      }
      return chk.getType('bool');
    },
    evaluate(ev, m, ctx) {
      const text = ev.run(m.receiver, ctx);
      const pat = ev.run(m.pattern, ctx);
      if (typeof text !== 'string' || typeof pat !== 'string')
        throw ev.createError('no_such_overload', 'matches() takes a string and a string pattern', m.call);
      try {
        return compileRegex(pat).test(text);
      } catch (e) {
        if (e instanceof RegexError) throw ev.createError(e.code, e.message, m.call);
        throw e;
      }
    },
  };
}

/** the macro's receiver type: a type of no value, so the declaration does not overlap `string.matches` */
const NO_VALUE_TYPE = 'hoist.NoValue';
class NoValue {}

let env: CelJs.Environment | undefined;

function environment(): CelJs.Environment {
  if (env) return env;
  const { Environment } = require('@marcbachmann/cel-js') as typeof CelJs;
  env = new Environment({ unlistedVariablesAreDyn: true })
    .registerType(NO_VALUE_TYPE, NoValue)
    .registerFunction(`${NO_VALUE_TYPE}.matches(ast): bool`, matchesMacro);
  return env;
}

/** parses (and, for literal regular expressions, compiles) a health check's CEL expression */
export function parseCel(source: string): ReturnType<CelJs.Environment['parse']> {
  return environment().parse(source);
}
