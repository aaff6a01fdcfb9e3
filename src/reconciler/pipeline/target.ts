/**
 * Target: which cluster this reconcile works on (src/reconciler/targets.ts). A BD with
 * `spec.kubeConfig` gets a context whose applier, managed-object watches, identities and cluster
 * client are its remote cluster's; revision Secrets, status, events and Secret reads stay on the
 * management cluster. A remote cluster that does not answer ends the reconcile here with
 * TargetUnreachable (no request but one probe per backoff step); a BD that installed something
 * cannot be moved to another kubeconfig Secret (its objects would be orphaned in the first
 * cluster). Sets status.target.
 */
import { ANNOTATION_ABANDON_TARGET } from '../../../api/v1alpha2/types.ts';
import { asHoistError } from '../../util/errors.ts';
import { ReconcileCode, reconcileError } from '../errors.ts';
import { reportBeforeApply } from './recover.ts';
import { kubeConfigSecretOf } from '../inputs/kubeconfig.ts';
import { RemoteTarget, unreachable, type Target } from '../targets.ts';
import type { PipelineManaged, StepContext } from './context.ts';
import { decideBeforeApply } from './decide.ts';
import type { ReconcileState } from './state.ts';
import { setHealthUnknown, setInstalledUnreachable, setProgressingUnreachable } from '../status.ts';

/** the context of a reconcile on `target` */
export function withTarget(ctx: StepContext, target: Target): StepContext {
  if (target === ctx.d.targets?.local || !ctx.d.targets) return ctx;
  const managed = target instanceof RemoteTarget ? abortWhenDown(target) : target.managed;
  return { ...ctx, d: { ...ctx.d, cluster: target.client, applier: target.applier, managed, identities: target.identities } };
}

/** the target's watches, whose waits for a sync stop (TargetUnreachable) when the target goes down */
function abortWhenDown(t: RemoteTarget): PipelineManaged {
  const m = t.managed;
  return {
    watch: (types, signal) => m.watch(types, signal ? AbortSignal.any([signal, t.whenDown]) : t.whenDown),
    setProbes: (owner, checks) => m.setProbes(owner, checks),
    settled: () => m.settled(),
    probeError: (owner) => m.probeError(owner),
    health: (id) => m.health(id),
    checkVerdicts: (id) => m.checkVerdicts(id),
    observedWrites: (writes, timeoutMs, owner) => m.observedWrites(writes, timeoutMs, owner),
  };
}

/**
 * The target of s.bd and the context to reconcile it in, or undefined when the reconcile ends
 * here (its status says why: the kubeconfig could not be read or is refused, the BD would move,
 * or the target is unreachable). Throws when the failure is transient and not unreachability
 * (the controller retries with backoff).
 */
export async function enterTarget(ctx: StepContext, s: ReconcileState): Promise<{ ctx: StepContext; target: Target | undefined } | undefined> {
  const targets = ctx.d.targets;
  if (!targets) return { ctx, target: undefined };
  const secret = kubeConfigSecretOf(s.bd) ?? '';
  const installedWith = s.status.target?.kubeConfigSecret ?? '';
  if (s.status.activeRevision && secret !== installedWith) {
    const where = (x: string) => (x ? `the cluster of kubeconfig secret ${x}` : 'the management cluster');
    targetFailed(
      s,
      reconcileError(
        `spec.kubeConfig changed after revision ${s.status.activeRevision.number} was installed into ${where(installedWith)}: moving to ${where(secret)} would orphan its objects; restore spec.kubeConfig, or delete this BundleDeployment and create another`,
        ReconcileCode.TargetChanged,
        { stage: 'spec', subject: 'spec.kubeConfig', terminal: true },
      ),
    );
    return undefined;
  }
  let target: Target;
  try {
    target = await targets.for(s.bd, s.signal);
  } catch (e) {
    targetFailed(s, e);
    return undefined;
  }
  if (!(target instanceof RemoteTarget)) {
    delete s.status.target;
    return { ctx, target };
  }
  s.status.target = { cluster: target.cluster, kubeConfigSecret: secret };
  if (!(await target.reachable())) {
    reportUnreachable(s, target);
    return undefined;
  }
  return { ctx: withTarget(ctx, target), target };
}

/** the conditions of a BD whose target cluster does not answer; requeued at the target's next probe */
export function reportUnreachable(s: ReconcileState, t: RemoteTarget): void {
  const err = unreachable(t.cluster, t.down?.error ?? 'no response');
  const active = s.status.activeRevision;
  setInstalledUnreachable(
    s,
    active ? `revision ${active.number} was installed; its state is unknown: ${err.message}` : `nothing installed yet: ${err.message}`,
  );
  setHealthUnknown(s, `target cluster ${t.cluster} unreachable`);
  setProgressingUnreachable(s, `${err.message}; retrying with backoff`);
  s.result = { requeueAfter: t.retryInMs() };
  s.note = `target ${t.cluster} unreachable`;
}

/** the kubeconfig could not be read, is refused, or the BD would move: nothing installed is touched. Throws when transient */
function targetFailed(s: ReconcileState, e: unknown): void {
  const err = asHoistError(e, { stage: 'resolve', code: ReconcileCode.Unknown, terminal: false });
  const decision = decideBeforeApply(err);
  reportBeforeApply(s, err, decision, {
    installedNote: `the target cluster is not known: ${err.stage} failed`,
    blockedUntil: 'the spec or the kubeconfig Secret',
  });
  setHealthUnknown(s, 'the target cluster is not known');
  if (decision.retry) throw err;
  s.note = 'target refused';
}

/** true when a deleted BD leaves its remote objects behind (annotation core.rukpak.io/abandon-target) */
export function abandonsTarget(bd: { metadata: { annotations?: Record<string, string> } }): boolean {
  return bd.metadata.annotations?.[ANNOTATION_ABANDON_TARGET] === 'true';
}
