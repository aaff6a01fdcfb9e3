/**
 * OLM v1's deploymentConfig (`config.registryV1.deploymentConfig`, OLM v0's SubscriptionConfig
 * without `selector`) applied to a rendered Deployment, with OLM v1's merge rules
 * (generators.go applyCustomConfigToDeployment, which follows OLM v0's overrides/inject):
 *
 * - env: per container, an entry with the name of an existing variable replaces it in place,
 *   others are appended;
 * - envFrom: per container, appended unless an equal source is already there;
 * - volumes: an entry with the name of an existing volume replaces it in place, others appended;
 * - volumeMounts: per container, the same by name;
 * - tolerations: appended unless an equal toleration is already there;
 * - resources: replace every container's resources;
 * - nodeSelector: replaces the pod's (an empty map removes it);
 * - affinity: `{}` removes the pod's affinity; otherwise each of nodeAffinity, podAffinity,
 *   podAntiAffinity that is set replaces the pod's, and an empty one removes it;
 * - annotations: added to the Deployment's and the pod template's annotations, existing keys win.
 *
 * Only `containers` are changed, not `initContainers`, as in OLM. Pure: mutates only the
 * Deployment passed in, which the generator owns.
 */
import { isDeepStrictEqual } from 'node:util';
import type { RegistryV1DeploymentConfig } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../kube/types.ts';
import { isJsonObject } from '../yaml/values.ts';
import type { JsonObject, JsonValue } from '../yaml/values.ts';

function objectAt(parent: JsonObject, key: string): JsonObject {
  const v = parent[key];
  if (isJsonObject(v)) return v;
  const created: JsonObject = {};
  parent[key] = created;
  return created;
}

function listOf(v: JsonValue | undefined): JsonValue[] {
  return Array.isArray(v) ? v : [];
}

function clone(v: unknown): JsonValue {
  return structuredClone(v) as JsonValue;
}

/**
 * OLM compares envFrom sources and tolerations as Go structs, whose plain string fields are
 * omitempty: `operator: ""` equals no operator. Pointers (tolerationSeconds, optional) keep
 * their distinction, as here.
 */
function withoutEmptyStrings(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(withoutEmptyStrings);
  if (!isJsonObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) if (x !== '') out[k] = withoutEmptyStrings(x);
  return out;
}

function appendMissing(list: JsonValue[], additions: readonly unknown[]): JsonValue[] {
  const out = [...list];
  for (const a of additions) {
    const candidate = clone(a);
    if (!out.some((x) => isDeepStrictEqual(withoutEmptyStrings(x), withoutEmptyStrings(candidate)))) out.push(candidate);
  }
  return out;
}

/** replace entries with the same name in place (names as they were before), append the rest */
function mergeByName(list: JsonValue[], additions: readonly { name: string }[]): JsonValue[] {
  const out = [...list];
  const index = new Map<string, number>();
  out.forEach((x, i) => {
    if (isJsonObject(x) && typeof x['name'] === 'string') index.set(x['name'], i);
  });
  for (const a of additions) {
    const i = index.get(a.name);
    if (i === undefined) out.push(clone(a));
    else out[i] = clone(a);
  }
  return out;
}

function isEmptyList(v: JsonValue | undefined): boolean {
  return !Array.isArray(v) || v.length === 0;
}

function nodeAffinityEmpty(v: JsonValue | undefined): boolean {
  if (!isJsonObject(v)) return true;
  const required = v['requiredDuringSchedulingIgnoredDuringExecution'];
  return (!isJsonObject(required) || isEmptyList(required['nodeSelectorTerms'])) && isEmptyList(v['preferredDuringSchedulingIgnoredDuringExecution']);
}

function podAffinityEmpty(v: JsonValue | undefined): boolean {
  if (!isJsonObject(v)) return true;
  return isEmptyList(v['requiredDuringSchedulingIgnoredDuringExecution']) && isEmptyList(v['preferredDuringSchedulingIgnoredDuringExecution']);
}

const AFFINITY_PARTS = [
  ['nodeAffinity', nodeAffinityEmpty],
  ['podAffinity', podAffinityEmpty],
  ['podAntiAffinity', podAffinityEmpty],
] as const;

function applyAffinity(podSpec: JsonObject, config: Record<string, unknown>): void {
  const set = AFFINITY_PARTS.filter(([key]) => config[key] !== undefined && config[key] !== null);
  if (set.length === 0) {
    delete podSpec['affinity'];
    return;
  }
  const affinity = objectAt(podSpec, 'affinity');
  for (const [key, empty] of set) {
    const value = clone(config[key]);
    if (empty(value)) delete affinity[key];
    else affinity[key] = value;
  }
  if (AFFINITY_PARTS.every(([key, empty]) => empty(affinity[key]))) delete podSpec['affinity'];
}

function addMissingKeys(target: JsonObject, key: string, values: Record<string, string>): void {
  const annotations = objectAt(target, key);
  for (const [k, v] of Object.entries(values)) if (!(k in annotations)) annotations[k] = v;
}

/** Applies `config` to `deployment` (an apps/v1 Deployment rendered from a CSV), in place. */
export function applyDeploymentConfig(deployment: KubeObject, config: RegistryV1DeploymentConfig | undefined): void {
  if (config === undefined) return;
  const spec = objectAt(deployment as unknown as JsonObject, 'spec');
  const template = objectAt(spec, 'template');
  const podSpec = objectAt(template, 'spec');
  const containers = listOf(podSpec['containers']).filter(isJsonObject);

  for (const c of containers) {
    if (config.env?.length) c['env'] = mergeByName(listOf(c['env']), config.env);
    if (config.envFrom?.length) c['envFrom'] = appendMissing(listOf(c['envFrom']), config.envFrom);
  }
  if (config.volumes?.length) podSpec['volumes'] = mergeByName(listOf(podSpec['volumes']), config.volumes);
  for (const c of containers) {
    if (config.volumeMounts?.length) c['volumeMounts'] = mergeByName(listOf(c['volumeMounts']), config.volumeMounts);
  }
  if (config.tolerations?.length) podSpec['tolerations'] = appendMissing(listOf(podSpec['tolerations']), config.tolerations);
  if (config.resources !== undefined) for (const c of containers) c['resources'] = clone(config.resources);
  if (config.nodeSelector !== undefined) {
    // Go drops an empty map when it serializes the pod spec
    if (Object.keys(config.nodeSelector).length === 0) delete podSpec['nodeSelector'];
    else podSpec['nodeSelector'] = { ...config.nodeSelector };
  }
  if (config.affinity !== undefined) applyAffinity(podSpec, config.affinity);
  if (config.annotations !== undefined && Object.keys(config.annotations).length > 0) {
    addMissingKeys(deployment.metadata as unknown as JsonObject, 'annotations', config.annotations);
    addMissingKeys(objectAt(template, 'metadata'), 'annotations', config.annotations);
  }
}
