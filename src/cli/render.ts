/**
 * `hoist render`: the client-side preview. Resolves and fetches the BundleDeployment's sources
 * (or takes a local directory), runs the same processor the controller runs, and prints the
 * objects, a summary of the RBAC they grant, and the content digest — the digest the controller
 * records as the revision's identity, so what a person reviewed is what gets installed.
 */
import { readFile } from 'node:fs/promises';
import { parseAllDocuments, stringify } from 'yaml';
import { withDefaults } from '../../api/v1alpha2/defaults.ts';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import { FsContentStore } from '../cache/fs-content-store.ts';
import { createKubeClient, loadKubeConfig } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';
import { contentDigest } from '../processors/content-digest.ts';
import { configureHelm, processorFor } from '../processors/registry.ts';
import { toolPath } from '../devcluster/tools.ts';
import { composeTree } from '../sources/compose-tree.ts';
import { sourceFor } from '../sources/registry.ts';
import { isHoistError } from '../util/errors.ts';

export interface RenderOptions {
  file: string;
  /** a local tree instead of the BundleDeployment's sources */
  dir?: string;
  /** API versions from this cluster's discovery (what the controller passes to helm/registry-v1) */
  kubeconfig?: string;
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
        const what = r.nonResourceURLs?.length ? `urls ${r.nonResourceURLs.join(',')}` : `${(r.resources ?? []).join(',')} (${(r.apiGroups ?? []).map((g) => g || 'core').join(',')})`;
        const wild = r.verbs?.includes('*') || r.resources?.includes('*') ? '  [wildcard]' : '';
        lines.push(`${o.kind} ${o.metadata.name}${where}: ${(r.verbs ?? []).join(',')} ${what}${wild}`);
      }
    } else if (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') {
      const ref = o.roleRef as { kind?: string; name?: string } | undefined;
      const subjects = ((o.subjects as Array<{ kind: string; name: string; namespace?: string }> | undefined) ?? []).map((s) => `${s.kind} ${s.namespace ? `${s.namespace}/` : ''}${s.name}`);
      lines.push(`${o.kind} ${o.metadata.name}${where}: ${ref?.kind} ${ref?.name} → ${subjects.join(', ')}`);
    }
  }
  return lines;
}

export async function render(opts: RenderOptions): Promise<number> {
  configureHelm(() => process.env.HOIST_HELM ?? toolPath('helm'));
  const docs = parseAllDocuments(await readFile(opts.file, 'utf8')).map((d) => d.toJS() as BundleDeployment).filter(Boolean);
  const bd = docs.find((d) => d.kind === 'BundleDeployment');
  if (!bd) {
    process.stderr.write(`hoist render: ${opts.file} holds no BundleDeployment\n`);
    return 2;
  }
  const spec = withDefaults(bd.spec);
  try {
    let root: string;
    let dispose = async (): Promise<void> => {};
    if (opts.dir) {
      root = opts.dir;
    } else {
      const store = new FsContentStore();
      const parts = [];
      for (const src of spec.sources) {
        if ((src.image ?? src.git ?? src.http)?.auth) {
          throw new Error(`source ${src.kind} needs credentials from a cluster Secret; render it with --dir from a local copy`);
        }
        const ca = src.git ?? src.http;
        if (ca?.caSecretRef ?? ca?.caConfigMapRef) {
          throw new Error(`source ${src.kind} needs its CA from a cluster ${ca.caSecretRef ? 'Secret' : 'ConfigMap'}; render it with --dir from a local copy`);
        }
        const source = sourceFor(src.kind);
        const resolved = await source.resolve(src, {});
        parts.push({ dir: await source.fetch(src, resolved, store, {}), destination: src.destination });
      }
      const tree = await composeTree(parts);
      root = tree.root;
      dispose = tree.dispose;
    }
    let apiVersions: string[] | undefined;
    let kubeVersion: string | undefined;
    if (opts.kubeconfig && spec.format !== 'plain') {
      const client = createKubeClient(loadKubeConfig(opts.kubeconfig));
      [apiVersions, kubeVersion] = await Promise.all([client.discovery.apiVersions(), client.discovery.serverVersion()]);
      await client.close();
    }
    const out = await processorFor(spec.format)
      .render(root, spec.config, { name: bd.metadata.name, installNamespace: spec.installNamespace, apiVersions, kubeVersion })
      .finally(dispose);
    if (opts.output === 'json') process.stdout.write(`${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: out.objects }, null, 2)}\n`);
    else process.stdout.write(out.objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
    for (const w of out.warnings) process.stderr.write(`warning: ${w}\n`);
    const rbac = rbacSummary(out.objects);
    if (rbac.length) process.stderr.write(`\nRBAC granted:\n${rbac.map((l) => `  ${l}`).join('\n')}\n`);
    process.stderr.write(`\n${out.objects.length} objects, content digest ${contentDigest(out.objects)}\n`);
    return 0;
  } catch (e) {
    process.stderr.write(`hoist render: ${isHoistError(e) ? e.describe() : e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}
