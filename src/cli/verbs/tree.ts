/**
 * `hoist tree NAME`: what a BundleDeployment owns and what is wrong with it (after `flux tree`):
 * every object of its active revision in apply order, with the phase it belongs to, its owner
 * (the live object's owner-name label), its health, the rule that judged it and, when it is not
 * ready, why — the rule's message, failing health checks, the conditions that say so, its pods. Objects come from the revision
 * store, so a revision whose status inventory is truncated is listed whole. Read-only.
 */
import { stringify } from 'yaml';
import { connection, CONNECTION_OPTIONS, EXIT_OK, NAMESPACE_OPTION, oneName, parse, readBD, runVerb, table, UsageError, type Io } from './common.ts';
import { activeObjects, healthRulesFor, inspect, subjectOf, type LiveObject } from './live-objects.ts';
import { RESTRICTED_HELP, RESTRICTED_OPTION, targetCluster } from './remote.ts';

export const TREE_HELP = `usage: hoist tree NAME [--not-ready] [-o yaml|json] [-n controller-namespace] [--health-rules file] [--kubeconfig file]

Every object of a BundleDeployment's active revision, in the order it is applied: PHASE (the
apply phase, and wave when set), OBJECT (kind, namespace/name), OWNER (the live object's
core.rukpak.io/owner-name label: another BundleDeployment after a handover, empty when none),
HEALTH (Ready, InProgress, Failed, Terminating, Missing, Unknown when it cannot be read), RULE
(what judged it, as the controller does: healthChecks:<check> when spec.healthChecks select it,
cluster:<name> for a cluster-wide rule, builtin:<name> for a shipped one, kstatus otherwise) and
REASON: why it is not ready (the rule's message, failing spec.healthChecks, its conditions that
are not True, and for a Deployment, StatefulSet or DaemonSet its pods' problem). Objects are
read from the revision store and then live, as the caller. For a BundleDeployment with
spec.kubeConfig they are read live on its remote cluster: its kubeconfig Secret is read with your
rights on the management cluster, validated as the controller validates it, and the objects read
as the kubeconfig's identity; the first line names that cluster.

  --not-ready              list only objects that are not Ready
  --health-rules <file>    the controller's cluster-wide health rules (hoist run --health-rules);
                           default: the chart's ConfigMaps labelled hoist.rukpak.io/health-rules
                           in the controller's namespace
  -o, --output <fmt>       yaml or json
  -n, --namespace <ns>     the controller's namespace, where revisions are stored
                           (default $HOIST_NAMESPACE or hoist-system)
  --kubeconfig <file>      default: $KUBECONFIG, then ~/.kube/config
${RESTRICTED_HELP}

exit codes: 0 listed (whatever their health); 1 not found, no active revision, the kubeconfig
Secret unreadable or refused, or an API server failed; 2 usage error
`;

/** one object as -o yaml|json prints it (the live object and its pods left out) */
function plain(o: LiveObject): Omit<LiveObject, 'live' | 'pods'> {
  const { live: _live, pods: _pods, ...rest } = o;
  return rest;
}

export async function tree(args: string[], io: Io): Promise<number> {
  return runVerb('tree', TREE_HELP, io, async () => {
    const { values, positionals } = parse(args, {
      ...CONNECTION_OPTIONS,
      ...NAMESPACE_OPTION,
      ...RESTRICTED_OPTION,
      output: { type: 'string', short: 'o' },
      'not-ready': { type: 'boolean' },
      'health-rules': { type: 'string' },
    });
    if (values.help) {
      io.out(TREE_HELP);
      return EXIT_OK;
    }
    const name = oneName(positionals, 'tree');
    if (values.output && !['yaml', 'json'].includes(values.output))
      throw new UsageError(`unknown output format ${JSON.stringify(values.output)} (yaml or json)`);
    const { client, server } = connection(values.kubeconfig);
    try {
      const bd = await readBD(client, name);
      const { active, objects } = await activeObjects(client, values.namespace, bd);
      const rules = await healthRulesFor(client, values.namespace, values['health-rules'], io);
      const target = await targetCluster(client, server, bd, { allowRestricted: !!values['allow-restricted-targets'] });
      const all = await inspect(target.client, bd, objects, { rules }).finally(() => target.close());
      const notReady = all.filter((o) => o.health !== 'Ready');
      const shown = values['not-ready'] ? notReady : all;
      if (values.output === 'json') io.out(`${JSON.stringify(shown.map(plain), null, 2)}\n`);
      else if (values.output === 'yaml') io.out(stringify(shown.map(plain), { lineWidth: 0 }));
      else {
        const t = bd.status?.transition;
        io.out(
          `BundleDeployment ${name}${target.cluster ? ` (cluster ${target.cluster})` : ''}: revision ${active.number} (${active.contentDigest}), ${all.length} objects, ${notReady.length ? `${notReady.length} not ready` : 'all ready'}${t && t.revision !== active.number ? `; revision ${t.revision} on its way in` : ''}\n`,
        );
        if (shown.length) {
          const rows = shown.map((o) => [
            o.wave ? `${o.phase} wave ${o.wave}` : o.phase,
            subjectOf(o),
            o.owner || '<none>',
            o.health,
            o.rule ?? '',
            o.reason ?? '',
          ]);
          io.out(table([['PHASE', 'OBJECT', 'OWNER', 'HEALTH', 'RULE', 'REASON'], ...rows]));
        }
      }
      return EXIT_OK;
    } finally {
      await client.close();
    }
  });
}
