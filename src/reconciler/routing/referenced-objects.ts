/**
 * The Secrets and ConfigMaps whose change re-queues a BundleDeployment (secret-watch.ts watches
 * them): its sources' credentials and CAs, spec.valuesFrom, postBuild.substituteFrom,
 * spec.decryption and spec.kubeConfig. Each is read again at the next reconcile. Pure.
 */
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { decryptionSecretKey } from '../inputs/decryption-keys.ts';
import { kubeConfigSecretOf } from '../inputs/kubeconfig.ts';
import { substituteFromObjects } from '../inputs/post-build.ts';
import { referencedObjects } from '../inputs/source-ca.ts';
import { valuesFromObjects } from '../inputs/values-from.ts';

/** "namespace/name" keys of what bd reads */
export interface ReferencedObjects {
  secrets: string[];
  configMaps: string[];
}

export function referencedObjectsOf(bd: BundleDeployment, controllerNamespace: string, defaultServiceAccount?: string): ReferencedObjects {
  const refs = [
    ...bd.spec.sources.map((s) => referencedObjects(bd, s, controllerNamespace, defaultServiceAccount)),
    valuesFromObjects(bd, controllerNamespace, defaultServiceAccount),
    substituteFromObjects(bd, controllerNamespace, defaultServiceAccount),
    { secrets: [decryptionSecretKey(bd, controllerNamespace, defaultServiceAccount)].flatMap((k) => k ?? []), configMaps: [] },
  ];
  const kubeconfig = kubeConfigSecretOf(bd);
  return {
    secrets: [...refs.flatMap((r) => r.secrets), ...(kubeconfig ? [kubeconfig] : [])],
    configMaps: refs.flatMap((r) => r.configMaps),
  };
}
