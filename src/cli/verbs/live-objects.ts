/**
 * What `hoist tree` and `hoist events` share: the active revision's objects from the revision
 * store (every object, also when status.activeRevision.inventory is truncated), each read live
 * (a GET as the caller, bounded concurrency) and judged as the controller judges it
 * (health/verdict.ts: the BundleDeployment's health checks that select it, else the cluster-wide
 * rules, the shipped library, kstatus), naming the rule, and for a workload that is not ready its
 * pods' problem. Read-only.
 */
import { readFile } from 'node:fs/promises';
import type { ActiveRevision, BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { LABEL_OWNER_NAME } from '../../../api/v1alpha2/types.ts';
import { splitHooks } from '../../apply/hooks.ts';
import { groupOf } from '../../apply/object-id.ts';
import { PHASES, phaseOf, waveOf } from '../../apply/phases.ts';
import { RevisionStore } from '../../revisions/revision-store.ts';
import { podProblems } from '../../health/pods.ts';
import { compileHealthChecks, runChecks } from '../../health/probes.ts';
import { verdictAt } from '../../health/readiness.ts';
import { HEALTH_RULES_KEY, HEALTH_RULES_LABEL, parseHealthRules } from '../../health/rules/config.ts';
import { BUILTIN_RULES, HealthRules } from '../../health/rules/rule-set.ts';
import { checkedVerdict, verdictOf } from '../../health/verdict.ts';
import type { RestKubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/types.ts';
import { mapLimit } from '../../util/concurrency.ts';
import type { Io } from './common.ts';

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
  /** the rule that judged it (health/verdict.ts): builtin:<name>, cluster:<name>, kstatus or healthChecks:<check>,… */
  rule?: string;
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

/**
 * The health rules the controller judges with, for the verbs that judge objects as it does: the
 * file given (`--health-rules`, as `hoist run`'s), else the chart's ConfigMaps of rules in the
 * controller's namespace (label HEALTH_RULES_LABEL, key HEALTH_RULES_KEY; one LIST), else the
 * library alone. A ConfigMap that cannot be listed or parsed is reported on stderr and left out.
 */
export async function healthRulesFor(client: RestKubeClient, namespace: string, file: string | undefined, io: Io): Promise<HealthRules> {
  if (file) return new HealthRules(parseHealthRules(await readFile(file, 'utf8'), file));
  let items: KubeObject[];
  try {
    items = (await client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace, labelSelector: `${HEALTH_RULES_LABEL}=true` })).items;
  } catch (e) {
    io.err(
      `warning: the controller's health rules (ConfigMaps labelled ${HEALTH_RULES_LABEL} in ${namespace}) cannot be listed, judging by the shipped rules and kstatus only: ${e instanceof Error ? e.message : String(e)}\n`,
    );
    return BUILTIN_RULES;
  }
  const compiled = items
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
    .flatMap((cm) => {
      const text = (cm.data as Record<string, string> | undefined)?.[HEALTH_RULES_KEY];
      if (text === undefined) return [];
      try {
        return parseHealthRules(text, `configmap ${namespace}/${cm.metadata.name}`);
      } catch (e) {
        io.err(`warning: ${e instanceof Error ? e.message : String(e)}; its rules are left out\n`);
        return [];
      }
    });
  return compiled.length ? new HealthRules(compiled) : BUILTIN_RULES;
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

/**
 * Every object of the revision, read live and judged, in apply order (phase, wave, bundle order).
 * `rules`: the health rules in force (the controller's cluster-wide ones, then the library).
 */
export async function inspect(
  client: RestKubeClient,
  bd: BundleDeployment,
  objects: readonly KubeObject[],
  opts: { concurrency?: number; rules?: HealthRules; now?: number } = {},
): Promise<LiveObject[]> {
  const concurrency = opts.concurrency ?? 8;
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
    // as the controller judges: the BD's checks that select the object, else the rules and kstatus (as it stands now)
    const now = opts.now ?? Date.now();
    const results = runChecks(checks, live);
    const judged = results ? checkedVerdict(live, Object.keys(results)) : verdictOf(live, { rules: opts.rules ?? BUILTIN_RULES, now });
    const verdict = { ...verdictAt(judged, now), rule: judged.rule };
    const failedChecks = Object.entries(results ?? {}).filter(([, r]) => !r.ok);
    const health: Health = verdict.readiness === 'Ready' && failedChecks.length ? 'InProgress' : verdict.readiness;
    if (health === 'Ready') return { ...base, owner, health, rule: verdict.rule, live };
    const why = [verdict.message, ...failedChecks.map(([name, r]) => `health check ${name}: ${r.message ?? 'failing'}`), ...badConditions(live)].filter(
      Boolean,
    );
    return { ...base, owner, health, rule: verdict.rule, reason: why.join('; '), live };
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
