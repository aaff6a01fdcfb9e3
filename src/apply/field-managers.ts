/**
 * Taking over another field manager's fields. When Hoist adopts an object created by
 * `kubectl apply` (client-side), `kubectl edit`, Helm or another lineage, those managers still
 * own fields; a field later dropped from the bundle would then stay on the object forever.
 * Merging their field sets into Hoist's own Apply entry makes Hoist the sole owner, so the next
 * apply removes whatever the bundle no longer sets. Status-subresource entries are left alone.
 */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: 'Apply' | 'Update';
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: Record<string, unknown>;
  subresource?: string;
}

function mergeFields(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] = cur && typeof cur === 'object' && v && typeof v === 'object'
      ? mergeFields(cur as Record<string, unknown>, v as Record<string, unknown>)
      : v;
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
      return `[${Object.entries(sel).map(([n, v]) => `${n}=${String(v)}`).join(',')}]`;
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
  hold?: (fields: Record<string, unknown>) => { rest: Record<string, unknown>; held: Record<string, unknown> },
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
