/**
 * Reads the kubeconfig a BundleDeployment's `spec.kubeConfig.secretRef` names (docs/design.md
 * "Remote clusters"): the Secret on the management cluster, read as the BD's identity there (its
 * ServiceAccount, impersonated, or the controller without one; the tenancy policy's rule
 * kubeconfig says who may name which Secret), key `key`, else `value` (Cluster API), else
 * `value.yaml`. The text is read by src/kube/kubeconfig-secret.ts, which refuses what the
 * controller must not do for a tenant. Values never leave this module except inside the
 * ClusterConfig handed to the target registry; messages name the Secret and the field, never data.
 */
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { isForbidden } from '../../kube/api-error.ts';
import type { ClusterConfig } from '../../kube/kube-config.ts';
import { clusterConfigFromKubeconfig, KubeconfigRefusedError } from '../../kube/kubeconfig-secret.ts';
import type { KubeClient, KubeObject } from '../../kube/types.ts';
import { ReconcileCode, reconcileError } from '../errors.ts';

/** the keys tried, in order, when secretRef names none */
export const DEFAULT_KUBECONFIG_KEYS = ['value', 'value.yaml'] as const;

/** "namespace/name" of the kubeconfig Secret bd names, or undefined (a local BD) */
export function kubeConfigSecretOf(bd: BundleDeployment): string | undefined {
  const ref = bd.spec.kubeConfig?.secretRef;
  return ref ? `${ref.namespace}/${ref.name}` : undefined;
}

export interface KubeconfigRead {
  config: ClusterConfig;
  /** "namespace/name" */
  secret: string;
  key: string;
  resourceVersion: string | undefined;
}

/**
 * The ClusterConfig of bd's kubeconfig Secret, read with `reader` (the BD's identity on the
 * management cluster; `who` names it in messages). Missing or unreadable: transient (the Secret
 * may appear, RBAC may change; its watch re-queues the BD). Refused content: terminal until the
 * Secret changes.
 */
export async function readKubeconfig(reader: KubeClient, who: string, bd: BundleDeployment, signal?: AbortSignal): Promise<KubeconfigRead> {
  const ref = bd.spec.kubeConfig!.secretRef;
  const secret = `${ref.namespace}/${ref.name}`;
  const subject = `kubeconfig secret ${secret}`;
  let object: (KubeObject & { data?: Record<string, string> }) | undefined;
  try {
    object = await reader.get<KubeObject & { data?: Record<string, string> }>({ apiVersion: 'v1', kind: 'Secret' }, ref.name, ref.namespace, { signal });
  } catch (e) {
    if (isForbidden(e))
      throw reconcileError(`${who} may not read secret ${secret} (spec.kubeConfig.secretRef)`, ReconcileCode.SecretForbidden, {
        stage: 'resolve',
        subject,
        terminal: false,
        cause: e,
      });
    throw e;
  }
  if (!object)
    throw reconcileError(`secret ${secret} not found (spec.kubeConfig.secretRef)`, ReconcileCode.SecretNotFound, {
      stage: 'resolve',
      subject,
      terminal: false,
    });
  const data = object.data ?? {};
  const keys = ref.key ? [ref.key] : DEFAULT_KUBECONFIG_KEYS;
  const key = keys.find((k) => data[k] !== undefined);
  if (!key)
    throw reconcileError(`secret ${secret} has no key ${keys.join(' or ')} (spec.kubeConfig.secretRef.key)`, ReconcileCode.KubeconfigKeyMissing, {
      stage: 'resolve',
      subject,
      terminal: true,
    });
  const source = `secret ${secret} key ${key}`;
  try {
    const config = clusterConfigFromKubeconfig(Buffer.from(data[key]!, 'base64').toString('utf8'), source);
    return { config, secret, key, resourceVersion: object.metadata.resourceVersion };
  } catch (e) {
    if (e instanceof KubeconfigRefusedError)
      throw reconcileError(`kubeconfig refused: ${e.field}: ${e.message}`, ReconcileCode.KubeconfigRefused, {
        stage: 'resolve',
        subject: `${subject} key ${key}`,
        terminal: true,
      });
    throw e;
  }
}
