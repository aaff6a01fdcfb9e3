/**
 * `hoist notify test PROVIDER -n NAMESPACE`: sends one test message through a
 * NotificationProvider, from where the command runs, reading the provider and its Secrets with
 * the caller's own kubeconfig (so it proves the caller may read them, and the controller is not
 * involved). The same request builder, host binding and TLS rules as the controller
 * (src/notify/providers.ts, src/notify/sender.ts); a commit-status provider gets a `pending`
 * status on the commit given with --commit.
 */
import { NOTIFICATION_PROVIDER_KIND, type NotificationProvider } from '../../../api/v1alpha2/notification-types.ts';
import { API_VERSION } from '../../../api/v1alpha2/types.ts';
import type { Message } from '../../notify/message.ts';
import { COMMIT_STATUS_TYPES, requestFor } from '../../notify/providers.ts';
import { resolveProvider } from '../../notify/resolve-provider.ts';
import { Sender } from '../../notify/sender.ts';
import { connect, CONNECTION_OPTIONS, EXIT_OK, parse, runVerb, UsageError, type Io } from './common.ts';

export const NOTIFY_HELP = `usage: hoist notify test PROVIDER -n NAMESPACE [--commit SHA] [--kubeconfig file]

Send a test notification through NotificationProvider PROVIDER of NAMESPACE, from this machine:
the provider and its Secrets are read with your kubeconfig (you must be allowed to read them),
and the message goes out under the same rules as the controller's (https and the Secret's
core.rukpak.io/credential-hosts for anything read from a Secret, TLS verified with the
provider's CA). Incident tools (pagerduty, opsgenie, alertmanager) get a trigger for a
BundleDeployment named hoist-notify-test; commit-status providers (github, gitlab, gitea) a
pending status on --commit, which they require.

  -n, --namespace <ns>  the provider's namespace (required)
  --commit <sha>        the commit of the provider's repository to put a pending status on
  --kubeconfig <file>   default: $KUBECONFIG, then ~/.kube/config

exit codes: 0 delivered; 1 not found, unreadable or not delivered; 2 usage error
`;

export async function notify(args: string[], io: Io): Promise<number> {
  return runVerb('notify', NOTIFY_HELP, io, async () => {
    const { values, positionals } = parse(args, { ...CONNECTION_OPTIONS, namespace: { type: 'string', short: 'n' }, commit: { type: 'string' } });
    if (values.help) {
      io.out(NOTIFY_HELP);
      return EXIT_OK;
    }
    if (positionals[0] !== 'test' || positionals.length !== 2 || !positionals[1]) throw new UsageError('the only subcommand is: notify test PROVIDER');
    if (!values.namespace) throw new UsageError('--namespace is required');
    const name = positionals[1];
    const client = connect(values.kubeconfig);
    const sender = new Sender('hoist-cli');
    try {
      const p = (await client.get({ apiVersion: API_VERSION, kind: NOTIFICATION_PROVIDER_KIND }, name, values.namespace)) as unknown as
        NotificationProvider | undefined;
      if (!p) throw new Error(`notificationprovider ${values.namespace}/${name} not found`);
      if (COMMIT_STATUS_TYPES.has(p.spec.type) && !values.commit)
        throw new UsageError(`provider type ${p.spec.type} needs --commit: a commit status is set on a commit`);
      const resolved = await resolveProvider(client, p);
      const message = testMessage(p, values.commit);
      const req = requestFor(resolved.settings, message);
      if (!req) throw new Error(`provider type ${p.spec.type} has nothing to send for a test message`);
      await sender.send(req, resolved.send);
      io.out(`test notification delivered through notificationprovider ${values.namespace}/${name} (${p.spec.type})\n`);
      return EXIT_OK;
    } finally {
      await sender.close();
      await client.close();
    }
  });
}

/** a failure of a BundleDeployment named hoist-notify-test, on --commit of the provider's own repository */
function testMessage(p: NotificationProvider, commit: string | undefined): Message {
  return {
    kind: 'single',
    namespace: p.metadata.namespace,
    record: {
      event: COMMIT_STATUS_TYPES.has(p.spec.type) ? 'RolloutStarted' : 'Blocked',
      severity: COMMIT_STATUS_TYPES.has(p.spec.type) ? 'info' : 'warning',
      kind: COMMIT_STATUS_TYPES.has(p.spec.type) ? 'news' : 'failure',
      bd: { name: 'hoist-notify-test', labels: {} },
      sources: commit && p.spec.address ? [{ kind: 'git', location: p.spec.address, commit }] : [],
      summary: 'a test notification sent by hoist notify test',
      at: new Date().toISOString(),
    },
  };
}
