/**
 * The local control plane's real node (src/devcluster/real-node.ts): containerd + the kubelet +
 * kube-proxy, pods on a CNI bridge. Pods here really run: a readiness probe really passes or not,
 * a Job's container really exits with its code, and a pod reaches the API server through the
 * `kubernetes` Service (kube-proxy's iptables rules), and kube-apiserver calls an admission webhook
 * served by a pod through its Service (and reads the pod's log through the kubelet). Workloads that do not ask for the real node
 * keep landing on kwok's fake one. Skipped, with the reason, where the machine cannot run the node.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { kubectl, until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { onRealNode, realNode, realNodeTitle, theRealNode } from '../support/real-node.ts';

const POD = { apiVersion: 'v1', kind: 'Pod' } as const;
const JOB = { apiVersion: 'batch/v1', kind: 'Job' } as const;
const ns = `real-node-${randomBytes(3).toString('hex')}`;
let client: RestKubeClient;

interface PodStatus {
  phase?: string;
  podIP?: string;
  conditions?: { type: string; status: string }[];
}
const podStatus = (p: KubeObject | undefined): PodStatus => (p?.status ?? {}) as PodStatus;
const ready = (p: KubeObject | undefined): boolean => podStatus(p).conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** a Pod of the web test image on the real node, with a readiness probe on /readyz */
function webPod(name: string, args: string[]): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      ...onRealNode(),
      containers: [
        {
          name: 'web',
          image: theRealNode().images.web,
          imagePullPolicy: 'Never',
          args,
          readinessProbe: { httpGet: { path: '/readyz', port: 8080 }, periodSeconds: 1 },
        },
      ],
    },
  } as KubeObject;
}

// Skipped only where the real node cannot run (not Linux or root, containerd or the CNI plugins
// missing, another run holding it, or HOIST_REAL_NODE=0): the reason is in the title. On this
// project's machines and in CI it runs.
describe.skipIf(!realNode())(realNodeTitle('the real node'), () => {
  beforeAll(async () => {
    client = createKubeClient(loadKubeConfig(kubeconfigPath()));
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });
  afterAll(async () => {
    await client?.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined);
    await client?.close();
  });

  it('runs a web server whose readiness probe really passes, on its own pod IP, under containerd', async () => {
    const node = theRealNode();
    const n = (await client.get({ apiVersion: 'v1', kind: 'Node' }, node.name)) as KubeObject & {
      status?: { nodeInfo?: { containerRuntimeVersion?: string } };
    };
    expect(n.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\//);
    await client.create(webPod('web', ['-text', 'served by a real pod', '-ready-after', '2s']));
    const pod = await until(
      async () => {
        const p = await client.get(POD, 'web', ns);
        return ready(p) ? p : undefined;
      },
      'pod web Ready on the real node',
      120_000,
    );
    expect((pod.spec as { nodeName?: string }).nodeName).toBe(node.name);
    const ip = podStatus(pod).podIP!;
    expect(ip.startsWith(node.network.subnet.split('.').slice(0, 3).join('.'))).toBe(true);
    const body = await (await fetch(`http://${ip}:8080/`, { signal: AbortSignal.timeout(10_000) })).text();
    expect(body).toContain('served by a real pod from web');
  });

  it('a never-ready container stays unready: the kubelet reports the probe failing', async () => {
    await client.create(webPod('never-ready', ['-never-ready']));
    // running, but its Ready condition stays False with the kubelet's reason
    const pod = await until(
      async () => {
        const p = await client.get(POD, 'never-ready', ns);
        const c = podStatus(p).conditions?.find((x) => x.type === 'ContainersReady');
        return podStatus(p).phase === 'Running' && c?.status === 'False' ? p : undefined;
      },
      'pod never-ready Running and not ready',
      120_000,
    );
    expect(ready(pod)).toBe(false);
  });

  it('Jobs succeed or fail on the exit code of their container, and a pod reaches the API server through the kubernetes Service', async () => {
    const node = theRealNode();
    const job = (name: string, args: string[]): KubeObject =>
      ({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name, namespace: ns },
        spec: {
          backoffLimit: 0,
          template: {
            spec: { ...onRealNode(), restartPolicy: 'Never', containers: [{ name: 'job', image: node.images.job, imagePullPolicy: 'Never', args }] },
          },
        },
      }) as KubeObject;
    await client.create(job('succeeds', ['-exit-code', '0', '-dial', '$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT']));
    await client.create(job('fails', ['-exit-code', '3']));
    const finished = (name: string) =>
      until(
        async () => {
          const j = await client.get(JOB, name, ns);
          const c = ((j?.status ?? {}) as { conditions?: { type: string; status: string; reason?: string }[] }).conditions?.find(
            (x) => (x.type === 'Complete' || x.type === 'Failed') && x.status === 'True',
          );
          return c;
        },
        `job ${name} finished`,
        180_000,
      );
    expect((await finished('succeeds')).type).toBe('Complete');
    const failed = await finished('fails');
    expect(failed.type).toBe('Failed');
    expect(failed.reason).toBe('BackoffLimitExceeded');
  });

  it('kube-apiserver calls an admission webhook served by a real pod through its Service, and reads its log through the kubelet', async () => {
    const node = theRealNode();
    const run = promisify(execFile);
    const dir = await mkdtemp(join(tmpdir(), 'hoist-webhook-'));
    try {
      const host = `webhook.${ns}.svc`;
      await run('openssl', [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${host}`,
        '-addext',
        `subjectAltName=DNS:${host}`,
        '-keyout',
        join(dir, 'tls.key'),
        '-out',
        join(dir, 'tls.crt'),
      ]);
      const [crt, key] = [await readFile(join(dir, 'tls.crt')), await readFile(join(dir, 'tls.key'))];
      await client.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'webhook-tls', namespace: ns },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': crt.toString('base64'), 'tls.key': key.toString('base64') },
      } as KubeObject);
      await client.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'webhook', namespace: ns, labels: { app: 'webhook' } },
        spec: {
          ...onRealNode(),
          containers: [
            {
              name: 'webhook',
              image: node.images.webhook,
              imagePullPolicy: 'Never',
              args: ['-listen', ':8443', '-cert', '/tls/tls.crt', '-key', '/tls/tls.key'],
              readinessProbe: { httpGet: { path: '/healthz', port: 8443, scheme: 'HTTPS' }, periodSeconds: 1 },
              volumeMounts: [{ name: 'tls', mountPath: '/tls', readOnly: true }],
            },
          ],
          volumes: [{ name: 'tls', secret: { secretName: 'webhook-tls' } }],
        },
      } as KubeObject);
      await client.create({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'webhook', namespace: ns },
        spec: { selector: { app: 'webhook' }, ports: [{ port: 443, targetPort: 8443 }] },
      } as KubeObject);
      await until(async () => (ready(await client.get(POD, 'webhook', ns)) ? true : undefined), 'webhook pod Ready', 120_000);
      const config = `hoist-test-allow-${ns}`;
      await client.create({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: config },
        webhooks: [
          {
            name: 'allow.hoist.test',
            clientConfig: { service: { namespace: ns, name: 'webhook', port: 443, path: '/validate' }, caBundle: crt.toString('base64') },
            rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
            // Fail: the ConfigMap is only created if the webhook really answered
            failurePolicy: 'Fail',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            timeoutSeconds: 10,
          },
        ],
      } as KubeObject);
      try {
        // the configuration takes effect once kube-apiserver's webhook informer has it: create
        // ConfigMaps until one was reviewed (the webhook logs each review; read through the kubelet)
        let i = 0;
        const log = await until(
          async () => {
            await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `reviewed-${i++}`, namespace: ns }, data: { a: '1' } } as KubeObject);
            const text = await kubectl(['-n', ns, 'logs', 'webhook']);
            return text.includes(`/validate CREATE ${ns}/reviewed-`) ? text : undefined;
          },
          'a ConfigMap reviewed by the webhook',
          60_000,
        );
        expect(log).toMatch(new RegExp(`webhook: /validate CREATE ${ns}/reviewed-\\d+ \\(/ConfigMap\\) allowed`));
        expect(log).toContain('webhook: serving on :8443');
      } finally {
        await client.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' }, config, undefined);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('workloads that do not ask for the real node keep landing on kwok', async () => {
    await client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'anywhere', namespace: ns },
      spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
    } as KubeObject);
    const pod = await until(
      async () => {
        const p = await client.get(POD, 'anywhere', ns);
        return (p?.spec as { nodeName?: string } | undefined)?.nodeName ? p : undefined;
      },
      'pod anywhere scheduled',
      60_000,
    );
    expect((pod.spec as { nodeName?: string }).nodeName).not.toBe(theRealNode().name);
  });
});
