/**
 * Deleting objects Hoist installed: objects that left the bundle (after the new revision applied
 * completely) and everything on uninstall. An object is deleted only while its live labels still
 * name this BundleDeployment — never one that was handed over, refused, or changed hands — and
 * with a uid precondition, so a re-created object of the same name survives. A Namespace is
 * deleted only when it holds nothing else (namespace-contents.ts). An object a retention policy
 * keeps (`helm.sh/resource-policy: keep`, `core.rukpak.io/prune: disabled`; retention.ts), and with
 * `orphan` (deletionPolicy Orphan) every object, is let go of instead: left in place, Hoist's owner
 * label removed, by a patch conditioned on the resourceVersion read. `client` is whoever acts for
 * the BundleDeployment (its ServiceAccount when it has one).
 */
import type { Logger } from 'pino';
import { LABEL_LINEAGE, LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import { isConflict, isKindNotServed, isNotFound } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';
import { throwIfCancelled, FailureReason } from '../util/errors.ts';
import { namespaceVerdict } from './namespace-contents.ts';
import { isCRD, isNamespace, objectId } from './object-id.ts';
import { fieldManagerFor } from './plan.ts';
import { releasePatch, retentionOf } from './retention.ts';
import type { ObjectResult } from './result.ts';
import { ApplyCode, ObjectsError } from './errors.ts';

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
  /** stops it: requests in flight are aborted, no delete is sent after, and deleteOwned throws a CancelledError */
  signal?: AbortSignal | undefined;
  /** deletionPolicy Orphan: every object still this BundleDeployment's is let go of, none deleted */
  orphan?: boolean;
}

/** the policy `orphan` lets go of objects by */
export const ORPHAN_POLICY = 'deletionPolicy: Orphan';

/** what pruning an object would do, decided from the live object before any delete */
export interface PruneDecision {
  obj: KubeObject;
  id: string;
  subject: string;
  /**
   * delete it (the live object read, whose uid the delete is conditioned on); release: keep it in
   * place and let go of it (the live object read, `policy` says why); otherwise what the result says
   */
  action: 'delete' | 'release' | Extract<ObjectResult['action'], 'unchanged' | 'skipped' | 'orphaned' | 'failed'>;
  message?: string;
  live?: KubeObject;
  /** release: the retention policy (`helm.sh/resource-policy: keep`) or ORPHAN_POLICY */
  policy?: string;
}

/**
 * Decides for each object whether it is deleted, reading it (and, for a Namespace, its contents)
 * as `client`: the rules of the module comment. Writes nothing; `hoist diff` shows it, deleteOwned
 * carries it out.
 */
export async function planPrune(
  client: KubeClient,
  owner: { name: string; lineage: string },
  objects: readonly KubeObject[],
  opts: Omit<PruneOptions, 'log'> & { log?: Logger },
): Promise<PruneDecision[]> {
  const keepCRDs = opts.keepCRDs ?? true;
  return mapLimit(objects, opts.concurrency ?? 8, async (obj): Promise<PruneDecision> => {
    const base = { obj, id: objectId(obj), subject: describeObject(obj) };
    const { subject } = base;
    try {
      const live = await client.get(obj, obj.metadata.name, obj.metadata.namespace, { signal: opts.signal });
      if (!live) return { ...base, action: 'unchanged', message: 'already gone' };
      const labels = live.metadata.labels ?? {};
      const policy = opts.orphan ? ORPHAN_POLICY : retentionOf(obj, live);
      // let go of by an earlier call that then failed part-way (the lineage's label, no owner): kept, nothing left to write
      const released = policy !== undefined && labels[LABEL_OWNER_NAME] === undefined && labels[LABEL_LINEAGE] === owner.lineage;
      if (!released && (labels[LABEL_OWNER_NAME] !== owner.name || labels[LABEL_LINEAGE] !== owner.lineage)) {
        return { ...base, live, action: 'skipped', message: `owned by ${labels[LABEL_OWNER_NAME] ?? 'nobody'}` };
      }
      const written = opts.writtenUid?.(obj);
      if (written && live.metadata.uid !== written) {
        opts.log?.info({ object: subject, written, live: live.metadata.uid }, 'not deleted: replaced since it was written');
        return {
          ...base,
          live,
          action: 'skipped',
          message: `replaced since this BundleDeployment wrote it (uid ${written}, now ${live.metadata.uid ?? 'none'})`,
        };
      }
      // before the CRD and Namespace rules: a kept object is let go of, whatever its kind
      if (policy) return { ...base, live, action: 'release', policy, message: `kept: ${policy}; left in place, no longer managed` };
      if (isCRD(obj) && keepCRDs) return { ...base, live, action: 'orphaned', message: 'CRDs are kept' };
      if (isNamespace(obj)) {
        // deleting a namespace deletes everything in it: only when nothing else is left there
        const staying = opts.retained?.find((o) => o.metadata.namespace === obj.metadata.name);
        const verdict = staying
          ? { ours: false as const, why: `${describeObject(staying)} of the current revision lives in it` }
          : await namespaceVerdict(client, obj.metadata.name, owner, opts.concurrency ?? 8, opts.signal);
        if (!verdict.ours) {
          opts.log?.info({ object: subject, why: verdict.why }, 'namespace kept');
          return { ...base, live, action: 'orphaned', message: `kept: ${verdict.why}` };
        }
      }
      return { ...base, live, action: 'delete' };
    } catch (e) {
      // the kind is gone (its CRD was deleted): so is the object
      if (isNotFound(e)) return { ...base, action: 'unchanged', message: 'already gone' };
      if (isKindNotServed(e)) return { ...base, action: 'unchanged', message: 'kind no longer served' };
      return { ...base, action: 'failed', message: e instanceof Error ? e.message : String(e) };
    }
  });
}

export async function deleteOwned(
  client: KubeClient,
  owner: { name: string; lineage: string },
  objects: readonly KubeObject[],
  opts: PruneOptions,
): Promise<ObjectResult[]> {
  const results: ObjectResult[] = [];
  // Namespaces last: deleting one first would take its contents down outside our accounting.
  for (const batch of [objects.filter((o) => !isNamespace(o)), objects.filter(isNamespace)]) {
    const decided = await planPrune(client, owner, batch, opts);
    results.push(
      ...(await mapLimit(decided, opts.concurrency ?? 8, async (d): Promise<ObjectResult> => {
        const { id, subject, obj, action, message, live } = d;
        if (action === 'release') return release(client, owner, d, opts);
        if (action !== 'delete') return { id, subject, action, ...(message !== undefined ? { message } : {}) };
        try {
          // the uid decided on: an object replaced between the GET and here is not deleted (409)
          await client.delete(obj, obj.metadata.name, obj.metadata.namespace, {
            uid: live!.metadata.uid,
            propagationPolicy: 'Background',
            signal: opts.signal,
          });
          opts.log.debug({ object: subject }, 'deleted');
          return { id, subject, action: 'deleted' };
        } catch (e) {
          if (isNotFound(e)) return { id, subject, action: 'unchanged', message: 'already gone' };
          // 409 on a DELETE with a uid precondition: the object by this name is another one now
          if (isConflict(e)) return { id, subject, action: 'skipped', message: 'replaced since it was read (uid precondition failed): not deleted' };
          return { id, subject, action: 'failed', message: e instanceof Error ? e.message : String(e) };
        }
      })),
    );
  }
  // requests the signal aborted failed for that reason alone: what is left, the next prune deletes
  throwIfCancelled(opts.signal, `deleting ${objects.length} objects of ${owner.name}`, { stage: 'apply', reason: FailureReason.PruneFailed });
  const failed = results.filter((r) => r.action === 'failed');
  if (failed.length > 0) {
    throw new ObjectsError(
      ApplyCode.DeleteFailed,
      failed.map((f) => ({ subject: f.subject, message: f.message ?? 'failed' })),
      { reason: FailureReason.PruneFailed, terminal: false },
    );
  }
  return results;
}

/** how many times a release is tried when the object changes under it (409) before the prune fails (and is retried) */
const RELEASE_ATTEMPTS = 3;

/**
 * Lets go of a kept object (retention.ts releasePatch), as `client`. The patch is conditioned on
 * the resourceVersion read: when the object changed since (409), it is read and decided again —
 * gone, or no longer this BundleDeployment's, it is left as it is.
 */
async function release(client: KubeClient, owner: { name: string; lineage: string }, d: PruneDecision, opts: PruneOptions): Promise<ObjectResult> {
  const { id, subject, obj, policy } = d;
  const kept = { id, subject, action: 'kept' as const, policy: policy!, message: d.message! };
  let live = d.live!;
  for (let attempt = 1; ; attempt++) {
    const patch = releasePatch(live, fieldManagerFor(owner.lineage));
    // only the resourceVersion condition: nothing of Hoist's is left on it
    if (patch.length === 1) return kept;
    try {
      await client.patch(obj, obj.metadata.name, obj.metadata.namespace, patch, 'json', { signal: opts.signal });
      opts.log.info({ object: subject, policy }, 'kept: left in place, no longer managed');
      return kept;
    } catch (e) {
      if (isNotFound(e)) return { id, subject, action: 'unchanged', message: 'already gone' };
      if (!isConflict(e) || attempt >= RELEASE_ATTEMPTS)
        return { id, subject, action: 'failed', message: `letting go of it failed: ${e instanceof Error ? e.message : String(e)}` };
    }
    const again = await client.get(obj, obj.metadata.name, obj.metadata.namespace, { signal: opts.signal }).catch((e: unknown) => e as Error);
    if (again instanceof Error) return { id, subject, action: 'failed', message: `letting go of it failed: ${again.message}` };
    if (!again) return { id, subject, action: 'unchanged', message: 'already gone' };
    const labels = again.metadata.labels ?? {};
    const owned = labels[LABEL_OWNER_NAME] === undefined || labels[LABEL_OWNER_NAME] === owner.name;
    if (!owned || labels[LABEL_LINEAGE] !== owner.lineage || again.metadata.uid !== live.metadata.uid) {
      return { id, subject, action: 'skipped', message: `changed hands since it was read (owned by ${labels[LABEL_OWNER_NAME] ?? 'nobody'}): left as it is` };
    }
    live = again;
  }
}

/** objects of `previous` whose identity is not in `current` */
export function staleObjects(previous: readonly KubeObject[], current: readonly KubeObject[]): KubeObject[] {
  const keep = new Set(current.map(objectId));
  return previous.filter((o) => !keep.has(objectId(o)));
}
