/**
 * fetch → compose → process → namespaces: the one way a BundleDeployment's resolved sources
 * become the objects of a revision. The controller and `hoist render`/`hoist diff` both call it,
 * so a preview is by construction what the controller applies: the same processor input, the
 * same .Capabilities (when given the cluster's discovery), the same namespace assignment and the
 * same content digest.
 *
 * Not pure (it reads the content store and may download), idempotent, and it touches nothing in
 * the cluster: every failure here leaves the installed revision as it was (DESIGN §3).
 */
import type { DefaultedSpec } from '../../api/v1alpha2/defaults.ts';
import { assignNamespaces } from '../apply/namespaces.ts';
import type { ContentStore } from '../cache/content-store.ts';
import type { Discovery, KubeObject } from '../kube/types.ts';
import { contentDigest } from '../processors/content-digest.ts';
import type { Processor, ValuesFromText } from '../processors/processor.ts';
import type { DecryptionKeys } from '../processors/sops/age-keys.ts';
import type { StoreOutcome } from '../sources/cached-fetch.ts';
import { composeTree, type TreePart } from '../sources/compose-tree.ts';
import { substituteObjects } from '../processors/post-build/substitute.ts';
import type { Credentials, Resolved, Source, SourceCA } from '../sources/source.ts';
import { HoistError } from '../util/errors.ts';
import { ReconcileCode, reconcileError } from './errors.ts';
import type { PostBuildInput } from './inputs/post-build.ts';

export interface RenderBundleDeps {
  store: ContentStore;
  sourceFor(kind: string): Source;
  processorFor(format: string): Processor;
  /** each kind's scope: the target cluster's discovery, or the built-in kinds offline */
  scopes: Pick<Discovery, 'resourceFor'>;
  /**
   * The target cluster, for helm's .Capabilities and registry-v1's served-API check: its discovery
   * in the controller, what `hoist render` assumes offline (--kube-version, --api-versions); absent,
   * or a fact it returns undefined for, and the processors' defaults apply.
   */
  cluster?: Capabilities | undefined;
}

/** what a render is told about the target cluster (a Discovery is one) */
export interface Capabilities {
  /** the "group/version"s served */
  apiVersions(): Promise<string[] | undefined>;
  /** the Kubernetes version, e.g. "v1.34.4" */
  serverVersion(): Promise<string | undefined>;
}

export interface RenderBundleInput {
  name: string;
  spec: DefaultedSpec;
  /** spec.sources resolved, index for index */
  resolved: readonly Resolved[];
  /** the credentials of spec.sources[i], also needed on a store hit: access is proven per BD */
  credentials(index: number): Promise<Credentials | undefined>;
  /** config.helm.valuesFrom as read from the cluster (inputs/values-from.ts), for the helm processor */
  helmValuesFrom?: readonly ValuesFromText[];
  /** spec.postBuild with its substituteFrom read (inputs/post-build.ts): substituted after the processor */
  postBuild?: PostBuildInput | undefined;
  /** spec.decryption's age identities as read from the cluster (inputs/decryption-keys.ts) */
  decryption?: DecryptionKeys | undefined;
  /** the CA of spec.sources[i] (caSecretRef / caConfigMapRef), when it names one */
  ca?(index: number): Promise<SourceCA | undefined>;
  signal?: AbortSignal | undefined;
  /** told how each source's fetch was served and where its content is (metrics) */
  onFetched?(kind: string, outcome: StoreOutcome | undefined, dir: string): void | Promise<void>;
  /** times the fetch and process stages (the reconcile log line) */
  time?<T>(stage: 'fetch' | 'process', p: Promise<T>): Promise<T>;
}

export interface RenderedBundle {
  /** digest of the processor's output (DESIGN §3: the revision's identity) */
  contentDigest: string;
  /** the objects as they are applied: namespaced kinds in their namespace, cluster-scoped without */
  objects: KubeObject[];
  warnings: string[];
  /** the texts of values decrypted from SOPS-encrypted files: kept out of what is printed (memory only) */
  sensitive?: string[];
}

export async function renderBundle(deps: RenderBundleDeps, input: RenderBundleInput): Promise<RenderedBundle> {
  const { spec } = input;
  const time = input.time ?? (<T>(_stage: string, p: Promise<T>) => p);
  const parts = await time('fetch', Promise.all(spec.sources.map((src, i) => fetchSource(deps, input, i))));
  // composed on the store's disk, counted against its budget (--cache-max-size)
  const tree = await composeTree(parts, { signal: input.signal, scratch: () => deps.store.scratch() });
  try {
    const out = await time('process', processTree(deps, input, tree.root));
    return {
      contentDigest: contentDigest(out.objects),
      objects: await assignNamespaces(out.objects, spec.installNamespace, deps.scopes),
      warnings: out.warnings,
      ...(out.sensitive?.length ? { sensitive: out.sensitive } : {}),
    };
  } finally {
    await tree.dispose();
  }
}

/** source `i` landed in the content store (or found there), as the directory it composes from */
async function fetchSource(deps: RenderBundleDeps, input: RenderBundleInput, i: number): Promise<TreePart> {
  const src = input.spec.sources[i]!;
  const resolved = input.resolved[i];
  if (!resolved) throw reconcileError(`source ${i} was not resolved`, ReconcileCode.Internal, { stage: 'fetch', subject: `sources[${i}]`, terminal: false });
  let served: StoreOutcome | undefined;
  const credentials = await input.credentials(i);
  const ca = await input.ca?.(i);
  const dir = await deps.sourceFor(src.kind).fetch(src, resolved, deps.store, {
    ...(input.signal ? { signal: input.signal } : {}),
    ...(credentials ? { credentials } : {}),
    ...(ca ? { ca } : {}),
    onStore: (o) => (served = o),
  });
  await input.onFetched?.(src.kind, served, dir);
  return { dir, destination: src.destination };
}

/** the composed tree through the format's processor, then Flux's post-build substitution */
async function processTree(deps: RenderBundleDeps, input: RenderBundleInput, root: string) {
  const { spec } = input;
  // helm's .Capabilities and registry-v1's served-API check see the target cluster, not a default
  const [apiVersions, kubeVersion] =
    spec.format === 'plain' || !deps.cluster ? [] : await Promise.all([deps.cluster.apiVersions(), deps.cluster.serverVersion()]);
  const r = await deps
    .processorFor(spec.format)
    .render(root, spec.config, {
      name: input.name,
      installNamespace: spec.installNamespace,
      ...(apiVersions ? { apiVersions } : {}),
      ...(kubeVersion ? { kubeVersion } : {}),
      ...(input.helmValuesFrom?.length ? { helmValuesFrom: input.helmValuesFrom } : {}),
      ...(input.decryption ? { decryption: input.decryption } : {}),
    })
    .catch((e: unknown) => {
      throw namedForProcessor(e, spec.format);
    });
  // Flux's post-build substitution: per object, after the build, before the digest
  if (!input.postBuild) return r;
  const objects = await substituteObjects(r.objects, {
    variables: input.postBuild.variables,
    strategy: input.postBuild.strategy,
    installNamespace: spec.installNamespace,
    sensitive: r.sensitive,
    signal: input.signal,
  });
  return { ...r, objects };
}

/** a process failure names the processor (DESIGN §1: stage, subject and which processor) */
function namedForProcessor(e: unknown, format: string): unknown {
  if (!(e instanceof HoistError) || e.stage !== 'process' || e instanceof ProcessorFailure) return e;
  return new ProcessorFailure(format, e);
}

/** A process failure whose message names the processor that raised it. */
class ProcessorFailure extends HoistError {
  constructor(
    readonly processor: string,
    e: HoistError,
  ) {
    super(`${processor} processor: ${e.message}`, { stage: e.stage, reason: e.reason, code: e.code, subject: e.subject, terminal: e.terminal, cause: e });
  }
}
