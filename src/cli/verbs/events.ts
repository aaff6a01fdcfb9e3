/**
 * `hoist events NAME`: the Events that tell what happened to a BundleDeployment, in time order:
 * its own (installed, rolled back, drift corrected, hooks, paused...) and those of the objects of
 * its active revision that are not ready — with, for a workload, those of its pods and their
 * ReplicaSets (a pod that cannot be scheduled or pulled says so only there). One LIST of Events
 * per namespace involved. For a BD with spec.kubeConfig the objects and their Events are read on
 * its remote cluster (src/cli/verbs/remote.ts), its own Events on the management cluster.
 * Read-only.
 */
import { stringify } from 'yaml';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import type { RestKubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/types.ts';
import { age, connection, CONNECTION_OPTIONS, EXIT_OK, NAMESPACE_OPTION, oneName, parse, readBD, runVerb, table, UsageError, type Io } from './common.ts';
import { activeObjects, healthRulesFor, inspect, subjectOf } from './live-objects.ts';
import { RESTRICTED_HELP, RESTRICTED_OPTION, targetCluster } from './remote.ts';

export const EVENTS_HELP = `usage: hoist events NAME [-o yaml|json] [-n controller-namespace] [--health-rules file] [--kubeconfig file]

The Events of a BundleDeployment and of the objects of its active revision that are not ready
(judged as hoist tree judges them; for a Deployment, StatefulSet or DaemonSet also its pods' and
ReplicaSets'), oldest first: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (COUNT when an Event
repeated). For a BundleDeployment with spec.kubeConfig its objects and their Events are read on
its remote cluster as the kubeconfig's identity (its kubeconfig Secret read with your rights), its
own Events on the management cluster; the first line names that cluster.

  -o, --output <fmt>       yaml or json (the Events as the API server returns them)
  --health-rules <file>    the controller's cluster-wide health rules (as hoist tree's)
  -n, --namespace <ns>     the controller's namespace, where revisions are stored
                           (default $HOIST_NAMESPACE or hoist-system)
  --kubeconfig <file>      default: $KUBECONFIG, then ~/.kube/config
${RESTRICTED_HELP}

exit codes: 0 listed; 1 not found or the API server failed; 2 usage error
`;

export interface EventObject extends KubeObject {
  involvedObject: { kind?: string; name?: string; namespace?: string; uid?: string };
  reason?: string;
  message?: string;
  type?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
  series?: { lastObservedTime?: string; count?: number };
}

const EVENT = { apiVersion: 'v1', kind: 'Event' } as const;

/** when an Event was last seen: its series, lastTimestamp, eventTime, firstTimestamp or creation */
export function lastSeen(e: EventObject): string | undefined {
  return e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp;
}

/** oldest first; Events without a time last, in the order given */
export function byTime(events: readonly EventObject[]): EventObject[] {
  const t = (e: EventObject) => Date.parse(lastSeen(e) ?? '') || Infinity;
  return events
    .map((e, i) => ({ e, i }))
    .sort((a, b) => t(a.e) - t(b.e) || a.i - b.i)
    .map(({ e }) => e);
}

const key = (kind: string | undefined, namespace: string | undefined, name: string | undefined) => `${kind}/${namespace ?? ''}/${name}`;

/**
 * The Events of the objects of `bd`'s active revision that are not ready, and of their pods and
 * ReplicaSets, read on the cluster the BD installs into; `cluster` names a remote one.
 */
async function objectEvents(
  client: RestKubeClient,
  server: string,
  bd: BundleDeployment,
  values: { namespace: string; 'health-rules'?: string | undefined; 'allow-restricted-targets'?: boolean | undefined },
  io: Io,
): Promise<{ cluster: string | undefined; events: EventObject[] }> {
  const { objects } = await activeObjects(client, values.namespace, bd);
  const rules = await healthRulesFor(client, values.namespace, values['health-rules'], io);
  const target = await targetCluster(client, server, bd, { allowRestricted: !!values['allow-restricted-targets'] });
  try {
    const wanted = new Set<string>();
    for (const o of (await inspect(target.client, bd, objects, { rules })).filter((x) => x.health !== 'Ready')) {
      wanted.add(key(o.kind, o.namespace ?? 'default', o.name));
      if (!o.namespace) continue;
      for (const pod of o.pods ?? []) {
        wanted.add(key('Pod', o.namespace, pod.metadata.name));
        for (const ref of (pod.metadata.ownerReferences ?? []) as Array<{ kind?: string; name?: string }>) wanted.add(key(ref.kind, o.namespace, ref.name));
      }
    }
    const events: EventObject[] = [];
    for (const ns of new Set([...wanted].map((k) => k.split('/')[1]!))) {
      const list = (await target.client.list(EVENT, { namespace: ns })).items as EventObject[];
      events.push(...list.filter((e) => wanted.has(key(e.involvedObject.kind, e.involvedObject.namespace ?? ns, e.involvedObject.name))));
    }
    return { cluster: target.cluster, events };
  } finally {
    await target.close();
  }
}

export async function events(args: string[], io: Io): Promise<number> {
  return runVerb('events', EVENTS_HELP, io, async () => {
    const { values, positionals } = parse(args, {
      ...CONNECTION_OPTIONS,
      ...NAMESPACE_OPTION,
      ...RESTRICTED_OPTION,
      output: { type: 'string', short: 'o' },
      'health-rules': { type: 'string' },
    });
    if (values.help) {
      io.out(EVENTS_HELP);
      return EXIT_OK;
    }
    const name = oneName(positionals, 'events');
    if (values.output && !['yaml', 'json'].includes(values.output))
      throw new UsageError(`unknown output format ${JSON.stringify(values.output)} (yaml or json)`);
    const { client, server } = connection(values.kubeconfig);
    let cluster: string | undefined;
    try {
      const bd = await readBD(client, name);
      // the BD's own: cluster-scoped, so in "default" (where kubectl describe looks); of this BD, not an earlier one of the same name
      const own = (
        (await client.list(EVENT, { namespace: 'default', fieldSelector: `involvedObject.kind=BundleDeployment,involvedObject.name=${name}` }))
          .items as EventObject[]
      ).filter((e) => !e.involvedObject.uid || !bd.metadata.uid || e.involvedObject.uid === bd.metadata.uid);
      // the objects that are not ready, and the pods (and their ReplicaSets) of those that are workloads
      const theirs = bd.status?.activeRevision ? await objectEvents(client, server, bd, values, io).then((r) => ((cluster = r.cluster), r.events)) : [];
      const all = byTime([...own, ...theirs]);
      if (values.output === 'json') io.out(`${JSON.stringify(all, null, 2)}\n`);
      else if (values.output === 'yaml') io.out(stringify(all, { lineWidth: 0 }));
      else if (all.length === 0) io.err(`No events for bundledeployment ${name} or its objects that are not ready${cluster ? ` (cluster ${cluster})` : ''}\n`);
      else {
        if (cluster) io.out(`BundleDeployment ${name} (cluster ${cluster})\n`);
        const now = new Date();
        const repeated = all.some((e) => (e.series?.count ?? e.count ?? 1) > 1);
        const rows = all.map((e) => [
          age(lastSeen(e), now),
          e.type ?? '',
          e.reason ?? '',
          subjectOf({
            kind: e.involvedObject.kind ?? '',
            ...(e.involvedObject.namespace && e.involvedObject.kind !== 'BundleDeployment' ? { namespace: e.involvedObject.namespace } : {}),
            name: e.involvedObject.name ?? '',
          }),
          ...(repeated ? [String(e.series?.count ?? e.count ?? 1)] : []),
          (e.message ?? '').replace(/\s*\n\s*/g, ' '),
        ]);
        io.out(table([['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', ...(repeated ? ['COUNT'] : []), 'MESSAGE'], ...rows]));
      }
      return EXIT_OK;
    } finally {
      await client.close();
    }
  });
}
