/**
 * `hoist reconcile NAME [--wait]` and `hoist retry NAME`: "try again now" without a spec change
 * (after `flux reconcile`). Both set the annotation core.rukpak.io/requested-at to a new token;
 * the controller's next reconcile re-resolves floating refs whatever pollInterval says and tries
 * a RolledBack or Blocked revision of the current spec once more, then echoes the token in
 * status.lastHandledRequest. Waiting watches the BundleDeployment until the token is echoed and
 * it is done (docs/status.md), and prints how it came out.
 */
import { randomBytes } from 'node:crypto';
import { parseDuration } from '../../../api/v1alpha2/defaults.ts';
import { ANNOTATION_REQUESTED_AT, type BundleDeployment } from '../../../api/v1alpha2/types.ts';
import type { RestKubeClient } from '../../kube/client.ts';
import {
  BD_TYPE,
  condition,
  connect,
  CONNECTION_OPTIONS,
  EXIT_FAILED,
  EXIT_OK,
  isDone,
  oneName,
  parse,
  readBD,
  runVerb,
  UsageError,
  type Io,
} from './common.ts';

export const RECONCILE_HELP = `usage: hoist reconcile NAME [--wait] [--timeout 5m] [--kubeconfig file]

Ask the controller to reconcile a BundleDeployment now: sets the annotation
${ANNOTATION_REQUESTED_AT} to a new token. Its next reconcile re-resolves the floating
sources (a git branch or tag, an image tag, an http URL without sha256) whatever pollInterval
says, and tries a revision of the current spec that was RolledBack or Blocked once more;
status.lastHandledRequest then echoes the token.

  --wait                wait until the token is echoed and the BundleDeployment is done
                        (Installed=True, Progressing=False at its generation), print the outcome
  --timeout <d>         how long --wait waits (default 5m)
  --kubeconfig <file>   default: $KUBECONFIG, then ~/.kube/config

exit codes: 0 requested (with --wait: handled, and Progressing is Succeeded); 1 not found, the
API server refused, or with --wait the outcome is not Succeeded (RolledBack, Blocked,
DependencyNotReady...) or it was not done within --timeout; 2 usage error
`;

export const RETRY_HELP = `usage: hoist retry NAME [--timeout 10m] [--kubeconfig file]

Try the failed revision of a BundleDeployment once more, without changing its spec (after the
fault is fixed: a webhook that refused it, a missing CRD, a quota). Refused unless Progressing
is RolledBack or Blocked at the current generation. Then as \`hoist reconcile NAME --wait\`:
sets ${ANNOTATION_REQUESTED_AT}, waits until the controller has handled it and the
BundleDeployment is done, and prints the outcome. If the revision fails again it is rolled back
(or blocked) again, and not retried until the spec changes or the next retry.

  --timeout <d>         how long to wait (default 10m)
  --kubeconfig <file>   default: $KUBECONFIG, then ~/.kube/config

exit codes: 0 retried and Succeeded; 1 not found, nothing to retry, the API server refused, the
retry failed too or was not done within --timeout; 2 usage error
`;

/** a new requested-at value: the time (as flux reconcile's) and a random suffix, so two requests in one millisecond differ */
export function requestToken(now = new Date()): string {
  return `${now.toISOString()}-${randomBytes(3).toString('hex')}`;
}

/** sets the annotation; returns the BundleDeployment as the API server stored it */
export async function requestReconcile(client: RestKubeClient, name: string, token: string): Promise<BundleDeployment> {
  const patch = { metadata: { annotations: { [ANNOTATION_REQUESTED_AT]: token } } };
  return (await client.patch(BD_TYPE, name, undefined, patch, 'merge', { fieldManager: 'hoist-cli' })) as unknown as BundleDeployment;
}

/** the controller handled `token` and the BundleDeployment is done at its generation */
export function handled(bd: BundleDeployment, token: string): boolean {
  return bd.status?.lastHandledRequest === token && isDone(bd);
}

/**
 * Watches the BundleDeployment (from `from`'s resourceVersion) until `until` holds; the last
 * version seen when the time is up. A watch the server ends is resumed; one that fails is
 * replaced after a GET.
 */
export async function watchUntil(
  client: RestKubeClient,
  from: BundleDeployment,
  until: (bd: BundleDeployment) => boolean,
  timeoutMs: number,
): Promise<{ bd: BundleDeployment; met: boolean }> {
  let last = from;
  if (until(last)) return { bd: last, met: true };
  const stop = AbortSignal.timeout(timeoutMs);
  while (!stop.aborted) {
    try {
      const events = client.watch<BundleDeployment & { [k: string]: unknown }>(BD_TYPE, {
        fieldSelector: `metadata.name=${from.metadata.name}`,
        resourceVersion: last.metadata.resourceVersion ?? '',
        timeoutSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)),
        signal: stop,
      });
      for await (const ev of events) {
        if (ev.type === 'ERROR') throw new Error('watch expired');
        if (ev.type === 'DELETED') throw new DeletedWhileWaiting(from.metadata.name);
        if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') continue;
        last = ev.object;
        if (until(last)) return { bd: last, met: true };
      }
    } catch (e) {
      if (stop.aborted) break;
      if (e instanceof DeletedWhileWaiting) throw e;
      // resume from what the server has now (an expired resourceVersion, a dropped connection)
      await new Promise((r) => setTimeout(r, 500));
      last = await readBD(client, from.metadata.name);
      if (until(last)) return { bd: last, met: true };
    }
  }
  return { bd: last, met: false };
}

/** "revision 3 installed and healthy", or the reason and message of Progressing and Installed */
export function outcome(bd: BundleDeployment): { ok: boolean; text: string } {
  const p = condition(bd, 'Progressing');
  const i = condition(bd, 'Installed');
  if (p?.reason === 'Succeeded') return { ok: true, text: `Progressing=False/Succeeded: ${p.message}` };
  const lines = [
    p ? `Progressing=${p.status}/${p.reason}: ${p.message}` : 'Progressing not reported',
    i ? `Installed=${i.status}/${i.reason}: ${i.message}` : '',
  ];
  return { ok: false, text: lines.filter(Boolean).join('\n  ') };
}

/** sets the annotation and, when asked, waits for the outcome; prints what happened */
async function requestAndWait(io: Io, client: RestKubeClient, name: string, wait: boolean, timeoutMs: number): Promise<number> {
  const token = requestToken();
  const requested = await requestReconcile(client, name, token);
  io.out(`bundledeployment ${name}: reconcile requested (${ANNOTATION_REQUESTED_AT}: ${token})\n`);
  if (!wait) return EXIT_OK;
  const { bd, met } = await watchUntil(client, requested, (b) => handled(b, token), timeoutMs);
  if (!met) {
    const echoed = bd.status?.lastHandledRequest === token;
    io.err(
      `hoist: bundledeployment ${name}: ${echoed ? 'handled but not done' : 'not handled yet'} after ${Math.round(timeoutMs / 1000)}s; now ${outcome(bd).text}\n`,
    );
    return EXIT_FAILED;
  }
  const o = outcome(bd);
  if (o.ok) io.out(`bundledeployment ${name}: handled: ${o.text}\n`);
  else io.err(`hoist: bundledeployment ${name}: handled: ${o.text}\n`);
  return o.ok ? EXIT_OK : EXIT_FAILED;
}

function timeoutOf(text: string): number {
  try {
    return parseDuration(text, '--timeout');
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
}

export async function reconcile(args: string[], io: Io): Promise<number> {
  return runVerb('reconcile', RECONCILE_HELP, io, async () => {
    const { values, positionals } = parse(args, { ...CONNECTION_OPTIONS, wait: { type: 'boolean' }, timeout: { type: 'string', default: '5m' } });
    if (values.help) {
      io.out(RECONCILE_HELP);
      return EXIT_OK;
    }
    const name = oneName(positionals, 'reconcile');
    const timeoutMs = timeoutOf(values.timeout);
    const client = connect(values.kubeconfig);
    try {
      const bd = await readBD(client, name);
      if (bd.spec.paused)
        io.err(`hoist reconcile: bundledeployment ${name} is paused: the controller fetches and applies nothing until \`hoist resume ${name}\`\n`);
      return await requestAndWait(io, client, name, values.wait === true, timeoutMs);
    } finally {
      await client.close();
    }
  });
}

export async function retry(args: string[], io: Io): Promise<number> {
  return runVerb('retry', RETRY_HELP, io, async () => {
    const { values, positionals } = parse(args, { ...CONNECTION_OPTIONS, timeout: { type: 'string', default: '10m' } });
    if (values.help) {
      io.out(RETRY_HELP);
      return EXIT_OK;
    }
    const name = oneName(positionals, 'retry');
    const timeoutMs = timeoutOf(values.timeout);
    const client = connect(values.kubeconfig);
    try {
      const bd = await readBD(client, name);
      const p = condition(bd, 'Progressing');
      const failed =
        p?.status === 'False' &&
        (p.reason === 'RolledBack' || p.reason === 'Blocked') &&
        p.observedGeneration === bd.metadata.generation &&
        bd.status?.observedGeneration === bd.metadata.generation;
      if (bd.spec.paused) throw new Error(`bundledeployment ${JSON.stringify(name)} is paused: \`hoist resume ${name}\` first`);
      if (!failed)
        throw new Error(
          `nothing to retry: bundledeployment ${JSON.stringify(name)} is ${p ? `Progressing=${p.status}/${p.reason}` : 'not reconciled yet'} (retry takes a RolledBack or Blocked revision of the current spec)`,
        );
      return await requestAndWait(io, client, name, true, timeoutMs);
    } finally {
      await client.close();
    }
  });
}

/** the BundleDeployment went away while a verb waited for it: not a watch hiccup to resume from */
class DeletedWhileWaiting extends Error {
  constructor(name: string) {
    super(`bundledeployment ${JSON.stringify(name)} was deleted`);
  }
}
