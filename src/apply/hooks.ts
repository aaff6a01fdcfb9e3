/**
 * Helm hooks, run as Helm runs them (helm/pkg/action/hooks.go execHook): the hooks of one event
 * one at a time in Helm's order (weight, name, kind); each created (an earlier object of the
 * same hook deleted first under `before-hook-creation`, Helm's default), a Job waited until
 * Complete and a Pod until Succeeded, anything else ready once created; a failed hook stops the
 * event, deleting it under `hook-failed` and the hooks before it under `hook-succeeded`; when all
 * succeeded, those with `hook-succeeded` are deleted. Hooks are not managed objects: they carry
 * `core.rukpak.io/hook-of`, not Hoist's owner label, so drift correction never re-creates them
 * and prune never deletes them. Every call is made as the BundleDeployment's identity. A hook
 * recorded as still running in this transition (its wait was cut short by the reconcile's time
 * budget or a restart) is not created again: the run waits on the live object when it is still
 * this BundleDeployment's hook of this revision.
 */
import type { Logger } from 'pino';
import { ANNOTATION_REVISION, LABEL_HOOK_OF, type HookEvent, type HookRun } from '../../api/v1alpha2/types.ts';
import { ApiError, isAlreadyExists, isConflict, isForbidden, isNotFound, isTransient } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject, type WatchEvent } from '../kube/types.ts';
import { compareHooks, hookDeletePolicies, hookEventsOf, type HookDeletePolicy } from '../processors/helm/hooks.ts';
import { systemClock, type Clock } from '../util/clock.ts';
import { CancelledError, HoistError, FailureReason } from '../util/errors.ts';
import { sleep } from '../util/sleep.ts';
import { dropServerFields } from './object-id.ts';
import { waitGone } from './wait-gone.ts';
import { ApplyCode } from './errors.ts';

/** a revision's objects split into the managed ones and the hooks */
export function splitHooks(objects: readonly KubeObject[]): { managed: KubeObject[]; hooks: KubeObject[] } {
  const managed: KubeObject[] = [];
  const hooks: KubeObject[] = [];
  for (const o of objects) (hookEventsOf(o) !== undefined ? hooks : managed).push(o);
  return { managed, hooks };
}

/** the hooks of one event, in the order Helm runs them */
export function hooksFor(hooks: readonly KubeObject[], event: HookEvent): KubeObject[] {
  return hooks.filter((h) => hookEventsOf(h)?.includes(event)).sort(compareHooks);
}

export interface HookTarget {
  /** the BundleDeployment's name */
  name: string;
  revision: number;
  installNamespace?: string;
  /** who creates, watches and deletes the hooks (the BD's ServiceAccount, impersonated) */
  actor: KubeClient;
}

export interface HookRunOptions {
  /** runs of this transition so far: a hook of this event that already succeeded is not run again, one still running is waited on */
  done?: readonly HookRun[];
  /** epoch ms: a hook not complete by then has failed (the transition's progressDeadline) */
  deadline: number;
  /** stops the run: requests in flight are aborted, waits end, and run() throws a CancelledError */
  signal?: AbortSignal | undefined;
  /** each run as it starts and ends, for the caller to keep */
  onRun?: (run: HookRun) => void;
}

export interface HookEventResult {
  runs: HookRun[];
  /** the hook that failed, when one did: the event stops there */
  failed?: { run: HookRun; subject: string };
}

/** the same hook object (kind, namespace, name) */
function sameHook(run: HookRun, obj: KubeObject, event: HookEvent): boolean {
  return run.event === event && run.kind === obj.kind && run.name === obj.metadata.name && (run.namespace ?? '') === (obj.metadata.namespace ?? '');
}

type Outcome = { result: 'Succeeded' } | { result: 'Failed'; message: string };

/** a hook object this run created: what its delete policies need */
interface Created {
  obj: KubeObject;
  uid: string;
  policies: HookDeletePolicy[];
  run: HookRun;
}

/** a Job's or Pod's end, or undefined while it runs (other kinds never get here) */
export function hookOutcome(obj: KubeObject): Outcome | undefined {
  const status = (obj as { status?: Record<string, unknown> }).status ?? {};
  if (obj.kind === 'Job') {
    const conditions = (status.conditions as Array<{ type?: string; status?: string; reason?: string; message?: string }> | undefined) ?? [];
    if (conditions.some((c) => c.type === 'Complete' && c.status === 'True')) return { result: 'Succeeded' };
    const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True');
    if (failed) return { result: 'Failed', message: `job failed: ${failed.reason ?? 'Failed'}${failed.message ? `: ${failed.message.slice(0, 1000)}` : ''}` };
    return undefined;
  }
  const phase = status.phase;
  if (phase === 'Succeeded') return { result: 'Succeeded' };
  if (phase === 'Failed') {
    const terminated = (
      (status.containerStatuses as Array<{ name?: string; state?: { terminated?: { exitCode?: number; reason?: string } } }> | undefined) ?? []
    ).find((c) => c.state?.terminated && c.state.terminated.exitCode !== 0);
    const why = terminated
      ? `container ${terminated.name} exited ${terminated.state!.terminated!.exitCode}${terminated.state!.terminated!.reason ? ` (${terminated.state!.terminated!.reason})` : ''}`
      : String(status.reason ?? 'Failed');
    return { result: 'Failed', message: `pod failed: ${why}` };
  }
  return undefined;
}

function waitsForCompletion(obj: KubeObject): boolean {
  return (obj.kind === 'Job' && obj.apiVersion === 'batch/v1') || (obj.kind === 'Pod' && obj.apiVersion === 'v1');
}

function hookError(message: string, subject: string, terminal: boolean, cause?: unknown): HoistError {
  return new HoistError(message, { stage: 'apply', code: ApplyCode.HookFailed, subject, terminal, ...(cause ? { cause } : {}) });
}

export class HookRunner {
  private readonly now: () => Date;

  constructor(private readonly opts: { log: Logger; clock?: Clock; pollMs?: number }) {
    const clock = opts.clock ?? systemClock;
    this.now = () => new Date(clock.now());
  }

  /**
   * Runs the hooks of `event` (see the module comment). Throws a HoistError (code hook-failed,
   * not terminal) when a hook could not even be created or deleted (API errors): retried.
   * A hook that ran and failed is returned as `failed`. A fired signal ends it with a
   * CancelledError; the runs reported through `onRun` say where the next run picks up.
   */
  async run(target: HookTarget, event: HookEvent, hooks: readonly KubeObject[], opts: HookRunOptions): Promise<HookEventResult> {
    try {
      if (opts.signal?.aborted) throw opts.signal.reason;
      return await this.runEvent(target, event, hooks, opts);
    } catch (e) {
      if (!opts.signal?.aborted) throw e;
      throw e instanceof CancelledError
        ? e
        : new CancelledError(`running the ${event} hooks of revision ${target.revision}`, { stage: 'apply', subject: `${event} hooks`, cause: e });
    }
  }

  private async runEvent(target: HookTarget, event: HookEvent, hooks: readonly KubeObject[], opts: HookRunOptions): Promise<HookEventResult> {
    const executing = await Promise.all(hooksFor(hooks, event).map((h) => this.prepare(target, h)));
    // in run order; a delete policy marks its entry's run deleted in place
    const entries: Array<{ run: HookRun; created?: Created }> = [];
    const created = (): Created[] => entries.flatMap((e) => (e.created ? [e.created] : []));
    const result = (failed?: { run: HookRun; subject: string }): HookEventResult => ({
      runs: entries.map((e) => e.created?.run ?? e.run),
      ...(failed ? { failed } : {}),
    });
    for (const obj of executing) {
      const prior = opts.done?.find((r) => sameHook(r, obj, event) && r.result === 'Succeeded');
      if (prior) {
        entries.push({ run: prior });
        continue;
      }
      const subject = `${event} hook ${describeObject(obj)}`;
      const policies = hookDeletePolicies(obj);
      const started = await this.start(target, obj, event, subject, policies, opts);
      if ('refused' in started) {
        entries.push({ run: started.refused });
        opts.onRun?.(started.refused);
        await this.deleteByPolicy(target, created(), 'hook-succeeded', opts.signal);
        return result({ run: started.refused, subject });
      }
      const { run, live } = started;
      const outcome: Outcome = waitsForCompletion(obj) ? await this.waitFor(target, live, opts) : { result: 'Succeeded' };
      const done: HookRun =
        outcome.result === 'Succeeded'
          ? { ...run, result: 'Succeeded', completedAt: this.stamp() }
          : { ...run, result: 'Failed', message: outcome.message, completedAt: this.stamp() };
      this.opts.log.info({ bd: target.name, hook: subject, result: done.result, ...(done.message ? { why: done.message } : {}) }, 'hook finished');
      const entry: Created = { obj, uid: live.metadata.uid ?? '', policies, run: done };
      if (done.result === 'Failed') {
        // as Helm: the hooks before it go by hook-succeeded, this one by hook-failed
        await this.deleteByPolicy(target, created(), 'hook-succeeded', opts.signal);
        await this.deleteByPolicy(target, [entry], 'hook-failed', opts.signal);
        entries.push({ run: done, created: entry });
        opts.onRun?.(entry.run);
        return result({ run: entry.run, subject });
      }
      entries.push({ run: done, created: entry });
      opts.onRun?.(done);
    }
    // all succeeded: hook-succeeded ones go, last first (as Helm)
    await this.deleteByPolicy(target, created().reverse(), 'hook-succeeded', opts.signal);
    return result();
  }

  /**
   * The hook's run and its live object: the one a wait cut short (the reconcile's time budget, a
   * restart) created, when it is still ours, else created now; a create the API server refuses
   * is a failed run (`refused`), a create without an answer throws (retried).
   */
  private async start(
    target: HookTarget,
    obj: KubeObject,
    event: HookEvent,
    subject: string,
    policies: readonly string[],
    opts: HookRunOptions,
  ): Promise<{ run: HookRun; live: KubeObject } | { refused: HookRun }> {
    const waiting = opts.done?.find((r) => sameHook(r, obj, event) && r.result === 'Running');
    const resumed = waiting ? await this.stillOurs(target, obj, opts.signal) : undefined;
    const run: HookRun =
      resumed && waiting
        ? waiting
        : {
            event,
            kind: obj.kind,
            name: obj.metadata.name,
            ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
            result: 'Running',
            startedAt: this.stamp(),
          };
    if (resumed) {
      this.opts.log.info({ bd: target.name, hook: subject, revision: target.revision }, 'hook still running: waiting on');
      return { run, live: resumed };
    }
    if (policies.includes('before-hook-creation')) await this.deleteEarlier(target, obj, subject, opts);
    let live: KubeObject;
    try {
      live = await target.actor.create(obj, { signal: opts.signal });
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      const why = isAlreadyExists(e) ? 'already exists (its hook-delete-policy has no before-hook-creation)' : e instanceof ApiError ? e.apiMessage : String(e);
      // the API server refusing the object is the chart's; no response is worth a retry
      if (!(e instanceof ApiError) || isTransient(e) || isForbidden(e)) throw hookError(`${subject}: create failed: ${why}`, subject, false, e);
      return { refused: { ...run, result: 'Failed', message: `create failed: ${why}`, completedAt: this.stamp() } };
    }
    opts.onRun?.(run);
    this.opts.log.info({ bd: target.name, hook: subject, revision: target.revision }, 'hook created');
    return { run, live };
  }

  /** namespace, the hook-of label and the revision annotation; the object as the chart has it otherwise */
  private async prepare(target: HookTarget, src: KubeObject): Promise<KubeObject> {
    const obj = structuredClone(src);
    const info = await target.actor.discovery.resourceFor(obj);
    if (!info) throw hookError(`${describeObject(obj)}: ${obj.apiVersion} ${obj.kind} is not served by the api server`, describeObject(obj), true);
    if (info.namespaced) obj.metadata.namespace ??= target.installNamespace;
    else delete obj.metadata.namespace;
    obj.metadata.labels = { ...obj.metadata.labels, [LABEL_HOOK_OF]: target.name };
    obj.metadata.annotations = { ...obj.metadata.annotations, [ANNOTATION_REVISION]: String(target.revision) };
    dropServerFields(obj);
    return obj;
  }

  /** the live object of a hook recorded as running: when it is this BD's, of this revision (its label and annotation) */
  private async stillOurs(target: HookTarget, obj: KubeObject, signal: AbortSignal | undefined): Promise<KubeObject | undefined> {
    const live = await target.actor.get(obj, obj.metadata.name, obj.metadata.namespace, { signal });
    if (!live || live.metadata.labels?.[LABEL_HOOK_OF] !== target.name) return undefined;
    return live.metadata.annotations?.[ANNOTATION_REVISION] === String(target.revision) ? live : undefined;
  }

  /** before-hook-creation: an earlier object of this hook (ours by its hook-of label) is deleted and waited gone */
  private async deleteEarlier(target: HookTarget, obj: KubeObject, subject: string, opts: HookRunOptions): Promise<void> {
    const client = target.actor;
    const { signal } = opts;
    const live = await client.get(obj, obj.metadata.name, obj.metadata.namespace, { signal });
    if (!live) return;
    if (live.metadata.labels?.[LABEL_HOOK_OF] !== target.name) {
      // only what is provably ours is deleted
      throw new HoistError(
        `${subject}: ${describeObject(live)} exists and is not a hook of this BundleDeployment (no ${LABEL_HOOK_OF}=${target.name} label); Hoist deletes only its own hooks`,
        { stage: 'apply', reason: FailureReason.ConflictingOwner, code: ApplyCode.ConflictingOwner, subject, terminal: true },
      );
    }
    await client.delete(obj, obj.metadata.name, obj.metadata.namespace, {
      propagationPolicy: 'Background',
      ...(live.metadata.uid ? { uid: live.metadata.uid } : {}),
      signal,
    });
    // any object by that name is in the way of the create, whoever's it is
    await waitGone(client, obj, {
      deadline: opts.deadline,
      now: this.now,
      signal,
      pollMs: this.opts.pollMs ?? 250,
      subject,
      expired: () => hookError(`${subject}: the earlier object is still being deleted (before-hook-creation)`, subject, false),
    });
  }

  private async deleteByPolicy(target: HookTarget, entries: readonly Created[], policy: HookDeletePolicy, signal: AbortSignal | undefined): Promise<void> {
    for (const e of entries) {
      if (!e.policies.includes(policy)) continue;
      try {
        await target.actor.delete(e.obj, e.obj.metadata.name, e.obj.metadata.namespace, {
          propagationPolicy: 'Background',
          ...(e.uid ? { uid: e.uid } : {}),
          signal,
        });
      } catch (err) {
        if (signal?.aborted) throw err;
        // gone already (a TTL, someone else) or replaced since (uid precondition): nothing of ours to delete
        if (!isNotFound(err) && !isConflict(err))
          throw hookError(
            `${e.run.event} hook ${describeObject(e.obj)}: delete (${policy}) failed: ${err instanceof ApiError ? err.apiMessage : String(err)}`,
            describeObject(e.obj),
            false,
            err,
          );
      }
      e.run = { ...e.run, deleted: true };
    }
  }

  /**
   * Watches the hook from the resourceVersion its create returned, so every change after the
   * create is seen — also when a TTL deletes a finished Job at once — until it completes or fails,
   * is deleted, or the deadline passes.
   */
  private async waitFor(target: HookTarget, created: KubeObject, opts: HookRunOptions): Promise<Outcome> {
    const client = target.actor;
    const { name, namespace } = created.metadata;
    let rv = created.metadata.resourceVersion ?? '0';
    const first = hookOutcome(created);
    if (first) return first;
    for (;;) {
      const left = opts.deadline - this.now().getTime();
      if (left <= 0) return { result: 'Failed', message: 'did not complete within the progressDeadline' };
      if (opts.signal?.aborted) throw opts.signal.reason;
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), left);
      const onAbort = () => ac.abort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const stream = client.watch(created, {
          namespace,
          fieldSelector: `metadata.name=${name}`,
          resourceVersion: rv,
          timeoutSeconds: Math.max(1, Math.min(300, Math.ceil(left / 1000))),
          signal: ac.signal,
        });
        for await (const ev of stream as AsyncIterable<WatchEvent>) {
          if (ev.type === 'ERROR') break;
          if (ev.type === 'BOOKMARK') continue;
          if (ev.object.metadata.uid !== created.metadata.uid) continue;
          rv = ev.object.metadata.resourceVersion ?? rv;
          const outcome = hookOutcome(ev.object);
          if (outcome) return outcome;
          if (ev.type === 'DELETED') return { result: 'Failed', message: 'deleted before it completed' };
        }
      } catch (e) {
        if (ac.signal.aborted && !opts.signal?.aborted) continue;
        if (opts.signal?.aborted) throw e;
        this.opts.log.debug(
          { bd: target.name, object: describeObject(created), err: e instanceof Error ? e.message : String(e) },
          'hook watch ended; reading it again',
        );
      } finally {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      }
      // the watch ended (server timeout, expired resourceVersion): read the hook and go on from there
      const now = await client.get(created, name, namespace, { signal: opts.signal });
      if (!now || now.metadata.uid !== created.metadata.uid) return { result: 'Failed', message: 'deleted before its outcome was seen' };
      const outcome = hookOutcome(now);
      if (outcome) return outcome;
      rv = now.metadata.resourceVersion ?? rv;
      await sleep(Math.min(1000, Math.max(0, opts.deadline - this.now().getTime())), opts.signal);
    }
  }

  private stamp(): string {
    return this.now()
      .toISOString()
      .replace(/\.\d+Z$/, 'Z');
  }
}
