/**
 * `hoist render`: the client-side preview. Resolves the BundleDeployment's sources (or takes a
 * local directory) and renders them with renderBundle, the controller's own render path; prints
 * the objects, a summary of the RBAC they grant, and the content digest — the digest the
 * controller records as the revision's identity, so what a person reviewed is what gets installed.
 */
import { readFile } from 'node:fs/promises';
import { parseAllDocuments, stringify } from 'yaml';
import { withDefaults } from '../../api/v1alpha2/defaults.ts';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import { FsContentStore } from '../cache/fs-content-store.ts';
import { toolPath } from '../devcluster/tools.ts';
import { builtinScopes } from '../kube/builtin-scopes.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';
import { createProcessorRegistry } from '../processors/registry.ts';
import { renderBundle, type RenderedBundle } from '../reconciler/render-bundle.ts';
import { createSourceRegistry } from '../sources/registry.ts';
import type { Source } from '../sources/source.ts';
import { isHoistError } from '../util/errors.ts';
import type { ValuesFromText } from '../processors/processor.ts';
import { refNamespaceOf } from '../reconciler/inputs/credentials.ts';
import { readValuesFrom, valuesFromRefs } from '../reconciler/inputs/values-from.ts';
import { postBuildOf, readPostBuild, substituteFromRefs, type PostBuildInput } from '../reconciler/inputs/post-build.ts';
import { readDecryptionKeys } from '../reconciler/inputs/decryption-keys.ts';
import type { DecryptionKeys } from '../processors/sops/age-keys.ts';
import { redactForDisplay } from './redact-objects.ts';
import { previewCapabilities, type CapabilityFlags } from './capabilities.ts';

export interface RenderOptions {
  file: string;
  /** a local tree instead of the BundleDeployment's sources */
  dir?: string;
  /** API versions from this cluster's discovery (what the controller passes to helm/registry-v1) */
  kubeconfig?: string;
  /** --kube-version / --api-versions, as `helm template` has them */
  capabilities?: CapabilityFlags;
  /** the controller's namespace (config.helm.valuesFrom) */
  namespace?: string | undefined;
  output: 'yaml' | 'json';
}

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  nonResourceURLs?: string[];
}

/** one line per (Cluster)Role rule and binding: what the bundle lets whom do */
export function rbacSummary(objects: readonly KubeObject[]): string[] {
  const lines: string[] = [];
  for (const o of objects) {
    if (o.apiVersion !== 'rbac.authorization.k8s.io/v1') continue;
    const where = o.metadata.namespace ? ` in ${o.metadata.namespace}` : '';
    if (o.kind === 'ClusterRole' || o.kind === 'Role') {
      for (const r of (o.rules as Rule[] | undefined) ?? []) {
        const what = r.nonResourceURLs?.length
          ? `urls ${r.nonResourceURLs.join(',')}`
          : `${(r.resources ?? []).join(',')} (${(r.apiGroups ?? []).map((g) => g || 'core').join(',')})`;
        const wild = r.verbs?.includes('*') || r.resources?.includes('*') ? '  [wildcard]' : '';
        lines.push(`${o.kind} ${o.metadata.name}${where}: ${(r.verbs ?? []).join(',')} ${what}${wild}`);
      }
    } else if (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') {
      const ref = o.roleRef as { kind?: string; name?: string } | undefined;
      const subjects = ((o.subjects as Array<{ kind: string; name: string; namespace?: string }> | undefined) ?? []).map(
        (s) => `${s.kind} ${s.namespace ? `${s.namespace}/` : ''}${s.name}`,
      );
      lines.push(`${o.kind} ${o.metadata.name}${where}: ${ref?.kind} ${ref?.name} → ${subjects.join(', ')}`);
    }
  }
  return lines;
}

export async function render(opts: RenderOptions): Promise<number> {
  const docs = parseAllDocuments(await readFile(opts.file, 'utf8'))
    .map((d) => d.toJS() as BundleDeployment)
    .filter(Boolean);
  const bd = docs.find((d) => d.kind === 'BundleDeployment');
  if (!bd) {
    process.stderr.write(`hoist render: ${opts.file} holds no BundleDeployment\n`);
    return 2;
  }
  try {
    const out = await previewBundle(bd, {
      ...(opts.dir ? { dir: opts.dir } : {}),
      ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}),
      ...(opts.capabilities ? { capabilities: opts.capabilities } : {}),
      ...(opts.namespace ? { controllerNamespace: opts.namespace } : {}),
    });
    if (out.assumed) process.stderr.write(`${out.assumed}\n`);
    // decrypted values are never printed: Secrets' values as ***, other decrypted strings <redacted>
    const shown = bd.spec.decryption ? out.objects.map((o) => redactForDisplay(o, out.sensitive ?? [])) : out.objects;
    if (bd.spec.decryption) process.stderr.write('spec.decryption: Secret values and decrypted values are shown redacted (*** / <redacted>)\n');
    if (opts.output === 'json') process.stdout.write(`${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: shown }, null, 2)}\n`);
    else process.stdout.write(shown.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
    for (const w of out.warnings) process.stderr.write(`warning: ${w}\n`);
    const rbac = rbacSummary(out.objects);
    if (rbac.length) process.stderr.write(`\nRBAC granted:\n${rbac.map((l) => `  ${l}`).join('\n')}\n`);
    process.stderr.write(`\n${out.objects.length} objects, content digest ${out.contentDigest}\n`);
    return 0;
  } catch (e) {
    process.stderr.write(`hoist render: ${isHoistError(e) ? e.describe() : e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

export interface PreviewOptions {
  /** a local tree instead of the BundleDeployment's sources */
  dir?: string;
  /** the target cluster: its discovery gives scopes and .Capabilities, as the controller's does */
  kubeconfig?: string;
  /** the target cluster as a client the caller owns (and closes); instead of kubeconfig */
  client?: RestKubeClient;
  /** the cluster the objects go to when it is not `client`'s (spec.kubeConfig: the remote one): its discovery instead of client's */
  target?: RestKubeClient;
  /** --kube-version / --api-versions: what to assume of the cluster (offline) or change in it */
  capabilities?: CapabilityFlags;
  /** the controller's namespace, where config.helm.valuesFrom and postBuild.substituteFrom are read without a serviceAccount (default $HOIST_NAMESPACE or hoist-system) */
  controllerNamespace?: string;
}

export interface Preview extends RenderedBundle {
  /** what was assumed about the cluster (offline, or by flag) for helm or registry-v1, to print */
  assumed?: string;
}

/**
 * The objects the controller would apply for `bd`: resolved and fetched anonymously (sources that
 * need a cluster Secret are refused: render them with `dir`), then rendered by renderBundle, the
 * controller's own render path. With a kubeconfig the result equals the controller's revision.
 */
export async function previewBundle(bd: BundleDeployment, opts: PreviewOptions): Promise<Preview> {
  const spec = withDefaults(bd.spec);
  const helmBinary = (): string => process.env.HOIST_HELM ?? toolPath('helm');
  const kustomizeBinary = (): string => process.env.HOIST_KUSTOMIZE ?? toolPath('kustomize');
  const { processorFor } = createProcessorRegistry({ helmBinary, kustomizeBinary });
  const own = !opts.client && opts.kubeconfig ? createKubeClient(loadKubeConfig(opts.kubeconfig)) : undefined;
  const client = opts.client ?? own;
  const store = new FsContentStore();
  const discovery = (opts.target ?? client)?.discovery;
  const capabilities = previewCapabilities(opts.capabilities ?? {}, discovery);
  try {
    const local = opts.dir;
    const sources = createSourceRegistry({ store });
    // --dir stands for the whole composed tree: one local source at the root
    const localSpec = local ? { ...spec, sources: [{ kind: 'http' as const, destination: '' }] } : spec;
    const resolved = local
      ? [{ status: { kind: 'http' as const }, key: `local:${local}`, pinned: true }]
      : await Promise.all(
          spec.sources.map((src) => {
            if ((src.image ?? src.git ?? src.http ?? src.helm)?.auth) {
              throw new Error(`source ${src.kind} needs credentials from a cluster Secret; render it with --dir from a local copy`);
            }
            const ca = src.git ?? src.http ?? src.helm;
            if (ca?.caSecretRef ?? ca?.caConfigMapRef) {
              throw new Error(
                `source ${src.kind} needs its CA from a cluster ${ca.caSecretRef ? 'Secret' : 'ConfigMap'}; render it with --dir from a local copy`,
              );
            }
            return sources.sourceFor(src.kind).resolve(src, {});
          }),
        );
    const controllerNamespace = opts.controllerNamespace ?? process.env.HOIST_NAMESPACE ?? 'hoist-system';
    const helmValuesFrom = await previewValuesFrom(bd, client, controllerNamespace);
    const postBuild = await previewPostBuild(bd, client, controllerNamespace);
    const decryption = await previewDecryption(bd, client, controllerNamespace);
    const out = await renderBundle(
      {
        store,
        sourceFor: (kind) => (local ? localTree(local) : sources.sourceFor(kind)),
        processorFor,
        scopes: discovery ?? builtinScopes(),
        cluster: capabilities.cluster,
      },
      { name: bd.metadata.name, spec: localSpec, resolved, helmValuesFrom, postBuild, decryption, credentials: async () => undefined },
    );
    // plain bundles are rendered without .Capabilities: nothing was assumed for them
    return spec.format !== 'plain' && capabilities.assumed ? { ...out, assumed: capabilities.assumed } : out;
  } finally {
    await own?.close();
  }
}

/**
 * config.helm.valuesFrom read as the controller reads it (same namespace, same order and
 * rules), but with the caller's credentials: a preview shows only what its user may read.
 */
async function previewValuesFrom(bd: BundleDeployment, client: RestKubeClient | undefined, controllerNamespace: string): Promise<ValuesFromText[]> {
  const refs = valuesFromRefs(bd);
  if (refs.length === 0) return [];
  if (!client) throw new Error('config.helm.valuesFrom reads Secrets and ConfigMaps of a cluster: render with --kubeconfig');
  const namespace = refNamespaceOf(bd, controllerNamespace);
  if (!namespace) throw new Error('config.helm.valuesFrom with serviceAccount needs installNamespace');
  return readValuesFrom({ namespace, reader: client }, refs);
}

/** spec.postBuild with substituteFrom read as the controller reads it, with the caller's credentials */
async function previewPostBuild(bd: BundleDeployment, client: RestKubeClient | undefined, controllerNamespace: string): Promise<PostBuildInput | undefined> {
  const postBuild = postBuildOf(bd);
  if (!postBuild) return undefined;
  if (substituteFromRefs(bd).length === 0) return readPostBuild(undefined, postBuild);
  if (!client) throw new Error('postBuild.substituteFrom reads ConfigMaps and Secrets of a cluster: render with --kubeconfig');
  const namespace = refNamespaceOf(bd, controllerNamespace);
  if (!namespace) throw new Error('postBuild.substituteFrom with serviceAccount needs installNamespace');
  return readPostBuild({ namespace, reader: client }, postBuild);
}

/**
 * spec.decryption's age identities read as the controller reads them (same namespace and
 * rules), with the caller's credentials: a preview decrypts only with keys its user may read.
 */
async function previewDecryption(bd: BundleDeployment, client: RestKubeClient | undefined, controllerNamespace: string): Promise<DecryptionKeys | undefined> {
  const name = bd.spec.decryption?.secretRef.name;
  if (!name) return undefined;
  if (!client) throw new Error('spec.decryption reads its age keys from a Secret of a cluster: render with --kubeconfig');
  const namespace = refNamespaceOf(bd, controllerNamespace);
  if (!namespace) throw new Error('spec.decryption with serviceAccount needs installNamespace');
  return readDecryptionKeys({ namespace, reader: client }, name);
}

/** a Source that serves a local directory as it is (hoist render --dir) */
function localTree(dir: string): Source {
  return {
    kind: 'http',
    resolve: async () => ({ status: { kind: 'http' }, key: `local:${dir}`, pinned: true }),
    fetch: async () => dir,
  };
}
