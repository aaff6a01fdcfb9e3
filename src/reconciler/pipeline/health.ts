/**
 * Healthy: the active revision's health from the managed-object watches — each object's verdict
 * (health/verdict.ts: the BD's `spec.healthChecks` that select it, else the cluster-wide rules,
 * the shipped library, kstatus). Reads caches only.
 */
import { objectId } from '../../apply/object-id.ts';
import { podProblems, workloadFailure } from '../../health/pods.ts';
import type { KubeObject } from '../../kube/types.ts';
import { clusterClient, watchObjects, type StepContext } from './context.ts';
import type { ReconcileState } from './state.ts';
import { setHealthProgressing, setHealthUnknown, setHealthy, setUnhealthy } from '../status.ts';

/** sets Healthy; true when every object of the active revision is ready */
export async function observeHealth(ctx: StepContext, s: ReconcileState, objects?: readonly KubeObject[]): Promise<boolean> {
  return (await observeHealthVerdict(ctx, s, objects)).healthy;
}

export interface HealthOutcome {
  /** every object of the active revision is ready */
  healthy: boolean;
  /** objects that failed (a Failed verdict, built in or of a health check), as Healthy names them; undefined when none did */
  failed?: string;
}

/** sets Healthy, and says whether the active revision is healthy and what of it failed */
export async function observeHealthVerdict(ctx: StepContext, s: ReconcileState, objects?: readonly KubeObject[]): Promise<HealthOutcome> {
  const active = s.status.activeRevision;
  if (!active) {
    setHealthUnknown(s, 'nothing installed');
    return { healthy: false };
  }
  const objs = objects ?? (await ctx.objects.of(s.name, active).catch(() => undefined));
  if (!objs) {
    setHealthUnknown(s, `revision ${active.number} objects not found in the revision store`);
    return { healthy: false };
  }
  const managed = ctx.d.managed;
  managed.setProbes(s.name, s.bd.spec.healthChecks);
  await watchObjects(ctx, objs);
  await managed.settled();
  const probeError = managed.probeError(s.name);
  if (probeError) {
    setUnhealthy(s, probeError.message);
    return { healthy: false };
  }
  const { failed, waiting } = assess(ctx, s, objs);
  await explainWorkloads(ctx, s, objs, failed, waiting);
  const more = firstFive;
  if (failed.length) setUnhealthy(s, `${failed.length} failing: ${more(failed)}`);
  else if (waiting.length) setHealthProgressing(s, `${waiting.length} not ready: ${more(waiting)}`);
  else setHealthy(s, `${objs.length} objects ready`);
  return { healthy: failed.length === 0 && waiting.length === 0, ...(failed.length ? { failed: `${failed.length} failing: ${more(failed)}` } : {}) };
}

/** what is failing and what is not ready yet among `objs`, from the watch caches (no request) */
export function assess(ctx: StepContext, s: ReconcileState, objs: readonly KubeObject[]): { failed: string[]; waiting: string[] } {
  const managed = ctx.d.managed;
  const failed: string[] = [];
  const waiting: string[] = [];
  const skipped = s.status.skippedOptional ?? [];
  for (const o of objs) {
    const ns = o.metadata.namespace;
    const id = objectId(o);
    const subject = `${o.kind} ${ns ? `${ns}/` : ''}${o.metadata.name}`;
    if (skipped.some((k) => k.endsWith(subject))) continue;
    const h = managed.health(id);
    if (!h) {
      waiting.push(`${subject}: not observed`);
      continue;
    }
    // a verdict that changes with time alone (a Pod's scheduling window): look again then
    if (h.until) s.recheckAt = Math.min(s.recheckAt ?? h.until.at, h.until.at);
    if (h.readiness === 'Failed') failed.push(`${subject}: ${h.message || h.reason || 'failed'}`);
    else if (h.readiness === 'InProgress') waiting.push(`${subject}: ${h.message || h.reason || 'in progress'}`);
    else if (h.readiness === 'Terminating') waiting.push(`${subject}: being deleted`);
    for (const v of managed.checkVerdicts(id)) {
      if (v.changesAt !== undefined) s.recheckAt = Math.min(s.recheckAt ?? v.changesAt, v.changesAt);
      if (v.readiness === 'Failed') failed.push(`${subject}: health check ${v.check}: ${v.message ?? 'failed'}`);
      else if (v.readiness === 'InProgress') waiting.push(`${subject}: health check ${v.check}: ${v.message ?? 'in progress'}`);
    }
  }
  return { failed, waiting };
}

/** at most five of a list, and how many more */
export function firstFive(list: readonly string[]): string {
  return list.slice(0, 5).join('; ') + (list.length > 5 ? ` (+${list.length - 5} more)` : '');
}

/** workload kinds whose readiness their pods explain */
const WORKLOADS = new Set(['apps/v1/Deployment', 'apps/v1/StatefulSet', 'apps/v1/DaemonSet', 'apps/v1/ReplicaSet']);
/** how long a revision may be unready before its pods are read to say why (a healthy rollout never pays the LIST) */
export const EXPLAIN_AFTER_MS = 20_000;
/** at most this many workloads' pods are listed per reconcile */
const EXPLAIN_MAX = 3;

/**
 * A workload's status only counts pods ("0/1 available"); its pods say why: a container
 * crash-looping or unable to pull its image, a readiness probe failing, a pod not scheduled.
 * Once the revision has been unready for EXPLAIN_AFTER_MS, the pods of up to three unready
 * workloads are listed (one LIST each, by the workload's matchLabels, as the controller like the
 * watches) and their problem appended to the workload's line in place.
 */
async function explainWorkloads(ctx: StepContext, s: ReconcileState, objs: readonly KubeObject[], failed: string[], waiting: string[]): Promise<void> {
  const since = Date.parse(s.status.activeRevision?.appliedAt ?? '');
  if (failed.length + waiting.length === 0 || Number.isNaN(since)) return;
  const now = s.now().getTime();
  if (now - since < EXPLAIN_AFTER_MS) {
    // look again then: a crash loop changes no workload status that would reconcile
    if (objs.some((o) => WORKLOADS.has(`${o.apiVersion}/${o.kind}`))) s.recheckAt = Math.min(s.recheckAt ?? Infinity, since + EXPLAIN_AFTER_MS);
    return;
  }
  const lines = [failed, waiting];
  let listed = 0;
  for (const o of objs) {
    if (listed >= EXPLAIN_MAX) break;
    if (!WORKLOADS.has(`${o.apiVersion}/${o.kind}`) || !o.metadata.namespace) continue;
    const subject = `${o.kind} ${o.metadata.namespace}/${o.metadata.name}: `;
    const at = lines.map((l) => l.findIndex((x) => x.startsWith(subject)));
    if (at.every((i) => i < 0)) continue;
    const match = (o as { spec?: { selector?: { matchLabels?: Record<string, string> } } }).spec?.selector?.matchLabels;
    if (!match || Object.keys(match).length === 0) continue;
    listed++;
    const pods = await clusterClient(ctx)
      .list(
        { apiVersion: 'v1', kind: 'Pod' },
        {
          namespace: o.metadata.namespace,
          labelSelector: Object.entries(match)
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
        },
      )
      .then(
        (r) => r.items,
        () => undefined,
      );
    if (!pods) continue;
    // its pods may say it failed (kstatus's Pod rule, with a grace for workloads: src/health/pods.ts)
    const verdict = workloadFailure(pods, since, now);
    // only a revision never healthy is failed by it: an installed one that turned unhealthy is not polled
    if (verdict.recheckAt !== undefined && s.status.activeRevision?.healthyAt === undefined)
      s.recheckAt = Math.min(s.recheckAt ?? verdict.recheckAt, verdict.recheckAt);
    if (verdict.failure && at[1]! >= 0) {
      const [line] = waiting.splice(at[1]!, 1);
      failed.push(`${line} (${verdict.failure.message})`);
      continue;
    }
    const why = podProblems(pods);
    if (!why) continue;
    lines.forEach((l, n) => {
      if (at[n]! >= 0) l[at[n]!] = `${l[at[n]!]} (${why})`;
    });
  }
}
