/**
 * `spec.dependsOn[].readyExpr`: a CEL expression over `dep` (the dependency BundleDeployment) and
 * `self` (the dependent), as Flux's readyExpr. Bounded like the cel health checks
 * (src/health/cel-cost.ts): an expression whose estimated cost with assumed sizes is over the
 * limit is refused when it is compiled (a terminal spec error), and before each evaluation the
 * estimate with the two objects' own sizes decides whether it runs at all. Messages name the
 * expression, never a value read from either object. Compiled expressions are kept by source.
 * `matches()` runs on RE2, as in the health checks (src/health/cel-env.ts).
 */
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import { parseCel } from '../health/cel-env.ts';
import { ASSUMED_DATA_SIZES, CEL_COST_LIMIT, estimateCost, MAX_DATA_DEPTH, measureData } from '../health/cel-cost.ts';
import { celErrorCode } from '../health/probes.ts';
import { HoistError } from '../util/errors.ts';
import { ReconcileCode, reconcileError } from './errors.ts';

// the health checks' CEL environment: matches() on RE2, cel-js loaded by the first expression (issue 10)

export interface ReadyExpr {
  readonly source: string;
  /** whether the expression holds for dep and self; a message when it does not (or could not run) */
  evaluate(dep: BundleDeployment, self: BundleDeployment): { ok: boolean; message?: string };
}

const compiled = new Map<string, ReadyExpr | HoistError>();
/** distinct expressions kept compiled (oldest dropped first) */
const MAX_COMPILED = 256;

/** the expression compiled, or a terminal spec error naming `dependsOn[<name>].readyExpr` */
export function compileReadyExpr(name: string, source: string): ReadyExpr {
  let c = compiled.get(source);
  if (c === undefined) {
    c = compile(source);
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    compiled.set(source, c);
  }
  if (c instanceof HoistError)
    throw new HoistError(`dependsOn[${name}].readyExpr: ${c.message}`, { stage: 'spec', code: c.code, subject: `dependsOn ${name}`, terminal: true });
  return c;
}

function compile(source: string): ReadyExpr | HoistError {
  let expr: ReturnType<typeof parseCel>;
  try {
    expr = parseCel(source);
  } catch (e) {
    return reconcileError(`cel: ${firstLine(e)}`, ReconcileCode.BadReadyExpr, { stage: 'spec', terminal: true });
  }
  const estimate = estimateCost(expr.ast, ASSUMED_DATA_SIZES);
  if (estimate > CEL_COST_LIMIT) {
    return reconcileError(
      `cel: estimated cost ${estimate.toPrecision(3)} exceeds the limit of ${CEL_COST_LIMIT} (comprehensions multiply; lists read from dep and self are assumed to hold ${ASSUMED_DATA_SIZES.list} elements)`,
      ReconcileCode.ReadyExprLimit,
      { stage: 'spec', terminal: true },
    );
  }
  const shown = source.length > 80 ? `${source.slice(0, 77)}...` : source;
  return {
    source,
    evaluate(dep, self) {
      const a = measureData(dep);
      const b = measureData(self);
      if (!a || !b) return { ok: false, message: `readyExpr ${shown}: not evaluated: an object nests deeper than ${MAX_DATA_DEPTH} levels` };
      const cost = estimateCost(expr.ast, { list: Math.max(a.list, b.list), str: Math.max(a.str, b.str) });
      if (cost > CEL_COST_LIMIT)
        return {
          ok: false,
          message: `readyExpr ${shown}: not evaluated: its cost on these objects (${cost.toPrecision(3)}) exceeds the limit of ${CEL_COST_LIMIT}`,
        };
      try {
        const v = expr({ dep, self });
        if (v === true) return { ok: true };
        return { ok: false, message: v === false ? `readyExpr ${shown} is false` : `readyExpr ${shown} does not yield a bool` };
      } catch (e) {
        // a field the dependency has not written yet is not ready, not an error; only the library's code is kept
        return { ok: false, message: `readyExpr ${shown}: ${celErrorCode(e)}` };
      }
    },
  };
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 200);
}
