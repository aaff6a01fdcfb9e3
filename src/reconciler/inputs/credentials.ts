/**
 * Reads the Secret a source's auth refers to (DESIGN §7): in the controller's own namespace, or,
 * when a service account acts for the BundleDeployment (spec.serviceAccount or the controller's
 * --default-service-account), in its installNamespace as that service account, so Kubernetes
 * RBAC decides who may use which secret. Values never leave this module except inside
 * Credentials handed to a source, together with the hosts the Secret's
 * `core.rukpak.io/credential-hosts` annotation binds them to (the sources enforce it).
 */
import { ANNOTATION_CREDENTIAL_HOSTS, type BundleDeployment, type SourceSpec } from '../../../api/v1alpha2/types.ts';
import { isForbidden } from '../../kube/api-error.ts';
import type { KubeClient, KubeObject } from '../../kube/types.ts';
import type { Credentials } from '../../sources/source.ts';
import { ReconcileCode, reconcileError, referenceCode } from '../errors.ts';

export function secretRefOf(source: SourceSpec): string | undefined {
  return (source.image ?? source.git ?? source.http ?? source.helm)?.auth?.secretRef.name;
}

/**
 * "namespace/name" of the Secret a source's auth names, where readCredentials looks for it: the
 * installNamespace when a service account reads it, else the controller's namespace.
 */
export function secretKeyOf(bd: BundleDeployment, source: SourceSpec, controllerNamespace: string, defaultServiceAccount?: string): string | undefined {
  const name = secretRefOf(source);
  const namespace = refNamespaceOf(bd, controllerNamespace, defaultServiceAccount);
  return name && namespace ? `${namespace}/${name}` : undefined;
}

/** installNamespace when a service account acts for the BD, else the controller's namespace */
export function refNamespaceOf(bd: BundleDeployment, controllerNamespace: string, defaultServiceAccount?: string): string | undefined {
  return (bd.spec.serviceAccount?.name ?? defaultServiceAccount) ? bd.spec.installNamespace : controllerNamespace;
}

/** Where a BundleDeployment's referenced Secrets and ConfigMaps are read, and as whom (DESIGN §7). */
/**
 * The watch keys ("ns/name", SecretWatch's form) of the Secrets and ConfigMaps a BD refers to by
 * name (valuesFrom, substituteFrom): in the namespace its references are read in.
 */
export function refWatchKeys(
  bd: BundleDeployment,
  refs: ReadonlyArray<{ kind: 'Secret' | 'ConfigMap'; name: string }>,
  controllerNamespace: string,
  defaultServiceAccount?: string,
): { secrets: string[]; configMaps: string[] } {
  const namespace = refNamespaceOf(bd, controllerNamespace, defaultServiceAccount);
  if (!namespace) return { secrets: [], configMaps: [] };
  const keys = (kind: 'Secret' | 'ConfigMap'): string[] => [...new Set(refs.filter((r) => r.kind === kind).map((r) => `${namespace}/${r.name}`))];
  return { secrets: keys('Secret'), configMaps: keys('ConfigMap') };
}

export interface RefScope {
  namespace: string;
  /** the service account acting for the BD, when one does */
  serviceAccount?: string;
  /** the controller's client, or one impersonating the service account */
  reader: KubeClient;
}

/** The scope `readCredentials` and the CA references (source-ca.ts) share; `subject` names the ref. */
export function refScope(
  client: KubeClient,
  controllerNamespace: string,
  bd: BundleDeployment,
  defaultServiceAccount: string | undefined,
  subject: string,
): RefScope {
  const sa = bd.spec.serviceAccount?.name ?? defaultServiceAccount;
  const namespace = refNamespaceOf(bd, controllerNamespace, defaultServiceAccount);
  if (!namespace) {
    throw reconcileError('serviceAccount needs installNamespace to read secrets and config maps', ReconcileCode.BadSpec, {
      stage: 'spec',
      subject,
      terminal: true,
    });
  }
  return sa ? { namespace, serviceAccount: sa, reader: client.impersonate(`system:serviceaccount:${namespace}:${sa}`) } : { namespace, reader: client };
}

/** A Secret or ConfigMap in the scope, read as its identity; undefined when it does not exist. */
export async function getInScope<T extends KubeObject>(scope: RefScope, kind: 'Secret' | 'ConfigMap', name: string): Promise<T | undefined> {
  try {
    return await scope.reader.get<T>({ apiVersion: 'v1', kind }, name, scope.namespace);
  } catch (e) {
    if (isForbidden(e)) {
      const what = `${kind.toLowerCase()} ${scope.namespace}/${name}`;
      throw reconcileError(`service account ${scope.namespace}/${scope.serviceAccount ?? ''} may not read ${what}`, referenceCode(kind, 'forbidden'), {
        stage: 'resolve',
        subject: what,
        terminal: false,
        cause: e,
      });
    }
    throw e;
  }
}

export async function readCredentials(
  client: KubeClient,
  controllerNamespace: string,
  bd: BundleDeployment,
  source: SourceSpec,
  defaultServiceAccount?: string,
): Promise<Credentials | undefined> {
  const name = secretRefOf(source);
  if (!name) return undefined;
  const { object: secret, namespace } = await readReferenced(client, controllerNamespace, bd, 'Secret', name, defaultServiceAccount);
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) data[k] = Buffer.from(v, 'base64').toString('utf8');
  const hosts = secret.metadata.annotations?.[ANNOTATION_CREDENTIAL_HOSTS]?.split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  return { data, secret: `${namespace}/${name}`, ...(hosts && hosts.length > 0 ? { hosts } : {}) };
}

/**
 * A Secret or ConfigMap a BundleDeployment names (credentials, image verification keys), read in
 * its scope as its identity. Missing is transient: it may be created after the BundleDeployment.
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
  const scope = refScope(client, controllerNamespace, bd, defaultServiceAccount, `${what} ${name}`);
  const object = await getInScope<KubeObject & { data?: Record<string, string> }>(scope, kind, name);
  if (!object) {
    throw reconcileError(`${what} ${scope.namespace}/${name} not found`, referenceCode(kind, 'missing'), {
      stage: 'resolve',
      subject: `${what} ${scope.namespace}/${name}`,
      terminal: false,
    });
  }
  return { object, namespace: scope.namespace };
}
