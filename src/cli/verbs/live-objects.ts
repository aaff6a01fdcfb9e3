/**
 * What `hoist tree` and `hoist events` share: the active revision's objects from the revision
 * store (every object, also when status.activeRevision.inventory is truncated), each read live
 * (a GET as the caller, bounded concurrency) and judged as the controller judges it: built-in
 * readiness, the BundleDeployment's health checks, and for a workload that is not ready its pods'
 * problem. Read-only.
 */
import type { ActiveRevision, BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { LABEL_OWNER_NAME } from '../../../api/v1alpha2/types.ts';
import { splitHooks } from '../../apply/hooks.ts';
import { groupOf } from '../../apply/object-id.ts';
import { PHASES, phaseOf, waveOf } from '../../apply/phases.ts';
import { RevisionStore } from '../../apply/revision-store.ts';
import { podProblems } from '../../health/pods.ts';
import { compileHealthChecks, runChecks } from '../../health/probes.ts';
import { readinessOf, verdictAt } from '../../health/readiness.ts';
import type { RestKubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/types.ts';
import { mapLimit } from '../../util/concurrency.ts';

export type Health = 'Ready' | 'InProgress' | 'Failed' | 'Terminating' | 'Missing' | 'Unknown';

export interface LiveObject {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  /** the apply phase it belongs to (src/apply/phases.ts), with its apply-wave */
  phase: string;
  wave: number;
  /** the owner-name label of the live object ('' when it has none, e.g. handed over or created by hand) */
  owner: string;
  health: Health;
  /** why it is not ready: readiness, failing health checks, conditions, its pods */
  reason?: string;
  /** the live object, when it exists and could be read */
  live?: KubeObject;
  /** a workload that is not ready: its pods (listed to say why) */
  pods?: KubeObject[];
}

/** the active revision and its managed objects (hooks are not managed objects) */
export async function activeObjects(
  client: RestKubeClient,
  namespace: string,
  bd: BundleDeployment,
): Promise<{ active: ActiveRevision; objects: KubeObject[] }> {
  const name = bd.metadata.name;
  const active = bd.status?.activeRevision;
  if (!active) throw new Error(`bundledeployment ${JSON.stringify(name)} has no active revision yet`);
  const store = new RevisionStore(client, namespace);
  const all = await store.load(name, active);
  if (!all) throw new Error(`revision ${active.number} of ${name} is not in the revision store in namespace ${namespace} (is -n the controller's namespace?)`);
  return { active, objects: splitHooks(all).managed };
}

/** the conditions that say something is wrong: not True (or True for the kinds of condition where True is bad) */
const TRUE_IS_BAD = new Set(['ReplicaFailure', 'Failed', 'Stalled', 'Degraded']);
function badConditions(obj: KubeObject): string[] {
  const conds = (obj.status as { conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }> } | undefined)?.conditions;
  if (!Array.isArray(conds)) return [];
  return conds
    .filter((c) => c.type && (TRUE_IS_BAD.has(c.type) ? c.status === 'True' : c.status !== 'True'))
    .map((c) => `${c.type}=${c.status}${c.reason ? ` ${c.reason}` : ''}${c.message ? `: ${c.message}` : ''}`);
}

const WORKLOADS = new Set(['apps/Deployment', 'apps/StatefulSet', 'apps/DaemonSet', 'apps/ReplicaSet']);
/** pods are listed for at most this many unready workloads */
const EXPLAIN_MAX = 5;

/** the pods of a workload, by its selector's matchLabels (as the controller lists them) */
export async function podsOf(client: RestKubeClient, workload: KubeObject): Promise<KubeObject[]> {
  const match = (workload.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector?.matchLabels;
  if (!workload.metadata.namespace || !match || Object.keys(match).length === 0) return [];
  const selector = Object.entries(match)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return (await client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: workload.metadata.namespace, labelSelector: selector })).items;
}

/** every object of the revision, read live and judged, in apply order (phase, wave, bundle order) */
export async function inspect(client: RestKubeClient, bd: BundleDeployment, objects: readonly KubeObject[], concurrency = 8): Promise<LiveObject[]> {
  let checks: ReturnType<typeof compileHealthChecks> = [];
  try {
    checks = compileHealthChecks(bd.spec.healthChecks);
  } catch {
    // a check that does not compile is reported in Healthy already; judge by built-in readiness
  }
  const out = await mapLimit(objects, concurrency, async (o): Promise<LiveObject> => {
    const base = {
      apiVersion: o.apiVersion,
      kind: o.kind,
      ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
      name: o.metadata.name,
      phase: phaseOf(o),
      wave: waveOf(o) ?? 0,
    };
    let live: KubeObject | undefined;
    try {
      live = await client.get(o, o.metadata.name, o.metadata.namespace);
    } catch (e) {
      return { ...base, owner: '', health: 'Unknown', reason: `cannot be read: ${e instanceof Error ? e.message : String(e)}` };
    }
    if (!live) return { ...base, owner: '', health: 'Missing', reason: 'not found' };
    const owner = live.metadata.labels?.[LABEL_OWNER_NAME] ?? '';
    const now = Date.now();
    const verdict = verdictAt(readinessOf(live, now), now);
    const failedChecks = Object.entries(runChecks(checks, live) ?? {}).filter(([, r]) => !r.ok);
    const health: Health =
      verdict.readiness === 'Failed' || verdict.readiness === 'Terminating'
        ? verdict.readiness
        : verdict.readiness === 'InProgress' || failedChecks.length
          ? 'InProgress'
          : 'Ready';
    if (health === 'Ready') return { ...base, owner, health, live };
    const why = [verdict.message, ...failedChecks.map(([name, r]) => `health check ${name}: ${r.message ?? 'failing'}`), ...badConditions(live)].filter(
      Boolean,
    );
    return { ...base, owner, health, reason: why.join('; '), live };
  });
  // a workload's status only counts pods: its pods say why
  const unready = out.filter((x) => x.live && x.health !== 'Ready' && WORKLOADS.has(`${groupOf(x.apiVersion)}/${x.kind}`)).slice(0, EXPLAIN_MAX);
  await Promise.all(
    unready.map(async (x) => {
      x.pods = await podsOf(client, x.live!).catch(() => []);
      const why = podProblems(x.pods);
      if (why) x.reason = `${x.reason ?? ''}${x.reason ? '; ' : ''}${why}`;
    }),
  );
  return out
    .map((x, i) => ({ x, i }))
    .sort(
      (a, b) => PHASES.indexOf(a.x.phase as (typeof PHASES)[number]) - PHASES.indexOf(b.x.phase as (typeof PHASES)[number]) || a.x.wave - b.x.wave || a.i - b.i,
    )
    .map(({ x }) => x);
}

/** "Deployment ns/name" */
export function subjectOf(o: { kind: string; namespace?: string; name: string }): string {
  return `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`;
}
