/**
 * The cluster a BundleDeployment installs into, for the verbs that read it live (`tree`, `diff`): the management cluster for a BD without spec.kubeConfig (the
 * caller's own client); for one with it, the remote cluster of its kubeconfig Secret. The Secret
 * is read with the caller's own rights on the management cluster (a caller who may not read it
 * gets the controller's SecretForbidden message, naming the Secret), its text validated as the
 * controller validates it (src/kube/kubeconfig-secret.ts: no exec or auth-provider plugin, no
 * file, TLS verified, https only), and the client made by the controller's own
 * src/kube/remote-client.ts (bounded timeouts; the management API server, link-local and metadata
 * addresses refused unless --allow-restricted-targets). Remote reads run as the kubeconfig's
 * identity, as the controller's do; the revision store and the BD stay on the management cluster.
 */
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import type { RestKubeClient } from '../../kube/client.ts';
import { checkRemoteServer, createRemoteClient } from '../../kube/remote-client.ts';
import { managementServer } from '../../kube/target-guard.ts';
import { readKubeconfig } from '../../reconciler/inputs/kubeconfig.ts';
import { restricted } from '../../reconciler/targets.ts';

/** --allow-restricted-targets, as hoist run's */
export const RESTRICTED_OPTION = {
  'allow-restricted-targets': { type: 'boolean' },
} as const;

export const RESTRICTED_HELP = `  --allow-restricted-targets
                           for a BundleDeployment with spec.kubeConfig: connect even when its
                           server is the management API server, link-local or a metadata address
                           (as hoist run's flag; refused by default)`;

export interface TargetCluster {
  /** the cluster's client: the caller's own (local) or the kubeconfig's identity (remote) */
  client: RestKubeClient;
  /** the remote API server's host (and port); undefined for the management cluster */
  cluster: string | undefined;
  /** closes the remote client (the caller's own is left to the caller) */
  close(): Promise<void>;
}

/**
 * The target cluster of `bd`. `mgmt` is the caller's client of the management cluster and
 * `server` its URL. Throws the controller's typed errors: the Secret missing, forbidden to the
 * caller, without the key, its kubeconfig refused (naming the field), the server restricted.
 */
export async function targetCluster(mgmt: RestKubeClient, server: string, bd: BundleDeployment, o: { allowRestricted?: boolean } = {}): Promise<TargetCluster> {
  if (!bd.spec.kubeConfig) return { client: mgmt, cluster: undefined, close: async () => {} };
  const read = await readKubeconfig(mgmt, 'you', bd);
  const management = await managementServer(server).catch(() => undefined);
  const opts = { management, userAgent: 'hoist-cli', ...(o.allowRestricted ? { allowRestricted: true } : {}) };
  await checkRemoteServer(read.config, opts).catch((e: unknown) => {
    throw restricted(e, read);
  });
  const client = createRemoteClient(read.config, opts);
  return { client, cluster: new URL(read.config.server).host, close: () => client.close() };
}
