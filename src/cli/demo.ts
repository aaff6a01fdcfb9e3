/**
 * `hoist demo`: everything real, on this machine. Starts a local control plane (etcd,
 * kube-apiserver, kube-controller-manager, kube-scheduler and kwok with a fake node), serves the
 * argo-rollouts v1.8.4 install manifest as a tar.gz over HTTP, runs the controller in-process,
 * creates a BundleDeployment pinned to the tarball's sha256, waits until it is installed and
 * healthy, and prints its conditions and the objects it installed.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_VERSION, KIND, LABEL_OWNER_NAME, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { startControlPlane } from '../devcluster/control-plane.ts';
import { cacheRoot } from '../devcluster/tools.ts';
import type { KubeObject } from '../kube/types.ts';
import { createLogger } from '../util/log.ts';
import { tarGz } from '../util/tar-gz.ts';
import { startController } from './controller.ts';

const FIXTURE = fileURLToPath(new URL('../../testdata/fixtures/plain/argo-rollouts-v1.8.4/install.yaml', import.meta.url));

function serve(path: string, body: Buffer): Promise<{ server: Server; url: string }> {
  const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
  const server = createServer((req, res) => {
    if (req.url !== path) return void res.writeHead(404).end('not found');
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304).end();
    res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': body.length, etag }).end(body);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const a = server.address();
    resolve({ server, url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}${path}` });
  }));
}

const say = (line: string): void => void process.stderr.write(`hoist demo: ${line}\n`);

export async function demo(opts: { keep?: boolean } = {}): Promise<number> {
  if (!existsSync(FIXTURE)) {
    say(`fixture not found: ${FIXTURE} (testdata/ is part of the repository: is this a full clone?)`);
    return 1;
  }
  const t0 = Date.now();
  say(`starting a local control plane (binaries cached in ${join(cacheRoot(), 'bin')})`);
  const cp = await startControlPlane({ workloads: true, log: say });
  const cacheDir = await mkdtemp(join(tmpdir(), 'hoist-demo-cache-'));
  const manifest = readFileSync(FIXTURE);
  const tarball = await tarGz({ 'install.yaml': manifest });
  const sha256 = createHash('sha256').update(tarball).digest('hex');
  const { server, url } = await serve('/argo-rollouts-v1.8.4.tar.gz', tarball);
  say(`serving ${url} (sha256 ${sha256.slice(0, 12)}…)`);

  const log = createLogger({ level: process.env.HOIST_LOG_LEVEL ?? 'warn' });
  const ctl = await startController({ kubeconfig: cp.kubeconfigPath, namespace: 'hoist-system', installCRD: true, cacheDir, log });
  let code = 1;
  try {
    const bd: BundleDeployment = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'argo-rollouts' },
      spec: {
        installNamespace: 'argo-rollouts',
        format: 'plain',
        sources: [{ kind: 'http', http: { url, sha256 } }],
        upgrade: { progressDeadline: '3m' },
      },
    };
    await ctl.client.create(bd as unknown as KubeObject);
    say('created BundleDeployment argo-rollouts; waiting until Installed and Healthy');
    const type = { apiVersion: API_VERSION, kind: KIND };
    const deadline = Date.now() + 240_000;
    let live: BundleDeployment | undefined;
    for (;;) {
      live = (await ctl.client.get(type, 'argo-rollouts')) as unknown as BundleDeployment | undefined;
      const cond = (t: string) => live?.status?.conditions?.find((c) => c.type === t);
      const current = live?.status?.observedGeneration === live?.metadata.generation;
      if (current && cond('Installed')?.status === 'True' && cond('Progressing')?.status === 'False') break;
      if (current && cond('Progressing')?.reason === 'Blocked') break;
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    console.log(`\nBundleDeployment argo-rollouts (generation ${live?.metadata.generation}, observed ${live?.status?.observedGeneration})`);
    for (const c of live?.status?.conditions ?? []) console.log(`  ${c.type.padEnd(12)} ${c.status.padEnd(6)} ${c.reason.padEnd(16)} ${c.message}`);
    console.log(`  active revision: ${live?.status?.activeRevision?.number} ${live?.status?.activeRevision?.contentDigest}`);
    const objects = await installedObjects(ctl.client, 'argo-rollouts');
    console.log(`\nInstalled objects (${objects.length}), labelled ${LABEL_OWNER_NAME}=argo-rollouts:`);
    for (const o of objects) console.log(`  ${o}`);
    const installed = live?.status?.conditions?.find((c) => c.type === 'Installed')?.status === 'True';
    code = installed ? 0 : 1;
    say(`${installed ? 'done' : 'NOT installed'} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    if (opts.keep) {
      say(`control plane kept running: KUBECONFIG=${cp.kubeconfigPath}; Ctrl-C to stop`);
      await new Promise<void>((r) => process.once('SIGINT', () => r()));
    }
  } finally {
    await ctl.stop();
    server.close();
    await cp.stop();
    await rm(cacheDir, { recursive: true, force: true });
  }
  return code;
}

async function installedObjects(client: import('../kube/client.ts').RestKubeClient, owner: string): Promise<string[]> {
  const kinds = [
    ['apiextensions.k8s.io/v1', 'CustomResourceDefinition'], ['v1', 'ServiceAccount'], ['rbac.authorization.k8s.io/v1', 'ClusterRole'],
    ['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding'], ['v1', 'ConfigMap'], ['v1', 'Secret'], ['v1', 'Service'], ['apps/v1', 'Deployment'],
  ] as const;
  const out: string[] = [];
  for (const [apiVersion, kind] of kinds) {
    const list = await client.list({ apiVersion, kind }, { labelSelector: `${LABEL_OWNER_NAME}=${owner}` });
    for (const o of list.items) out.push(`${kind.padEnd(26)} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
  }
  return out;
}
