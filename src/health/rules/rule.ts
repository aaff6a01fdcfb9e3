/**
 * A health rule: how to judge the objects of one kind (or several) whose readiness kstatus cannot
 * tell, as CEL expressions over `self` (the object) in the environment and under the cost limit
 * of `spec.healthChecks` (cel-expr.ts). The same form serves the shipped library (library/) and
 * the cluster-wide rules of `hoist run --health-rules` (config.ts).
 *
 * Every rule judges in the same order, so deletion and generation lag hold for each by
 * construction:
 *
 * 1. `metadata.deletionTimestamp` set: Terminating.
 * 2. generation lag: `observedGeneration` (an expression; default `self.status.observedGeneration`
 *    when the object has it) yields a generation below `metadata.generation`: InProgress. A rule
 *    that names its expression requires it: when it yields nothing (the status is not written
 *    yet) the object is InProgress too. A value that is not a number (an old controller's hash)
 *    is not compared.
 * 3. `failed` true: Failed. 4. `ready` true: Ready. 5. Otherwise InProgress.
 *
 * `message` (a string expression) says why when the verdict is not Ready. An expression that
 * cannot be evaluated (a field not written yet) counts as false; one refused for its cost on the
 * object makes the verdict InProgress, naming the rule. Pure.
 */
import type { KubeObject } from '../../kube/types.ts';
import { CelCompileError, compileCel, shown, sizesOf, type CelExpr } from '../cel-expr.ts';
import type { HealthVerdict } from '../readiness.ts';

/** a rule as written: in the library (library/*.ts) or in a --health-rules file */
export interface HealthRuleSpec {
  /** unique among its rules; a verdict names it as `builtin:<name>` or `cluster:<name>` */
  name: string;
  /** API group: exact, `*.example.com` for every group under example.com, `*` for any ('' is the core group) */
  group: string | readonly string[];
  /** kinds of those groups; omitted: every kind */
  kinds?: readonly string[];
  /** API versions; omitted: every version */
  versions?: readonly string[];
  /** CEL: the rule judges only objects for which this is true (evaluated after group, kind and version match) */
  when?: string;
  /** the library's form of `when`, read without CEL (for rules asked about objects of many groups) */
  selects?: (obj: KubeObject) => boolean;
  /** CEL: the generation the object's controller last observed (see the module comment) */
  observedGeneration?: string;
  /** CEL: the object is ready */
  ready: string;
  /** CEL: the object failed (its controller will not get it ready without a change) */
  failed?: string;
  /** CEL: why it is not ready, a string */
  message?: string;
  /** where the kind's status is documented (cited in docs/status.md) */
  source?: string;
}

export type RuleOrigin = 'builtin' | 'cluster';

export interface CompiledRule {
  /** `builtin:<name>` or `cluster:<name>`: what a verdict reports as its rule */
  readonly id: string;
  readonly spec: HealthRuleSpec;
  /** group, kind and version match (no CEL) */
  selectsKind(group: string, version: string, kind: string): boolean;
  /** the kind matches and `when` holds */
  selects(obj: KubeObject): boolean;
  judge(obj: KubeObject): HealthVerdict;
}

/** an expression of a rule that does not compile: which rule, which field, why */
export class RuleCompileError extends Error {
  constructor(
    readonly rule: string,
    readonly field: string,
    readonly refusal: CelCompileError['refusal'],
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** kstatus's verdict on an object being deleted */
export const TERMINATING: HealthVerdict = { readiness: 'Terminating', reason: 'Terminating', message: 'Resource scheduled for deletion' };
const READY: HealthVerdict = { readiness: 'Ready' };
/** a message read from the object is cut here: Healthy lists up to five objects */
const MAX_MESSAGE = 512;

export function groupVersionOf(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

export function groupMatches(pattern: string, group: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return group.endsWith(pattern.slice(1));
  return pattern === group;
}

/** whether a rule's group, kind and version match: no CEL, so a rule is compiled only for objects it may judge */
export function kindMatcher(spec: Pick<HealthRuleSpec, 'group' | 'kinds' | 'versions'>): (group: string, version: string, kind: string) => boolean {
  const groups = typeof spec.group === 'string' ? [spec.group] : spec.group;
  return (group, version, kind) =>
    groups.some((g) => groupMatches(g, group)) && (!spec.kinds || spec.kinds.includes(kind)) && (!spec.versions || spec.versions.includes(version));
}

/** Compiles every expression of a rule; throws RuleCompileError naming the rule and the field. */
export function compileRule(spec: HealthRuleSpec, origin: RuleOrigin): CompiledRule {
  const expr = (field: 'when' | 'observedGeneration' | 'ready' | 'failed' | 'message'): CelExpr | undefined => {
    const source = spec[field];
    if (source === undefined) return undefined;
    try {
      return compileCel(source);
    } catch (e) {
      const refusal = e instanceof CelCompileError ? e.refusal : 'syntax';
      throw new RuleCompileError(spec.name, field, refusal, `${field}: cel: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
  };
  const when = expr('when');
  const observed = expr('observedGeneration');
  const ready = expr('ready')!;
  const failed = expr('failed');
  const message = expr('message');
  const id = `${origin}:${spec.name}`;
  const selectsKind = kindMatcher(spec);

  /** an expression's value; `undefined` when it cannot be evaluated; a string saying why when refused */
  type Value = { value: unknown } | { missing: true } | { refused: string };
  const value = (e: CelExpr, obj: KubeObject): Value => {
    const r = e.run({ self: obj }, sizesOf(obj));
    if (r.ok) return { value: r.value };
    return r.refused ? { refused: `rule ${id}: cel ${shown(e.source)}: ${r.why}` } : { missing: true };
  };
  const refusedVerdict = (why: string): HealthVerdict => ({ readiness: 'InProgress', reason: 'RuleNotEvaluated', message: why });

  return {
    id,
    spec,
    selectsKind,
    selects(obj) {
      const { group, version } = groupVersionOf(obj.apiVersion);
      if (!selectsKind(group, version, obj.kind)) return false;
      if (spec.selects && !spec.selects(obj)) return false;
      if (!when) return true;
      const v = value(when, obj);
      return 'value' in v && v.value === true;
    },
    judge(obj) {
      if (obj.metadata.deletionTimestamp) return TERMINATING;
      /** the rule's message for this object, if it yields one */
      const said = (): string | undefined => {
        if (!message) return undefined;
        const v = value(message, obj);
        return 'value' in v && typeof v.value === 'string' && v.value.trim() !== '' ? cut(v.value.trim()) : undefined;
      };
      const generation = obj.metadata.generation;
      if (generation !== undefined) {
        let lag: string | undefined;
        if (observed) {
          const v = value(observed, obj);
          if ('refused' in v) return refusedVerdict(v.refused);
          if ('missing' in v) lag = `${obj.kind} generation ${generation} not observed yet`;
          else lag = lagMessage(obj.kind, generation, generationOf(v.value));
        } else {
          lag = lagMessage(obj.kind, generation, generationOf((obj.status as { observedGeneration?: unknown } | undefined)?.observedGeneration));
        }
        if (lag) {
          // the status of the previous generation often says why the new one is not through (a Flux retry)
          const why = said();
          return { readiness: 'InProgress', reason: 'LatestGenerationNotObserved', message: why ? `${lag} (${why})` : lag };
        }
      }
      if (failed) {
        const v = value(failed, obj);
        if ('refused' in v) return refusedVerdict(v.refused);
        if ('value' in v && v.value === true) return { readiness: 'Failed', message: said() ?? 'failed' };
      }
      const r = value(ready, obj);
      if ('refused' in r) return refusedVerdict(r.refused);
      if ('value' in r && r.value === true) return READY;
      return { readiness: 'InProgress', message: said() ?? 'not ready' };
    },
  };
}

/** kstatus's message for a generation its controller has not observed yet; undefined when it has (or when it cannot be told) */
function lagMessage(kind: string, generation: number, seen: number | undefined): string | undefined {
  return seen !== undefined && seen < generation ? `${kind} generation is ${generation}, but latest observed generation is ${seen}` : undefined;
}

/** a generation as a number: CEL ints (bigint), JSON numbers, and the decimal strings Argo Rollouts writes */
function generationOf(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && /^\d{1,15}$/.test(v)) return Number(v);
  return undefined;
}

function cut(s: string): string {
  return s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE - 3)}...` : s;
}
