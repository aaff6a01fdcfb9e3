/**
 * Deleting objects Hoist installed: objects that left the bundle (after the new revision applied
 * completely) and everything on uninstall. An object is deleted only while its live labels still
 * name this BundleDeployment — never one that was handed over, refused, or changed hands — and
 * with a uid precondition, so a re-created object of the same name survives. A Namespace is
 * deleted only when it holds nothing else (namespace-contents.ts). `client` is whoever acts for
 * the BundleDeployment (its ServiceAccount when it has one).
 */
import type { Logger } from 'pino';
import { LABEL_LINEAGE, LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import { isConflict, isKindNotServed, isNotFound } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';
import { HoistError, FailureReason } from '../util/errors.ts';
import { namespaceVerdict } from './namespace-contents.ts';
import { isCRD, isNamespace, objectId } from './object-id.ts';
import type { ObjectResult } from './result.ts';

export interface PruneOptions {
  /** keep CRDs (default true): deleting a CRD deletes every custom resource of its kinds */
  keepCRDs?: boolean;
  concurrency?: number;
  log: Logger;
  /** objects that stay installed (the current revision, when pruning): their namespaces stay too */
  retained?: readonly KubeObject[];
  /**
   * the uid of the object this BundleDeployment wrote by that name, when known (Applier.writtenUid):
   * a live object of another uid was replaced since — deleted and created again by someone else,
   * labels and all — and is not deleted
   */
  writtenUid?: (obj: KubeObject) => string | undefined;
}

export async function deleteOwned(
  client: KubeClient,
  owner: { name: string; lineage: string },
  objects: readonly KubeObject[],
  opts: PruneOptions,
): Promise<ObjectResult[]> {
  const keepCRDs = opts.keepCRDs ?? true;
  // Namespaces last: deleting one first would take its contents down outside our accounting.
  const ordered = [...objects.filter((o) => !isNamespace(o)), ...objects.filter(isNamespace)];
  const results: ObjectResult[] = [];
  for (const batch of [ordered.filter((o) => !isNamespace(o)), ordered.filter(isNamespace)]) {
    results.push(
      ...(await mapLimit(batch, opts.concurrency ?? 8, async (obj): Promise<ObjectResult> => {
        const id = objectId(obj);
        const subject = describeObject(obj);
        try {
          const live = await client.get(obj, obj.metadata.name, obj.metadata.namespace);
          if (!live) return { id, subject, action: 'unchanged', message: 'already gone' };
          const labels = live.metadata.labels ?? {};
          if (labels[LABEL_OWNER_NAME] !== owner.name || labels[LABEL_LINEAGE] !== owner.lineage) {
            return { id, subject, action: 'skipped', message: `owned by ${labels[LABEL_OWNER_NAME] ?? 'nobody'}` };
          }
          const written = opts.writtenUid?.(obj);
          if (written && live.metadata.uid !== written) {
            opts.log.info({ object: subject, written, live: live.metadata.uid }, 'not deleted: replaced since it was written');
            return { id, subject, action: 'skipped', message: `replaced since this BundleDeployment wrote it (uid ${written}, now ${live.metadata.uid ?? 'none'})` };
          }
          if (isCRD(obj) && keepCRDs) return { id, subject, action: 'orphaned', message: 'CRDs are kept' };
          if (isNamespace(obj)) {
            // deleting a namespace deletes everything in it: only when nothing else is left there
            const staying = opts.retained?.find((o) => o.metadata.namespace === obj.metadata.name);
            const verdict = staying
              ? { ours: false as const, why: `${describeObject(staying)} of the current revision lives in it` }
              : await namespaceVerdict(client, obj.metadata.name, owner, opts.concurrency ?? 8);
            if (!verdict.ours) {
              opts.log.info({ object: subject, why: verdict.why }, 'namespace kept');
              return { id, subject, action: 'orphaned', message: `kept: ${verdict.why}` };
            }
          }
          // the uid decided on: an object replaced between the GET and here is not deleted (409)
          await client.delete(obj, obj.metadata.name, obj.metadata.namespace, { uid: live.metadata.uid, propagationPolicy: 'Background' });
          opts.log.debug({ object: subject }, 'deleted');
          return { id, subject, action: 'deleted' };
        } catch (e) {
          // the kind is gone (its CRD was deleted): so is the object
          if (isNotFound(e)) return { id, subject, action: 'unchanged', message: 'already gone' };
          if (isKindNotServed(e)) return { id, subject, action: 'unchanged', message: 'kind no longer served' };
          // 409 on a DELETE with a uid precondition: the object by this name is another one now
          if (isConflict(e)) return { id, subject, action: 'skipped', message: 'replaced since it was read (uid precondition failed): not deleted' };
          return { id, subject, action: 'failed', message: e instanceof Error ? e.message : String(e) };
        }
      })),
    );
  }
  const failed = results.filter((r) => r.action === 'failed');
  if (failed.length > 0) {
    throw new HoistError(failed.map((f) => `${f.subject}: ${f.message}`).join('; '), {
      stage: 'apply', reason: FailureReason.PruneFailed, code: 'delete-failed', subject: failed.length === 1 ? failed[0]!.subject : `${failed.length} objects`, terminal: false,
    });
  }
  return results;
}

/** objects of `previous` whose identity is not in `current` */
export function staleObjects(previous: readonly KubeObject[], current: readonly KubeObject[]): KubeObject[] {
  const keep = new Set(current.map(objectId));
  return previous.filter((o) => !keep.has(objectId(o)));
}
