/**
 * Reads `config.helm.valuesFrom` (Flux HelmRelease's valuesFrom): each Secret or ConfigMap key,
 * in order, by the rules of source credentials (credentials.ts): in the controller's namespace,
 * or in installNamespace as the service account acting for the BundleDeployment, so RBAC decides
 * who may use which values. The text goes to the helm processor only (ProcessContext
 * helmValuesFrom); messages name the reference, never the content.
 *
 * Errors (stage resolve, so Resolved=False names the reference): a missing object is transient (it
 * may be created after the BD; its watch re-queues the BD), a missing key terminal until the object
 * changes; `optional: true` skips both. A forbidden read fails whatever `optional` says: the
 * account may not use that object.
 */
import { DEFAULT_VALUES_KEY, type BundleDeployment, type HelmValuesReference } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { ValuesFromText } from '../../processors/processor.ts';
import { HoistError } from '../../util/errors.ts';
import { reconcileError, ReconcileCode, referenceCode } from '../errors.ts';
import { getInScope, refWatchKeys, type RefScope } from './credentials.ts';

type Holder = { data?: Record<string, string>; metadata: { name: string } };

export function valuesFromRefs(bd: BundleDeployment): readonly HelmValuesReference[] {
  return bd.spec.format === 'helm' ? (bd.spec.config?.helm?.valuesFrom ?? []) : [];
}

/** the watch keys of the referenced objects: Secrets "ns/name", ConfigMaps "ns/name" (SecretWatch's form) */
export function valuesFromObjects(
  bd: BundleDeployment,
  controllerNamespace: string,
  defaultServiceAccount?: string,
): { secrets: string[]; configMaps: string[] } {
  return refWatchKeys(bd, valuesFromRefs(bd), controllerNamespace, defaultServiceAccount);
}

/** Every entry's text in order, read in `scope`; optional ones that are missing are left out. */
export async function readValuesFrom(scope: RefScope, refs: readonly HelmValuesReference[]): Promise<ValuesFromText[]> {
  // one read per object however many keys it gives, and the same version of it for all of them
  const objects = new Map<string, Promise<Holder | undefined>>();
  const out: ValuesFromText[] = [];
  for (const [i, ref] of refs.entries()) {
    const what = `${ref.kind.toLowerCase()} ${scope.namespace}/${ref.name}`;
    const key = ref.valuesKey ?? DEFAULT_VALUES_KEY;
    const id = `${ref.kind}/${ref.name}`;
    if (!objects.has(id)) objects.set(id, getInScope<Holder & KubeObject>(scope, ref.kind, ref.name));
    const subject = `config.helm.valuesFrom[${i}] ${what}`;
    const obj = await objects.get(id)!.catch((e: unknown) => {
      // the forbidden error of getInScope names the object; say which entry needed it
      if (e instanceof HoistError) throw new HoistError(e.message, { stage: e.stage, reason: e.reason, code: e.code, subject, terminal: e.terminal, cause: e }); // the same error, named by its entry
      throw e;
    });
    if (!obj) {
      if (ref.optional) continue;
      throw reconcileError(`${what} not found`, referenceCode(ref.kind, 'missing'), { stage: 'resolve', subject, terminal: false });
    }
    const raw = obj.data?.[key];
    if (raw === undefined) {
      if (ref.optional) continue;
      throw reconcileError(`${what} has no key ${JSON.stringify(key)}`, ReconcileCode.ValuesKeyMissing, { stage: 'resolve', subject, terminal: true });
    }
    const text = ref.kind === 'Secret' ? Buffer.from(raw, 'base64').toString('utf8') : raw;
    out.push({ ref: `${what} key ${key}`, text, secret: ref.kind === 'Secret', ...(ref.targetPath ? { targetPath: ref.targetPath } : {}) });
  }
  return out;
}
