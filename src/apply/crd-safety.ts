/**
 * CRD upgrade safety: which changes from an installed CustomResourceDefinition to the one a new
 * revision brings would break custom resources that already exist or the clients that use them.
 * The rule set and names follow kubernetes-sigs/crdify as OLM v1 configures it (crdupgradesafety
 * preflight: description changes allowed, enum additions allowed), plus the removal of a served
 * version, which breaks every client still using it:
 *
 * | rule | refused |
 * |---|---|
 * | scope | `spec.scope` changes |
 * | storedVersionRemoval | a version in the live CRD's `status.storedVersions` is no longer in `spec.versions` |
 * | servedVersionRemoval | a version served before is gone or no longer served |
 * | existingFieldRemoval | a property of a version present in both disappears |
 * | type | a property's `type` changes |
 * | required | a property gains `required` entries |
 * | enum | a property gains an enum where it had none, or loses allowed values (adding values is fine) |
 * | maximum, maxLength, maxItems, maxProperties | added where there was none, or lowered |
 * | minimum, minLength, minItems, minProperties | added where there was none, or raised |
 *
 * Compatible, and let through: new optional properties, new versions, enum values added,
 * description changes, and a typed schema replaced by an untyped one with
 * `x-kubernetes-preserve-unknown-fields: true` (its former children are then kept, not pruned;
 * crdify refuses this as a type change and field removal). Not checked (as in crdify's defaults these would be refused; here they
 * pass): `pattern`, `default`, `nullable`, `x-kubernetes-validations` (CEL) and format changes,
 * and schema differences between versions of the new CRD.
 *
 * Properties are compared per version name at the same path, written as crdify writes them:
 * `^.spec.replicas`, `^.spec.ports.items.port`, `^.spec.labels.additionalProperties`,
 * `^.spec.x.anyOf[0]`. Pure.
 */
import type { KubeObject } from '../kube/types.ts';

export type CrdSafetyRule =
  | 'scope'
  | 'storedVersionRemoval'
  | 'servedVersionRemoval'
  | 'existingFieldRemoval'
  | 'type'
  | 'required'
  | 'enum'
  | 'maximum'
  | 'maxLength'
  | 'maxItems'
  | 'maxProperties'
  | 'minimum'
  | 'minLength'
  | 'minItems'
  | 'minProperties';

export interface CrdSafetyProblem {
  crd: string;
  /** the CRD version the problem is in; absent for CRD-wide rules (scope) */
  version?: string;
  /** the property, e.g. ^.spec.replicas */
  path?: string;
  rule: CrdSafetyRule;
  detail: string;
}

type Schema = Record<string, unknown>;
interface Version {
  name: string;
  served?: boolean;
  schema?: { openAPIV3Schema?: Schema };
}
interface CrdShape {
  spec?: { scope?: string; versions?: Version[] };
  status?: { storedVersions?: string[] };
}

function isSchema(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** every schema node of a version by crdify's simple path */
function flatten(schema: unknown, path = '^', out = new Map<string, Schema>()): Map<string, Schema> {
  if (!isSchema(schema)) return out;
  out.set(path, schema);
  if (isSchema(schema['items'])) flatten(schema['items'], `${path}.items`, out);
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    const list = schema[key];
    if (Array.isArray(list)) list.forEach((s, i) => flatten(s, `${path}.${key}[${i}]`, out));
  }
  if (isSchema(schema['not'])) flatten(schema['not'], `${path}.not`, out);
  if (isSchema(schema['properties'])) for (const [name, s] of Object.entries(schema['properties'])) flatten(s, `${path}.${name}`, out);
  if (isSchema(schema['additionalProperties'])) flatten(schema['additionalProperties'], `${path}.additionalProperties`, out);
  return out;
}

const MAX_RULES = ['maximum', 'maxLength', 'maxItems', 'maxProperties'] as const;
const MIN_RULES = ['minimum', 'minLength', 'minItems', 'minProperties'] as const;

function num(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

const show = (values: readonly unknown[]): string => values.map((v) => JSON.stringify(v)).join(', ');

const preservesUnknown = (s: Schema | undefined): boolean => s?.['x-kubernetes-preserve-unknown-fields'] === true;

/** the property rules for one path present in both versions */
function propertyProblems(a: Schema, b: Schema): Array<{ rule: CrdSafetyRule; detail: string }> {
  const out: Array<{ rule: CrdSafetyRule; detail: string }> = [];
  // an untyped node that keeps unknown fields accepts whatever the old type did: a widening
  const widened = b['type'] === undefined && preservesUnknown(b);
  if ((a['type'] ?? '') !== (b['type'] ?? '') && !widened) {
    out.push({ rule: 'type', detail: `type changed ${JSON.stringify(a['type'] ?? '')} -> ${JSON.stringify(b['type'] ?? '')}` });
  }

  const oldRequired = new Set(Array.isArray(a['required']) ? (a['required'] as unknown[]) : []);
  const added = (Array.isArray(b['required']) ? (b['required'] as unknown[]) : []).filter((r) => !oldRequired.has(r));
  if (added.length > 0) out.push({ rule: 'required', detail: `new required fields ${show(added)}` });

  const oldEnum = Array.isArray(a['enum']) ? (a['enum'] as unknown[]).map((v) => JSON.stringify(v)) : [];
  const newEnum = Array.isArray(b['enum']) ? (b['enum'] as unknown[]).map((v) => JSON.stringify(v)) : [];
  if (oldEnum.length === 0 && newEnum.length > 0) out.push({ rule: 'enum', detail: `enum constraint added where there was none: ${newEnum.join(', ')}` });
  else {
    const removed = oldEnum.filter((v) => !newEnum.includes(v));
    if (newEnum.length > 0 && removed.length > 0) out.push({ rule: 'enum', detail: `allowed enum values removed: ${removed.join(', ')}` });
  }

  for (const rule of MAX_RULES) {
    const before = num(a[rule]);
    const after = num(b[rule]);
    if (before === undefined && after !== undefined) out.push({ rule, detail: `${rule} ${after} added where there was none` });
    else if (before !== undefined && after !== undefined && after < before) out.push({ rule, detail: `${rule} lowered ${before} -> ${after}` });
  }
  for (const rule of MIN_RULES) {
    const before = num(a[rule]);
    const after = num(b[rule]);
    if (before === undefined && after !== undefined) out.push({ rule, detail: `${rule} ${after} added where there was none` });
    else if (before !== undefined && after !== undefined && after > before) out.push({ rule, detail: `${rule} raised ${before} -> ${after}` });
  }
  return out;
}

function parentOf(path: string): string {
  return path.slice(0, path.lastIndexOf('.'));
}

/**
 * What in `next` would break resources of `existing` (the CRD as the API server has it, with
 * status.storedVersions). Empty: the upgrade is safe by these rules.
 */
export function crdUpgradeProblems(existing: KubeObject, next: KubeObject): CrdSafetyProblem[] {
  const crd = next.metadata.name;
  const a = existing as unknown as CrdShape;
  const b = next as unknown as CrdShape;
  const problems: CrdSafetyProblem[] = [];
  const oldScope = a.spec?.scope ?? '';
  const newScope = b.spec?.scope ?? '';
  if (oldScope !== newScope) problems.push({ crd, rule: 'scope', detail: `scope changed ${JSON.stringify(oldScope)} -> ${JSON.stringify(newScope)}` });

  const oldVersions = a.spec?.versions ?? [];
  const newVersions = new Map((b.spec?.versions ?? []).map((v) => [v.name, v]));
  for (const stored of a.status?.storedVersions ?? []) {
    if (!newVersions.has(stored)) {
      problems.push({
        crd,
        version: stored,
        rule: 'storedVersionRemoval',
        detail: `stored version ${stored} removed: objects stored as ${stored} could no longer be read`,
      });
    }
  }
  for (const old of oldVersions) {
    const now = newVersions.get(old.name);
    if (old.served !== false && (now === undefined || now.served === false)) {
      // a removed stored version is reported once, by the stronger rule
      if (now === undefined && a.status?.storedVersions?.includes(old.name)) continue;
      problems.push({
        crd,
        version: old.name,
        rule: 'servedVersionRemoval',
        detail: `served version ${old.name} ${now ? 'no longer served' : 'removed'}: clients using it would break`,
      });
    }
  }

  for (const old of oldVersions) {
    const now = newVersions.get(old.name);
    if (now === undefined) continue;
    const before = flatten(old.schema?.openAPIV3Schema);
    const after = flatten(now.schema?.openAPIV3Schema);
    for (const [path, schema] of before) {
      const counterpart = after.get(path);
      if (counterpart === undefined) {
        // report the topmost removed property only, not each of its children; under a node that
        // keeps unknown fields nothing is pruned, so the data stays
        const parent = after.get(parentOf(path));
        if (path === '^' || (parent !== undefined && !preservesUnknown(parent))) {
          problems.push({ crd, version: old.name, path, rule: 'existingFieldRemoval', detail: 'removed field' });
        }
        continue;
      }
      for (const p of propertyProblems(schema, counterpart)) problems.push({ crd, version: old.name, path, ...p });
    }
  }
  return problems;
}

/** "CRD widgets.example.com, version v1, ^.spec: required: new required fields "size"" */
export function describeCrdProblem(p: CrdSafetyProblem): string {
  return [`CRD ${p.crd}`, p.version === undefined ? undefined : `version ${p.version}`, p.path].filter(Boolean).join(', ') + `: ${p.rule}: ${p.detail}`;
}

/** the refusal of crdSafety Enforce, as the applier and `hoist diff` word it */
export function describeCrdRefusal(problems: readonly CrdSafetyProblem[]): string {
  return `${problems.map(describeCrdProblem).join('; ')} (upgrade.crdSafety: None applies it anyway)`;
}
