/**
 * `hoist pause NAME --reason …` and `hoist resume NAME`: the hotfix verbs. Pause sets
 * spec.paused (the controller then stops applying, pruning and correcting drift; health is still
 * observed) and records why, who and when as annotations; resume clears both. Each writes a
 * Kubernetes Event on the BundleDeployment, so `kubectl describe` tells the story. One merge
 * patch each: the annotations and spec.paused change together.
 */
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import type { RestKubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/types.ts';
import { BD_TYPE, connect, CONNECTION_OPTIONS, EXIT_OK, oneName, parse, readBD, runVerb, UsageError, type Io } from './common.ts';

/** why the BundleDeployment is paused, as given to `hoist pause --reason` */
export const ANNOTATION_PAUSED_REASON = 'core.rukpak.io/paused-reason';
/** who paused it: the API server's name for the caller (SelfSubjectReview), else the local user */
export const ANNOTATION_PAUSED_BY = 'core.rukpak.io/paused-by';
/** when (RFC 3339) */
export const ANNOTATION_PAUSED_AT = 'core.rukpak.io/paused-at';

export const PAUSE_HELP = `usage: hoist pause NAME --reason <text> [--kubeconfig file]

Pause a BundleDeployment for a hotfix: sets spec.paused, so the controller stops fetching,
applying, pruning and correcting drift (hand edits stay) while health is still observed.
Records the reason, who and when as annotations ${ANNOTATION_PAUSED_REASON},
${ANNOTATION_PAUSED_BY} and ${ANNOTATION_PAUSED_AT}, and writes an Event (reason Paused).

  --reason <text>       why (required): shown by \`kubectl describe\` and kept until resume
  --kubeconfig <file>   default: $KUBECONFIG, then ~/.kube/config

exit codes: 0 paused (also when it already was: the reason is updated); 1 not found or the
API server refused; 2 usage error
`;

export const RESUME_HELP = `usage: hoist resume NAME [--kubeconfig file]

Resume a paused BundleDeployment: clears spec.paused and the pause annotations and writes an
Event (reason Resumed). The controller then reconciles again: hand edits made while paused are
reverted to the bundle's content.

exit codes: 0 resumed (also when it was not paused); 1 not found or the API server refused;
2 usage error
`;

/** the caller as the API server knows it; the local user name when the server cannot say */
async function whoAmI(client: RestKubeClient): Promise<string> {
  try {
    const review = await client.create<KubeObject & { status?: { userInfo?: { username?: string } } }>({
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
      metadata: { name: '' },
    });
    if (review.status?.userInfo?.username) return review.status.userInfo.username;
  } catch {
    // SelfSubjectReview is served from Kubernetes 1.28 (and may be forbidden): fall back
  }
  return `${userInfo().username} (local user)`;
}

/** a Normal Event on the BD, in "default" where kubectl describe looks for cluster-scoped objects */
async function recordEvent(client: RestKubeClient, bd: BundleDeployment, reason: string, message: string): Promise<void> {
  const now = new Date().toISOString();
  await client.create({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${bd.metadata.name}.${randomBytes(8).toString('hex')}`, namespace: 'default' },
    involvedObject: { apiVersion: bd.apiVersion, kind: bd.kind, name: bd.metadata.name, uid: bd.metadata.uid, resourceVersion: bd.metadata.resourceVersion },
    reason,
    // the Event API caps messages at 1 KiB
    message: message.slice(0, 1024),
    type: 'Normal',
    source: { component: 'hoist-cli' },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    reportingComponent: 'hoist-cli',
    reportingInstance: 'hoist-cli',
  });
}

export async function pause(args: string[], io: Io): Promise<number> {
  return runVerb('pause', PAUSE_HELP, io, async () => {
    const { values, positionals } = parse(args, { ...CONNECTION_OPTIONS, reason: { type: 'string' } });
    if (values.help) {
      io.out(PAUSE_HELP);
      return EXIT_OK;
    }
    const name = oneName(positionals, 'pause');
    const reason = values.reason?.trim();
    if (!reason) throw new UsageError('--reason is required: say why it is paused');
    const client = connect(values.kubeconfig);
    try {
      await readBD(client, name);
      const by = await whoAmI(client);
      const at = new Date().toISOString();
      const patch = {
        metadata: { annotations: { [ANNOTATION_PAUSED_REASON]: reason, [ANNOTATION_PAUSED_BY]: by, [ANNOTATION_PAUSED_AT]: at } },
        spec: { paused: true },
      };
      const bd = (await client.patch(BD_TYPE, name, undefined, patch, 'merge', { fieldManager: 'hoist-cli' })) as unknown as BundleDeployment;
      await recordEvent(client, bd, 'Paused', `paused by ${by}: ${reason}`);
      io.out(`bundledeployment ${name} paused\n`);
      return EXIT_OK;
    } finally {
      await client.close();
    }
  });
}

export async function resume(args: string[], io: Io): Promise<number> {
  return runVerb('resume', RESUME_HELP, io, async () => {
    const { values, positionals } = parse(args, CONNECTION_OPTIONS);
    if (values.help) {
      io.out(RESUME_HELP);
      return EXIT_OK;
    }
    const name = oneName(positionals, 'resume');
    const client = connect(values.kubeconfig);
    try {
      const before = await readBD(client, name);
      const by = await whoAmI(client);
      const patch = {
        metadata: { annotations: { [ANNOTATION_PAUSED_REASON]: null, [ANNOTATION_PAUSED_BY]: null, [ANNOTATION_PAUSED_AT]: null } },
        spec: { paused: false },
      };
      const bd = (await client.patch(BD_TYPE, name, undefined, patch, 'merge', { fieldManager: 'hoist-cli' })) as unknown as BundleDeployment;
      const was = before.metadata.annotations?.[ANNOTATION_PAUSED_REASON];
      await recordEvent(client, bd, 'Resumed', `resumed by ${by}${was ? ` (was paused: ${was})` : ''}`);
      io.out(`bundledeployment ${name} resumed\n`);
      return EXIT_OK;
    } finally {
      await client.close();
    }
  });
}
