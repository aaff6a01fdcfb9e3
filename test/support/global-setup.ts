/**
 * One control plane for the whole test run. With USE_EXISTING_CLUSTER=true the tests run against
 * the cluster of $KUBECONFIG instead (like controller-runtime's envtest); with HOIST_TEST_K3S=1
 * against K3s in a container (needs a Docker engine and @testcontainers/k3s).
 */
import type { TestProject } from 'vitest/node';
import { startControlPlane, type ControlPlane } from '../../src/devcluster/control-plane.ts';
import type { RealNodeInfo } from '../../src/devcluster/real-node.ts';
import { startK3s } from './k3s.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    /** audit log of the local API server, absent for an existing cluster */
    auditLog: string;
    /** "local" | "existing" | "k3s"; the local one runs kube-controller-manager, kube-scheduler and kwok, so workloads become ready */
    clusterKind: string;
    /** the local control plane's real node (containerd + kubelet), or null: see realNodeSkip */
    realNode: RealNodeInfo | null;
    /** why tests that need real pods are skipped ('' when realNode is there) */
    realNodeSkip: string;
  }
}

let cp: ControlPlane | undefined;
let stopK3s: (() => Promise<void>) | undefined;

export async function setup(project: TestProject): Promise<void> {
  if (process.env.USE_EXISTING_CLUSTER === 'true') {
    const kubeconfig = process.env.KUBECONFIG;
    if (!kubeconfig) throw new Error('USE_EXISTING_CLUSTER=true needs KUBECONFIG=<file>');
    project.provide('kubeconfig', kubeconfig);
    project.provide('auditLog', '');
    project.provide('clusterKind', 'existing');
    project.provide('realNode', null);
    project.provide('realNodeSkip', 'no real node: the tests run against an existing cluster (USE_EXISTING_CLUSTER)');
    return;
  }
  if (process.env.HOIST_TEST_K3S === '1') {
    const k3s = await startK3s();
    stopK3s = k3s.stop;
    project.provide('kubeconfig', k3s.kubeconfigPath);
    project.provide('auditLog', '');
    project.provide('clusterKind', 'k3s');
    project.provide('realNode', null);
    project.provide('realNodeSkip', 'no real node: the tests run against K3s in a container (HOIST_TEST_K3S)');
    return;
  }
  // the real node where this machine can run one (HOIST_REAL_NODE=0: kwok's node only)
  const realNode = process.env.HOIST_REAL_NODE === '0' ? false : 'optional';
  cp = await startControlPlane({ auditLog: true, workloads: true, realNode, log: (l) => console.error(`[control plane] ${l}`) });
  project.provide('kubeconfig', cp.kubeconfigPath);
  project.provide('auditLog', cp.auditLogPath ?? '');
  project.provide('clusterKind', 'local');
  const node = cp.realNode;
  project.provide(
    'realNode',
    node
      ? {
          name: node.name,
          runtime: node.runtime,
          network: node.network,
          label: node.label,
          taint: node.taint,
          images: node.images,
          containerdSocket: node.containerdSocket,
        }
      : null,
  );
  project.provide('realNodeSkip', node ? '' : realNode ? (cp.realNodeUnavailable ?? 'the real node did not start') : 'no real node: HOIST_REAL_NODE=0');
  if (!node) console.error(`[control plane] tests that need real pods are skipped: ${cp.realNodeUnavailable ?? 'HOIST_REAL_NODE=0'}`);
}

export async function teardown(): Promise<void> {
  await cp?.stop();
  await stopK3s?.();
}
