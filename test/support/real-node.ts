/**
 * The local control plane's real node (src/devcluster/real-node.ts) as tests see it: whether it is
 * there (or, in one line, why not: the tests that need it are skipped with that reason), the pod
 * spec fields that put a pod on it, the test images it holds, and `ctr` against its containerd.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import type { RealNodeInfo } from '../../src/devcluster/real-node.ts';

const run = promisify(execFile);

/** the real node, or undefined (then realNodeSkip() says why) */
export function realNode(): RealNodeInfo | undefined {
  return inject('realNode') ?? undefined;
}

/** '' when the real node is there, else the one-line reason its tests are skipped */
export function realNodeSkip(): string {
  return inject('realNodeSkip');
}

/** the real node or an error (inside a test that was not skipped) */
export function theRealNode(): RealNodeInfo {
  const node = realNode();
  if (!node) throw new Error(realNodeSkip());
  return node;
}

/** a title for describe.skipIf: says why when skipped */
export function realNodeTitle(title: string): string {
  const why = realNodeSkip();
  return why ? `${title} (skipped: ${why})` : title;
}

/** pod spec fields that put a pod on the real node (its label, a toleration of its taint) */
export function onRealNode(node: RealNodeInfo = theRealNode()): { nodeSelector: Record<string, string>; tolerations: Array<Record<string, string>> } {
  return {
    nodeSelector: { [node.label]: 'true' },
    tolerations: [{ key: node.taint, operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
  };
}

/** runs ctr against the real node's containerd (namespace k8s.io, where the kubelet's images and containers are) */
export async function ctr(args: readonly string[], timeoutMs = 300_000): Promise<string> {
  const node = theRealNode();
  const { stdout } = await run('ctr', ['--address', node.containerdSocket, '--namespace', 'k8s.io', ...args], { timeout: timeoutMs, maxBuffer: 16 << 20 });
  return stdout;
}
