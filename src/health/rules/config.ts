/**
 * Cluster-wide health rules (`hoist run --health-rules <file>`; the chart mounts them from a
 * ConfigMap): a YAML list of rules in the form of rule.ts, read and compiled once when the
 * controller starts. A bad rule — a field of the wrong type, an unknown field, a duplicate name,
 * an expression that does not compile or is over the CEL cost limit of `spec.healthChecks` —
 * stops start-up with an error naming the file, the rule and the field: a rule that judged
 * nothing, or judged wrongly, would go unnoticed. Pure: the caller reads the file.
 *
 * ```yaml
 * - name: widgets                      # verdicts name it cluster:widgets
 *   group: example.com                 # or *.example.com, or a list
 *   kinds: [Widget]                    # optional: every kind of the group
 *   versions: [v1]                     # optional
 *   when: has(self.spec.replicas)      # optional CEL: judge only these
 *   observedGeneration: self.status.observedGeneration   # optional CEL
 *   ready: self.status.phase == "Running"
 *   failed: self.status.phase == "Failed"                 # optional CEL
 *   message: self.status.message                          # optional CEL (a string)
 *   source: https://example.com/docs/widgets              # optional
 * ```
 */
import { parse } from 'yaml';
import { HoistError } from '../../util/errors.ts';
import { HealthCode } from '../errors.ts';
import { compileRule, RuleCompileError, type CompiledRule, type HealthRuleSpec } from './rule.ts';

/**
 * The chart's ConfigMap of cluster-wide rules (charts/hoist, healthRules) carries this label and
 * holds the file under this key: `hoist tree` and `hoist events` find the controller's rules there.
 */
export const HEALTH_RULES_LABEL = 'hoist.rukpak.io/health-rules';
export const HEALTH_RULES_KEY = 'rules.yaml';

/** the largest rules file read */
export const MAX_RULES_BYTES = 1024 * 1024;
/** rules per file */
export const MAX_RULES = 500;
/** characters per expression, as the CRD caps a health check's */
export const MAX_EXPRESSION = 2048;

const EXPRESSIONS = ['when', 'observedGeneration', 'ready', 'failed', 'message'] as const;
const FIELDS = new Set<string>(['name', 'group', 'kinds', 'kind', 'versions', ...EXPRESSIONS, 'source']);
const NAME = /^[A-Za-z0-9]([A-Za-z0-9._:/-]{0,251}[A-Za-z0-9])?$/;

function refused(file: string, what: string, code: HealthCode = HealthCode.BadHealthRule, cause?: unknown): HoistError {
  return new HoistError(`--health-rules ${file}: ${what}`, { stage: 'spec', code, subject: `health rules ${file}`, terminal: true, cause });
}

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x !== '');

/** Parses and compiles the rules of one file; throws a terminal HoistError naming the rule and field. */
export function parseHealthRules(text: string, file: string): CompiledRule[] {
  if (Buffer.byteLength(text) > MAX_RULES_BYTES) throw refused(file, `the file is larger than ${MAX_RULES_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100 });
  } catch (e) {
    throw refused(file, `not YAML: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}`, undefined, e);
  }
  if (doc === null || doc === undefined) return [];
  if (!Array.isArray(doc)) throw refused(file, 'expected a list of rules');
  if (doc.length > MAX_RULES) throw refused(file, `${doc.length} rules, more than the limit of ${MAX_RULES}`);
  const names = new Set<string>();
  return doc.map((entry: unknown, i) => {
    const at = `rules[${i}]`;
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) throw refused(file, `${at}: expected a mapping`);
    const r = entry as Record<string, unknown>;
    const name = r.name;
    if (typeof name !== 'string' || !NAME.test(name)) throw refused(file, `${at}: name: required, letters, digits and . _ : / - (at most 253)`);
    const rule = `rule ${name} (${at})`;
    const bad = (what: string) => refused(file, `${rule}: ${what}`);
    if (names.has(name)) throw bad('name: another rule has this name');
    names.add(name);
    for (const k of Object.keys(r)) if (!FIELDS.has(k)) throw bad(`${k}: unknown field`);
    const group = r.group;
    if (!(typeof group === 'string' || strings(group))) throw bad('group: required, a string or a list of strings');
    if (r.kind !== undefined && r.kinds !== undefined) throw bad('kind and kinds: set one');
    const kinds = r.kind !== undefined ? [r.kind] : r.kinds;
    if (kinds !== undefined && !strings(kinds)) throw bad('kinds: a list of kinds');
    if (r.versions !== undefined && !strings(r.versions)) throw bad('versions: a list of versions');
    if (r.source !== undefined && typeof r.source !== 'string') throw bad('source: a string');
    if (r.ready === undefined) throw bad('ready: required');
    const spec: HealthRuleSpec = {
      name,
      group,
      ...(kinds ? { kinds } : {}),
      ...(r.versions ? { versions: r.versions as string[] } : {}),
      ready: '',
      ...(r.source ? { source: r.source } : {}),
    };
    for (const field of EXPRESSIONS) {
      const v = r[field];
      if (v === undefined) continue;
      if (typeof v !== 'string' || v.trim() === '') throw bad(`${field}: a CEL expression`);
      if (v.length > MAX_EXPRESSION) throw bad(`${field}: longer than ${MAX_EXPRESSION} characters`);
      spec[field] = v;
    }
    try {
      return compileRule(spec, 'cluster');
    } catch (e) {
      if (e instanceof RuleCompileError) throw refused(file, `${rule}: ${e.message}`, e.refusal === 'limit' ? HealthCode.HealthCheckLimit : undefined, e);
      throw e;
    }
  });
}
