/**
 * Reads the public keys an image source's `verify.publicKeys` names (a Secret or a ConfigMap),
 * from where and as whom source credentials are read (./credentials.ts): every `*.pub` entry,
 * the way Flux reads cosign keys. Public keys are not secret, but a Secret lets RBAC keep others
 * from swapping them.
 */
import type { BundleDeployment, SourceSpec } from '../../../api/v1alpha2/types.ts';
import type { KubeClient } from '../../kube/types.ts';
import type { PublicKeySet } from '../../sources/source.ts';
import { readReferenced } from './credentials.ts';

/** The Secret or ConfigMap an image source's `verify.publicKeys` names, if any. */
export function verifyKeysRefOf(source: SourceSpec): { kind: 'Secret' | 'ConfigMap'; ref: { name: string } } | undefined {
  const keys = source.image?.verify?.publicKeys;
  if (keys?.secretRef) return { kind: 'Secret', ref: keys.secretRef };
  if (keys?.configMapRef) return { kind: 'ConfigMap', ref: keys.configMapRef };
  return undefined;
}

/** A loader for the source's keys, or undefined when it verifies nothing. */
export function publicKeysOf(
  client: KubeClient,
  controllerNamespace: string,
  bd: BundleDeployment,
  source: SourceSpec,
  defaultServiceAccount?: string,
): (() => Promise<PublicKeySet>) | undefined {
  const from = verifyKeysRefOf(source);
  if (!from) return undefined;
  return async () => {
    const {
      kind,
      ref: { name },
    } = from;
    const { object, namespace } = await readReferenced(client, controllerNamespace, bd, kind, name, defaultServiceAccount);
    const entries = Object.entries(object.data ?? {})
      .filter(([k]) => k.endsWith('.pub'))
      .sort(([a], [b]) => a.localeCompare(b))
      // Secret data is base64, ConfigMap data is the text itself
      .map(([k, v]) => ({ name: k, pem: kind === 'Secret' ? Buffer.from(v, 'base64').toString('utf8') : v }));
    return { from: `${kind} ${namespace}/${name}`, entries };
  };
}
