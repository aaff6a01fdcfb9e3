/**
 * The client of a remote cluster a tenant's kubeconfig names (docs/design.md "Remote clusters"),
 * made the same way by the controller (src/reconciler/targets.ts) and the user verbs
 * (src/cli/verbs/remote.ts): the kubeconfig's own identity (its ClusterConfig as
 * kubeconfig-secret.ts validated it: TLS verified, no plugin, no file), bounded connect and request
 * timeouts so a dead cluster fails fast, and — unless the opt-in — the server checked against the
 * restricted addresses once (`checkRemoteServer`) and at every connection (guardedLookup).
 */
import { createKubeClient, type KubeClientOptions, type RestKubeClient } from './client.ts';
import type { ClusterConfig } from './kube-config.ts';
import { checkTarget, guardedLookup, type ManagementServer } from './target-guard.ts';

/** remote clients: bounded so a dead cluster fails fast */
export const REMOTE_CONNECT_TIMEOUT_MS = 5_000;
export const REMOTE_REQUEST_TIMEOUT_MS = 30_000;

export interface RemoteClientOptions {
  /** the management API server, which the remote server may not be (unless allowRestricted) */
  management: ManagementServer | undefined;
  /** hoist run --allow-restricted-targets (and the verbs' flag of that name) */
  allowRestricted?: boolean;
  userAgent?: string;
}

/** throws RestrictedTargetError when `cfg.server` is restricted and the opt-in is not given */
export async function checkRemoteServer(cfg: ClusterConfig, o: RemoteClientOptions): Promise<void> {
  if (!o.allowRestricted) await checkTarget(cfg.server, o.management);
}

/** the remote cluster's client, as the kubeconfig's identity; the caller closes it */
export function createRemoteClient(cfg: ClusterConfig, o: RemoteClientOptions): RestKubeClient {
  const port = new URL(cfg.server).port || '443';
  const opts: KubeClientOptions = {
    connectTimeoutMs: REMOTE_CONNECT_TIMEOUT_MS,
    requestTimeoutMs: REMOTE_REQUEST_TIMEOUT_MS,
    ...(o.allowRestricted ? {} : { lookup: guardedLookup(port, o.management) }),
    ...(o.userAgent ? { userAgent: o.userAgent } : {}),
  };
  return createKubeClient(cfg, opts);
}
