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
 * Returns the managedFields list with every non-status entry folded into one Apply entry of
 * `manager`, or undefined when there is nothing to take over.
 */
export function takeOverManagedFields(entries: readonly ManagedFieldsEntry[], manager: string, apiVersion: string): ManagedFieldsEntry[] | undefined {
  const keep: ManagedFieldsEntry[] = [];
  let fields: Record<string, unknown> = {};
  let foreign = 0;
  for (const e of entries) {
    if (e.subresource) {
      keep.push(e);
      continue;
    }
    if (e.manager !== manager || e.operation !== 'Apply') foreign++;
    fields = mergeFields(fields, e.fieldsV1 ?? {});
  }
  if (foreign === 0) return undefined;
  return [
    { manager, operation: 'Apply', apiVersion, time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), fieldsType: 'FieldsV1', fieldsV1: fields },
    ...keep,
  ];
}
