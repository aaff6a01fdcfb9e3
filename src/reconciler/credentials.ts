/**
 * Reads the Secret a source's auth refers to (DESIGN §7): in the controller's own namespace, or,
 * when a service account acts for the BundleDeployment (spec.serviceAccount or the controller's
 * --default-service-account), in its installNamespace as that service account, so Kubernetes
 * RBAC decides who may use which secret. Values never leave this module except inside
 * Credentials handed to a source, together with the hosts the Secret's
 * `core.rukpak.io/credential-hosts` annotation binds them to (the sources enforce it).
 */
import { ANNOTATION_CREDENTIAL_HOSTS, type BundleDeployment, type SourceSpec } from '../../api/v1alpha2/types.ts';
import { isForbidden } from '../kube/api-error.ts';
import type { KubeClient, KubeObject } from '../kube/types.ts';
import type { Credentials } from '../sources/source.ts';
import { HoistError } from '../util/errors.ts';

export function secretRefOf(source: SourceSpec): string | undefined {
  return (source.image ?? source.git ?? source.http)?.auth?.secretRef.name;
}

/**
 * "namespace/name" of the Secret a source's auth names, where readCredentials looks for it: the
 * installNamespace when a service account reads it, else the controller's namespace.
 */
export function secretKeyOf(bd: BundleDeployment, source: SourceSpec, controllerNamespace: string, defaultServiceAccount?: string): string | undefined {
  const name = secretRefOf(source);
  if (!name) return undefined;
  const namespace = (bd.spec.serviceAccount?.name ?? defaultServiceAccount) ? bd.spec.installNamespace : controllerNamespace;
  return namespace ? `${namespace}/${name}` : undefined;
}

export async function readCredentials(client: KubeClient, controllerNamespace: string, bd: BundleDeployment, source: SourceSpec, defaultServiceAccount?: string): Promise<Credentials | undefined> {
  const name = secretRefOf(source);
  if (!name) return undefined;
  const { object: secret, namespace } = await readReferenced(client, controllerNamespace, bd, 'Secret', name, defaultServiceAccount);
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) data[k] = Buffer.from(v, 'base64').toString('utf8');
  const hosts = secret.metadata.annotations?.[ANNOTATION_CREDENTIAL_HOSTS]?.split(',').map((h) => h.trim()).filter((h) => h !== '');
  return { data, secret: `${namespace}/${name}`, ...(hosts && hosts.length > 0 ? { hosts } : {}) };
}

/**
 * A Secret or ConfigMap a BundleDeployment names, where and as whom readCredentials reads
 * secrets: the controller's namespace, or installNamespace as the acting service account.
 * Missing is transient (it may be created after the BundleDeployment).
 */
export async function readReferenced(
  client: KubeClient,
  controllerNamespace: string,
  bd: BundleDeployment,
  kind: 'Secret' | 'ConfigMap',
  name: string,
  defaultServiceAccount?: string,
): Promise<{ object: KubeObject & { data?: Record<string, string> }; namespace: string }> {
  const what = kind.toLowerCase();
  const sa = bd.spec.serviceAccount?.name ?? defaultServiceAccount;
  const namespace = sa ? bd.spec.installNamespace : controllerNamespace;
  if (!namespace) {
    throw new HoistError(`serviceAccount needs installNamespace to read ${what}s`, { stage: 'spec', reason: 'ResolveFailed', code: 'bad-spec', subject: `${what} ${name}`, terminal: true });
  }
  const reader = sa ? client.impersonate(`system:serviceaccount:${namespace}:${sa}`) : client;
  let object: (KubeObject & { data?: Record<string, string> }) | undefined;
  try {
    object = await reader.get({ apiVersion: 'v1', kind }, name, namespace);
  } catch (e) {
    if (isForbidden(e)) {
      throw new HoistError(`service account ${namespace}/${sa} may not read ${what} ${namespace}/${name}`, { stage: 'resolve', reason: 'ResolveFailed', code: `${what}-forbidden`, subject: `${what} ${namespace}/${name}`, terminal: false, cause: e });
    }
    throw e;
  }
  if (!object) {
    throw new HoistError(`${what} ${namespace}/${name} not found`, { stage: 'resolve', reason: 'ResolveFailed', code: `${what}-not-found`, subject: `${what} ${namespace}/${name}`, terminal: false });
  }
  return { object, namespace };
}
