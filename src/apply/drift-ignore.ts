/**
 * `spec.driftIgnore` (issue 15): fields of matching objects that another controller owns (an
 * HPA's `/spec/replicas`, a `caBundle` cert-manager injects). Hoist sets them only when it creates
 * the object (the bundle's value is the starting point), then gives up its ownership, leaves them
 * out of every later apply (so server-side apply neither sets nor removes them), and never takes
 * them over from another manager — not even from kubectl's. All functions here are pure.
 */
import type { DriftIgnoreRule, LabelSelector } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../kube/types.ts';
import { groupOf } from './object-id.ts';

/** a managedFields FieldsV1 set: `f:name`, `k:{...}`, `v:...`, `i:N` keys and `.` for the node itself */
export type FieldSet = Record<string, unknown>;

/** the JSON pointers of every rule whose target matches the object (namespace already defaulted), without duplicates */
export function ignoredPointers(rules: readonly DriftIgnoreRule[] | undefined, obj: KubeObject): string[] {
  const out = new Set<string>();
  for (const r of rules ?? []) if (targets(r.target, obj)) for (const p of r.jsonPointers) out.add(p);
  return [...out];
}

function targets(t: DriftIgnoreRule['target'], obj: KubeObject): boolean {
  const [group, version] = obj.apiVersion.includes('/') ? [groupOf(obj.apiVersion), obj.apiVersion.split('/')[1]] : ['', obj.apiVersion];
  if (t.group !== undefined && t.group !== group) return false;
  if (t.version !== undefined && t.version !== version) return false;
  if (t.kind !== undefined && t.kind !== obj.kind) return false;
  if (t.name !== undefined && t.name !== obj.metadata.name) return false;
  if (t.namespace !== undefined && t.namespace !== (obj.metadata.namespace ?? '')) return false;
  return !t.labelSelector || selects(t.labelSelector, obj.metadata.labels ?? {});
}

/** metav1.LabelSelector semantics */
export function selects(sel: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const ok =
      e.operator === 'Exists'
        ? has
        : e.operator === 'DoesNotExist'
          ? !has
          : e.operator === 'In'
            ? has && (e.values ?? []).includes(labels[e.key]!)
            : !has || !(e.values ?? []).includes(labels[e.key]!);
    if (!ok) return false;
  }
  return true;
}

/** RFC 6901: "/a~1b/0" → ["a/b", "0"] */
export function pointerSegments(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * A copy of `obj` without the fields the pointers name, and the pointers that named a field the
 * object sets (those Hoist sets on create). Pointers to fields the object does not set are no-ops.
 */
export function withoutIgnored(obj: KubeObject, pointers: readonly string[]): { obj: KubeObject; present: string[] } {
  const copy = structuredClone(obj);
  const present: string[] = [];
  // deepest and highest list index first, so removing one field never moves another pointer's target
  for (const p of [...pointers].sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))) {
    if (remove(copy, pointerSegments(p))) present.push(p);
  }
  return { obj: copy, present: present.sort() };
}

function remove(node: unknown, segs: readonly string[]): boolean {
  const [seg, ...more] = segs;
  if (seg === undefined || node === null || typeof node !== 'object') return false;
  if (Array.isArray(node)) {
    if (!/^\d+$/.test(seg) || Number(seg) >= node.length) return false;
    if (more.length === 0) return node.splice(Number(seg), 1).length === 1;
    return remove(node[Number(seg)], more);
  }
  const rec = node as Record<string, unknown>;
  if (!Object.hasOwn(rec, seg)) return false;
  if (more.length === 0) return delete rec[seg];
  return remove(rec[seg], more);
}

/**
 * Splits a field set into the part the pointers name (`held`) and the rest. List elements are
 * found through `live` (the object the field set describes): `/spec/containers/0/image` is
 * `k:{"name":…}` of element 0's keys, a set element `v:<value>`, an atomic list `i:0`.
 */
export function splitFields(fields: FieldSet, live: unknown, pointers: readonly string[]): { rest: FieldSet; held: FieldSet } {
  const rest = structuredClone(fields);
  const held: FieldSet = {};
  for (const p of pointers) take(rest, held, live, pointerSegments(p));
  return { rest, held };
}

function take(fields: FieldSet, held: FieldSet, value: unknown, segs: readonly string[]): void {
  const [seg, ...more] = segs;
  if (seg === undefined) return;
  let key: string | undefined;
  let child: unknown;
  if (Array.isArray(value)) {
    if (!/^\d+$/.test(seg)) return;
    const i = Number(seg);
    child = value[i];
    if (child === undefined) return;
    key = Object.keys(fields).find((k) => elementKey(k, child, i));
  } else {
    key = `f:${seg}`;
    child = value && typeof value === 'object' ? (value as Record<string, unknown>)[seg] : undefined;
  }
  if (key === undefined || !Object.hasOwn(fields, key)) return;
  if (more.length === 0) {
    held[key] = fields[key];
    delete fields[key];
    return;
  }
  const sub = fields[key];
  if (!sub || typeof sub !== 'object') return;
  const heldSub = (held[key] ?? {}) as FieldSet;
  take(sub as FieldSet, heldSub, child, more);
  if (Object.keys(heldSub).length > 0) held[key] = heldSub;
  if (Object.keys(sub).length === 0) delete fields[key];
}

/** whether a list key of a field set (`k:{…}`, `v:…`, `i:N`) names this element (at index i) */
export function elementKey(key: string, element: unknown, i: number): boolean {
  try {
    if (key.startsWith('i:')) return Number(key.slice(2)) === i;
    if (key.startsWith('v:')) return JSON.stringify(JSON.parse(key.slice(2))) === JSON.stringify(element);
    if (key.startsWith('k:') && element && typeof element === 'object') {
      const sel = JSON.parse(key.slice(2)) as Record<string, unknown>;
      return Object.entries(sel).every(([k, v]) => JSON.stringify((element as Record<string, unknown>)[k]) === JSON.stringify(v));
    }
  } catch {
    // a key that is not JSON names nothing
  }
  return false;
}

/**
 * A copy of `obj` whose fields at `pointers` are as `source` has them (set, or removed where
 * `source` lacks them): what fields nobody applies look like after an apply that leaves them
 * alone. A pointer whose parent `obj` lacks is left out.
 */
export function withValuesOf(obj: KubeObject, source: unknown, pointers: readonly string[]): KubeObject {
  const copy = structuredClone(obj);
  for (const p of pointers) {
    const segs = pointerSegments(p);
    const last = segs.pop();
    if (last === undefined) continue;
    const parent = at(copy, segs);
    const from = at(source, segs);
    if (!parent || typeof parent !== 'object' || Array.isArray(parent)) continue;
    const rec = parent as Record<string, unknown>;
    const value = from && typeof from === 'object' && !Array.isArray(from) ? (from as Record<string, unknown>)[last] : undefined;
    if (value === undefined) delete rec[last];
    else rec[last] = structuredClone(value);
  }
  return copy;
}

function at(node: unknown, segs: readonly string[]): unknown {
  let cur = node;
  for (const seg of segs) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = Array.isArray(cur) ? (/^\d+$/.test(seg) ? cur[Number(seg)] : undefined) : (cur as Record<string, unknown>)[seg];
  }
  return cur;
}

export function isEmptyFieldSet(fields: FieldSet): boolean {
  return Object.keys(fields).length === 0;
}
