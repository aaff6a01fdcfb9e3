/**
 * Reads the age identities `spec.decryption.secretRef` names (Flux's spec.decryption): every
 * entry of the Secret whose key ends in `.agekey`, in key order, each an age key file (one
 * identity per line, `#` comments). The Secret is read by the rules of source credentials
 * (credentials.ts): in the controller's namespace, or in installNamespace as the service account
 * acting for the BundleDeployment, so RBAC decides who may decrypt with which keys.
 *
 * Errors (stage resolve: Resolved=False names the reference): a missing Secret is transient (it
 * may be created after the BD; its watch re-queues the BD), a Secret without an age identity or
 * with an entry that is not one is terminal until the Secret changes, a forbidden read names the
 * account. Identities never leave this module except inside DecryptionKeys handed to the
 * processor; messages name the entry and line, never a key.
 */
import { AGE_KEY_SUFFIX, type BundleDeployment } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../kube/types.ts';
import { MAX_IDENTITIES, parseAgeKeyFile, type AgeIdentity, type DecryptionKeys } from '../../processors/sops/age-keys.ts';
import { sha256Hex } from '../../util/hash.ts';
import { HoistError } from '../../util/errors.ts';
import { ReconcileCode, reconcileError, referenceCode } from '../errors.ts';
import { getInScope, refNamespaceOf, type RefScope } from './credentials.ts';

export const DECRYPTION_SUBJECT = 'spec.decryption.secretRef';

/** the Secret spec.decryption names, as "namespace/name" where it is read (SecretWatch's form) */
export function decryptionSecretKey(bd: BundleDeployment, controllerNamespace: string, defaultServiceAccount?: string): string | undefined {
  const name = bd.spec.decryption?.secretRef.name;
  const namespace = refNamespaceOf(bd, controllerNamespace, defaultServiceAccount);
  return name && namespace ? `${namespace}/${name}` : undefined;
}

/** The identities of the Secret `name` in `scope`. */
export async function readDecryptionKeys(scope: RefScope, name: string): Promise<DecryptionKeys> {
  const what = `secret ${scope.namespace}/${name}`;
  const subject = `${DECRYPTION_SUBJECT} ${what}`;
  const secret = await getInScope<KubeObject & { data?: Record<string, string> }>(scope, 'Secret', name).catch((e: unknown) => {
    // the forbidden error names the account and the Secret; say which field needed it
    if (e instanceof HoistError) throw new HoistError(e.message, { stage: e.stage, reason: e.reason, code: e.code, subject, terminal: e.terminal, cause: e });
    throw e;
  });
  if (!secret) throw reconcileError(`${what} not found`, referenceCode('Secret', 'missing'), { stage: 'resolve', subject, terminal: false });
  const entries = Object.keys(secret.data ?? {})
    .filter((k) => k.endsWith(AGE_KEY_SUFFIX))
    .sort();
  if (entries.length === 0)
    throw reconcileError(`${what} has no entry ending in ${AGE_KEY_SUFFIX} (an age key file)`, ReconcileCode.DecryptionKeysInvalid, {
      stage: 'resolve',
      subject,
      terminal: true,
    });
  const identities: AgeIdentity[] = [];
  for (const entry of entries) {
    const text = Buffer.from(secret.data![entry]!, 'base64').toString('utf8');
    try {
      identities.push(...(await parseAgeKeyFile(text, `${what} key ${entry}`)));
    } catch (e) {
      throw reconcileError((e as Error).message, ReconcileCode.DecryptionKeysInvalid, { stage: 'resolve', subject, terminal: true });
    }
  }
  if (identities.length === 0)
    throw reconcileError(`${what}: its ${AGE_KEY_SUFFIX} entries hold no age identity`, ReconcileCode.DecryptionKeysInvalid, {
      stage: 'resolve',
      subject,
      terminal: true,
    });
  if (identities.length > MAX_IDENTITIES)
    throw reconcileError(
      `${what} holds ${identities.length} age identities, more than the ${MAX_IDENTITIES} Hoist reads`,
      ReconcileCode.DecryptionKeysInvalid,
      {
        stage: 'resolve',
        subject,
        terminal: true,
      },
    );
  return { from: what, identities };
}

/**
 * What the render inputs say about the keys: the Secret and a digest of its identities (never
 * the identities: the inputs hash is stored with each revision). A new key is a new input, so
 * the bundle is rendered again; the revision is new only when the decrypted content changed.
 */
export function decryptionInput(keys: DecryptionKeys): { secret: string; keys: string } {
  return { secret: keys.from, keys: `sha256:${sha256Hex(keys.identities.map((i) => i.identity).join('\n'))}` };
}
