/**
 * Small helpers for end-to-end tests that build plain bundles on the fly: manifests as YAML,
 * served as pinned tar.gz over the test file server; the Go-built kubectl run against the test
 * control plane; waiting for objects and BundleDeployments to be gone.
 */
import { execFile } from 'node:child_process';
import { stringify } from 'yaml';
import type { SourceSpec } from '../../api/v1alpha2/types.ts';
import { toolPath } from '../../src/devcluster/tools.ts';
import type { KubeClient, KubeObject, TypeRef } from '../../src/kube/types.ts';
import { BD_TYPE } from './controller.ts';
import { kubeconfigPath } from './env.ts';
import { sha256, tarGz, type FileServer } from './http-files.ts';
import { sleep, waitUntil } from './wait.ts';

export const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

export function configMap(name: string, data: Record<string, string>, labels?: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(labels ? { labels } : {}) }, data } as KubeObject;
}

/** a one-replica Deployment of the pause image; `podSpec` goes into its pod spec (e.g. a nodeSelector no node matches: never Available) */
export function deployment(
  name: string,
  podSpec: Record<string, unknown> = {},
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, ...metadata },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }], ...podSpec } },
    },
  } as KubeObject;
}

/** serves the objects as one multi-document YAML (YAML 1.1, as the plain processor reads it: `yes` stays a string) in a tar.gz and returns a pinned http source */
export async function serveBundle(files: FileServer, path: string, objects: readonly KubeObject[]): Promise<SourceSpec> {
  const body = await tarGz({ 'manifests.yaml': objects.map((o) => stringify(o, { version: '1.1' })).join('---\n') });
  files.set(path, body);
  return { kind: 'http', http: { url: files.url(path), sha256: sha256(body) } };
}

/** runs the Go-built kubectl against the test control plane; resolves with stdout */
export function kubectl(args: readonly string[], stdin?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(toolPath('kubectl'), ['--kubeconfig', kubeconfigPath(), ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`));
      else resolve(stdout);
    });
    if (stdin !== undefined) child.stdin!.end(stdin);
  });
}

/**
 * Polls `f` every 200 ms until it yields a value (a failed call counts as not yet): for state of a
 * controller in another process (`hoist run`), whose log and queue this process cannot watch.
 */
export async function until<T>(f: () => Promise<T | undefined | false>, what: string, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(200);
  }
}

/** deletes a BundleDeployment and waits until it is gone (its finalizer removed) */
export async function deleteBundleDeployment(client: KubeClient, name: string, timeoutMs = 60_000): Promise<void> {
  await client.delete(BD_TYPE, name, undefined);
  await waitUntil(`BundleDeployment ${name} is gone`, async () => (await client.get(BD_TYPE, name)) === undefined, timeoutMs);
}

export async function uidOf(client: KubeClient, type: TypeRef, name: string, namespace?: string): Promise<string | undefined> {
  return (await client.get(type, name, namespace))?.metadata.uid;
}
