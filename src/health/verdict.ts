/**
 * The one readiness every reader uses (Healthy, phases, hooks, dependsOn, hoist tree): which rule
 * judges an object, and its verdict. Precedence, highest first:
 *
 * 1. a BundleDeployment's `spec.healthChecks` that select the object (decided by the caller, which
 *    times them: src/reconciler/routing/managed-objects.ts; `checkedVerdict` below);
 * 2. the cluster-wide rules (`hoist run --health-rules`), in file order;
 * 3. the shipped library (rules/library/);
 * 4. kstatus's readiness (readiness.ts).
 *
 * Every verdict names its rule: `builtin:<name>`, `cluster:<name>`, `kstatus`, or
 * `healthChecks:<check>,…`. Pure: reads only the object (and `now`), so verdicts stay driven by
 * watch events and cost no requests.
 */
import type { KubeObject } from '../kube/types.ts';
import { readinessOf, type HealthVerdict } from './readiness.ts';
import { TERMINATING } from './rules/rule.ts';
import { BUILTIN_RULES, type HealthRules } from './rules/rule-set.ts';

export type { HealthVerdict, Readiness } from './readiness.ts';

/** a verdict and the rule that gave it */
export type Verdict = HealthVerdict & {
  /** `builtin:<name>`, `cluster:<name>`, `kstatus` or `healthChecks:<check>,…` */
  rule: string;
};

export const KSTATUS_RULE = 'kstatus';

export interface VerdictOptions {
  /** ms since the epoch, for the time-dependent parts of kstatus's readiness (a Pod's scheduling window); default: now */
  now?: number;
  /** the rules in force (default: the shipped library alone) */
  rules?: HealthRules;
}

export function verdictOf(obj: KubeObject, opts: VerdictOptions = {}): Verdict {
  const rule = (opts.rules ?? BUILTIN_RULES).find(obj);
  if (rule) return { ...rule.judge(obj), rule: rule.id };
  return { ...readinessOf(obj, opts.now), rule: KSTATUS_RULE };
}

/**
 * The verdict of an object that health checks select: they alone decide (their own verdicts,
 * timed by the caller, are read beside this one), so this is Ready unless the object is being
 * deleted.
 */
export function checkedVerdict(obj: KubeObject, checks: readonly string[]): Verdict {
  const rule = `healthChecks:${checks.join(',')}`;
  if (obj.metadata.deletionTimestamp) return { ...TERMINATING, rule };
  return { readiness: 'Ready', rule };
}
