/**
 * `spec.healthChecks` (DESIGN §6): which installed objects a check selects and whether an object
 * passes it. Pure: compiling a check parses its expression once (a bad expression is a terminal
 * spec error naming the check), evaluating it reads only the object it is given. CEL comes from
 * @marcbachmann/cel-js with `matches()` on RE2 (cel-env.ts), JSONPath from jsonpath-plus (its
 * safe evaluator; no `eval`).
 */
import {
  DEFAULT_HEALTH_CHECK_FAILURE_THRESHOLD,
  DEFAULT_HEALTH_CHECK_INITIAL_DELAY_SECONDS,
  DEFAULT_HEALTH_CHECK_PERIOD_SECONDS,
} from '../../api/v1alpha2/defaults.ts';
import { createRequire } from 'node:module';
import type * as JsonPathPlus from 'jsonpath-plus';
import type { HealthCheck } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../kube/types.ts';
import { CelCompileError, compileCel, shown, sizesOf, TOO_DEEP, type CelExpr } from './cel-expr.ts';
import { HealthCode, healthCheckError } from './errors.ts';

// Loaded (synchronously) by the first probe that uses them: most bundles have no custom checks,
// and the two cost ~8 MiB of resident memory in every controller (issue 10).
const require = createRequire(import.meta.url);
const JSONPath: typeof JsonPathPlus.JSONPath = ((opts: Parameters<typeof JsonPathPlus.JSONPath>[0]) =>
  (require('jsonpath-plus') as typeof JsonPathPlus).JSONPath(opts)) as typeof JsonPathPlus.JSONPath;

export interface ProbeResult {
  ok: boolean;
  /** why it failed, for Healthy's message */
  message?: string;
}

export interface CompiledCheck {
  name: string;
  match: HealthCheck['match'];
  periodMs: number;
  failureThreshold: number;
  initialDelayMs: number;
  test(obj: KubeObject): ProbeResult;
}

// the CRD's defaults, repeated for specs that were not defaulted by an API server (hoist render, tests)

/** a jsonPath check yields at most this many values; more fail the check */
export const JSONPATH_MAX_RESULTS = 1000;

/** kubectl's `{.status.phase}` and `.status.phase` as jsonpath-plus's `$.status.phase` */
export function normalizeJsonPath(path: string): string {
  let p = path.trim();
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1).trim();
  if (p.startsWith('$')) return p;
  return p.startsWith('.') || p.startsWith('[') ? `$${p}` : `$.${p}`;
}

// Status hygiene: every message below names the check's own terms (condition type, path, wanted
// value, expression) and never a value read from the object — Healthy's message is readable by
// anyone who may read the BundleDeployment, while the objects are read with the controller's rights.

/** thrown by the result callback to stop jsonpath-plus at the cap */
class TooManyResults extends Error {}

function compileTest(check: HealthCheck): (obj: KubeObject) => ProbeResult {
  if (check.condition) {
    const { type, status } = check.condition;
    return (obj) => {
      const conds = (obj.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions;
      const c = Array.isArray(conds) ? conds.find((x) => x.type === type) : undefined;
      if (!c) return { ok: false, message: `condition ${type} not reported` };
      if (c.status === status) return { ok: true };
      return { ok: false, message: `condition ${type} is not ${status}` };
    };
  }
  if (check.jsonPath) {
    const written = check.jsonPath.path;
    const path = normalizeJsonPath(written);
    const want = check.jsonPath.value;
    // each further `..` walks every subtree again for each match of the one before (`$..*..*..*`: 56 s, 2.9 GB)
    if ((path.match(/\.\./g) ?? []).length > 1) {
      throw healthCheckError(check.name, `jsonPath ${written}: more than one recursive descent (..) is not allowed`, HealthCode.HealthCheckLimit);
    }
    try {
      JSONPath({ path, json: {}, eval: 'safe' });
    } catch (e) {
      throw healthCheckError(check.name, `jsonPath ${written}: ${firstLine(e)}`, undefined, e);
    }
    return (obj) => {
      if (!sizesOf(obj)) return { ok: false, message: `jsonPath ${written}: not evaluated: ${TOO_DEEP}` };
      let found = false;
      let count = 0;
      try {
        JSONPath({
          path,
          json: obj as object,
          eval: 'safe',
          wrap: true,
          resultType: 'value',
          callback: (v: unknown) => {
            // kubectl prints scalars as their text; a match is any yielded value equal to the wanted text
            if (!found && (typeof v === 'string' ? v : JSON.stringify(v)) === want) found = true;
            if (++count > JSONPATH_MAX_RESULTS) throw new TooManyResults();
          },
        });
      } catch (e) {
        if (e instanceof TooManyResults) return { ok: false, message: `jsonPath ${written}: yields more than ${JSONPATH_MAX_RESULTS} values (the limit)` };
        return { ok: false, message: `jsonPath ${written}: cannot be evaluated on this object` };
      }
      return found ? { ok: true } : { ok: false, message: `${written} does not yield ${want}` };
    };
  }
  if (check.cel) {
    const source = check.cel;
    let expr: CelExpr;
    try {
      expr = compileCel(source);
    } catch (e) {
      const limit = e instanceof CelCompileError && e.refusal === 'limit';
      throw healthCheckError(check.name, `cel: ${e instanceof Error ? e.message : String(e)}`, limit ? HealthCode.HealthCheckLimit : undefined, e);
    }
    return (obj) => {
      const r = expr.run({ self: obj }, sizesOf(obj));
      if (!r.ok) return { ok: false, message: `cel ${shown(source)}: ${r.why}` };
      if (r.value === true) return { ok: true };
      if (r.value === false) return { ok: false, message: `cel ${shown(source)} is false` };
      return { ok: false, message: `cel ${shown(source)} does not yield a bool` };
    };
  }
  throw healthCheckError(check.name, 'set exactly one of condition, jsonPath or cel');
}

export { celErrorCode } from './cel-expr.ts';

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!.trim();
}

/** Compiles a BD's checks; throws a terminal HoistError for the first bad one. */
export function compileHealthChecks(checks: readonly HealthCheck[] | undefined): CompiledCheck[] {
  return (checks ?? []).map((c) => ({
    name: c.name,
    match: c.match,
    periodMs: (c.periodSeconds ?? DEFAULT_HEALTH_CHECK_PERIOD_SECONDS) * 1000,
    failureThreshold: c.failureThreshold ?? DEFAULT_HEALTH_CHECK_FAILURE_THRESHOLD,
    initialDelayMs: (c.initialDelaySeconds ?? DEFAULT_HEALTH_CHECK_INITIAL_DELAY_SECONDS) * 1000,
    test: compileTest(c),
  }));
}

/** whether a check selects an object: every field the match sets must agree (labels: all of them) */
export function selects(
  match: HealthCheck['match'],
  obj: Pick<KubeObject, 'apiVersion' | 'kind'> & { metadata: { name: string; namespace?: string; labels?: Record<string, string> } },
): boolean {
  const group = obj.apiVersion.includes('/') ? obj.apiVersion.slice(0, obj.apiVersion.indexOf('/')) : '';
  if (match.group !== undefined && match.group !== group) return false;
  if (match.kind !== undefined && match.kind !== obj.kind) return false;
  if (match.name !== undefined && match.name !== obj.metadata.name) return false;
  if (match.namespace !== undefined && match.namespace !== (obj.metadata.namespace ?? '')) return false;
  for (const [k, v] of Object.entries(match.selector ?? {})) if (obj.metadata.labels?.[k] !== v) return false;
  return true;
}

/** the results of every check that selects the object, by check name */
export function runChecks(checks: readonly CompiledCheck[], obj: KubeObject): Record<string, ProbeResult> | undefined {
  let out: Record<string, ProbeResult> | undefined;
  for (const c of checks) if (selects(c.match, obj)) (out ??= {})[c.name] = c.test(obj);
  return out;
}
