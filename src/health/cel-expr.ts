/**
 * One CEL expression of the health environment (cel-env.ts), compiled once and bounded by the
 * cost estimate (cel-cost.ts): what `spec.healthChecks`' `cel` and the health rules (rules/)
 * share. Compiling parses the expression and refuses it when its estimate with assumed sizes is
 * over CEL_COST_LIMIT; evaluating first estimates again with the sizes measured on the data and
 * does not start over the limit. Pure; `run` never throws.
 */
import { parseCel } from './cel-env.ts';
import { ASSUMED_DATA_SIZES, CEL_COST_LIMIT, estimateCost, MAX_DATA_DEPTH, measureData, type DataSizes } from './cel-cost.ts';

/** why an expression was refused: it does not parse, or it is over the cost limit */
export type CelRefusal = 'syntax' | 'limit';

export class CelCompileError extends Error {
  constructor(
    readonly refusal: CelRefusal,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A value, or why there is none: `refused`, not evaluated (over the cost limit on this object, or
 * nested too deep); otherwise the evaluation failed, and `why` is the CEL library's error code (a
 * field the object has not written yet: `no such key`).
 */
export type CelRun = { ok: true; value: unknown } | { ok: false; why: string; refused: boolean };

export interface CelExpr {
  readonly source: string;
  /** evaluates over `vars`, whose data has the given sizes (sizesOf); never throws */
  run(vars: Record<string, unknown>, sizes: DataSizes | undefined): CelRun;
}

/** the expression as messages show it: at most 80 characters */
export function shown(source: string): string {
  return source.length > 80 ? `${source.slice(0, 77)}...` : source;
}

/**
 * Compiles an expression; throws CelCompileError (its message without a `cel:` prefix) when it
 * does not parse or its estimated cost exceeds CEL_COST_LIMIT. `over` names what its lists are
 * read from, for the limit's message.
 */
export function compileCel(source: string, over = 'the object'): CelExpr {
  let expr: ReturnType<typeof parseCel>;
  try {
    expr = parseCel(source);
  } catch (e) {
    throw new CelCompileError('syntax', firstLine(e), { cause: e });
  }
  const estimate = estimateCost(expr.ast, ASSUMED_DATA_SIZES);
  if (estimate > CEL_COST_LIMIT) {
    throw new CelCompileError(
      'limit',
      `estimated cost ${estimate.toPrecision(3)} exceeds the limit of ${CEL_COST_LIMIT} (comprehensions multiply; lists read from ${over} are assumed to hold ${ASSUMED_DATA_SIZES.list} elements)`,
    );
  }
  return {
    source,
    run(vars, sizes) {
      if (!sizes) return { ok: false, why: `not evaluated: ${TOO_DEEP}`, refused: true };
      const cost = estimateCost(expr.ast, sizes);
      if (cost > CEL_COST_LIMIT)
        return { ok: false, why: `not evaluated: its cost on this object (${cost.toPrecision(3)}) exceeds the limit of ${CEL_COST_LIMIT}`, refused: true };
      try {
        return { ok: true, value: expr(vars) };
      } catch (e) {
        // a field the object does not have yet (status not written) is not an error of the
        // expression; the library's message may quote values of the object, so only its code is kept
        return { ok: false, why: celErrorCode(e), refused: false };
      }
    },
  };
}

export const TOO_DEEP = `the object nests deeper than ${MAX_DATA_DEPTH} levels (the limit for jsonPath and cel checks)`;

/** the sizes the cost estimate reads of an object, measured once per object and kept with it */
const measured = new WeakMap<object, DataSizes | null>();
export function sizesOf(obj: object): DataSizes | undefined {
  let m = measured.get(obj);
  if (m === undefined) measured.set(obj, (m = measureData(obj) ?? null));
  return m ?? undefined;
}

/** the CEL library's error code ("no such key"), never its message, which may quote values of the object */
export function celErrorCode(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[a-z_]+$/.test(code) ? code.replaceAll('_', ' ') : 'evaluation error';
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!.trim();
}
