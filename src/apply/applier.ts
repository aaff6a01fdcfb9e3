/**
 * One file (over 400 lines) because apply is one pass whose parts (collision check, the steps,
 * the skip-if-unchanged records) share the Applier's per-BD state; phases, hooks, collision, CRD
 * safety, field managers and the live index live in their own modules.
 *
 * The server-side applier (DESIGN §2 Apply, §4), at the level of a revision's steps and their
 * objects: one field manager per lineage; the steps of phases.ts in order, the objects of one in
 * parallel with bounded concurrency (objects of the bundle's own CRD kinds once those CRDs are
 * Established); after each step a gate may stop the apply until what it applied is ready (the
 * reconciler's, for a new revision). Collisions are decided for every object before anything is
 * written — from the watches, else by a GET — so a refused takeover changes nothing. In a bundle
 * without CRDs or Namespaces an object the synced watches do not know is applied without force
 * and without that GET: created (201), or it existed after all and the write is handed back and
 * what the call created deleted before the refusal; one request per new object instead of two.
 * Objects whose desired state and live fingerprint are as they were after the last apply are not
 * sent at all.
 */
import type { Logger } from 'pino';
import {
  ANNOTATION_APPLY_WAVE,
  ANNOTATION_OPTIONAL,
  ANNOTATION_REVISION,
  LABEL_LINEAGE,
  LABEL_OWNER_NAME,
  type CollisionProtection,
  type CRDSafety,
  type DriftIgnoreRule,
} from '../../api/v1alpha2/types.ts';
import { ApiError, isConflict, isForbidden, isImmutableField, isInternalError, isInvalid, isMalformed, isNamespaceMissing, isTransient } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject, type ResourceInfo } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';
import { HoistError, FailureReason } from '../util/errors.ts';
import { hashOf } from '../util/hash.ts';
import { decideTakeOver, type TakeOver } from './collision.ts';
import { crdKinds, waitEstablished, waitServed } from './crd-established.ts';
import { planSteps } from './phases.ts';
import { crdUpgradeProblems, describeCrdProblem } from './crd-safety.ts';
import { ignoredPointers, splitFields, withoutIgnored } from './drift-ignore.ts';
import { DEFAULT_OVERRIDE_MANAGERS, fieldPaths, takeOverManagedFields, type ManagedFieldsEntry } from './field-managers.ts';
import { liveFingerprint, liveMetaOf, type LiveIndex, type LiveMeta } from './live-index.ts';
import { handBack, InstallNamespaces } from './unowned-writes.ts';
import { dropServerFields, isCRD, isNamespace, objectId } from './object-id.ts';
import type { ObjectResult } from './result.ts';

/** opt-in per object: delete and re-create when an update hits an immutable field */
export const ANNOTATION_RECREATE = 'core.rukpak.io/recreate-on-immutable';
/**
 * Called after each step of a phased apply but the last, once its writes are done: whether the
 * next step may be applied (every object so far ready), or what it waits for.
 */
export type StepGate = (step: { name: string; next: string; objects: readonly KubeObject[]; results: readonly ObjectResult[] }) => Promise<{ ready: true } | { ready: false; waiting: string }>;

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

export interface ApplyReport {
  results: ObjectResult[];
  /** "group/version Kind ns/name" of optional objects whose API is not served */
  skippedOptional: string[];
  /**
   * digest of what was applied and how the live objects looked right after (hash + live
   * fingerprint of each): recorded in status, it lets the next process that reconciles the BD (a
   * shard taking over, a restart) see that nothing changed without applying again
   */
  appliedDigest?: string;
  /**
   * set when a gate stopped the apply before step `step`: `after` is not ready yet (`waiting`
   * says which objects and why); the objects of `step` and later steps were not applied
   */
  pending?: { step: string; after: string; waiting: string };
}

export interface ApplierOptions {
  log: Logger;
  /** concurrent requests in the parallel phase (default 8) */
  concurrency?: number;
  /** how long to wait for CRDs to become Established (default 60s) */
  crdEstablishTimeoutMs?: number;
  live?: LiveIndex;
  /** field managers whose fields every apply takes over, so hand edits are reverted (default DEFAULT_OVERRIDE_MANAGERS) */
  overrideManagers?: readonly string[];
}

interface Prepared {
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

/** what the applier remembers of an object it applied: enough to skip it next time */
interface AppliedRecord {
  /** desired hash */
  hash: string;
  /** live fingerprint right after the apply */
  fingerprint: string;
  /** the object this process wrote: a presumed create that finds it again finds its own write */
  uid?: string;
  resourceVersion?: string;
  /** the driftIgnore pointers whose fields Hoist gave up */
  released?: string;
  /** interactive managers left on the object after the apply: they hold only ignored fields */
  heldBy?: string[];
}

interface Planned extends Prepared {
  decision: TakeOver;
  /** the live object read for the collision check (has managedFields), when one was read */
  live?: KubeObject;
  /**
   * no watch knows the object, so no Hoist lineage owns it: applied without force and without a
   * read; when it existed after all (unowned, or created since) that one alone is read and decided
   */
  presumed?: boolean;
}

/** an object this apply call created, with the uid its create returned (the undo deletes only that one) */
interface Created extends Planned {
  createdUid: string;
}

/** per apply call: creates the install namespace once, when a write finds it missing; false when it may not */
type EnsureNamespace = () => Promise<boolean>;

function digestOfRecords(records: ReadonlyMap<string, { hash: string; fingerprint: string }>, ids: readonly string[]): string {
  return hashOf([...ids].sort().map((id) => [id, records.get(id)!.hash, records.get(id)!.fingerprint]));
}

export function fieldManagerFor(lineage: string): string {
  return `hoist-${lineage}`.slice(0, 128);
}

export class Applier {
  private readonly log: Logger;
  private readonly concurrency: number;
  private readonly crdTimeoutMs: number;
  private readonly live: LiveIndex | undefined;
  private readonly overrideManagers: ReadonlySet<string>;
  /** per BD: objectId → desired hash and the live fingerprint right after it was applied */
  private readonly applied = new Map<string, Map<string, AppliedRecord>>();
  private readonly installNamespaces: InstallNamespaces;
  /**
   * BDs whose presumed creates met an existing object or a refusal: undoing those writes makes
   * watch events that reconcile the BD again, so until it applies cleanly it reads first instead
   */
  private readonly readFirst = new Set<string>();

  constructor(
    private readonly client: KubeClient,
    opts: ApplierOptions,
  ) {
    this.log = opts.log;
    this.concurrency = opts.concurrency ?? 8;
    this.crdTimeoutMs = opts.crdEstablishTimeoutMs ?? 60_000;
    this.live = opts.live;
    this.installNamespaces = new InstallNamespaces(opts.log);
    this.overrideManagers = new Set(opts.overrideManagers ?? DEFAULT_OVERRIDE_MANAGERS);
  }

  /**
   * true when an interactive manager (kubectl edit/set/patch...) owns fields of the live object —
   * unless (given what was applied) those managers were left holding only ignored fields and the
   * object has not changed since, so an object with such a manager costs no request when unchanged
   */
  private handEdited(live: LiveMeta | undefined, rec?: AppliedRecord, desired?: KubeObject['metadata']): boolean {
    const hand = live?.managers?.filter((m) => this.overrideManagers.has(m)) ?? [];
    if (hand.length === 0) return false;
    return !(rec?.heldBy && desired && hand.every((m) => rec.heldBy!.includes(m)) && rec.fingerprint === liveFingerprint(live!, desired));
  }

  /**
   * The install namespace exists (created when missing, as an apply would) before anything else
   * of the revision is written: Helm hooks run before the revision's objects, as with
   * `helm install --create-namespace`.
   */
  async ensureInstallNamespace(target: ApplyTarget, objects: readonly KubeObject[]): Promise<void> {
    if (!target.installNamespace || this.installNamespaces.known(target.installNamespace)) return;
    await this.installNamespaces.ensure(this.actor(target), target.installNamespace, objects);
  }

  /**
   * The uid of the object this process last wrote as `obj` for BD `bdName`, when it wrote one:
   * prune and uninstall delete only that object (an object replaced since is someone else's).
   */
  writtenUid(bdName: string, obj: KubeObject): string | undefined {
    return this.applied.get(bdName)?.get(objectId(obj))?.uid;
  }

  /** forget what was applied for a BD (deleted, or its objects were re-rendered elsewhere) */
  forget(bdName: string): void {
    this.applied.delete(bdName);
    this.readFirst.delete(bdName);
  }

  /**
   * Applies every object. Throws a HoistError (stage apply): ConflictingOwner before any write
   * when an object may not be taken over; UnsafeCRDUpgrade before any write when a changed CRD
   * would break existing resources (crd-safety.ts); ApplyFailed naming every object that failed.
   */
  async apply(target: ApplyTarget, objects: readonly KubeObject[], opts: { gate?: StepGate } = {}): Promise<ApplyReport> {
    const manager = fieldManagerFor(target.lineage);
    const results: ObjectResult[] = [];
    const skippedOptional: string[] = [];
    const applied: KubeObject[] = [];

    const { steps, invalid } = planSteps(objects, (o) => o);
    if (invalid.length > 0) {
      throw new HoistError(invalid.map((o) => `${describeObject(o)}: annotation ${ANNOTATION_APPLY_WAVE} is not an integer`).join('; '), { stage: 'apply', code: 'invalid-apply-wave', subject: invalid.length === 1 ? describeObject(invalid[0]!) : `${invalid.length} objects`, terminal: true });
    }
    // Kinds the bundle's own CRDs define may not be served yet: those wait until the CRDs are.
    const bundleKinds = new Set(objects.filter(isCRD).flatMap((crd) => crdKinds(crd)));
    const prepared = await this.prepare(target, objects, bundleKinds, skippedOptional);
    // Without CRDs or Namespaces in the bundle, objects no watch knows are created without reading
    // them first: every create of the call can still be undone if one collides.
    const presume = !objects.some((o) => isCRD(o) || isNamespace(o)) && !this.readFirst.has(target.name);
    // Plan (collision checks) for everything that is already resolvable, before any write.
    const planned = await this.plan(target, prepared.ready, presume);
    this.refuseConflicts(planned);
    if (prepared.deferred.length === 0) this.adoptRecords(target, planned);
    if (target.crdSafety === 'Enforce') await this.refuseUnsafeCRDs(target, planned.filter((p) => isCRD(p.obj)));

    const ensureNs = this.namespaceEnsurer(target, objects);
    // the install namespace is read once per process (created when missing); a write that finds it
    // gone since then creates it again (intoNamespace)
    const needsWrite = planned.some((p) => !this.unchanged(target.name, p)) || prepared.deferred.length > 0;
    if (needsWrite && target.installNamespace && !this.installNamespaces.known(target.installNamespace)) await ensureNs();

    const bySource = new Map(planned.map((p) => [p.src, p]));
    const deferred = new Set(prepared.deferred);
    const created: Created[] = [];
    let established: Promise<void> = Promise.resolve();
    const live = steps.filter((st) => st.items.some((o) => !skippedOptional.includes(describeObject(o))));
    for (const [i, step] of live.entries()) {
      let batch = step.items.flatMap((o) => {
        const p = bySource.get(o);
        return p ? [p] : [];
      });
      const waiting = step.items.filter((o) => deferred.has(o));
      if (waiting.length > 0) {
        // objects of the bundle's own CRD kinds: once those CRDs are Established and served
        await established;
        await waitServed(this.client, waiting, this.crdTimeoutMs);
        const resolved = await this.prepare(target, waiting, new Set(), skippedOptional);
        const more = await this.plan(target, resolved.ready);
        this.refuseConflicts(more);
        batch = [...batch, ...more];
      }
      const stepResults = await this.applyStep(target, manager, batch, ensureNs, created);
      results.push(...stepResults);
      applied.push(...batch.map((p) => p.obj));
      this.failIfAny(results);
      const crds = batch.filter((p) => isCRD(p.obj));
      if (crds.length > 0 && stepResults.some((r) => crds.some((c) => c.id === r.id) && r.action !== 'unchanged')) {
        established = waitEstablished(this.actor(target), crds.map((c) => c.obj.metadata.name), this.crdTimeoutMs).then(() => this.client.discovery.invalidate());
        // keep a rejection observed until it is awaited
        established.catch(() => {});
      }
      // the last step's readiness is the rollout's to observe; a gate decides whether the next step may go
      if (opts.gate && i < live.length - 1) {
        if (crds.length > 0) await established;
        const verdict = await opts.gate({ name: step.name, objects: batch.map((p) => p.obj), results: stepResults, next: live[i + 1]!.name });
        if (!verdict.ready) {
          this.readFirst.delete(target.name);
          return { results, skippedOptional, pending: { step: live[i + 1]!.name, after: step.name, waiting: verdict.waiting } };
        }
      }
    }
    // installed means usable: the CRDs serve their kinds
    await established;
    this.readFirst.delete(target.name);
    const appliedDigest = this.digestOf(target.name, applied.map(objectId));
    return { results, skippedOptional, ...(appliedDigest ? { appliedDigest } : {}) };
  }

  /**
   * The first apply of a BD in this process: when target.appliedDigest (recorded by whichever
   * process applied last) matches every object's desired hash and current live fingerprint, those
   * records are taken as this process's own, so nothing unchanged is sent again.
   */
  private adoptRecords(target: ApplyTarget, planned: readonly Planned[]): void {
    if (!target.appliedDigest || this.applied.has(target.name)) return;
    const records = new Map<string, { hash: string; fingerprint: string }>();
    for (const p of planned) {
      const live = p.live ? liveMetaOf(p.live) : this.live?.get(p.id);
      if (p.decision.action !== 'update' || !live) return;
      records.set(p.id, { hash: p.hash, fingerprint: liveFingerprint(live, p.obj.metadata) });
    }
    if (digestOfRecords(records, [...records.keys()]) === target.appliedDigest) this.applied.set(target.name, records);
  }

  private digestOf(bd: string, ids: readonly string[]): string | undefined {
    const records = this.applied.get(bd);
    return records && ids.every((id) => records.has(id)) ? digestOfRecords(records, ids) : undefined;
  }

  /**
   * Sets namespace, ownership labels and revision annotation, and resolves each kind. Objects of
   * kinds that one of the bundle's own CRDs defines, not served yet, come back as `deferred`.
   */
  private async prepare(target: ApplyTarget, objects: readonly KubeObject[], bundleKinds: ReadonlySet<string>, skipped: string[]): Promise<{ ready: Prepared[]; deferred: KubeObject[] }> {
    const out: Prepared[] = [];
    const deferred: KubeObject[] = [];
    const failures: string[] = [];
    for (const src of objects) {
      // an optional object's kind stays unserved across reconciles: asking again must not refresh
      // discovery each time (the CRD watch refreshes it when a CRD becomes Established)
      const optional = src.metadata.annotations?.[ANNOTATION_OPTIONAL] === 'true';
      const info = await this.client.discovery.resourceFor(src, { refreshOnMiss: !optional });
      if (!info) {
        const kindKey = `${src.apiVersion}/${src.kind}`;
        if (bundleKinds.has(kindKey)) {
          deferred.push(src);
          continue;
        }
        if (optional) {
          skipped.push(describeObject(src));
          continue;
        }
        failures.push(`${describeObject(src)}: ${src.apiVersion} ${src.kind} is not served by the api server`);
        continue;
      }
      const obj = structuredClone(src);
      if (info.namespaced) {
        obj.metadata.namespace ??= target.installNamespace;
        if (!obj.metadata.namespace) {
          failures.push(`${describeObject(src)}: namespaced object without namespace and the BundleDeployment sets no installNamespace`);
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
      out.push({ src, obj: sent, info, id: objectId(obj), subject: describeObject(obj), hash: hashOf(sent), ...(ignored ? { ignored: { pointers: ignored.pointers, full: obj } } : {}) });
    }
    if (failures.length > 0) {
      throw new HoistError(failures.join('; '), { stage: 'apply', code: 'kind-not-served', subject: failures.length === 1 ? failures[0]!.split(':')[0] : `${failures.length} objects`, terminal: true });
    }
    return { ready: out, deferred };
  }

  /**
   * Decides per object whether it may be taken over; reads the live object (as the actor) only
   * when the watches do not know it. A read the API server refuses (forbidden) fails the whole
   * apply before any write, naming every refused object.
   */
  private async plan(target: ApplyTarget, prepared: ReadonlyArray<Prepared>, presume = false, read = false): Promise<Planned[]> {
    const me = { name: target.name, lineage: target.lineage, protection: target.protection };
    const client = this.actor(target);
    const refused: string[] = [];
    const planned = await mapLimit(prepared, this.concurrency, async (p): Promise<Planned | undefined> => {
      const known = this.live?.get(p.id);
      // hand-edited objects are read (their managedFields are needed to take the edits over), and
      // objects with ignored fields Hoist may still own (a new rule, a restart); only they
      if (!read && known && known.labels?.[LABEL_LINEAGE] === target.lineage && !this.handEdited(known, this.applied.get(target.name)?.get(p.id), p.obj.metadata) && !this.mayOwnIgnored(target.name, p)) {
        return { ...p, decision: decideTakeOver(known, me, { crd: isCRD(p.obj) }) };
      }
      // a synced watch of the kind does not know it: no Hoist lineage owns it, it is most likely new
      if (presume && !known && !p.ignored && this.live?.knows(p.id)) return { ...p, decision: { action: 'create' }, presumed: true };
      try {
        const live = await client.get(p.obj, p.obj.metadata.name, p.obj.metadata.namespace);
        return { ...p, decision: decideTakeOver(live?.metadata, me, { crd: isCRD(p.obj) }), live };
      } catch (e) {
        if (!isForbidden(e)) throw e;
        refused.push(`${p.subject}: get refused: ${(e as ApiError).apiMessage}`);
        return undefined;
      }
    });
    if (refused.length > 0) {
      // not terminal: RBAC is often granted after the BundleDeployment is created
      throw new HoistError(refused.join('; '), { stage: 'apply', code: 'forbidden', subject: refused.length === 1 ? refused[0]!.split(':')[0]! : `${refused.length} objects`, terminal: false });
    }
    return planned.filter((p): p is Planned => p !== undefined);
  }

  private actor(target: ApplyTarget): KubeClient {
    return target.actor ?? this.client;
  }

  private refuseConflicts(planned: readonly Planned[]): void {
    const refused = planned.filter((p) => p.decision.action === 'refuse');
    if (refused.length === 0) return;
    const lines = refused.map((p) => {
      const d = p.decision as Extract<TakeOver, { action: 'refuse' }>;
      return `${p.subject} is owned by ${d.owner}: ${d.why}`;
    });
    throw new HoistError(lines.join('; '), {
      stage: 'apply',
      reason: FailureReason.ConflictingOwner,
      code: 'conflicting-owner',
      subject: refused.length === 1 ? refused[0]!.subject : `${refused.length} objects`,
      terminal: true,
    });
  }

  /**
   * Compares every CRD this apply would change with the one installed (read unless the plan
   * already did; one GET per changed CRD, none when nothing changed) and refuses the whole apply
   * when any change would break existing custom resources. Terminal: the same content stays unsafe.
   */
  private async refuseUnsafeCRDs(target: ApplyTarget, planned: readonly Planned[]): Promise<void> {
    const changed = planned.filter((p) => isCRD(p.obj) && p.decision.action !== 'create' && !this.unchanged(target.name, p));
    const problems = (
      await mapLimit(changed, this.concurrency, async (p) => {
        const live = p.live ?? (await this.actor(target).get(p.obj, p.obj.metadata.name));
        return live ? crdUpgradeProblems(live, p.obj) : [];
      })
    ).flat();
    if (problems.length === 0) return;
    const crds = [...new Set(problems.map((p) => p.crd))];
    throw new HoistError(`${problems.map(describeCrdProblem).join('; ')} (upgrade.crdSafety: None applies it anyway)`, {
      stage: 'apply',
      reason: FailureReason.UnsafeCRDUpgrade,
      code: 'unsafe-crd-upgrade',
      subject: crds.length === 1 ? `apiextensions.k8s.io/v1 CustomResourceDefinition ${crds[0]}` : `${crds.length} CustomResourceDefinitions`,
      terminal: true,
    });
  }

  private unchanged(bd: string, p: Planned): boolean {
    if (p.decision.action !== 'update') return false;
    const rec = this.applied.get(bd)?.get(p.id);
    const live = p.live ? liveMetaOf(p.live) : this.live?.get(p.id);
    if (this.handEdited(live, rec, p.obj.metadata)) return false;
    return !!rec && !!live && rec.hash === p.hash && rec.fingerprint === liveFingerprint(live, p.obj.metadata);
  }

  /** true when Hoist may own fields driftIgnore rules name: not given up since this process applied the object */
  private mayOwnIgnored(bd: string, p: Prepared): boolean {
    return !!p.ignored && this.applied.get(bd)?.get(p.id)?.released !== p.ignored.pointers.join('\n');
  }

  private async applyAll(target: ApplyTarget, manager: string, planned: readonly Planned[], ensureNs: EnsureNamespace): Promise<ObjectResult[]> {
    // only presumed creates come back undefined, and applyPhase sends those itself
    return (await mapLimit(planned, this.concurrency, (p) => this.applyOne(target, manager, p, ensureNs))).filter((r): r is ObjectResult => r !== undefined);
  }

  /**
   * One step: presumed-new objects are created first; any that existed after all is read and
   * decided as the plan would have, and when one must be refused, what this call created (in
   * this step and the steps before it) is deleted again before ConflictingOwner is thrown — so a
   * refusal still changes nothing.
   */
  private async applyStep(target: ApplyTarget, manager: string, batch: readonly Planned[], ensureNs: EnsureNamespace, created: Created[]): Promise<ObjectResult[]> {
    const presumed = batch.filter((p) => p.presumed);
    if (presumed.length === 0) return this.applyAll(target, manager, batch, ensureNs);
    const existing: Planned[] = [];
    const results = (
      await mapLimit(presumed, this.concurrency, async (p) => {
        const r = await this.applyOne(target, manager, p, ensureNs);
        if (!r) existing.push(p);
        else if (r.action === 'created' && r.written) created.push({ ...p, createdUid: r.written.uid });
        return r;
      })
    ).filter((r): r is ObjectResult => r !== undefined);
    let others = batch.filter((p) => !p.presumed);
    // as a refused read would have: nothing of the revision stays when the actor may not create an object
    const forbidden = results.filter((r) => r.action === 'failed' && r.forbidden);
    if (forbidden.length > 0 || existing.length > 0) this.readFirst.add(target.name);
    if (forbidden.length > 0) {
      await this.undoCreates(target, created);
      throw new HoistError(forbidden.map((r) => `${r.subject}: apply refused: ${r.message}`).join('; '), { stage: 'apply', code: 'forbidden', subject: forbidden.length === 1 ? forbidden[0]!.subject : `${forbidden.length} objects`, terminal: false });
    }
    if (existing.length > 0) {
      try {
        // read, not the watch: it may have seen the apply that was just handed back
        const decided = await this.plan(target, existing.map((p) => ({ ...p, presumed: false })), false, true);
        this.refuseConflicts(decided);
        others = [...others, ...decided];
      } catch (e) {
        await this.undoCreates(target, created);
        throw e;
      }
    }
    return [...results, ...(await this.applyAll(target, manager, others, ensureNs))];
  }

  /**
   * Deletes the objects this apply call created (each was new: nobody else had it), each by the
   * uid its create returned: an object replaced since (deleted and created again by someone else)
   * is left alone.
   */
  private async undoCreates(target: ApplyTarget, created: readonly Created[]): Promise<void> {
    const client = this.actor(target);
    await mapLimit(created, this.concurrency, async (p) => {
      try {
        await client.delete(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, { uid: p.createdUid, propagationPolicy: 'Background' });
        this.applied.get(target.name)?.delete(p.id);
      } catch (e) {
        if (isConflict(e)) {
          this.applied.get(target.name)?.delete(p.id);
          this.log.info({ object: p.subject, uid: p.createdUid }, 'not undoing a create: the object was replaced since (uid precondition failed)');
          return;
        }
        this.log.warn({ object: p.subject, err: e instanceof Error ? e.message : String(e) }, 'could not delete an object created before a collision was found');
      }
    });
  }

  /** per apply call, at most once: the install namespace is read, and created (unlabelled, never deleted) when missing */
  private namespaceEnsurer(target: ApplyTarget, objects: readonly KubeObject[]): EnsureNamespace {
    let once: Promise<boolean> | undefined;
    return () => (once ??= this.installNamespaces.ensure(this.actor(target), target.installNamespace, objects));
  }

  /** `write`, again after creating the install namespace when the first try found it missing */
  private async intoNamespace<T>(target: ApplyTarget, ensureNs: EnsureNamespace, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (e) {
      if (!target.installNamespace || !isNamespaceMissing(e, target.installNamespace)) throw e;
      this.installNamespaces.forget(target.installNamespace);
      if (!(await ensureNs())) throw e;
      return write();
    }
  }

  /** undefined: a presumed-new object existed after all (the server refused the create; nothing was written) */
  private async applyOne(target: ApplyTarget, manager: string, p: Planned, ensureNs: EnsureNamespace): Promise<ObjectResult | undefined> {
    if (this.unchanged(target.name, p)) return { id: p.id, subject: p.subject, action: 'unchanged' };
    // read before the write: the watch may deliver our own write to the live index before apply returns
    let before = p.live?.metadata.resourceVersion ?? this.live?.get(p.id)?.resourceVersion;
    const client = this.actor(target);
    const ignored = p.ignored?.pointers;
    try {
      const action = p.decision.action;
      let reverted: string[] | undefined;
      if ((action === 'adopt' || action === 'steal') && p.live) await this.takeOverFields(client, p.live, p, manager, undefined, ignored);
      else if (action === 'update' && p.live && (ignored || this.handEdited(liveMetaOf(p.live)))) {
        const taken = await this.takeOverFields(client, p.live, p, manager, this.handEdited(liveMetaOf(p.live)) ? this.overrideManagers : new Set(), ignored);
        reverted = taken.paths;
        // giving up ignored fields alone changes nothing the bundle says: not a correction
        if (taken.paths.length === 0 && taken.patched) before = taken.patched.metadata.resourceVersion;
      }
      // the bundle's values of ignored fields are the starting point of an object Hoist creates
      const body = action === 'create' && p.ignored ? p.ignored.full : p.obj;
      let created = action === 'create';
      let reportCreated = created;
      let result: KubeObject;
      try {
        if (p.presumed) {
          // without force: on an object that exists after all, another manager's field makes it a conflict (nothing written)
          let out: { object: KubeObject; created: boolean };
          try {
            out = await this.intoNamespace(target, ensureNs, () => client.applyCreating(body, { fieldManager: manager, force: false }));
          } catch (e) {
            // a create has no immutable fields: an immutable-field refusal, like a conflict, means
            // it existed after all and nothing was written — read and decided, never re-created here
            if (isConflict(e) || isImmutableField(e)) return undefined;
            throw e;
          }
          if (!out.created) {
            // our own earlier write the watch has not delivered yet (a reconcile ran again meanwhile)
            // is ours to keep, reported as an update of it; anything else existed after all
            const own = this.applied.get(target.name)?.get(p.id);
            if (!own || own.uid !== out.object.metadata.uid) {
              await handBack(client, out.object, manager, this.log);
              return undefined;
            }
            reportCreated = false;
            before = own.resourceVersion;
          }
          result = out.object;
        } else {
          result = await this.intoNamespace(target, ensureNs, () => client.apply(body, { fieldManager: manager, force: true }));
        }
      } catch (e) {
        if (!(isImmutableField(e) && p.obj.metadata.annotations?.[ANNOTATION_RECREATE] === 'true')) throw e;
        result = await this.recreate(target, client, manager, p);
        created = true;
      }
      // ...and then given up, so that later applies (which leave them out) neither set nor remove them
      if (created && ignored) result = (await this.takeOverFields(client, result, p, manager, new Set(), ignored)).patched ?? result;
      const meta = liveMetaOf(result);
      let perBd = this.applied.get(target.name);
      if (!perBd) this.applied.set(target.name, (perBd = new Map()));
      const heldBy = ignored ? meta.managers?.filter((m) => this.overrideManagers.has(m)) : undefined;
      perBd.set(p.id, {
        hash: p.hash,
        fingerprint: liveFingerprint(meta, p.obj.metadata),
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
        ...(ignored ? { released: ignored.join('\n') } : {}),
        ...(heldBy?.length ? { heldBy } : {}),
      });
      const verb = reportCreated ? 'created' : action === 'adopt' || action === 'steal' ? 'adopted' : before === meta.resourceVersion ? 'unchanged' : 'configured';
      this.log.debug({ object: p.subject, action: verb }, 'applied');
      const written = verb === 'unchanged' ? undefined : { uid: meta.uid, ...(meta.generation !== undefined ? { generation: meta.generation } : {}) };
      return { id: p.id, subject: p.subject, action: verb, ...(reverted?.length ? { reverted } : {}), ...(written ? { written } : {}) };
    } catch (e) {
      const malformed = isInternalError(e) && (await this.malformed(client, p));
      const transient = !malformed && (isTransient(e) || isConflict(e) || isForbidden(e) || (e instanceof HoistError && !e.terminal));
      return { id: p.id, subject: p.subject, action: 'failed', message: applyErrorMessage(e), transient, ...(isForbidden(e) ? { forbidden: true } : {}) };
    }
  }

  /**
   * Server-side apply answers content it cannot type (a string where the schema says integer,
   * YAML 1.1's `yes` read as true in a ConfigMap) with a 500, as it answers a failing server or
   * webhook. A dry-run create of the same object decodes it the classic way, where such content
   * is a 400 (or 422): then the failure is the bundle's, not worth retrying. One request, on a 500 only.
   */
  private async malformed(client: KubeClient, p: Planned): Promise<boolean> {
    // p.obj is the apply body: prepare() already dropped the fields a create may not carry
    return client.create(p.obj, { dryRun: true }).then(
      () => false,
      (e: unknown) => isMalformed(e),
    );
  }

  /**
   * Folds other managers' fields (with `only`, those managers') into ours, with a resourceVersion
   * test so a racing write wins; a write that raced (a controller updating status) makes it read
   * the object again and retry. Returns "manager: field path" of what was taken over.
   */
  private async takeOverFields(client: KubeClient, live: KubeObject, p: Planned, manager: string, only?: ReadonlySet<string>, ignored?: readonly string[]): Promise<{ paths: string[]; patched?: KubeObject }> {
    for (let attempt = 1; ; attempt++) {
      const entries = (live.metadata.managedFields ?? []) as ManagedFieldsEntry[];
      const current = live;
      const hold = ignored ? (fields: Record<string, unknown>) => splitFields(fields, current, ignored) : undefined;
      const merged = takeOverManagedFields(entries, manager, p.obj.apiVersion, only, hold);
      if (!merged) return { paths: [] };
      const taken = entries.filter((e) => !e.subresource && e.manager !== manager && (!only || only.has(e.manager ?? '')));
      try {
        const patched = await client.patch(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, [
          { op: 'test', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion },
          { op: 'replace', path: '/metadata/managedFields', value: merged },
        ], 'json');
        return { paths: taken.flatMap((e) => fieldPaths(hold ? hold(e.fieldsV1 ?? {}).rest : e.fieldsV1).map((f) => `${e.manager}: ${f}`)), patched };
      } catch (e) {
        // a failed JSON-patch test is 422 Invalid (or 409): someone wrote in between
        if (attempt >= 3 || !(isInvalid(e) || isConflict(e))) throw e;
        const again = await client.get(p.obj, p.obj.metadata.name, p.obj.metadata.namespace);
        if (!again) throw e;
        live = again;
      }
    }
  }

  private failIfAny(results: readonly ObjectResult[]): void {
    const failed = results.filter((r) => r.action === 'failed');
    if (failed.length === 0) return;
    throw new HoistError(failed.map((f) => `${f.subject}: ${f.message}`).join('; '), {
      stage: 'apply',
      code: 'apply-failed',
      subject: failed.length === 1 ? failed[0]!.subject : `${failed.length} objects`,
      // the API server refusing an object is a property of the bundle; retrying the same content
      // only helps for transient failures (no response, 5xx, throttling, conflicts) and missing
      // RBAC, and not at all when any object was refused
      terminal: failed.some((f) => !f.transient),
    });
  }




  /**
   * Delete and re-create for an immutable-field change (opt-in per object), only of the object the
   * plan decided this BundleDeployment may write: the DELETE carries that object's uid, so an
   * object replaced since (another uid) is never deleted; an object the plan did not see (it was
   * created after the plan, by someone else) is never deleted at all; and the re-create is an
   * apply without force that must create, so an object someone else created in between is
   * handed back, not taken. Each refusal is transient: the next reconcile reads and decides again.
   */
  private async recreate(target: ApplyTarget, client: KubeClient, manager: string, p: Planned): Promise<KubeObject> {
    const uid = p.decision.action === 'create' ? undefined : (p.live?.metadata.uid ?? this.live?.get(p.id)?.uid ?? this.applied.get(target.name)?.get(p.id)?.uid);
    const refuse = (why: string) => new HoistError(`not re-created: ${why}`, { stage: 'apply', code: 'recreate-refused', subject: p.subject, terminal: false });
    if (!uid) throw refuse('it did not exist when this apply decided what it may write, so it is not this BundleDeployment\'s');
    this.log.info({ object: p.subject, uid }, 're-creating object to change an immutable field');
    try {
      await client.delete(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, { uid, propagationPolicy: 'Background' });
    } catch (e) {
      // 409: the uid precondition failed, the object by this name is another one now
      if (isConflict(e)) throw refuse(`it was replaced since it was read (uid ${uid} precondition failed); nothing deleted`);
      throw e;
    }
    await this.waitGone(client, p, uid);
    let out: { object: KubeObject; created: boolean };
    try {
      out = await client.applyCreating(p.ignored?.full ?? p.obj, { fieldManager: manager, force: false });
    } catch (e) {
      if (isConflict(e)) throw refuse('another object by this name was created after the delete');
      throw e;
    }
    if (!out.created) {
      await handBack(client, out.object, manager, this.log);
      throw refuse('another object by this name was created after the delete');
    }
    return out.object;
  }

  /** until the object of `uid` is gone; an object of another uid by that name is someone else's */
  private async waitGone(client: KubeClient, p: Planned, uid: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const live = await client.get(p.obj, p.obj.metadata.name, p.obj.metadata.namespace);
      if (!live || live.metadata.uid !== uid) return;
      if (Date.now() > deadline) throw new HoistError(`still exists 60s after delete for re-creation`, { stage: 'apply', code: 'recreate-pending', subject: p.subject, terminal: false });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
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


/** the API server's message, plus the offending fields when it names them */
function applyErrorMessage(e: unknown): string {
  if (e instanceof ApiError) {
    const fields = (e.details?.causes ?? []).map((c) => c.field).filter(Boolean);
    const hint = isImmutableField(e) ? ` (immutable field${fields.length ? ` ${fields.join(', ')}` : ''}; annotate the object ${ANNOTATION_RECREATE}: "true" to allow delete and re-create)` : '';
    return `${e.apiMessage}${hint}`;
  }
  return e instanceof Error ? e.message : String(e);
}
