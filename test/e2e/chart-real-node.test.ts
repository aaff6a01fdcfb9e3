/**
 * Hoist deployed by its own chart on the real node, as a user would: the controller image built by
 * `npm run image` (scripts/image.sh) and imported into the node's containerd, `helm install
 * charts/hoist` with the real helm, two replicas with leader election, in-cluster configuration
 * from the mounted ServiceAccount token (the API server through the `kubernetes` Service). The
 * controller Pods become Ready (the chart's own probes), serve /metrics, and install a
 * BundleDeployment fetched from a server on the node's bridge. SIGKILLing the leader's container
 * moves the Lease to another identity and the next change is reconciled; `helm upgrade` to another
 * image tag rolls the controller Pods and the Lease goes to a new Pod, which reconciles.
 *
 * Real pods only: skipped, with the reason, where the machine cannot run the real node. The
 * controller here reconciles only this file's BundleDeployments (--selector), since other test
 * files run their own controllers on the same cluster at the same time.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import { toolPath } from '../../src/devcluster/tools.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { BD_TYPE, cond, describeStatus, TEST_LABEL } from '../support/controller.ts';
import { configMap, serveBundle, until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { startFileServer, type FileServer } from '../support/http-files.ts';
import { buildImage, podman, podmanEnv } from '../support/podman.ts';
import { ctr, onRealNode, realNode, realNodeTitle } from '../support/real-node.ts';

const run = promisify(execFile);
const CHART = new URL('../../charts/hoist/', import.meta.url).pathname;
const runId = Math.random().toString(16).slice(2, 10);
const release = `hoist-e2e-${runId}`;
const ns = `hoist-e2e-${runId}`;
const UPGRADE_TAG = `e2e-upgrade-${runId}`;
const POD = { apiVersion: 'v1', kind: 'Pod' } as const;
const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' } as const;
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;

let client: RestKubeClient;
let files: FileServer;
let tmp: string;
let valuesFile: string;
let imageRepo = '';
let imageTag = '';

async function helm(args: string[]): Promise<string> {
  try {
    const { stdout } = await run(toolPath('helm'), ['--kubeconfig', kubeconfigPath(), ...args], { maxBuffer: 64 << 20, timeout: 300_000 });
    return stdout;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`helm ${args.join(' ')}: ${err.stderr || err.message}`);
  }
}

interface PodView extends KubeObject {
  spec?: { nodeName?: string; containers?: { image: string }[] };
  status?: {
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { containerID?: string; ready?: boolean; restartCount?: number }[];
  };
}

async function controllerPods(): Promise<PodView[]> {
  const list = await client.list<PodView>(POD, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${release}` });
  return list.items.filter((p) => !p.metadata.deletionTimestamp);
}

const isReady = (p: PodView): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

async function leaseHolder(): Promise<string | undefined> {
  const l = await client.get(LEASE, 'hoist-controller', ns);
  return (l?.spec as { holderIdentity?: string } | undefined)?.holderIdentity || undefined;
}

/** the BundleDeployment's status once its current generation is done (Installed, not progressing) */
async function waitDone(name: string, what: string, ms = 180_000): Promise<BundleDeployment> {
  let last: BundleDeployment | undefined;
  try {
    return await until(
      async () => {
        last = (await client.get(BD_TYPE, name)) as unknown as BundleDeployment | undefined;
        const done =
          last &&
          last.status?.observedGeneration === last.metadata.generation &&
          cond(last, 'Installed')?.status === 'True' &&
          cond(last, 'Progressing')?.status === 'False';
        return done ? last : undefined;
      },
      what,
      ms,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${describeStatus(last)}`);
  }
}

// Skipped only where the real node cannot run (not Linux or root, containerd or the CNI plugins
// missing, another run holding it, or HOIST_REAL_NODE=0): the reason is in the title. On this
// project's machines and in CI it runs.
describe.skipIf(!realNode())(realNodeTitle('charts/hoist installed with helm on the real node'), () => {
  beforeAll(async () => {
    client = createKubeClient(loadKubeConfig(kubeconfigPath()));
    tmp = await mkdtemp(join(tmpdir(), 'hoist-chart-e2e-'));
    // the controller image: `npm run image`, then podman save -> ctr import (nothing is pulled)
    const pm = await podmanEnv();
    if ('unavailable' in pm) throw new Error(pm.unavailable);
    const { ref } = await buildImage();
    [imageRepo, imageTag] = [ref.slice(0, ref.lastIndexOf(':')), ref.slice(ref.lastIndexOf(':') + 1)];
    const archive = join(tmp, 'hoist.tar');
    await podman(pm.env, ['save', '--quiet', '--format', 'docker-archive', '-o', archive, ref]);
    await ctr(['images', 'import', archive]);
    await ctr(['images', 'tag', '--force', ref, `${imageRepo}:${UPGRADE_TAG}`]);
    await rm(archive, { force: true });
    // the bundle's server listens on the bridge's gateway, where the controller Pods reach it
    files = await startFileServer({ host: realNode()!.network.gateway });
    const placement = onRealNode();
    valuesFile = join(tmp, 'values.yaml');
    await writeFile(
      valuesFile,
      stringify({
        image: { repository: imageRepo, tag: imageTag, pullPolicy: 'Never' },
        replicaCount: 2,
        extraArgs: [`--selector=${TEST_LABEL}=${runId}`],
        nodeSelector: placement.nodeSelector,
        tolerations: placement.tolerations,
        // a 2-core test node: the chart's defaults would reserve more than the tests need
        resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { memory: '1Gi' } },
      }),
    );
  }, 900_000);

  afterAll(async () => {
    // BundleDeployments first, while a controller is there to remove their finalizers
    const bds = await client?.list(BD_TYPE, { labelSelector: `${TEST_LABEL}=${runId}` }).catch(() => ({ items: [] as KubeObject[] }));
    for (const bd of bds?.items ?? []) await client.delete(BD_TYPE, bd.metadata.name, undefined).catch(() => undefined);
    await until(
      async () => ((await client.list(BD_TYPE, { labelSelector: `${TEST_LABEL}=${runId}` })).items.length === 0 ? true : undefined),
      'BundleDeployments deleted',
      120_000,
    ).catch(() => undefined);
    await helm(['uninstall', release, '--namespace', ns]).catch(() => undefined);
    await client?.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
    await files?.close();
    await client?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 300_000);

  it('helm install: both controller Pods run on the real node and become Ready by the chart probes; /metrics is served; a bundle installs through the leader', async () => {
    await helm(['install', release, CHART, '--namespace', ns, '--create-namespace', '--values', valuesFile]);
    const pods = await until(
      async () => {
        const p = await controllerPods();
        return p.length === 2 && p.every(isReady) ? p : undefined;
      },
      'two controller Pods Ready',
      300_000,
    );
    for (const p of pods) {
      expect(p.spec?.nodeName).toBe(realNode()!.name);
      const metrics = await (await fetch(`http://${p.status!.podIP}:8080/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
      expect(metrics).toMatch(/^hoist_/m);
    }
    // one of them leads (identity: the pod's hostname, i.e. its name, and a suffix)
    const holder = await until(leaseHolder, 'a Lease holder', 120_000);
    expect(pods.map((p) => p.metadata.name)).toContain(holder.split('_')[0]);

    const source = await serveBundle(files, '/v1.tgz', [configMap('from-pod', { revision: '1' })]);
    await client.create({
      apiVersion: BD_TYPE.apiVersion,
      kind: BD_TYPE.kind,
      metadata: { name: `chart-e2e-${runId}`, labels: { [TEST_LABEL]: runId } },
      spec: { installNamespace: `${ns}-bundle`, format: 'plain', sources: [source] },
    } as KubeObject);
    await waitDone(`chart-e2e-${runId}`, 'the BundleDeployment installed by the controller Pod');
    const cm = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'from-pod', `${ns}-bundle`);
    expect((cm as KubeObject & { data?: Record<string, string> }).data).toEqual({ revision: '1' });
  }, 600_000);

  it('SIGKILL of the leader: the Lease moves to another identity and the next change is reconciled', async () => {
    const before = (await until(leaseHolder, 'a Lease holder', 60_000))!;
    const leader = (await controllerPods()).find((p) => p.metadata.name === before.split('_')[0]);
    expect(leader, `leader pod of ${before}`).toBeDefined();
    const containerId = leader!.status!.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, '');
    const killedAt = Date.now();
    await ctr(['tasks', 'kill', '--signal', 'SIGKILL', containerId]);
    const after = await until(
      async () => {
        const h = await leaseHolder();
        return h && h !== before ? h : undefined;
      },
      'a new Lease holder after the SIGKILL',
      180_000,
    );
    const movedMs = Date.now() - killedAt;

    // the next change is reconciled by the new leader
    const source = await serveBundle(files, '/v2.tgz', [configMap('from-pod', { revision: '2' })]);
    const changedAt = Date.now();
    await client.patch(BD_TYPE, `chart-e2e-${runId}`, undefined, { spec: { sources: [source] } }, 'merge');
    const r2 = await waitDone(`chart-e2e-${runId}`, 'revision 2 installed by the new leader');
    // one new revision: the change was applied once, not lost and not twice
    expect(r2.status?.activeRevision?.number).toBe(2);
    const cm = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'from-pod', `${ns}-bundle`);
    expect((cm as KubeObject & { data?: Record<string, string> }).data).toEqual({ revision: '2' });
    // reported, not asserted: times depend on the machine
    console.log(
      `leader ${before} SIGKILLed: Lease held by ${after} after ${(movedMs / 1000).toFixed(1)}s (lease duration 15s); change reconciled ${((Date.now() - changedAt) / 1000).toFixed(1)}s after it was made`,
    );
  }, 600_000);

  it('helm upgrade to another image tag rolls the controller Pods and hands the Lease to a new Pod', async () => {
    const oldPods = new Set((await controllerPods()).map((p) => p.metadata.name));
    await helm(['upgrade', release, CHART, '--namespace', ns, '--values', valuesFile, '--set', `image.tag=${UPGRADE_TAG}`]);
    await until(
      async () => {
        const d = await client.get(DEPLOY, release, ns);
        const s = (d?.status ?? {}) as { observedGeneration?: number; updatedReplicas?: number; availableReplicas?: number; replicas?: number };
        const pods = await controllerPods();
        const rolled = s.observedGeneration === d?.metadata.generation && s.updatedReplicas === 2 && s.availableReplicas === 2 && s.replicas === 2;
        return rolled &&
          pods.length === 2 &&
          pods.every((p) => !oldPods.has(p.metadata.name) && p.spec?.containers?.[0]?.image === `${imageRepo}:${UPGRADE_TAG}`)
          ? true
          : undefined;
      },
      'the controller rolled to the new tag',
      300_000,
    );
    const holder = await until(
      async () => {
        const h = await leaseHolder();
        return h && !oldPods.has(h.split('_')[0]!) ? h : undefined;
      },
      'the Lease held by a new Pod',
      180_000,
    );
    expect((await controllerPods()).map((p) => p.metadata.name)).toContain(holder.split('_')[0]);

    const source = await serveBundle(files, '/v3.tgz', [configMap('from-pod', { revision: '3' })]);
    await client.patch(BD_TYPE, `chart-e2e-${runId}`, undefined, { spec: { sources: [source] } }, 'merge');
    const r3 = await waitDone(`chart-e2e-${runId}`, 'revision 3 installed by the upgraded controller');
    expect(r3.status?.activeRevision?.number).toBe(3);
    const cm = await client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'from-pod', `${ns}-bundle`);
    expect((cm as KubeObject & { data?: Record<string, string> }).data).toEqual({ revision: '3' });
  }, 600_000);
});
