/**
 * Reads the CA bundle a git, http or helm source names in `caSecretRef` / `caConfigMapRef` (issue 16),
 * by the same rules as its credentials (credentials.ts): in the controller's namespace, or in
 * installNamespace as the service account acting for the BundleDeployment, so RBAC decides who
 * may use which CA. The PEM is checked here, so a bad reference is a Resolved=False error naming
 * the reference before any request; the source adds it to its trust for its own requests only.
 *
 * Errors: a missing Secret or ConfigMap is transient (it may be created after the BD; its watch
 * re-queues the BD); a missing key or a bundle that does not parse is terminal until the object
 * changes (the watch re-queues the BD then, too).
 *
 * It also names every object a source references (auth Secret, CA, `image.verify` keys) as watch
 * keys, so a change to any of them re-queues the BD.
 */
import { DEFAULT_CA_KEY, type BundleDeployment, type CARef, type SourceSpec } from '../../../api/v1alpha2/types.ts';
import type { KubeClient, KubeObject } from '../../kube/types.ts';
import { caBundleProblem } from '../../sources/transport/ca-bundle.ts';
import type { SourceCA } from '../../sources/source.ts';
import { HoistError } from '../../util/errors.ts';
import { getInScope, refNamespaceOf, refScope, secretKeyOf } from './credentials.ts';
import { verifyKeysRefOf } from './public-keys.ts';
import { ReconcileCode, reconcileError } from '../errors.ts';

/** Keys of watched ConfigMaps carry this prefix where they share a set with Secret keys. */
export const CONFIGMAP_KEY_PREFIX = 'configmap:';

type RefKind = 'Secret' | 'ConfigMap';

/** The source's CA reference, if any (only git, http and helm sources have one). */
export function caRefOf(source: SourceSpec): { kind: RefKind; ref: CARef } | undefined {
  const s = source.git ?? source.http ?? source.helm;
  if (s?.caSecretRef) return { kind: 'Secret', ref: s.caSecretRef };
  if (s?.caConfigMapRef) return { kind: 'ConfigMap', ref: s.caConfigMapRef };
  return undefined;
}

/** Where the objects a source references live, as watch keys: "namespace/name" per kind. */
export function referencedObjects(
  bd: BundleDeployment,
  source: SourceSpec,
  controllerNamespace: string,
  defaultServiceAccount?: string,
): { secrets: string[]; configMaps: string[] } {
  const secrets: string[] = [];
  const configMaps: string[] = [];
  const auth = secretKeyOf(bd, source, controllerNamespace, defaultServiceAccount);
  if (auth) secrets.push(auth);
  const namespace = refNamespaceOf(bd, controllerNamespace, defaultServiceAccount);
  for (const ref of [caRefOf(source), verifyKeysRefOf(source)])
    if (ref && namespace) (ref.kind === 'Secret' ? secrets : configMaps).push(`${namespace}/${ref.ref.name}`);
  return { secrets, configMaps };
}

/** Whether the keys `verify.publicKeys` names are among the rotated ones (rotationKeysOf's form). */
export function verifyKeysRotated(
  bd: BundleDeployment,
  source: SourceSpec,
  rotated: ReadonlySet<string>,
  controllerNamespace: string,
  defaultServiceAccount?: string,
): boolean {
  const ref = verifyKeysRefOf(source);
  const namespace = refNamespaceOf(bd, controllerNamespace, defaultServiceAccount);
  if (!ref || !namespace) return false;
  return rotated.has(`${ref.kind === 'ConfigMap' ? CONFIGMAP_KEY_PREFIX : ''}${namespace}/${ref.ref.name}`);
}

/** The keys a rotation of which re-checks this source: Secrets as "ns/name", ConfigMaps prefixed. */
export function rotationKeysOf(bd: BundleDeployment, source: SourceSpec, controllerNamespace: string, defaultServiceAccount?: string): string[] {
  const { secrets, configMaps } = referencedObjects(bd, source, controllerNamespace, defaultServiceAccount);
  return [...secrets, ...configMaps.map((k) => `${CONFIGMAP_KEY_PREFIX}${k}`)];
}

/** The source's CA bundle, read and checked; undefined when it names none. Throws HoistError (resolve). */
export async function readSourceCA(
  client: KubeClient,
  controllerNamespace: string,
  bd: BundleDeployment,
  source: SourceSpec,
  defaultServiceAccount?: string,
): Promise<SourceCA | undefined> {
  const ca = caRefOf(source);
  if (!ca) return undefined;
  const key = ca.ref.key ?? DEFAULT_CA_KEY;
  const field = ca.kind === 'Secret' ? 'caSecretRef' : 'caConfigMapRef';
  const scope = refScope(client, controllerNamespace, bd, defaultServiceAccount, `${field} ${ca.ref.name}`);
  const what = `${ca.kind.toLowerCase()} ${scope.namespace}/${ca.ref.name}`;
  const fail = (message: string, code: ReconcileCode, terminal: boolean): HoistError =>
    reconcileError(message, code, { stage: 'resolve', subject: `${field} ${what} key ${key}`, terminal });
  const obj = await getInScope<KubeObject & { data?: Record<string, string>; binaryData?: Record<string, string> }>(scope, ca.kind, ca.ref.name);
  if (!obj) throw fail(`${what} not found`, ReconcileCode.CaNotFound, false);
  // Secret data is base64; a ConfigMap holds text in data (a PEM) or base64 in binaryData
  const raw = obj.data?.[key];
  const pem = raw === undefined ? decode(obj.binaryData?.[key]) : ca.kind === 'Secret' ? decode(raw) : raw;
  if (pem === undefined) throw fail(`${what} has no key ${JSON.stringify(key)}`, ReconcileCode.CaKeyMissing, true);
  const problem = caBundleProblem(pem);
  if (problem) throw fail(`the CA bundle in ${what} key ${JSON.stringify(key)} ${problem}`, ReconcileCode.CaInvalid, true);
  return { pem, ref: `${what} key ${key}` };
}

function decode(b64: string | undefined): string | undefined {
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8');
}
