/**
 * `spec.healthChecks` (DESIGN §6): which installed objects a check selects and whether an object
 * passes it. Pure: compiling a check parses its expression once (a bad expression is a terminal
 * spec error naming the check), evaluating it reads only the object it is given. CEL comes from
 * @marcbachmann/cel-js, JSONPath from jsonpath-plus (its safe evaluator; no `eval`).
 */
import { DEFAULT_HEALTH_CHECK_FAILURE_THRESHOLD, DEFAULT_HEALTH_CHECK_INITIAL_DELAY_SECONDS, DEFAULT_HEALTH_CHECK_PERIOD_SECONDS } from '../../api/v1alpha2/defaults.ts';
import { createRequire } from 'node:module';
import type * as CelJs from '@marcbachmann/cel-js';
import type * as JsonPathPlus from 'jsonpath-plus';
import type { HealthCheck } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../kube/types.ts';
import { HoistError } from '../util/errors.ts';

// Loaded (synchronously) by the first probe that uses them: most bundles have no custom checks,
// and the two cost ~8 MiB of resident memory in every controller (issue 10).
const require = createRequire(import.meta.url);
const parseCel: typeof CelJs.parse = (source) => (require('@marcbachmann/cel-js') as typeof CelJs).parse(source);
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

function specError(check: string, what: string, cause?: unknown): HoistError {
  return new HoistError(`healthChecks[${check}]: ${what}`, { stage: 'spec', reason: 'Unhealthy', code: 'bad-health-check', subject: `health check ${check}`, terminal: true, cause });
}

/** kubectl's `{.status.phase}` and `.status.phase` as jsonpath-plus's `$.status.phase` */
export function normalizeJsonPath(path: string): string {
  let p = path.trim();
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1).trim();
  if (p.startsWith('$')) return p;
  return p.startsWith('.') || p.startsWith('[') ? `$${p}` : `$.${p}`;
}

function show(v: unknown): string {
  if (v === undefined) return '<none>';
  const s = typeof v === 'string' ? v : typeof v === 'bigint' ? v.toString() : JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!.trim();
}

function compileTest(check: HealthCheck): (obj: KubeObject) => ProbeResult {
  if (check.condition) {
    const { type, status } = check.condition;
    return (obj) => {
      const conds = (obj.status as { conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }> } | undefined)?.conditions;
      const c = Array.isArray(conds) ? conds.find((x) => x.type === type) : undefined;
      if (!c) return { ok: false, message: `condition ${type} not reported` };
      if (c.status === status) return { ok: true };
      return { ok: false, message: `condition ${type} is ${c.status}${c.reason ? ` (${c.reason}${c.message ? `: ${c.message}` : ''})` : ''}, want ${status}` };
    };
  }
  if (check.jsonPath) {
    const path = normalizeJsonPath(check.jsonPath.path);
    const want = check.jsonPath.value;
    try {
      JSONPath({ path, json: {}, eval: 'safe' });
    } catch (e) {
      throw specError(check.name, `jsonPath ${check.jsonPath.path}: ${firstLine(e)}`, e);
    }
    return (obj) => {
      let got: unknown[];
      try {
        got = JSONPath({ path, json: obj as object, eval: 'safe', wrap: true }) as unknown[];
      } catch (e) {
        return { ok: false, message: `jsonPath ${check.jsonPath!.path}: ${firstLine(e)}` };
      }
      // kubectl prints scalars as their text; a match is any yielded value equal to the wanted text
      if (got.some((v) => (typeof v === 'string' ? v : JSON.stringify(v)) === want)) return { ok: true };
      return { ok: false, message: `${check.jsonPath!.path} is ${show(got.length === 1 ? got[0] : got.length ? got : undefined)}, want ${want}` };
    };
  }
  if (check.cel) {
    const source = check.cel;
    let expr: ReturnType<typeof parseCel>;
    try {
      expr = parseCel(source);
    } catch (e) {
      throw specError(check.name, `cel: ${firstLine(e)}`, e);
    }
    return (obj) => {
      try {
        const v = expr({ self: obj });
        if (v === true) return { ok: true };
        if (v === false) return { ok: false, message: `cel ${show(source)} is false` };
        return { ok: false, message: `cel ${show(source)} yields ${show(v)}, not a bool` };
      } catch (e) {
        // a field the object does not have yet (status not written) fails the check, it is not an error
        return { ok: false, message: `cel ${show(source)}: ${firstLine(e)}` };
      }
    };
  }
  throw specError(check.name, 'set exactly one of condition, jsonPath or cel');
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
export function selects(match: HealthCheck['match'], obj: Pick<KubeObject, 'apiVersion' | 'kind'> & { metadata: { name: string; namespace?: string; labels?: Record<string, string> } }): boolean {
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
