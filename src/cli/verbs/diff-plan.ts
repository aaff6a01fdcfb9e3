/**
 * How `hoist diff` shows a preview (src/apply/preview.ts, the applier's own plan with a
 * server-side dry-run): one entry per object with its live and merged text, cleaned of what no
 * one writes by hand. Presentation only: what would happen is decided in src/apply.
 */
import { stringify } from 'yaml';
import { ANNOTATION_REVISION } from '../../../api/v1alpha2/types.ts';
import type { RevisionPreview } from '../../apply/preview.ts';
import { released } from '../../apply/retention.ts';
import type { KubeObject } from '../../kube/types.ts';
import { redactForDisplay } from '../redact-objects.ts';

export type DiffAction =
  /** the object does not exist: it would be created */
  | 'create'
  /** it exists and the apply would change it */
  | 'configure'
  | 'unchanged'
  /** it left the bundle and would be deleted after the new revision applied */
  | 'prune'
  /** it left the bundle but stays (a CRD, a namespace with other contents, or no longer this BD's) */
  | 'orphan'
  /** it left the bundle and its retention policy keeps it (helm.sh/resource-policy: keep, core.rukpak.io/prune: disabled): left in place, Hoist's owner label removed */
  | 'keep'
  /** the controller would refuse or fail it (collision protection, its identity's rights, the API server) */
  | 'refuse';

export interface DiffEntry {
  id: string;
  /** "group/version Kind ns/name" as Hoist's messages name objects */
  subject: string;
  action: DiffAction;
  /** the live object, cleaned (see clean()); "" when absent */
  live: string;
  /** what it would be after the apply, cleaned; "" when deleted */
  merged: string;
  /** adopt (unowned), steal (another lineage, collisionProtection None), handover (another BD of this lineage), reclaim (kept by this lineage) */
  takeOver?: 'adopt' | 'steal' | 'handover' | 'reclaim';
  note?: string;
}

/**
 * Fields no one writes by hand and every apply changes: server bookkeeping, status, and the
 * revision annotation (every new revision rewrites it on every object; showing it would mark
 * each object as changed).
 */
export function clean(obj: KubeObject | undefined): string {
  if (!obj) return '';
  const o = structuredClone(obj);
  const meta = o.metadata as KubeObject['metadata'] & Record<string, unknown>;
  for (const f of ['managedFields', 'resourceVersion', 'uid', 'creationTimestamp', 'generation', 'selfLink']) delete meta[f];
  if (meta.annotations) {
    delete meta.annotations[ANNOTATION_REVISION];
    if (Object.keys(meta.annotations).length === 0) delete meta.annotations;
  }
  delete o.status;
  return stringify(o, { lineWidth: 0, sortMapEntries: true });
}

/**
 * the preview's objects and prune decisions as diff entries, in the preview's order; `sensitive`
 * (spec.decryption: the decrypted values) blanks Secrets' values and decrypted strings on both
 * sides (redact-objects.ts)
 */
export function diffEntries(preview: RevisionPreview, sensitive?: readonly string[]): DiffEntry[] {
  const show = (obj: KubeObject | undefined, other: KubeObject | undefined, side: 'before' | 'after'): string =>
    clean(obj && sensitive ? redactForDisplay(obj, sensitive, other, side) : obj);
  const entries: DiffEntry[] = preview.objects.map((o): DiffEntry => {
    const live = show(o.live, 'after' in o ? o.after : undefined, 'before');
    const base = { id: o.id, subject: o.subject, live };
    switch (o.kind) {
      case 'refused':
        return { ...base, action: 'refuse', merged: live, note: o.why };
      case 'unplaced':
        return { ...base, action: 'create', merged: show(o.after, o.live, 'after'), note: 'not dry-run: its namespace or kind is created by this revision' };
      default: {
        const merged = show(o.after, o.live, 'after');
        const action = o.kind === 'create' ? 'create' : o.kind === 'recreate' || live !== merged ? 'configure' : 'unchanged';
        const notes = [
          ...(o.kind === 'recreate' ? ['deleted and re-created: an immutable field changes'] : []),
          ...(o.reverts?.length ? [`hand edits reverted (${o.reverts.join(', ')})`] : []),
        ];
        return { ...base, action, merged, ...(o.takeOver ? { takeOver: o.takeOver } : {}), ...(notes.length ? { note: notes.join('; ') } : {}) };
      }
    }
  });
  for (const p of preview.prune) {
    const live = show(p.live, undefined, 'before');
    if (p.action === 'delete') entries.push({ id: p.id, subject: p.subject, action: 'prune', live, merged: '' });
    else if (p.action === 'release' && p.live)
      entries.push({ id: p.id, subject: p.subject, action: 'keep', live, merged: clean(released(p.live)), note: `left the bundle; ${p.message ?? 'kept'}` });
    else if (p.action === 'skipped' || p.action === 'orphaned')
      entries.push({ id: p.id, subject: p.subject, action: 'orphan', live, merged: live, note: `left the bundle; ${p.message ?? 'kept'}` });
    else if (p.action === 'failed')
      entries.push({ id: p.id, subject: p.subject, action: 'refuse', live, merged: live, note: `left the bundle; deleting it would fail: ${p.message ?? ''}` });
  }
  return entries;
}
