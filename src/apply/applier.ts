/**
 * One file (over 400 lines) because apply is one pass whose parts (the steps, presumed creates and
 * their undo, the skip-if-unchanged records) share the Applier's per-BD state; what it decides
 * before any write — preparation, driftIgnore, collision verdicts, whose fields it takes over — is
 * plan.ts's (the plan `hoist diff` previews too); phases, hooks, collision, CRD safety, field
 * managers and the live index live in their own modules.
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
import { isConflict, isForbidden, isImmutableField, isInternalError, isInvalid, isMalformed, isNamespaceMissing, isTransient } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';
import { CancelledError, HoistError, throwIfCancelled } from '../util/errors.ts';
import { hashOf } from '../util/hash.ts';
import { waitEstablished, waitServed } from './crd-established.ts';
import { crdUpgradeProblems, describeCrdRefusal } from './crd-safety.ts';
import { splitFields } from './drift-ignore.ts';
import { DEFAULT_OVERRIDE_MANAGERS, takenPaths, takeOverManagedFields, type ManagedFieldsEntry } from './field-managers.ts';
import { KEPT_MANAGER } from './retention.ts';
import { liveFingerprint, liveMetaOf, type LiveIndex, type LiveMeta } from './live-index.ts';
import { handBack, InstallNamespaces } from './install-namespace.ts';
import { waitGone } from './wait-gone.ts';
import { isCRD, objectId } from './object-id.ts';
import {
  ANNOTATION_RECREATE,
  applyErrorMessage,
  decideObjects,
  fieldManagerFor,
  mayPresume,
  planApply,
  prepareObjects,
  refuseConflicts,
  takeOverScope,
  type ApplyTarget,
  type PlanEnv,
  type Planned,
  type Prepared,
} from './plan.ts';
import type { ObjectResult } from './result.ts';
import { ApplyCode, ObjectsError, UnsafeCrdChangeError } from './errors.ts';

export { ANNOTATION_RECREATE, fieldManagerFor, type ApplyTarget };

/**
 * Called after each step of a phased apply but the last, once its writes are done: whether the
 * next step may be applied (every object so far ready), or what it waits for.
 */
export type StepGate = (step: {
  name: string;
  next: string;
  objects: readonly KubeObject[];
  results: readonly ObjectResult[];
}) => Promise<{ ready: true } | { ready: false; waiting: string; failed?: boolean }>;

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
   * says which objects and why; `failed`: one of them failed and will not become ready); the
   * objects of `step` and later steps were not applied
   */
  pending?: { step: string; after: string; waiting: string; failed?: boolean };
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
  /** the clock bounded waits are measured on (default the wall clock) */
  now?: () => Date;
}

/** how long a delete for re-creation may take before the apply gives up on it (retried) */
const RECREATE_WAIT_MS = 60_000;

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

/** an object this apply call created, with the uid its create returned (the undo deletes only that one) */
interface Created extends Planned {
  createdUid: string;
}

/** per apply call: creates the install namespace once, when a write finds it missing; false when it may not */
type EnsureNamespace = () => Promise<boolean>;

function digestOfRecords(records: ReadonlyMap<string, { hash: string; fingerprint: string }>, ids: readonly string[]): string {
  return hashOf([...ids].sort().map((id) => [id, records.get(id)!.hash, records.get(id)!.fingerprint]));
}

export class Applier {
  private readonly log: Logger;
  private readonly concurrency: number;
  private readonly crdTimeoutMs: number;
  private readonly live: LiveIndex | undefined;
  private readonly overrideManagers: ReadonlySet<string>;
  private readonly now: () => Date;
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
    // and the fields of an object Hoist kept (retention.ts): the lineage taking it back takes them
    this.overrideManagers = new Set([...(opts.overrideManagers ?? DEFAULT_OVERRIDE_MANAGERS), KEPT_MANAGER]);
    this.now = opts.now ?? (() => new Date());
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
  async ensureInstallNamespace(target: ApplyTarget, objects: readonly KubeObject[], signal?: AbortSignal): Promise<void> {
    if (!target.installNamespace || this.installNamespaces.known(target.installNamespace)) return;
    await this.installNamespaces.ensure(this.actor(target), target.installNamespace, objects, signal).catch((e: unknown) => {
      throwIfCancelled(signal, `creating install namespace ${target.installNamespace}`, { stage: 'apply' });
      throw e;
    });
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
   * When `signal` fires, every request in flight is aborted, no further one is sent, waits end,
   * and a CancelledError is thrown: what was written is what a later apply finds (it reads
   * first, since a create may have landed unseen) and finishes.
   */
  async apply(target: ApplyTarget, objects: readonly KubeObject[], opts: { gate?: StepGate; signal?: AbortSignal } = {}): Promise<ApplyReport> {
    try {
      throwIfCancelled(opts.signal, `applying revision ${target.revision}`, { stage: 'apply' });
      return await this.applySteps(target, objects, opts);
    } catch (e) {
      if (!opts.signal?.aborted) throw e;
      this.readFirst.add(target.name);
      throw e instanceof CancelledError ? e : new CancelledError(`applying revision ${target.revision}`, { stage: 'apply', cause: e });
    }
  }

  private async applySteps(target: ApplyTarget, objects: readonly KubeObject[], opts: { gate?: StepGate; signal?: AbortSignal }): Promise<ApplyReport> {
    const { signal } = opts;
    const manager = fieldManagerFor(target.lineage);
    const results: ObjectResult[] = [];
    const applied: KubeObject[] = [];

    // Without CRDs or Namespaces in the bundle, objects no watch knows are created without reading
    // them first: every create of the call can still be undone if one collides.
    const presume = mayPresume(objects) && !this.readFirst.has(target.name);
    // Plan (collision checks) for everything that is already resolvable, before any write.
    const { steps, planned, deferred: waitingKinds, skippedOptional } = await planApply(this.planEnv(target), target, objects, { presume, signal });
    refuseConflicts(planned);
    if (waitingKinds.length === 0) this.adoptRecords(target, planned);
    if (target.crdSafety === 'Enforce')
      await this.refuseUnsafeCRDs(
        target,
        planned.filter((p) => isCRD(p.obj)),
        signal,
      );

    const ensureNs = this.namespaceEnsurer(target, objects, signal);
    // the install namespace is read once per process (created when missing); a write that finds it
    // gone since then creates it again (intoNamespace)
    const needsWrite = planned.some((p) => !this.unchanged(target.name, p)) || waitingKinds.length > 0;
    if (needsWrite && target.installNamespace && !this.installNamespaces.known(target.installNamespace)) await ensureNs();

    const bySource = new Map(planned.map((p) => [p.src, p]));
    const deferred = new Set(waitingKinds);
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
        await waitServed(this.client, waiting, this.crdTimeoutMs, signal);
        const resolved = await prepareObjects(this.client, target, waiting, new Set(), skippedOptional);
        const more = await decideObjects(this.planEnv(target), target, resolved.ready, { signal });
        refuseConflicts(more);
        batch = [...batch, ...more];
      }
      const stepResults = await this.applyStep(target, manager, batch, ensureNs, created, signal);
      results.push(...stepResults);
      applied.push(...batch.map((p) => p.obj));
      this.failIfAny(results);
      const crds = batch.filter((p) => isCRD(p.obj));
      if (crds.length > 0 && stepResults.some((r) => crds.some((c) => c.id === r.id) && r.action !== 'unchanged')) {
        established = waitEstablished(
          this.actor(target),
          crds.map((c) => c.obj.metadata.name),
          this.crdTimeoutMs,
          signal,
        ).then(() => this.client.discovery.invalidate());
        // keep a rejection observed until it is awaited
        established.catch(() => {});
      }
      // the last step's readiness is the rollout's to observe; a gate decides whether the next step may go
      if (opts.gate && i < live.length - 1) {
        if (crds.length > 0) await established;
        throwIfCancelled(signal, `applying revision ${target.revision}`, { stage: 'apply' });
        const verdict = await opts.gate({ name: step.name, objects: batch.map((p) => p.obj), results: stepResults, next: live[i + 1]!.name });
        if (!verdict.ready) {
          this.readFirst.delete(target.name);
          const pending = { step: live[i + 1]!.name, after: step.name, waiting: verdict.waiting, ...(verdict.failed ? { failed: true } : {}) };
          return { results, skippedOptional, pending };
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

  /** the planner's view: the watches' summaries, trusted unless the object needs its managedFields */
  private planEnv(target: ApplyTarget): PlanEnv {
    const live = this.live;
    return {
      client: this.client,
      concurrency: this.concurrency,
      ...(live
        ? {
            index: {
              live,
              // hand-edited objects are read (their managedFields are needed to take the edits over), and
              // objects with ignored fields Hoist may still own (a new rule, a restart); only they
              trusted: (p: Prepared, known: LiveMeta) =>
                !this.handEdited(known, this.applied.get(target.name)?.get(p.id), p.obj.metadata) && !this.mayOwnIgnored(target.name, p),
            },
          }
        : {}),
    };
  }

  private actor(target: ApplyTarget): KubeClient {
    return target.actor ?? this.client;
  }

  /**
   * Compares every CRD this apply would change with the one installed (read unless the plan
   * already did; one GET per changed CRD, none when nothing changed) and refuses the whole apply
   * when any change would break existing custom resources. Terminal: the same content stays unsafe.
   */
  private async refuseUnsafeCRDs(target: ApplyTarget, planned: readonly Planned[], signal: AbortSignal | undefined): Promise<void> {
    const changed = planned.filter((p) => isCRD(p.obj) && p.decision.action !== 'create' && !this.unchanged(target.name, p));
    const problems = (
      await mapLimit(changed, this.concurrency, async (p) => {
        const live = p.live ?? (await this.actor(target).get(p.obj, p.obj.metadata.name, undefined, { signal }));
        return live ? crdUpgradeProblems(live, p.obj) : [];
      })
    ).flat();
    if (problems.length === 0) return;
    throw new UnsafeCrdChangeError(problems, describeCrdRefusal(problems));
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

  private async applyAll(
    target: ApplyTarget,
    manager: string,
    planned: readonly Planned[],
    ensureNs: EnsureNamespace,
    signal: AbortSignal | undefined,
  ): Promise<ObjectResult[]> {
    // only presumed creates come back undefined, and applyPhase sends those itself
    return (await mapLimit(planned, this.concurrency, (p) => this.applyOne(target, manager, p, ensureNs, signal))).filter(
      (r): r is ObjectResult => r !== undefined,
    );
  }

  /**
   * One step: presumed-new objects are created first; any that existed after all is read and
   * decided as the plan would have, and when one must be refused, what this call created (in
   * this step and the steps before it) is deleted again before ConflictingOwner is thrown — so a
   * refusal still changes nothing.
   */
  private async applyStep(
    target: ApplyTarget,
    manager: string,
    batch: readonly Planned[],
    ensureNs: EnsureNamespace,
    created: Created[],
    signal: AbortSignal | undefined,
  ): Promise<ObjectResult[]> {
    const presumed = batch.filter((p) => p.presumed);
    if (presumed.length === 0) return this.applyAll(target, manager, batch, ensureNs, signal);
    const existing: Planned[] = [];
    const results = (
      await mapLimit(presumed, this.concurrency, async (p) => {
        const r = await this.applyOne(target, manager, p, ensureNs, signal);
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
      await this.undoCreates(target, created, signal);
      throw new ObjectsError(
        ApplyCode.Forbidden,
        forbidden.map((r) => ({ subject: r.subject, message: `apply refused: ${r.message}` })),
        { terminal: false },
      );
    }
    if (existing.length > 0) {
      try {
        // read, not the watch: it may have seen the apply that was just handed back
        const decided = await decideObjects(
          this.planEnv(target),
          target,
          existing.map((p) => ({ ...p, presumed: false })),
          { read: true, signal },
        );
        refuseConflicts(decided);
        others = [...others, ...decided];
      } catch (e) {
        await this.undoCreates(target, created, signal);
        throw e;
      }
    }
    return [...results, ...(await this.applyAll(target, manager, others, ensureNs, signal))];
  }

  /**
   * Deletes the objects this apply call created (each was new: nobody else had it), each by the
   * uid its create returned: an object replaced since (deleted and created again by someone else)
   * is left alone.
   */
  private async undoCreates(target: ApplyTarget, created: readonly Created[], signal: AbortSignal | undefined): Promise<void> {
    const client = this.actor(target);
    await mapLimit(created, this.concurrency, async (p) => {
      try {
        await client.delete(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, { uid: p.createdUid, propagationPolicy: 'Background', signal });
        this.applied.get(target.name)?.delete(p.id);
      } catch (e) {
        if (isConflict(e)) {
          this.applied.get(target.name)?.delete(p.id);
          this.log.info({ object: p.subject, uid: p.createdUid }, 'not undoing a create: the object was replaced since (uid precondition failed)');
          return;
        }
        this.log.warn(
          { object: p.subject, err: e instanceof Error ? e.message : String(e) },
          'could not delete an object created before a collision was found',
        );
      }
    });
  }

  /** per apply call, at most once: the install namespace is read, and created (unlabelled, never deleted) when missing */
  private namespaceEnsurer(target: ApplyTarget, objects: readonly KubeObject[], signal: AbortSignal | undefined): EnsureNamespace {
    let once: Promise<boolean> | undefined;
    return () => (once ??= this.installNamespaces.ensure(this.actor(target), target.installNamespace, objects, signal));
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
  private async applyOne(
    target: ApplyTarget,
    manager: string,
    p: Planned,
    ensureNs: EnsureNamespace,
    signal: AbortSignal | undefined,
  ): Promise<ObjectResult | undefined> {
    if (this.unchanged(target.name, p)) return { id: p.id, subject: p.subject, action: 'unchanged' };
    // read before the write: the watch may deliver our own write to the live index before apply returns
    let before = p.live?.metadata.resourceVersion ?? this.live?.get(p.id)?.resourceVersion;
    const client = this.actor(target);
    const ignored = p.ignored?.pointers;
    try {
      const action = p.decision.action;
      let reverted: string[] | undefined;
      const scope = takeOverScope(p, this.overrideManagers);
      if (scope && p.live) {
        const taken = await this.takeOverFields(client, p.live, p, manager, scope.only, ignored, signal);
        if (action === 'update') {
          // the fields of a kept object taken back were Hoist's: not hand edits
          reverted = taken.paths.filter((f) => !f.startsWith(`${KEPT_MANAGER}: `));
          // giving up ignored fields alone changes nothing the bundle says: not a correction
          if (reverted.length === 0 && taken.patched) before = taken.patched.metadata.resourceVersion;
        }
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
            out = await this.intoNamespace(target, ensureNs, () => client.applyCreating(body, { fieldManager: manager, force: false, signal }));
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
              await handBack(client, out.object, manager, this.log, signal);
              return undefined;
            }
            reportCreated = false;
            before = own.resourceVersion;
          }
          result = out.object;
        } else {
          result = await this.intoNamespace(target, ensureNs, () => client.apply(body, { fieldManager: manager, force: true, signal }));
        }
      } catch (e) {
        if (!(isImmutableField(e) && p.obj.metadata.annotations?.[ANNOTATION_RECREATE] === 'true')) throw e;
        result = await this.recreate(target, client, manager, p, signal);
        created = true;
      }
      // ...and then given up, so that later applies (which leave them out) neither set nor remove them
      if (created && ignored) result = (await this.takeOverFields(client, result, p, manager, new Set(), ignored, signal)).patched ?? result;
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
      const verb = reportCreated
        ? 'created'
        : action === 'adopt' || action === 'steal'
          ? 'adopted'
          : before === meta.resourceVersion
            ? 'unchanged'
            : 'configured';
      this.log.debug({ object: p.subject, action: verb }, 'applied');
      const written =
        verb === 'unchanged'
          ? undefined
          : { uid: meta.uid, resourceVersion: meta.resourceVersion, ...(meta.generation !== undefined ? { generation: meta.generation } : {}) };
      return { id: p.id, subject: p.subject, action: verb, ...(reverted?.length ? { reverted } : {}), ...(written ? { written } : {}) };
    } catch (e) {
      // stopped, not failed: the caller turns it into a CancelledError
      if (signal?.aborted) throw e;
      const malformed = isInternalError(e) && (await this.malformed(client, p, signal));
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
  private async malformed(client: KubeClient, p: Planned, signal: AbortSignal | undefined): Promise<boolean> {
    // p.obj is the apply body: prepare() already dropped the fields a create may not carry
    return client.create(p.obj, { dryRun: true, signal }).then(
      () => false,
      (e: unknown) => isMalformed(e),
    );
  }

  /**
   * Folds other managers' fields (with `only`, those managers') into ours, with a resourceVersion
   * test so a racing write wins; a write that raced (a controller updating status) makes it read
   * the object again and retry. Returns "manager: field path" of what was taken over.
   */
  private async takeOverFields(
    client: KubeClient,
    live: KubeObject,
    p: Planned,
    manager: string,
    only: ReadonlySet<string> | undefined,
    ignored: readonly string[] | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ paths: string[]; patched?: KubeObject }> {
    for (let attempt = 1; ; attempt++) {
      const entries = (live.metadata.managedFields ?? []) as ManagedFieldsEntry[];
      const current = live;
      const hold = ignored ? (fields: Record<string, unknown>) => splitFields(fields, current, ignored) : undefined;
      const merged = takeOverManagedFields(entries, manager, p.obj.apiVersion, only, hold);
      if (!merged) return { paths: [] };
      try {
        const patched = await client.patch(
          p.obj,
          p.obj.metadata.name,
          p.obj.metadata.namespace,
          [
            { op: 'test', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion },
            { op: 'replace', path: '/metadata/managedFields', value: merged },
          ],
          'json',
          { signal },
        );
        return { paths: takenPaths(entries, manager, only, hold), patched };
      } catch (e) {
        // a failed JSON-patch test is 422 Invalid (or 409): someone wrote in between
        if (attempt >= 3 || !(isInvalid(e) || isConflict(e))) throw e;
        const again = await client.get(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, { signal });
        if (!again) throw e;
        live = again;
      }
    }
  }

  private failIfAny(results: readonly ObjectResult[]): void {
    const failed = results.filter((r) => r.action === 'failed');
    if (failed.length === 0) return;
    // the API server refusing an object is a property of the bundle; retrying the same content
    // only helps for transient failures (no response, 5xx, throttling, conflicts) and missing
    // RBAC, and not at all when any object was refused
    throw new ObjectsError(
      ApplyCode.ApplyFailed,
      failed.map((f) => ({ subject: f.subject, message: f.message ?? 'failed', transient: f.transient ?? false })),
      { terminal: failed.some((f) => !f.transient) },
    );
  }

  /**
   * Delete and re-create for an immutable-field change (opt-in per object), only of the object the
   * plan decided this BundleDeployment may write: the DELETE carries that object's uid, so an
   * object replaced since (another uid) is never deleted; an object the plan did not see (it was
   * created after the plan, by someone else) is never deleted at all; and the re-create is an
   * apply without force that must create, so an object someone else created in between is
   * handed back, not taken. Each refusal is transient: the next reconcile reads and decides again.
   */
  private async recreate(target: ApplyTarget, client: KubeClient, manager: string, p: Planned, signal: AbortSignal | undefined): Promise<KubeObject> {
    const uid =
      p.decision.action === 'create' ? undefined : (p.live?.metadata.uid ?? this.live?.get(p.id)?.uid ?? this.applied.get(target.name)?.get(p.id)?.uid);
    const refuse = (why: string) =>
      new HoistError(`not re-created: ${why}`, { stage: 'apply', code: ApplyCode.RecreateRefused, subject: p.subject, terminal: false });
    if (!uid) throw refuse("it did not exist when this apply decided what it may write, so it is not this BundleDeployment's");
    this.log.info({ object: p.subject, uid }, 're-creating object to change an immutable field');
    try {
      await client.delete(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, { uid, propagationPolicy: 'Background', signal });
    } catch (e) {
      // 409: the uid precondition failed, the object by this name is another one now
      if (isConflict(e)) throw refuse(`it was replaced since it was read (uid ${uid} precondition failed); nothing deleted`);
      throw e;
    }
    await waitGone(client, p.obj, {
      uid,
      deadline: this.now().getTime() + RECREATE_WAIT_MS,
      now: this.now,
      signal,
      subject: p.subject,
      expired: () =>
        new HoistError(`still exists ${RECREATE_WAIT_MS / 1000}s after delete for re-creation`, {
          stage: 'apply',
          code: ApplyCode.RecreatePending,
          subject: p.subject,
          terminal: false,
        }),
    });
    let out: { object: KubeObject; created: boolean };
    try {
      out = await client.applyCreating(p.ignored?.full ?? p.obj, { fieldManager: manager, force: false, signal });
    } catch (e) {
      if (isConflict(e)) throw refuse('another object by this name was created after the delete');
      throw e;
    }
    if (!out.created) {
      await handBack(client, out.object, manager, this.log, signal);
      throw refuse('another object by this name was created after the delete');
    }
    return out.object;
  }
}
