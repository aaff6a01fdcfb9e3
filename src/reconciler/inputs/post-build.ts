/**
 * Reads `spec.postBuild.substituteFrom` (Flux Kustomization's substituteFrom): each ConfigMap or
 * Secret, in order, by the rules of source credentials (credentials.ts) — in the controller's
 * namespace, or in installNamespace as the service account acting for the BundleDeployment, so
 * RBAC decides who may use which variables. A ConfigMap's `data` keys are variables (its
 * `binaryData` is not, as in Flux), a Secret's `data` keys too, base64-decoded to their bytes.
 * Together with `substitute` they become the render's variables (processors/post-build); messages
 * name the reference, never a value.
 *
 * Errors (stage resolve, so Resolved=False names the reference): a missing object is transient (it
 * may be created after the BD; its watch re-queues the BD) unless `optional: true`, which reads it
 * as empty, as Flux does. A forbidden read fails whatever `optional` says: the account may not use
 * that object.
 */
import type { BundleDeployment, PostBuild, SubstituteReference } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../kube/types.ts';
import { toBytes } from '../../processors/post-build/go-text.ts';
import { mergeVariables, type PostBuildVariables, type VariableSource } from '../../processors/post-build/substitute.ts';
import { HoistError } from '../../util/errors.ts';
import { reconcileError, referenceCode } from '../errors.ts';
import { getInScope, refWatchKeys, type RefScope } from './credentials.ts';

type Holder = KubeObject & { data?: Record<string, string> };

/** what the render needs of spec.postBuild */
export interface PostBuildInput {
  variables: PostBuildVariables;
  strategy: NonNullable<PostBuild['substituteStrategy']>;
}

/** spec.postBuild of a format that takes it (plain, kustomize), else undefined */
export function postBuildOf(bd: BundleDeployment): PostBuild | undefined {
  return bd.spec.format === 'plain' || bd.spec.format === 'kustomize' ? bd.spec.postBuild : undefined;
}

export function substituteFromRefs(bd: BundleDeployment): readonly SubstituteReference[] {
  return postBuildOf(bd)?.substituteFrom ?? [];
}

/** the watch keys of the referenced objects: Secrets "ns/name", ConfigMaps "ns/name" (SecretWatch's form) */
export function substituteFromObjects(
  bd: BundleDeployment,
  controllerNamespace: string,
  defaultServiceAccount?: string,
): { secrets: string[]; configMaps: string[] } {
  return refWatchKeys(bd, substituteFromRefs(bd), controllerNamespace, defaultServiceAccount);
}

/**
 * The variables of spec.postBuild: every substituteFrom entry read in `scope`, in order, then
 * substitute. `scope` may be undefined only when there are no substituteFrom entries.
 */
export async function readPostBuild(scope: RefScope | undefined, postBuild: PostBuild): Promise<PostBuildInput> {
  const refs = postBuild.substituteFrom ?? [];
  const sources: VariableSource[] = [];
  for (const [i, ref] of refs.entries()) {
    if (!scope) throw new Error('postBuild.substituteFrom needs a scope to read in');
    const what = `${ref.kind.toLowerCase()} ${scope.namespace}/${ref.name}`;
    const subject = `postBuild.substituteFrom[${i}] ${what}`;
    const obj = await getInScope<Holder>(scope, ref.kind, ref.name).catch((e: unknown) => {
      // the forbidden error of getInScope names the object; say which entry needed it
      if (e instanceof HoistError) throw new HoistError(e.message, { stage: e.stage, reason: e.reason, code: e.code, subject, terminal: e.terminal, cause: e });
      throw e;
    });
    if (!obj) {
      if (ref.optional) continue;
      throw reconcileError(`${what} not found`, referenceCode(ref.kind, 'missing'), { stage: 'resolve', subject, terminal: false });
    }
    const data = new Map<string, string>();
    for (const [key, raw] of Object.entries(obj.data ?? {})) {
      data.set(key, ref.kind === 'Secret' ? Buffer.from(raw, 'base64').toString('latin1') : toBytes(raw));
    }
    sources.push({ from: subject, data });
  }
  const inline = new Map(Object.entries(postBuild.substitute ?? {}).map(([k, v]) => [k, toBytes(v)]));
  sources.push({ from: 'postBuild.substitute', data: inline });
  return { variables: mergeVariables(sources), strategy: postBuild.substituteStrategy ?? 'WithVariables' };
}

/** the variables as a render input (hashed with the other inputs, never stored as such) */
export function postBuildInputKey(input: PostBuildInput): { strategy: string; variables: Array<[string, string]> } {
  return { strategy: input.strategy, variables: [...input.variables.values].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) };
}
