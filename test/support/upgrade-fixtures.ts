/**
 * Bundle fixtures for upgrade/rollback/drift tests: the argo-rollouts fixtures made safe to install
 * next to other test files on the one shared control plane, chart directories as tarballs, and a
 * snapshot of the objects a BundleDeployment owns (identity → uid) to prove nothing was deleted
 * and re-created.
 */
import { readdir, readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { LABEL_OWNER_NAME, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import type { KubeClient, KubeObject, TypeRef } from '../../src/kube/types.ts';
import { sha256, tarGz, type FileServer } from './http-files.ts';

export const FIXTURES = new URL('../../testdata/fixtures/', import.meta.url);

/**
 * The argo-rollouts API group and cluster-scoped names made unique to one test: CRDs and
 * ClusterRoles are cluster-wide, so two test files installing the same fixture would collide
 * (ConflictingOwner). Everything else is the upstream content, unchanged.
 */
export function isolateGroup(text: string, id: string): string {
  return text.replaceAll('argoproj.io', `${id}.argoproj.io`);
}

/** plain manifests: the group renamed and cluster-scoped RBAC names suffixed with `id` */
export function isolatePlain(text: string, id: string): string {
  const docs = parseAllDocuments(isolateGroup(text, id))
    .map((d) => d.toJS() as KubeObject | null)
    .filter((d): d is KubeObject => !!d);
  for (const d of docs) {
    if (d.kind === 'ClusterRole' || d.kind === 'ClusterRoleBinding') d.metadata.name = `${d.metadata.name}-${id}`;
    const roleRef = (d as { roleRef?: { kind: string; name: string } }).roleRef;
    if (d.kind === 'ClusterRoleBinding' && roleRef?.kind === 'ClusterRole') roleRef.name = `${roleRef.name}-${id}`;
  }
  return docs.map((d) => stringify(d)).join('---\n');
}

/** every file under `dir` as a tarGz input, optionally rewritten */
export async function readTree(dir: string, rewrite: (path: string, text: string) => string = (_p, t) => t): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const full = join(e.parentPath, e.name);
    const rel = relative(dir, full);
    out[rel] = rewrite(rel, await readFile(full, 'utf8'));
  }
  return out;
}

/** the kinds the argo-rollouts bundles (and the small test bundles) contain */
export const OWNED_KINDS: readonly TypeRef[] = [
  { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Secret' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
];

/** "Kind ns/name" → uid of every live object labelled as owned by `bd` */
export async function ownedUids(client: KubeClient, bd: string, kinds: readonly TypeRef[] = OWNED_KINDS): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const type of kinds) {
    const list = await client.list(type, { labelSelector: `${LABEL_OWNER_NAME}=${bd}` });
    for (const o of list.items) out.set(`${type.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`, o.metadata.uid!);
  }
  return out;
}

export const cm = (name: string, data: Record<string, string>, annotations: Record<string, string> = {}): string =>
  stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(Object.keys(annotations).length ? { annotations } : {}) }, data });

/** serves `content` as a tarball at `path` and returns the sha256-pinned http source for it */
export async function servePinned(files: FileServer, path: string, content: Record<string, string>): Promise<BundleDeploymentSpec['sources']> {
  const body = await tarGz(content);
  files.set(path, body);
  return [{ kind: 'http', http: { url: files.url(path), sha256: sha256(body) } }];
}

/**
 * argo-rollouts v1.8.4 and v1.9.1 as plain-manifest tarballs isolated by `id`. Upstream drops
 * nothing between these versions: v1 carries one extra ConfigMap (argo-rollouts-legacy) that v2
 * drops, so the upgrade prunes exactly one object.
 */
export async function plainRolloutsTarballs(id: string): Promise<{ v1: Buffer; v2: Buffer }> {
  const read = (v: string) => isolatePlain(readFileSync(new URL(`plain/argo-rollouts-${v}/install.yaml`, FIXTURES), 'utf8'), id);
  return {
    v1: await tarGz({ 'install.yaml': read('v1.8.4'), 'legacy.yaml': cm('argo-rollouts-legacy', { retired: 'true' }) }),
    v2: await tarGz({ 'install.yaml': read('v1.9.1') }),
  };
}
