/**
 * What applying a rendered revision would do to the cluster, decided the way the controller's
 * applier decides it (src/apply/applier.ts) but written nowhere: each object gets Hoist's
 * namespace, ownership labels and revision annotation, its collision protection verdict
 * (decideTakeOver), and a server-side dry-run apply as the lineage's field manager with force.
 * Objects of the active revision the new render lacks are the ones a successful upgrade prunes
 * (src/apply/prune.ts rules: only while the live object is still this BD's; CRDs kept unless
 * deleteCRDsOnUninstall).
 */
import { stringify } from 'yaml';
import { ANNOTATION_REVISION, LABEL_LINEAGE, LABEL_OWNER_NAME, lineageOf, type BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { withDefaults } from '../../../api/v1alpha2/defaults.ts';
import { fieldManagerFor } from '../../apply/applier.ts';
import { decideTakeOver } from '../../apply/collision.ts';
import { isCRD, isNamespace, objectId } from '../../apply/object-id.ts';
import { staleObjects } from '../../apply/prune.ts';
import { RevisionStore } from '../../apply/revision-store.ts';
import { isNotFound } from '../../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject } from '../../kube/types.ts';
import { mapLimit } from '../../util/concurrency.ts';

export type DiffAction =
  /** the object does not exist: it would be created */
  | 'create'
  /** it exists and the apply would change it */
  | 'configure'
  | 'unchanged'
  /** it left the bundle and would be deleted after the new revision applied */
  | 'prune'
  /** it left the bundle but stays (a CRD, or no longer this BD's) */
  | 'orphan'
  /** collision protection refuses it: the controller would change nothing at all */
  | 'refuse';

export interface DiffEntry {
  id: string;
  /** "group/version Kind ns/name" as Hoist's messages name objects */
  subject: string;
  action: DiffAction;
  /** the live object, cleaned (see clean()); "" when absent */
  live: string;
  /** what it would be after the apply (the dry-run's answer), cleaned; "" when deleted */
  merged: string;
  /** adopt (unowned), steal (another lineage, collisionProtection None), handover (another BD of this lineage) */
  takeOver?: 'adopt' | 'steal' | 'handover';
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

/** the object as the applier sends it (applier.ts prepare) */
function prepared(obj: KubeObject, bd: { name: string; lineage: string; revision: number }): KubeObject {
  const o = structuredClone(obj);
  o.metadata.labels = { ...o.metadata.labels, [LABEL_OWNER_NAME]: bd.name, [LABEL_LINEAGE]: bd.lineage };
  o.metadata.annotations = { ...o.metadata.annotations, [ANNOTATION_REVISION]: String(bd.revision) };
  for (const f of ['resourceVersion', 'uid', 'creationTimestamp', 'managedFields'] as const) delete o.metadata[f];
  delete o.status;
  return o;
}

/** the live object; undefined also when its kind is not served (a CRD of this revision brings it) */
async function getLive(client: KubeClient, obj: KubeObject): Promise<KubeObject | undefined> {
  try {
    return await client.get(obj, obj.metadata.name, obj.metadata.namespace);
  } catch (e) {
    if (e instanceof Error && e.name === 'KindNotServedError') return undefined;
    throw e;
  }
}

export interface DiffInput {
  /** the BundleDeployment as the file gives it */
  bd: BundleDeployment;
  /** its rendered objects, namespaces assigned (assignNamespaces) */
  objects: readonly KubeObject[];
  contentDigest: string;
  /** the controller's namespace (revision store) */
  controllerNamespace: string;
}

/**
 * Plans the apply and prune of `input` against the cluster. Reads and dry-runs only. Throws on
 * an API failure other than the ones it explains (missing namespace or kind: would be created).
 */
export async function planDiff(client: KubeClient, input: DiffInput): Promise<DiffEntry[]> {
  const { bd } = input;
  const name = bd.metadata.name;
  const spec = withDefaults(bd.spec);
  const lineage = lineageOf(bd);
  const manager = fieldManagerFor(lineage);
  const live = (await client.get({ apiVersion: bd.apiVersion, kind: bd.kind }, name)) as unknown as BundleDeployment | undefined;
  const store = new RevisionStore(client, input.controllerNamespace);
  const stored = live ? await store.list(name) : [];
  const active = live?.status?.activeRevision;
  // the number the controller would give it: a stored revision with the same content keeps its number
  const revision =
    active?.contentDigest === input.contentDigest
      ? active.number
      : (stored.find((r) => r.contentDigest === input.contentDigest)?.number ?? Math.max(0, active?.number ?? 0, ...stored.map((r) => r.number), ...(live?.status?.revisions ?? []).map((r) => r.number)) + 1);
  const me = { name, lineage, protection: spec.collisionProtection };

  const entries = await mapLimit(input.objects, 8, async (obj): Promise<DiffEntry> => {
    const desired = prepared(obj, { name, lineage, revision });
    const id = objectId(desired);
    const subject = describeObject(desired);
    const current = await getLive(client, desired);
    const decision = decideTakeOver(current?.metadata, me, { crd: isCRD(desired) });
    if (decision.action === 'refuse') return { id, subject, action: 'refuse', live: clean(current), merged: clean(current), note: `owned by ${decision.owner}: ${decision.why}` };
    const takeOver = decision.action === 'adopt' || decision.action === 'steal' ? decision.action : decision.action === 'update' && decision.handover ? 'handover' : undefined;
    let merged: KubeObject;
    try {
      merged = await client.apply(desired, { fieldManager: manager, force: true, dryRun: true });
    } catch (e) {
      // its namespace or kind comes with this revision: the dry-run cannot place it yet
      if (current || !(isNotFound(e) || (e instanceof Error && e.name === 'KindNotServedError'))) throw e;
      return { id, subject, action: 'create', live: '', merged: clean(desired), note: 'not dry-run: its namespace or kind is created by this revision' };
    }
    const before = clean(current);
    const after = clean(merged);
    const action = !current ? 'create' : before === after ? 'unchanged' : 'configure';
    return { id, subject, action, live: before, merged: after, ...(takeOver ? { takeOver } : {}) };
  });

  // prune: what the active revision has and the new render lacks (after a successful apply)
  if (live && active && active.contentDigest !== input.contentDigest) {
    const previous = await store.load(name, active);
    if (!previous) throw new Error(`revision ${active.number} of ${name} is not in the revision store of namespace ${input.controllerNamespace}: cannot tell what would be pruned`);
    for (const obj of staleObjects(previous, input.objects)) {
      const subject = describeObject(obj);
      const id = objectId(obj);
      const current = await getLive(client, obj);
      if (!current) continue;
      const labels = current.metadata.labels ?? {};
      if (labels[LABEL_OWNER_NAME] !== name || labels[LABEL_LINEAGE] !== lineage) {
        entries.push({ id, subject, action: 'orphan', live: clean(current), merged: clean(current), note: `left the bundle; owned by ${labels[LABEL_OWNER_NAME] ?? 'nobody'}, so kept` });
      } else if (isCRD(obj) && !spec.deleteCRDsOnUninstall) {
        entries.push({ id, subject, action: 'orphan', live: clean(current), merged: clean(current), note: 'left the bundle; CRDs are kept' });
      } else {
        entries.push({ id, subject, action: 'prune', live: clean(current), merged: '', ...(isNamespace(obj) ? { note: 'deleted only if nothing else lives in it' } : {}) });
      }
    }
  }
  return entries;
}
