/**
 * The object level of the applier (after boxcutter's machinery/objects.go): one planned object
 * to the cluster and what became of it. Skipped when its desired state and live fingerprint are
 * as after the last apply; hand edits (and, on adoption, other managers' fields) taken over
 * first; a presumed-new object created without force (an object that existed after all is handed
 * back and reported as such, `undefined`); an immutable-field refusal re-created when the object
 * opts in; the install namespace created again when a write finds it gone. A failure is a
 * result, not a throw, so the phase can report every object that failed.
 */
import type { Logger } from 'pino';
import { isConflict, isForbidden, isImmutableField, isInternalError, isInvalid, isMalformed, isNamespaceMissing, isTransient } from '../kube/api-error.ts';
import type { KubeClient, KubeObject } from '../kube/types.ts';
import { mapLimit } from '../util/concurrency.ts';
import { HoistError } from '../util/errors.ts';
import type { AppliedRecords } from './applied-records.ts';
import { splitFields } from './drift-ignore.ts';
import { ApplyCode } from './errors.ts';
import { takenPaths, takeOverManagedFields, type ManagedFieldsEntry } from './field-managers.ts';
import { handBack, type InstallNamespaces } from './install-namespace.ts';
import { liveFingerprint, liveMetaOf, type LiveIndex } from './live-index.ts';
import { ANNOTATION_RECREATE, applyErrorMessage, takeOverScope, type ApplyTarget, type Planned } from './plan.ts';
import type { ObjectAction, ObjectResult } from './result.ts';
import { KEPT_MANAGER } from './retention.ts';
import { waitGone } from './wait-gone.ts';

/** how long a delete for re-creation may take before the apply gives up on it (retried) */
const RECREATE_WAIT_MS = 60_000;

/** per apply call: creates the install namespace once, when a write finds it missing; false when it may not */
export type EnsureNamespace = () => Promise<boolean>;

/** what every object of one apply call shares */
export interface ObjectCall {
  target: ApplyTarget;
  /** the lineage's field manager */
  manager: string;
  ensureNs: EnsureNamespace;
  signal: AbortSignal | undefined;
}

/** an object this apply call created, with the uid its create returned (the undo deletes only that one) */
export interface Created extends Planned {
  createdUid: string;
}

/** the object level as the phase engine holds it */
export interface ObjectApplier {
  /** undefined: a presumed-new object existed after all (the server refused the create; nothing was written) */
  apply(call: ObjectCall, p: Planned): Promise<ObjectResult | undefined>;
  /** deletes what the call created, each by the uid its create returned */
  undoCreates(call: ObjectCall, created: readonly Created[]): Promise<void>;
}

export interface ObjectEngineOptions {
  /** the controller's client: writes go as the target's actor when it has one */
  client: KubeClient;
  log: Logger;
  records: AppliedRecords;
  installNamespaces: InstallNamespaces;
  live?: LiveIndex | undefined;
  concurrency: number;
  now: () => Date;
}

/** what a write came to before it is recorded: the object as the server returned it */
interface Written {
  result: KubeObject;
  /** reported as created (a presumed create that found our own earlier write is not) */
  reportCreated: boolean;
  /** a new object: the driftIgnore'd fields it was created with are given up after */
  created: boolean;
  /** the resourceVersion before the write: unchanged when the server kept it */
  before: string | undefined;
  reverted?: string[] | undefined;
}

export class ObjectEngine implements ObjectApplier {
  private readonly log: Logger;
  private readonly records: AppliedRecords;

  constructor(private readonly opts: ObjectEngineOptions) {
    this.log = opts.log;
    this.records = opts.records;
  }

  async apply(call: ObjectCall, p: Planned): Promise<ObjectResult | undefined> {
    if (this.records.unchanged(call.target.name, p)) return { id: p.id, subject: p.subject, action: 'unchanged' };
    const client = this.actor(call.target);
    try {
      const written = await this.write(call, client, p);
      return written && this.record(call, client, p, written);
    } catch (e) {
      // stopped, not failed: the caller turns it into a CancelledError
      if (call.signal?.aborted) throw e;
      const malformed = isInternalError(e) && (await this.malformed(client, p, call.signal));
      const transient = !malformed && (isTransient(e) || isConflict(e) || isForbidden(e) || (e instanceof HoistError && !e.terminal));
      return { id: p.id, subject: p.subject, action: 'failed', message: applyErrorMessage(e), transient, ...(isForbidden(e) ? { forbidden: true } : {}) };
    }
  }

  /**
   * Deletes the objects this apply call created (each was new: nobody else had it), each by the
   * uid its create returned: an object replaced since (deleted and created again by someone else)
   * is left alone.
   */
  async undoCreates(call: ObjectCall, created: readonly Created[]): Promise<void> {
    const client = this.actor(call.target);
    await mapLimit(created, this.opts.concurrency, async (p) => {
      try {
        await client.delete(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, { uid: p.createdUid, propagationPolicy: 'Background', signal: call.signal });
        this.records.delete(call.target.name, p.id);
      } catch (e) {
        if (isConflict(e)) {
          this.records.delete(call.target.name, p.id);
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

  /** the client acting for the target: its impersonated ServiceAccount, else the controller's */
  private actor(target: ApplyTarget): KubeClient {
    return target.actor ?? this.opts.client;
  }

  /** takes fields over when the plan says so, then sends the object; undefined when a presumed create existed after all */
  private async write(call: ObjectCall, client: KubeClient, p: Planned): Promise<Written | undefined> {
    // read before the write: the watch may deliver our own write to the live index before apply returns
    let before = p.live?.metadata.resourceVersion ?? this.opts.live?.get(p.id)?.resourceVersion;
    const action = p.decision.action;
    let reverted: string[] | undefined;
    const scope = takeOverScope(p, this.records.overrideManagers);
    if (scope && p.live) {
      const taken = await this.takeOverFields(client, p.live, p, call.manager, scope.only, p.ignored?.pointers, call.signal);
      if (action === 'update') {
        // the fields of a kept object taken back were Hoist's: not hand edits
        reverted = taken.paths.filter((f) => !f.startsWith(`${KEPT_MANAGER}: `));
        // giving up ignored fields alone changes nothing the bundle says: not a correction
        if (reverted.length === 0 && taken.patched) before = taken.patched.metadata.resourceVersion;
      }
    }
    try {
      const sent = await this.send(call, client, p);
      if (!sent) return undefined;
      return { result: sent.object, reportCreated: sent.created, created: action === 'create', before: sent.own ? sent.own.before : before, reverted };
    } catch (e) {
      if (!(isImmutableField(e) && p.obj.metadata.annotations?.[ANNOTATION_RECREATE] === 'true')) throw e;
      const result = await this.recreate(call, client, p);
      return { result, reportCreated: action === 'create', created: true, before, reverted };
    }
  }

  /**
   * One write: a presumed create without force (on an object that exists after all, another
   * manager's field makes it a conflict, nothing written), else an apply with force.
   * `own` is set when the create found this process's own earlier write (its resourceVersion then).
   */
  private async send(
    call: ObjectCall,
    client: KubeClient,
    p: Planned,
  ): Promise<{ object: KubeObject; created: boolean; own?: { before: string | undefined } } | undefined> {
    const { target, manager, signal } = call;
    // the bundle's values of ignored fields are the starting point of an object Hoist creates
    const body = p.decision.action === 'create' && p.ignored ? p.ignored.full : p.obj;
    if (!p.presumed) {
      const object = await this.intoNamespace(call, () => client.apply(body, { fieldManager: manager, force: true, signal }));
      return { object, created: p.decision.action === 'create' };
    }
    let out: { object: KubeObject; created: boolean };
    try {
      out = await this.intoNamespace(call, () => client.applyCreating(body, { fieldManager: manager, force: false, signal }));
    } catch (e) {
      // a create has no immutable fields: an immutable-field refusal, like a conflict, means
      // it existed after all and nothing was written — read and decided, never re-created here
      if (isConflict(e) || isImmutableField(e)) return undefined;
      throw e;
    }
    if (out.created) return { object: out.object, created: p.decision.action === 'create' };
    // our own earlier write the watch has not delivered yet (a reconcile ran again meanwhile)
    // is ours to keep, reported as an update of it; anything else existed after all
    const own = this.records.get(target.name, p.id);
    if (!own || own.uid !== out.object.metadata.uid) {
      await handBack(client, out.object, manager, this.log, signal);
      return undefined;
    }
    return { object: out.object, created: false, own: { before: own.resourceVersion } };
  }

  /** remembers what was written (to skip it next time) and names what happened */
  private async record(call: ObjectCall, client: KubeClient, p: Planned, w: Written): Promise<ObjectResult> {
    const ignored = p.ignored?.pointers;
    let result = w.result;
    // ...and then given up, so that later applies (which leave them out) neither set nor remove them
    if (w.created && ignored) result = (await this.takeOverFields(client, result, p, call.manager, new Set(), ignored, call.signal)).patched ?? result;
    const meta = liveMetaOf(result);
    const heldBy = ignored ? meta.managers?.filter((m) => this.records.overrideManagers.has(m)) : undefined;
    this.records.set(call.target.name, p.id, {
      hash: p.hash,
      fingerprint: liveFingerprint(meta, p.obj.metadata),
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
      ...(ignored ? { released: ignored.join('\n') } : {}),
      ...(heldBy?.length ? { heldBy } : {}),
    });
    const action = p.decision.action;
    const verb: ObjectAction = w.reportCreated
      ? 'created'
      : action === 'adopt' || action === 'steal'
        ? 'adopted'
        : w.before === meta.resourceVersion
          ? 'unchanged'
          : 'configured';
    this.log.debug({ object: p.subject, action: verb }, 'applied');
    const written =
      verb === 'unchanged'
        ? undefined
        : { uid: meta.uid, resourceVersion: meta.resourceVersion, ...(meta.generation !== undefined ? { generation: meta.generation } : {}) };
    return { id: p.id, subject: p.subject, action: verb, ...(w.reverted?.length ? { reverted: w.reverted } : {}), ...(written ? { written } : {}) };
  }

  /** `write`, again after creating the install namespace when the first try found it missing */
  private async intoNamespace<T>(call: ObjectCall, write: () => Promise<T>): Promise<T> {
    const ns = call.target.installNamespace;
    try {
      return await write();
    } catch (e) {
      if (!ns || !isNamespaceMissing(e, ns)) throw e;
      this.opts.installNamespaces.forget(ns);
      if (!(await call.ensureNs())) throw e;
      return write();
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
      const patch = [
        { op: 'test', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion },
        { op: 'replace', path: '/metadata/managedFields', value: merged },
      ];
      try {
        const patched = await client.patch(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, patch, 'json', { signal });
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

  /**
   * Delete and re-create for an immutable-field change (opt-in per object), only of the object the
   * plan decided this BundleDeployment may write: the DELETE carries that object's uid, so an
   * object replaced since (another uid) is never deleted; an object the plan did not see (it was
   * created after the plan, by someone else) is never deleted at all; and the re-create is an
   * apply without force that must create, so an object someone else created in between is
   * handed back, not taken. Each refusal is transient: the next reconcile reads and decides again.
   */
  private async recreate(call: ObjectCall, client: KubeClient, p: Planned): Promise<KubeObject> {
    const { signal } = call;
    const uid =
      p.decision.action === 'create' ? undefined : (p.live?.metadata.uid ?? this.opts.live?.get(p.id)?.uid ?? this.records.get(call.target.name, p.id)?.uid);
    if (!uid) throw refuseRecreate(p, "it did not exist when this apply decided what it may write, so it is not this BundleDeployment's");
    this.log.info({ object: p.subject, uid }, 're-creating object to change an immutable field');
    try {
      await client.delete(p.obj, p.obj.metadata.name, p.obj.metadata.namespace, { uid, propagationPolicy: 'Background', signal });
    } catch (e) {
      // 409: the uid precondition failed, the object by this name is another one now
      if (isConflict(e)) throw refuseRecreate(p, `it was replaced since it was read (uid ${uid} precondition failed); nothing deleted`);
      throw e;
    }
    const now = this.opts.now;
    const expired = () =>
      new HoistError(`still exists ${RECREATE_WAIT_MS / 1000}s after delete for re-creation`, {
        stage: 'apply',
        code: ApplyCode.RecreatePending,
        subject: p.subject,
        terminal: false,
      });
    await waitGone(client, p.obj, { uid, deadline: now().getTime() + RECREATE_WAIT_MS, now, signal, subject: p.subject, expired });
    let out: { object: KubeObject; created: boolean };
    try {
      out = await client.applyCreating(p.ignored?.full ?? p.obj, { fieldManager: call.manager, force: false, signal });
    } catch (e) {
      if (isConflict(e)) throw refuseRecreate(p, 'another object by this name was created after the delete');
      throw e;
    }
    if (!out.created) {
      await handBack(client, out.object, call.manager, this.log, signal);
      throw refuseRecreate(p, 'another object by this name was created after the delete');
    }
    return out.object;
  }
}

function refuseRecreate(p: Planned, why: string): HoistError {
  return new HoistError(`not re-created: ${why}`, { stage: 'apply', code: ApplyCode.RecreateRefused, subject: p.subject, terminal: false });
}
