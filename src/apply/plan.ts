/**
 * The apply plan: what applying a revision's objects would do, decided before anything is
 * written, in the one place both the applier (applier.ts) and `hoist diff` (preview.ts) decide
 * it. Each object gets Hoist's namespace, ownership labels and revision annotation, loses the
 * fields `spec.driftIgnore` names (kept aside for its create), gets its kind resolved and its
 * collision protection verdict from the live object, read as the acting identity (the BD's
 * ServiceAccount) unless the watches vouch for it; the objects are ordered into the steps of
 * phases.ts. Which field managers' fields an apply takes over (`takeOverScope`), the number a new
 * revision gets (`revisionNumberFor`) and the revisions a successful one prunes against
 * (`replacedRevisions`) are decided here too.
 */
import {
  ANNOTATION_APPLY_WAVE,
  ANNOTATION_OPTIONAL,
  ANNOTATION_REVISION,
  LABEL_LINEAGE,
  LABEL_OWNER_NAME,
  lineageOf,
  type BundleDeployment,
  type BundleDeploymentStatus,
  type CollisionProtection,
  type CRDSafety,
  type DriftIgnoreRule,
} from '../../api/v1alpha2/types.ts';
import type { DefaultedSpec } from '../../api/v1alpha2/defaults.ts';
import { ApiError, isForbidden, isImmutableField } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject, type ResourceInfo } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';
import { hashOf } from '../util/hash.ts';
import { decideTakeOver, type TakeOver } from './collision.ts';
import { crdKinds } from './crd-established.ts';
import { ignoredPointers, withoutIgnored } from './drift-ignore.ts';
import { liveMetaOf, type LiveIndex, type LiveMeta } from './live-index.ts';
import { dropServerFields, isCRD, isNamespace, objectId } from './object-id.ts';
import { planSteps, type ApplyStep } from './phases.ts';
import { ApplyCode, ConflictingOwnerError, ObjectsError } from './errors.ts';

/** opt-in per object: delete and re-create when an update hits an immutable field */
export const ANNOTATION_RECREATE = 'core.rukpak.io/recreate-on-immutable';

export interface ApplyTarget {
  /** the BundleDeployment's name */
  name: string;
  lineage: string;
  revision: number;
  protection: CollisionProtection;
  installNamespace?: string;
  /**
   * who reads and writes the objects (an impersonating client for the BD's ServiceAccount);
   * default the applier's own client. Discovery and the live index stay the controller's.
   */
  actor?: KubeClient;
  /** the appliedDigest another process recorded for this revision (ApplyReport.appliedDigest) */
  appliedDigest?: string;
  /**
   * Enforce: refuse CRD changes that break existing resources, before any write (the reconciler
   * passes the spec's value, default Enforce, when it applies a new revision); undefined or
   * None: not checked
   */
  crdSafety?: CRDSafety;
  /** spec.driftIgnore: fields set on create only, then neither applied nor taken over (drift-ignore.ts) */
  driftIgnore?: readonly DriftIgnoreRule[];
}

/** revision `revision` of bd as the applier applies it, `actor` acting for it */
export function applyTargetOf(bd: BundleDeployment, spec: DefaultedSpec, revision: number, actor: KubeClient): ApplyTarget {
  const recorded = bd.status?.activeRevision?.number === revision ? bd.status.activeRevision.appliedDigest : undefined;
  return {
    name: bd.metadata.name,
    lineage: lineageOf(bd),
    revision,
    protection: spec.collisionProtection,
    installNamespace: spec.installNamespace,
    actor,
    ...(recorded ? { appliedDigest: recorded } : {}),
    ...(spec.driftIgnore?.length ? { driftIgnore: spec.driftIgnore } : {}),
  };
}

export function fieldManagerFor(lineage: string): string {
  return `hoist-${lineage}`.slice(0, 128);
}

/** an object as the applier sends it */
export interface Prepared {
  /** the object as the bundle has it (steps are planned over these) */
  src: KubeObject;
  obj: KubeObject;
  info: ResourceInfo;
  id: string;
  subject: string;
  /** hash of the desired object: equal hash + equal live fingerprint = nothing to send */
  hash: string;
  /** fields driftIgnore rules name: `obj` is without them, `full` (applied on create) with them */
  ignored?: { pointers: string[]; full: KubeObject };
}

/** a prepared object with its collision verdict */
export interface Planned extends Prepared {
  decision: TakeOver;
  /** the live object read for the collision check (has managedFields), when one was read */
  live?: KubeObject;
  /**
   * no watch knows the object, so no Hoist lineage owns it: applied without force and without a
   * read; when it existed after all (unowned, or created since) that one alone is read and decided
   */
  presumed?: boolean;
}

/** what the planner may know without asking the API server, and when it may trust it */
export interface PlanEnv {
  /** the controller's client: discovery (the actor reads) */
  client: KubeClient;
  concurrency: number;
  /**
   * the watches' summaries: an object of this lineage they know is decided from its summary
   * when `trusted` says so (the applier: not hand-edited, no ignored fields it may still own);
   * without it every object is read
   */
  index?: { live: LiveIndex; trusted(p: Prepared, known: LiveMeta): boolean };
}

export interface ApplyPlan {
  /** the steps of phases.ts over the objects as the bundle has them */
  steps: ApplyStep<KubeObject>[];
  /** every object whose kind is served, decided */
  planned: Planned[];
  /** objects of kinds the bundle's own CRDs define, not served yet: prepared once those are */
  deferred: KubeObject[];
  /** "group/version Kind ns/name" of optional objects whose API is not served */
  skippedOptional: string[];
}

/**
 * Plans the apply of `objects` as revision `target.revision`: steps, preparation, collision
 * verdicts (refusals included: `refuseConflicts` turns them into the error). With `presume`
 * (a bundle without CRDs or Namespaces, see applier.ts), objects no synced watch knows are
 * decided as creates without a read. Throws a HoistError (stage apply): an apply-wave that is not
 * an integer, a kind that is not served, a read the actor may not make.
 */
export async function planApply(
  env: PlanEnv,
  target: ApplyTarget,
  objects: readonly KubeObject[],
  opts: { presume?: boolean; signal?: AbortSignal | undefined } = {},
): Promise<ApplyPlan> {
  const { steps, invalid } = planSteps(objects, (o) => o);
  if (invalid.length > 0) {
    throw new ObjectsError(
      ApplyCode.InvalidApplyWave,
      invalid.map((o) => ({ subject: describeObject(o), message: `annotation ${ANNOTATION_APPLY_WAVE} is not an integer` })),
      { terminal: true },
    );
  }
  // Kinds the bundle's own CRDs define may not be served yet: those wait until the CRDs are.
  const bundleKinds = new Set(objects.filter(isCRD).flatMap((crd) => crdKinds(crd)));
  const skippedOptional: string[] = [];
  const prepared = await prepareObjects(env.client, target, objects, bundleKinds, skippedOptional);
  const planned = await decideObjects(env, target, prepared.ready, { presume: opts.presume ?? false, signal: opts.signal });
  return { steps, planned, deferred: prepared.deferred, skippedOptional };
}

/** whether objects no watch knows may be presumed new: not when the bundle brings CRDs or Namespaces */
export function mayPresume(objects: readonly KubeObject[]): boolean {
  return !objects.some((o) => isCRD(o) || isNamespace(o));
}

/**
 * Sets namespace, ownership labels and revision annotation, and resolves each kind. Objects of
 * kinds that one of the bundle's own CRDs defines, not served yet, come back as `deferred`;
 * optional objects of kinds not served are added to `skipped`.
 */
export async function prepareObjects(
  client: KubeClient,
  target: ApplyTarget,
  objects: readonly KubeObject[],
  bundleKinds: ReadonlySet<string>,
  skipped: string[],
): Promise<{ ready: Prepared[]; deferred: KubeObject[] }> {
  const out: Prepared[] = [];
  const deferred: KubeObject[] = [];
  const failures: Array<{ subject: string; why: string }> = [];
  for (const src of objects) {
    // an optional object's kind stays unserved across reconciles: asking again must not refresh
    // discovery each time (the CRD watch refreshes it when a CRD becomes Established)
    const optional = src.metadata.annotations?.[ANNOTATION_OPTIONAL] === 'true';
    const info = await client.discovery.resourceFor(src, { refreshOnMiss: !optional });
    if (!info) {
      if (bundleKinds.has(`${src.apiVersion}/${src.kind}`)) deferred.push(src);
      else if (optional) skipped.push(describeObject(src));
      else failures.push({ subject: describeObject(src), why: `${src.apiVersion} ${src.kind} is not served by the api server` });
      continue;
    }
    // only metadata is changed below, and nothing downstream writes into a prepared object
    // (a drift-ignored one is copied by `ignoring`): the rendered spec is shared, not cloned
    const obj: KubeObject = { ...src, metadata: { ...src.metadata } };
    if (info.namespaced) {
      obj.metadata.namespace ??= target.installNamespace;
      if (!obj.metadata.namespace) {
        failures.push({ subject: describeObject(src), why: 'namespaced object without namespace and the BundleDeployment sets no installNamespace' });
        continue;
      }
    } else {
      delete obj.metadata.namespace;
    }
    obj.metadata.labels = { ...obj.metadata.labels, [LABEL_OWNER_NAME]: target.name, [LABEL_LINEAGE]: target.lineage };
    obj.metadata.annotations = { ...obj.metadata.annotations, [ANNOTATION_REVISION]: String(target.revision) };
    dropServerFields(obj);
    const ignored = ignoring(target.driftIgnore, obj);
    const sent = ignored?.obj ?? obj;
    out.push({
      src,
      obj: sent,
      info,
      id: objectId(obj),
      subject: describeObject(obj),
      hash: hashOf(sent),
      ...(ignored ? { ignored: { pointers: ignored.pointers, full: obj } } : {}),
    });
  }
  if (failures.length > 0) {
    // not terminal: the kind's CRD may come from another BundleDeployment or an operator (a
    // dependsOn target), or discovery may lag its Established condition by a moment
    throw new ObjectsError(
      ApplyCode.KindNotServed,
      failures.map((f) => ({ subject: f.subject, message: f.why })),
      { terminal: false },
    );
  }
  return { ready: out, deferred };
}

/**
 * Decides per object whether it may be taken over; reads the live object (as the actor) unless
 * the index vouches for it (or, with `presume`, no synced watch knows it), and always with
 * `read`. A read the API server refuses (forbidden) fails the whole plan, naming every refused
 * object: not terminal, RBAC is often granted after the BundleDeployment is created.
 */
export async function decideObjects(
  env: PlanEnv,
  target: ApplyTarget,
  prepared: readonly Prepared[],
  opts: { presume?: boolean; read?: boolean; signal?: AbortSignal | undefined } = {},
): Promise<Planned[]> {
  const me = { name: target.name, lineage: target.lineage, protection: target.protection };
  const client = target.actor ?? env.client;
  const refused: Array<{ subject: string; why: string }> = [];
  const planned = await mapLimit(prepared, env.concurrency, async (p): Promise<Planned | undefined> => {
    const known = env.index?.live.get(p.id);
    if (!opts.read && known && known.labels?.[LABEL_LINEAGE] === target.lineage && env.index!.trusted(p, known)) {
      return { ...p, decision: decideTakeOver(known, me, { crd: isCRD(p.obj) }) };
    }
    // a synced watch of the kind does not know it: no Hoist lineage owns it, it is most likely new
    if (opts.presume && !known && !p.ignored && env.index?.live.knows(p.id)) return { ...p, decision: { action: 'create' }, presumed: true };
    try {
      const live = await client.get(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, { signal: opts.signal });
      return { ...p, decision: decideTakeOver(live?.metadata, me, { crd: isCRD(p.obj) }), live };
    } catch (e) {
      if (!isForbidden(e)) throw e;
      refused.push({ subject: p.subject, why: `get refused: ${(e as ApiError).apiMessage}` });
      return undefined;
    }
  });
  if (refused.length > 0) {
    throw new ObjectsError(
      ApplyCode.Forbidden,
      refused.map((r) => ({ subject: r.subject, message: r.why })),
      { terminal: false },
    );
  }
  return planned.filter((p): p is Planned => p !== undefined);
}

/** collision protection's refusals, one line each: "subject is owned by owner: why" */
export function conflictsOf(planned: readonly Planned[]): Array<{ subject: string; line: string }> {
  return planned.flatMap((p) =>
    p.decision.action === 'refuse' ? [{ subject: p.subject, line: `${p.subject} is owned by ${p.decision.owner}: ${p.decision.why}` }] : [],
  );
}

/** throws ConflictingOwner (terminal) naming every object collision protection refuses */
export function refuseConflicts(planned: readonly Planned[]): void {
  const refused = conflictsOf(planned);
  if (refused.length === 0) return;
  throw new ConflictingOwnerError(
    planned.flatMap((p) => (p.decision.action === 'refuse' ? [{ subject: p.subject, owner: p.decision.owner, why: p.decision.why }] : [])),
  );
}

/**
 * Whose fields the apply of a planned object folds into Hoist's before it applies
 * (field-managers.ts): on adoption and takeover every manager's (`only` undefined); on an update
 * of a hand-edited object the interactive managers' (`overrideManagers`), so hand edits are
 * reverted; with driftIgnore rules an update at least gives up the ignored fields (`only` empty).
 * undefined: nothing is folded (a create, an object not read, an untouched update).
 */
export function takeOverScope(p: Planned, overrideManagers: ReadonlySet<string>): { only?: ReadonlySet<string> } | undefined {
  const action = p.decision.action;
  if (!p.live) return undefined;
  if (action === 'adopt' || action === 'steal') return {};
  if (action !== 'update') return undefined;
  const handEdited = liveMetaOf(p.live).managers?.some((m) => overrideManagers.has(m)) ?? false;
  if (handEdited) return { only: overrideManagers };
  return p.ignored ? { only: new Set() } : undefined;
}

/** the object without the fields driftIgnore rules name; Hoist's own labels and revision annotation always stay */
function ignoring(rules: readonly DriftIgnoreRule[] | undefined, obj: KubeObject): { pointers: string[]; obj: KubeObject } | undefined {
  const pointers = ignoredPointers(rules, obj);
  if (pointers.length === 0) return undefined;
  const stripped = withoutIgnored(obj, pointers).obj;
  const { labels, annotations } = obj.metadata;
  stripped.metadata.labels = { ...stripped.metadata.labels, [LABEL_OWNER_NAME]: labels![LABEL_OWNER_NAME]!, [LABEL_LINEAGE]: labels![LABEL_LINEAGE]! };
  stripped.metadata.annotations = { ...stripped.metadata.annotations, [ANNOTATION_REVISION]: annotations![ANNOTATION_REVISION]! };
  return { pointers, obj: stripped };
}

/** a revision as numbered and stored */
export interface NumberedRevision {
  number: number;
  contentDigest: string;
}

/**
 * The number rendered content gets: a stored revision (or the active one) with the same content
 * keeps its number (a restart, a roll back by spec); new content gets one above every number
 * stored or in status (revisions, active, attempted).
 */
export function revisionNumberFor(contentDigest: string, stored: readonly NumberedRevision[], status: BundleDeploymentStatus | undefined): number {
  if (status?.activeRevision?.contentDigest === contentDigest) return status.activeRevision.number;
  const same = stored.find((r) => r.contentDigest === contentDigest);
  if (same) return same.number;
  const known = [
    ...stored.map((r) => r.number),
    ...(status?.revisions ?? []).map((r) => r.number),
    status?.activeRevision?.number ?? 0,
    status?.attemptedRevision?.number ?? 0,
  ];
  return Math.max(0, ...known) + 1;
}

/**
 * The revisions whose objects a new revision `number` prunes once it applied completely: the
 * active one, and one a transition abandoned half-way through its phases (the spec moved on).
 */
export function replacedRevisions(status: BundleDeploymentStatus | undefined, number: number): NumberedRevision[] {
  const out: NumberedRevision[] = [];
  const active = status?.activeRevision;
  if (active && active.number !== number) out.push({ number: active.number, contentDigest: active.contentDigest });
  const t = status?.transition;
  if (t && t.revision !== number && t.revision !== active?.number) out.push({ number: t.revision, contentDigest: t.contentDigest });
  return out;
}

/** the API server's message about a refused apply, plus the offending fields when it names them */
export function applyErrorMessage(e: unknown): string {
  if (e instanceof ApiError) {
    const fields = (e.details?.causes ?? []).map((c) => c.field).filter(Boolean);
    const hint = isImmutableField(e)
      ? ` (immutable field${fields.length ? ` ${fields.join(', ')}` : ''}; annotate the object ${ANNOTATION_RECREATE}: "true" to allow delete and re-create)`
      : '';
    return `${e.apiMessage}${hint}`;
  }
  return e instanceof Error ? e.message : String(e);
}
