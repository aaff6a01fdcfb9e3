/**
 * `hoist demo`: everything real, on this machine. Starts a local control plane (etcd,
 * kube-apiserver, kube-controller-manager, kube-scheduler, kwok with a fake node and, where the
 * machine can run one, a real node: containerd + kubelet + kube-proxy), serves the argo-rollouts
 * v1.8.4 install manifest as a tar.gz over HTTP, runs the controller in-process, creates a
 * BundleDeployment pinned to the tarball's sha256, waits until it is installed and healthy, and
 * prints its conditions and the objects it installed. argo-rollouts' images cannot be pulled here,
 * so its pods run on kwok's node; with the real node a second BundleDeployment, `hello`, installs
 * a web server built from test/images/web whose pods really run there (readiness probe and all),
 * and the demo prints them with their node and container runtime and what they answer.
 * `--kwok`: no real node (faster, and what a machine without containerd gets anyway).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { API_VERSION, KIND, LABEL_OWNER_NAME, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { startControlPlane } from '../devcluster/control-plane.ts';
import type { RealNode } from '../devcluster/real-node.ts';
import { cacheRoot } from '../devcluster/tools.ts';
import type { KubeObject } from '../kube/types.ts';
import { createLogger } from '../util/log.ts';
import { tarGz } from '../util/tar-gz.ts';
import { startController } from './controller.ts';
import { sleep } from '../util/sleep.ts';

const FIXTURE = fileURLToPath(new URL('../../testdata/fixtures/plain/argo-rollouts-v1.8.4/install.yaml', import.meta.url));

function serve(path: string, body: Buffer, host = '127.0.0.1'): Promise<{ server: Server; url: string }> {
  const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
  const server = createServer((req, res) => {
    if (req.url !== path) return void res.writeHead(404).end('not found');
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304).end();
    res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': body.length, etag }).end(body);
  });
  return new Promise((resolve) =>
    server.listen(0, host, () => {
      const a = server.address();
      resolve({ server, url: `http://${host}:${typeof a === 'object' && a ? a.port : 0}${path}` });
    }),
  );
}

const say = (line: string): void => void process.stderr.write(`hoist demo: ${line}\n`);

export async function demo(opts: { keep?: boolean; kwok?: boolean } = {}): Promise<number> {
  if (!existsSync(FIXTURE)) {
    say(`fixture not found: ${FIXTURE} (testdata/ is part of the repository: is this a full clone?)`);
    return 1;
  }
  const t0 = Date.now();
  say(`starting a local control plane (binaries cached in ${join(cacheRoot(), 'bin')})`);
  const cp = await startControlPlane({ workloads: true, realNode: opts.kwok ? false : 'optional', log: say });
  if (!opts.kwok && !cp.realNode) say(`no real node (${cp.realNodeUnavailable}): every pod runs on kwok's fake node`);
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
      await sleep(500);
    }
    console.log(`\nBundleDeployment argo-rollouts (generation ${live?.metadata.generation}, observed ${live?.status?.observedGeneration})`);
    for (const c of live?.status?.conditions ?? []) console.log(`  ${c.type.padEnd(12)} ${c.status.padEnd(6)} ${c.reason.padEnd(16)} ${c.message}`);
    console.log(`  active revision: ${live?.status?.activeRevision?.number} ${live?.status?.activeRevision?.contentDigest}`);
    const objects = await installedObjects(ctl.client, 'argo-rollouts');
    console.log(`\nInstalled objects (${objects.length}), labelled ${LABEL_OWNER_NAME}=argo-rollouts:`);
    for (const o of objects) console.log(`  ${o}`);
    let installed = live?.status?.conditions?.find((c) => c.type === 'Installed')?.status === 'True';
    if (cp.realNode) {
      console.log(`\nargo-rollouts' pods run on kwok's fake node (its quay.io image cannot be pulled here).`);
      installed = (await helloOnRealNode(ctl.client, cp.realNode)) && installed;
    }
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

const HELLO = 'hello';

/**
 * The `hello` BundleDeployment: a Deployment of two web servers (test/images/web) on the real node,
 * with a readiness probe, and a Service. Waits until it is installed and healthy, prints each pod
 * with its node, runtime and IP, and what GET / answers from it. True when all went well.
 */
async function helloOnRealNode(client: import('../kube/client.ts').RestKubeClient, node: RealNode): Promise<boolean> {
  const labels = { app: HELLO };
  const objects = [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: HELLO },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            nodeSelector: { [node.label]: 'true' },
            tolerations: [{ key: node.taint, operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
            containers: [
              {
                name: 'web',
                image: node.images.web,
                imagePullPolicy: 'Never',
                args: ['-text', 'hello from a real pod', '-ready-after', '2s'],
                ports: [{ containerPort: 8080, name: 'http' }],
                readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 1 },
              },
            ],
          },
        },
      },
    },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: HELLO }, spec: { selector: labels, ports: [{ port: 80, targetPort: 'http' }] } },
  ];
  const tarball = await tarGz({ 'hello.yaml': objects.map((o) => stringify(o)).join('---\n') });
  const sha256 = createHash('sha256').update(tarball).digest('hex');
  const { server, url } = await serve('/hello.tar.gz', tarball);
  try {
    const bd = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: HELLO },
      spec: { installNamespace: HELLO, format: 'plain', sources: [{ kind: 'http', http: { url, sha256 } }], upgrade: { progressDeadline: '3m' } },
    };
    await client.create(bd as unknown as KubeObject);
    say(`created BundleDeployment ${HELLO} (pods on the real node ${node.name}); waiting until Installed and Healthy`);
    const deadline = Date.now() + 180_000;
    let live: BundleDeployment | undefined;
    for (;;) {
      live = (await client.get({ apiVersion: API_VERSION, kind: KIND }, HELLO)) as unknown as BundleDeployment | undefined;
      const cond = (t: string) => live?.status?.conditions?.find((c) => c.type === t);
      const current = live?.status?.observedGeneration === live?.metadata.generation;
      if (current && cond('Installed')?.status === 'True' && cond('Healthy')?.status === 'True') break;
      if ((current && cond('Progressing')?.reason === 'Blocked') || Date.now() > deadline) break;
      await sleep(500);
    }
    console.log(`\nBundleDeployment ${HELLO}:`);
    for (const c of live?.status?.conditions ?? []) console.log(`  ${c.type.padEnd(12)} ${c.status.padEnd(6)} ${c.reason.padEnd(16)} ${c.message}`);
    const pods = await client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: HELLO, labelSelector: `app=${HELLO}` });
    console.log(`\nPods of ${HELLO} (really running: node ${node.name}, container runtime ${node.runtime}):`);
    let ok = pods.items.length > 0;
    for (const p of pods.items) {
      const spec = p.spec as { nodeName?: string } | undefined;
      const status = p.status as { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] } | undefined;
      const ready = status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      let answer = '(no answer)';
      if (status?.podIP) {
        answer = await fetch(`http://${status.podIP}:8080/`, { signal: AbortSignal.timeout(5000) })
          .then(async (r) => (await r.text()).trim())
          .catch((e: Error) => `(no answer: ${e.message})`);
      }
      ok &&= ready && answer.startsWith('hello');
      console.log(
        `  ${p.metadata.name.padEnd(26)} node ${spec?.nodeName ?? '-'}  ${status?.phase ?? '-'}  ready=${ready}  ${status?.podIP ?? '-'}  GET / -> ${answer}`,
      );
    }
    return ok && live?.status?.conditions?.find((c) => c.type === 'Installed')?.status === 'True';
  } finally {
    server.close();
  }
}

async function installedObjects(client: import('../kube/client.ts').RestKubeClient, owner: string): Promise<string[]> {
  const kinds = [
    ['apiextensions.k8s.io/v1', 'CustomResourceDefinition'],
    ['v1', 'ServiceAccount'],
    ['rbac.authorization.k8s.io/v1', 'ClusterRole'],
    ['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding'],
    ['v1', 'ConfigMap'],
    ['v1', 'Secret'],
    ['v1', 'Service'],
    ['apps/v1', 'Deployment'],
  ] as const;
  const out: string[] = [];
  for (const [apiVersion, kind] of kinds) {
    const list = await client.list({ apiVersion, kind }, { labelSelector: `${LABEL_OWNER_NAME}=${owner}` });
    for (const o of list.items) out.push(`${kind.padEnd(26)} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
  }
  return out;
}
