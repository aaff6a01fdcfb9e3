/**
 * Deletion of a BundleDeployment: uninstall its active revision (CRDs kept unless
 * deleteCRDsOnUninstall; objects a retention policy keeps let go of, not deleted; what another
 * member of its lineage installs is handed over, not deleted), drop its revision Secrets, then
 * remove the finalizer. With deletionPolicy Orphan every object is let go of instead (no delete
 * hooks run). Paused BDs orphan their objects as they are, and so do remote BDs annotated
 * core.rukpak.io/abandon-target=true (a cluster gone for good).
 */
import { withDefaults } from '../../../api/v1alpha2/defaults.ts';
import { ANNOTATION_ABANDON_TARGET, FINALIZER, lineageOf, type BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { objectId } from '../../apply/object-id.ts';
import { hooksFor } from '../../apply/hooks.ts';
import { deleteOwned } from '../../apply/prune.ts';
import type { KubeObject } from '../../kube/types.ts';
import { countChanged } from '../../apply/result.ts';
import { isNotFound } from '../../kube/api-error.ts';
import { systemClock } from '../../util/clock.ts';
import { asHoistError, CancelledError, HoistError, FailureReason } from '../../util/errors.ts';
import { reaches } from '../dependency-graph.ts';
import { lineageMembers } from '../lineage.ts';
import { actor, writtenUid, type StepContext } from './context.ts';
import { ReconcileCode } from '../errors.ts';
import { describeKept } from '../kept-objects.ts';
import { abandonsTarget } from './target.ts';

/**
 * The BundleDeployments that depend on bd (spec.dependsOn) and still exist: bd is uninstalled
 * after them. One that bd itself depends on (a cycle) is not waited for: the two would wait for
 * each other forever. Sorted; from the informer cache.
 */
export function dependentsRemaining(ctx: StepContext, bd: BundleDeployment): string[] {
  const name = bd.metadata.name;
  const dependsOn = (n: string) => ctx.d.getBundleDeployment(n)?.spec.dependsOn?.map((r) => r.name);
  return ctx.d
    .dependentsOf(name)
    .map((o) => o.metadata.name)
    .filter((o) => o !== name && !reaches(name, o, dependsOn))
    .sort();
}

/** true when the finalizer was removed (or already was) */
export async function finalize(ctx: StepContext, bd: BundleDeployment, signal?: AbortSignal): Promise<boolean> {
  const { d } = ctx;
  const name = bd.metadata.name;
  if (!bd.metadata.finalizers?.includes(FINALIZER)) return true;
  const spec = withDefaults(bd.spec);
  if (spec.paused) {
    d.log.info({ bd: name }, 'paused BundleDeployment deleted: its objects are orphaned');
  } else if (bd.spec.kubeConfig && abandonsTarget(bd)) {
    const message = `deleted with ${ANNOTATION_ABANDON_TARGET}=true: its objects are left in the remote cluster${bd.status?.target ? ` ${bd.status.target.cluster}` : ''}`;
    d.log.warn({ bd: name, target: bd.status?.target?.cluster }, 'remote objects abandoned');
    d.events.event(bd, 'Warning', 'TargetAbandoned', message);
  } else {
    const active = bd.status?.activeRevision;
    // Not knowing what is installed is never "nothing installed": a revision that cannot be
    // loaded (API error, Secret missing) keeps the finalizer and is retried with backoff.
    // Removing the finalizer by hand orphans the objects.
    const installed = active ? await ctx.objects.of(name, active).catch((e: unknown) => uninstallBlocked(ctx, bd, e)) : [];
    // and what a revision still being applied phase by phase has applied so far
    const t = bd.status?.transition;
    const halfway =
      t && t.revision !== active?.number
        ? await ctx.objects.of(name, { number: t.revision, contentDigest: t.contentDigest }).catch((e: unknown) => uninstallBlocked(ctx, bd, e))
        : [];
    const seen = new Set(installed.map(objectId));
    const objects = [...installed, ...halfway.filter((o) => !seen.has(objectId(o)))];
    const kept = await installedByLineage(ctx, bd);
    const doomed = objects.filter((o) => !kept.has(objectId(o)));
    if (spec.deletionPolicy === 'Orphan') {
      await orphan(ctx, bd, doomed, signal);
      await d.revisions.prune(name);
      return removeFinalizer(ctx, bd);
    }
    // Helm's delete hooks: pre-delete before anything is deleted, post-delete after; a failed
    // one stops the uninstall (as `helm uninstall` fails), retried with backoff
    const hooks = active ? await ctx.objects.hooksOf(name, active).catch((e: unknown) => uninstallBlocked(ctx, bd, e)) : [];
    await deleteHooks(ctx, bd, 'pre-delete', hooks, active?.number ?? 0, signal);
    const results =
      doomed.length === 0
        ? []
        : await deleteOwned(actor(ctx, bd), { name, lineage: lineageOf(bd) }, doomed, {
            keepCRDs: !spec.deleteCRDsOnUninstall,
            log: d.log,
            writtenUid: writtenUid(ctx, bd),
            signal,
          }).catch((e: unknown) => uninstallBlocked(ctx, bd, e));
    await deleteHooks(ctx, bd, 'post-delete', hooks, active?.number ?? 0, signal);
    const retained = describeKept(results);
    if (retained) {
      d.events.event(
        bd,
        'Normal',
        'Kept',
        `uninstall of revision ${active?.number ?? '?'}: ${retained.count} object(s) kept by their retention policy, left in place and no longer managed: ${retained.names}`,
      );
    }
    d.log.info({ bd: name, deleted: countChanged(results), kept: retained?.count ?? 0, handedOver: objects.length - results.length }, 'uninstalled');
  }
  await d.revisions.prune(name);
  return removeFinalizer(ctx, bd);
}

/** deletionPolicy Orphan: every object still bd's is let go of (retention.ts), none deleted, no hook run */
async function orphan(ctx: StepContext, bd: BundleDeployment, objects: readonly KubeObject[], signal: AbortSignal | undefined): Promise<void> {
  const name = bd.metadata.name;
  const results =
    objects.length === 0
      ? []
      : await deleteOwned(actor(ctx, bd), { name, lineage: lineageOf(bd) }, objects, {
          orphan: true,
          log: ctx.d.log,
          writtenUid: writtenUid(ctx, bd),
          signal,
        }).catch((e: unknown) => uninstallBlocked(ctx, bd, e));
  const left = describeKept(results);
  if (left) {
    ctx.d.events.event(bd, 'Normal', 'Orphaned', `deletionPolicy Orphan: ${left.count} object(s) left in place, no longer managed: ${left.names}`);
  }
  ctx.d.log.info(
    { bd: name, orphaned: left?.count ?? 0, handedOver: objects.length - results.length },
    'deleted with deletionPolicy Orphan: objects left in place',
  );
}

/** removes Hoist's finalizer from bd (the API server then deletes it); true */
async function removeFinalizer(ctx: StepContext, bd: BundleDeployment): Promise<true> {
  const { d } = ctx;
  const name = bd.metadata.name;
  const finalizers = bd.metadata.finalizers ?? [];
  try {
    await d.client.patch(
      bd,
      name,
      undefined,
      [
        { op: 'test', path: '/metadata/finalizers', value: finalizers },
        { op: 'replace', path: '/metadata/finalizers', value: finalizers.filter((f) => f !== FINALIZER) },
      ],
      'json',
    );
  } catch (e) {
    // already gone: someone (or an earlier reconcile) finished the job
    if (!isNotFound(e)) throw e;
  }
  return true;
}

/** runs the delete hooks of `event` for the uninstall; a failed one blocks it (uninstallBlocked) */
async function deleteHooks(
  ctx: StepContext,
  bd: BundleDeployment,
  event: 'pre-delete' | 'post-delete',
  hooks: readonly KubeObject[],
  revision: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (hooksFor(hooks, event).length === 0) return;
  const spec = withDefaults(bd.spec);
  const result = await ctx.d.hooks
    .run({ name: bd.metadata.name, revision, installNamespace: spec.installNamespace, actor: actor(ctx, bd) }, event, hooks, {
      deadline: (ctx.d.clock ?? systemClock).now() + spec.progressDeadlineMs,
      signal,
    })
    .catch((e: unknown) => uninstallBlocked(ctx, bd, e));
  if (result.failed) {
    const { run, subject } = result.failed;
    uninstallBlocked(
      ctx,
      bd,
      new HoistError(`${subject} failed: ${run.message ?? 'failed'}`, {
        stage: 'apply',
        reason: FailureReason.PruneFailed,
        code: ReconcileCode.HookFailed,
        subject,
        terminal: false,
      }),
    );
  }
  ctx.d.events.event(
    bd,
    'Normal',
    'HooksRan',
    `${event}: ${result.runs.map((r) => `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} ${r.result}`).join(', ')}`,
  );
}

/** uninstall cannot go on: say why (log, event) and throw, so the finalizer stays and the controller retries with backoff */
function uninstallBlocked(ctx: StepContext, bd: BundleDeployment, e: unknown): never {
  // stopped, not blocked: the finalizer stays and whoever reconciles next goes on
  if (e instanceof CancelledError) throw e;
  const err = asHoistError(e, { stage: 'apply', reason: FailureReason.PruneFailed, code: ReconcileCode.UninstallFailed, terminal: false });
  const message = `uninstall of revision ${bd.status?.activeRevision?.number ?? '?'} failed, the finalizer stays until it succeeds (removing ${FINALIZER} by hand orphans the objects): ${err.describe()}`;
  ctx.d.log.warn({ bd: bd.metadata.name, err: err.message }, 'uninstall failed');
  ctx.d.events.event(bd, 'Warning', 'UninstallFailed', message);
  // transient whatever the cause: an uninstall is never given up
  throw new HoistError(message, { stage: err.stage, reason: err.reason, code: err.code, subject: err.subject, terminal: false, cause: err });
}

/** ids of the objects the other (undeleted) members of bd's lineage have installed */
async function installedByLineage(ctx: StepContext, bd: BundleDeployment): Promise<Set<string>> {
  const lineage = lineageOf(bd);
  // an unlabelled namesake of a labelled lineage is no member: it keeps nothing of the lineage's
  const others = lineageMembers(ctx.d.lineageMembers(lineage)).filter((o) => o.metadata.name !== bd.metadata.name && !o.metadata.deletionTimestamp);
  const ids = new Set<string>();
  for (const other of others) {
    const active = other.status?.activeRevision;
    if (!active) continue;
    const objects = await ctx.objects.of(other.metadata.name, active).catch((e: unknown) => {
      ctx.d.log.warn(
        { bd: bd.metadata.name, other: other.metadata.name, err: e instanceof Error ? e.message : String(e) },
        'lineage member revision not readable',
      );
      return [];
    });
    for (const o of objects) ids.add(objectId(o));
  }
  return ids;
}
