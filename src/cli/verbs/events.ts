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
import {
  age,
  connection,
  CONNECTION_OPTIONS,
  EXIT_FAILED,
  EXIT_OK,
  failureText,
  NAMESPACE_OPTION,
  oneName,
  parse,
  readBD,
  runVerb,
  table,
  UsageError,
  type Io,
} from './common.ts';
import { activeObjects, healthRulesFor, inspect, subjectOf } from './live-objects.ts';
import { RESTRICTED_HELP, RESTRICTED_OPTION, targetCluster, type TargetCluster } from './remote.ts';

export const EVENTS_HELP = `usage: hoist events NAME [-o yaml|json] [-n controller-namespace] [--health-rules file] [--kubeconfig file]

The Events of a BundleDeployment and of the objects of its active revision that are not ready
(judged as hoist tree judges them; for a Deployment, StatefulSet or DaemonSet also its pods' and
ReplicaSets'), oldest first: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (COUNT when an Event
repeated). For a BundleDeployment with spec.kubeConfig its objects and their Events are read on
its remote cluster as the kubeconfig's identity (its kubeconfig Secret read with your rights), its
own Events on the management cluster; the first line names that cluster. When its objects or
their Events cannot be read (the remote cluster unreachable, its kubeconfig Secret not yours to
read), the BundleDeployment's own Events are still listed and the error is said on stderr (exit 1).

  -o, --output <fmt>       yaml or json (the Events as the API server returns them)
  --health-rules <file>    the controller's cluster-wide health rules (as hoist tree's)
  -n, --namespace <ns>     the controller's namespace, where revisions are stored
                           (default $HOIST_NAMESPACE or hoist-system)
  --kubeconfig <file>      default: $KUBECONFIG, then ~/.kube/config
${RESTRICTED_HELP}

exit codes: 0 listed; 1 not found, or the API server failed (also when only the objects' Events
            could not be read); 2 usage error
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

interface ObjectEvents {
  /** the remote cluster's host, for a BD with spec.kubeConfig */
  cluster: string | undefined;
  events: EventObject[];
  /** why they could not be read (the BD's own Events are listed all the same) */
  failed?: string;
}

/**
 * The Events of the objects of `bd`'s active revision that are not ready, and of their pods and
 * ReplicaSets, read on the cluster the BD installs into. A failure is returned, not thrown: an
 * unreachable remote cluster is when its own Events matter most.
 */
async function objectEvents(
  client: RestKubeClient,
  server: string,
  bd: BundleDeployment,
  values: { namespace: string; 'health-rules'?: string | undefined; 'allow-restricted-targets'?: boolean | undefined },
  io: Io,
): Promise<ObjectEvents> {
  if (!bd.status?.activeRevision) return { cluster: bd.status?.target?.cluster, events: [] };
  let target: TargetCluster | undefined;
  try {
    const { objects } = await activeObjects(client, values.namespace, bd);
    const rules = await healthRulesFor(client, values.namespace, values['health-rules'], io);
    target = await targetCluster(client, server, bd, { allowRestricted: !!values['allow-restricted-targets'] });
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
  } catch (e) {
    return { cluster: target?.cluster ?? bd.status.target?.cluster, events: [], failed: failureText(e) };
  } finally {
    await target?.close();
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
    try {
      const bd = await readBD(client, name);
      // the BD's own: cluster-scoped, so in "default" (where kubectl describe looks); of this BD, not an earlier one of the same name
      const own = (
        (await client.list(EVENT, { namespace: 'default', fieldSelector: `involvedObject.kind=BundleDeployment,involvedObject.name=${name}` }))
          .items as EventObject[]
      ).filter((e) => !e.involvedObject.uid || !bd.metadata.uid || e.involvedObject.uid === bd.metadata.uid);
      // the objects that are not ready, and the pods (and their ReplicaSets) of those that are workloads
      const { cluster, events: theirs, failed } = await objectEvents(client, server, bd, values, io);
      const all = byTime([...own, ...theirs]);
      if (values.output === 'json') io.out(`${JSON.stringify(all, null, 2)}\n`);
      else if (values.output === 'yaml') io.out(stringify(all, { lineWidth: 0 }));
      else if (all.length === 0) {
        if (!failed) io.err(`No events for bundledeployment ${name} or its objects that are not ready${cluster ? ` (cluster ${cluster})` : ''}\n`);
      } else {
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
      if (!failed) return EXIT_OK;
      io.err(
        `hoist events: only the BundleDeployment's own Events are listed; those of its objects${cluster ? ` on cluster ${cluster}` : ''} could not be read: ${failed}\n`,
      );
      return EXIT_FAILED;
    } finally {
      await client.close();
    }
  });
}
