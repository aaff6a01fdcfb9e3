/**
 * The health rules in force, in precedence order: the cluster-wide rules (hoist run
 * --health-rules, compiled when the controller starts), then the shipped library (library/).
 * `find` returns the first rule that selects an object. Library rules are compiled the first
 * time an object of their kind is judged: a controller that manages none of those kinds never
 * loads the CEL library (issue 10). Candidates are remembered per group/version/kind.
 */
import type { KubeObject } from '../../kube/types.ts';
import { LIBRARY } from './library/index.ts';
import { compileRule, groupVersionOf, kindMatcher, type CompiledRule, type HealthRuleSpec, type RuleOrigin } from './rule.ts';

interface Entry {
  spec: HealthRuleSpec;
  origin: RuleOrigin;
  selectsKind: (group: string, version: string, kind: string) => boolean;
  compiled?: CompiledRule;
}

export class HealthRules {
  private readonly entries: Entry[];
  /** group/version/kind → the entries whose kind matches, in precedence order */
  private readonly byKind = new Map<string, Entry[]>();

  /** `cluster`: compiled rules (config.ts), ahead of `library` */
  constructor(cluster: readonly CompiledRule[] = [], library: readonly HealthRuleSpec[] = LIBRARY) {
    this.entries = [
      ...cluster.map((c): Entry => ({ spec: c.spec, origin: 'cluster', selectsKind: c.selectsKind, compiled: c })),
      ...library.map((spec): Entry => ({ spec, origin: 'builtin', selectsKind: kindMatcher(spec) })),
    ];
  }

  /** the rule that judges the object: the first whose kind matches and whose `when` holds */
  find(obj: KubeObject): CompiledRule | undefined {
    const { group, version } = groupVersionOf(obj.apiVersion);
    const key = `${group}/${version}/${obj.kind}`;
    let candidates = this.byKind.get(key);
    if (!candidates) this.byKind.set(key, (candidates = this.entries.filter((e) => e.selectsKind(group, version, obj.kind))));
    for (const e of candidates) {
      if (e.spec.selects && !e.spec.selects(obj)) continue;
      const rule = (e.compiled ??= compileRule(e.spec, e.origin));
      if (rule.selects(obj)) return rule;
    }
    return undefined;
  }

  /** the names of the cluster-wide rules, in order */
  get clusterRules(): string[] {
    return this.entries.filter((e) => e.origin === 'cluster').map((e) => e.spec.name);
  }
}

/** the library alone: what judges objects when no cluster-wide rules are configured */
export const BUILTIN_RULES = new HealthRules();
