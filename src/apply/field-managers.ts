/**
 * Taking over another field manager's fields. When Hoist adopts an object created by
 * `kubectl apply` (client-side), `kubectl edit`, Helm or another lineage, those managers still
 * own fields; a field later dropped from the bundle would then stay on the object forever.
 * Merging their field sets into Hoist's own Apply entry makes Hoist the sole owner, so the next
 * apply removes whatever the bundle no longer sets. Status-subresource entries are left alone.
 * Also what such a takeover does to a server-side dry-run's answer (`afterTakeOver`), so `hoist
 * diff` shows the fields an apply would remove. All functions here are pure.
 */
import type { KubeObject } from '../kube/types.ts';
import { elementKey, splitFields, type FieldSet } from './drift-ignore.ts';

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: 'Apply' | 'Update';
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: Record<string, unknown>;
  subresource?: string;
}

/** the union of two field sets (FieldsV1), b's leaves over a's; pure */
export function mergeFields(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] = cur && typeof cur === 'object' && v && typeof v === 'object' ? mergeFields(cur as Record<string, unknown>, v as Record<string, unknown>) : v;
  }
  return out;
}

/**
 * The interactive managers whose fields every apply takes over (after fluxcd/pkg/ssa): a field a
 * person set by hand is reverted, a field another controller (HPA, cert-manager,
 * kube-controller-manager) writes is not. `hoist run --override-manager` adds names.
 */
export const DEFAULT_OVERRIDE_MANAGERS: readonly string[] = [
  'kubectl',
  'kubectl-edit',
  'kubectl-patch',
  'kubectl-set',
  'kubectl-client-side-apply',
  'kubectl-label',
  'kubectl-annotate',
  'before-first-apply',
];

/** names of the managers of the object itself (not of a subresource), sorted, without duplicates */
export function managerNames(entries: readonly ManagedFieldsEntry[] | undefined): string[] {
  return [...new Set((entries ?? []).filter((e) => !e.subresource && e.manager).map((e) => e.manager!))].sort();
}

/**
 * The field paths a managedFields entry owns, for messages: `spec.template.spec.containers[name=app].env`.
 * A node the manager owns as a whole ("." key) is one path; its members are not listed.
 */
export function fieldPaths(fields: Record<string, unknown> | undefined, prefix = ''): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(fields ?? {})) {
    if (k === '.') continue;
    const path = prefix + segment(k, prefix === '');
    const children = v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
    if ('.' in children || Object.keys(children).length === 0) out.push(path);
    else out.push(...fieldPaths(children, path));
  }
  return out;
}

function segment(key: string, first: boolean): string {
  if (key.startsWith('f:')) return (first ? '' : '.') + key.slice(2);
  if (key.startsWith('k:')) {
    try {
      const sel = JSON.parse(key.slice(2)) as Record<string, unknown>;
      return `[${Object.entries(sel)
        .map(([n, v]) => `${n}=${String(v)}`)
        .join(',')}]`;
    } catch {
      return `[${key.slice(2)}]`;
    }
  }
  if (key.startsWith('v:')) return `[${key.slice(2)}]`;
  if (key.startsWith('i:')) return `[${key.slice(2)}]`;
  return (first ? '' : '.') + key;
}

/**
 * Returns the managedFields list with every non-status entry (with `only`: every entry of those
 * managers) folded into one Apply entry of `manager`, or undefined when there is nothing to take over.
 * With `hold` (drift-ignore rules): the fields it splits off are never taken — a folded manager
 * keeps owning them, and `manager`'s own entry gives them up (so they are owned by no one else).
 */
export function takeOverManagedFields(
  entries: readonly ManagedFieldsEntry[],
  manager: string,
  apiVersion: string,
  only?: ReadonlySet<string>,
  hold?: (fields: FieldSet) => { rest: FieldSet; held: FieldSet },
): ManagedFieldsEntry[] | undefined {
  const keep: ManagedFieldsEntry[] = [];
  let fields: Record<string, unknown> = {};
  let changes = 0;
  for (const e of entries) {
    const mine = e.manager === manager && e.operation === 'Apply';
    if (e.subresource || (only && !mine && !only.has(e.manager ?? ''))) {
      keep.push(e);
      continue;
    }
    const { rest, held } = hold ? hold(e.fieldsV1 ?? {}) : { rest: e.fieldsV1 ?? {}, held: {} };
    const holds = Object.keys(held).length > 0;
    if (!mine && holds) keep.push({ ...e, fieldsV1: held });
    // a foreign entry that owns only held fields stays as it was
    if ((!mine && !(holds && Object.keys(rest).length === 0)) || (mine && holds)) changes++;
    fields = mergeFields(fields, rest);
  }
  if (changes === 0) return undefined;
  return [
    { manager, operation: 'Apply', apiVersion, time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), fieldsType: 'FieldsV1', fieldsV1: fields },
    ...keep,
  ];
}

/** the entries a takeover folds into `manager`'s: every other manager's (with `only`, those managers'), never a subresource's */
function takenEntries(entries: readonly ManagedFieldsEntry[], manager: string, only?: ReadonlySet<string>): ManagedFieldsEntry[] {
  return entries.filter((e) => !e.subresource && e.manager !== manager && (!only || only.has(e.manager ?? '')));
}

/** "manager: field path" of each field a takeover makes `manager`'s (the ones `hold` splits off stay where they are) */
export function takenPaths(
  entries: readonly ManagedFieldsEntry[],
  manager: string,
  only?: ReadonlySet<string>,
  hold?: (fields: FieldSet) => { rest: FieldSet },
): string[] {
  return takenEntries(entries, manager, only).flatMap((e) => fieldPaths(hold ? hold(e.fieldsV1 ?? {}).rest : e.fieldsV1).map((f) => `${e.manager}: ${f}`));
}

/** the fields of `a` that `b` does not own */
export function subtractFields(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = {};
  for (const [k, v] of Object.entries(a)) {
    if (k === '.') {
      if (!Object.hasOwn(b, '.')) out[k] = v;
      continue;
    }
    if (!Object.hasOwn(b, k)) {
      out[k] = v;
      continue;
    }
    const bv = (b[k] ?? {}) as FieldSet;
    // b owns a leaf (an atomic value) whole; owning a node ('.') is not owning its children
    if (Object.keys(bv).length === 0) continue;
    const rest = subtractFields((v ?? {}) as FieldSet, bv);
    if (Object.keys(rest).length > 0 || Object.keys((v ?? {}) as FieldSet).length === 0) out[k] = rest;
  }
  return out;
}

/**
 * A copy of `obj` without the fields of a FieldsV1 set: a leaf is removed, a node the set owns
 * itself ('.') once nothing is left in it, list elements found by their keys (drift-ignore.ts
 * elementKey).
 */
export function withoutFields(obj: KubeObject, fields: FieldSet): KubeObject {
  const copy = structuredClone(obj);
  strip(copy, fields);
  return copy;
}

function strip(node: unknown, fields: FieldSet): void {
  if (node === null || typeof node !== 'object') return;
  const gone = (v: unknown, sub: FieldSet): boolean => {
    if (Object.keys(sub).length === 0) return true;
    strip(v, sub);
    return Object.hasOwn(sub, '.') && v !== null && typeof v === 'object' && Object.keys(v).length === 0;
  };
  if (Array.isArray(node)) {
    const doomed = new Set<number>();
    for (const [k, sub] of Object.entries(fields)) {
      if (k === '.') continue;
      node.forEach((el: unknown, i) => {
        if (elementKey(k, el, i) && gone(el, (sub ?? {}) as FieldSet)) doomed.add(i);
      });
    }
    for (const i of [...doomed].sort((x, y) => y - x)) node.splice(i, 1);
    return;
  }
  const rec = node as Record<string, unknown>;
  for (const [k, sub] of Object.entries(fields)) {
    if (!k.startsWith('f:')) continue;
    const name = k.slice(2);
    if (Object.hasOwn(rec, name) && gone(rec[name], (sub ?? {}) as FieldSet)) delete rec[name];
  }
}

/**
 * What the object a server-side dry-run apply answered would be had `manager` first taken over
 * the fields of the other managers (`only`: of those), as the applier does before it applies: the
 * fields they held that the applied object does not set and no remaining manager owns are gone.
 * The dry-run's managedFields already show the apply (its own entry holds exactly what it set),
 * so taking over from them is taking over from the live object. `ignored` (driftIgnore
 * pointers) are never taken over.
 */
export function afterTakeOver(dryRun: KubeObject, manager: string, only: ReadonlySet<string> | undefined, ignored?: readonly string[]): KubeObject {
  const entries = (dryRun.metadata.managedFields ?? []) as ManagedFieldsEntry[];
  const hold = ignored ? (fields: FieldSet) => splitFields(fields, dryRun, ignored) : undefined;
  const merged = takeOverManagedFields(entries, manager, dryRun.apiVersion, only, hold);
  if (!merged) return dryRun;
  const applied = entries.find((e) => e.manager === manager && e.operation === 'Apply' && !e.subresource)?.fieldsV1 ?? {};
  let gone = subtractFields(merged[0]!.fieldsV1 ?? {}, applied);
  for (const e of merged.slice(1)) gone = subtractFields(gone, e.fieldsV1 ?? {});
  return withoutFields(dryRun, gone);
}
