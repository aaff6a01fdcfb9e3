/**
 * K3s in a container via testcontainers, for machines with a Docker engine. The package is not a
 * dependency of Hoist (it pulls in a Docker client); install it with
 * `npm i --no-save @testcontainers/k3s` before running with HOIST_TEST_K3S=1.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface K3sModule {
  K3sContainer: new (image: string) => { start(): Promise<{ getKubeConfig(): string; stop(): Promise<unknown> }> };
}

export async function startK3s(): Promise<{ kubeconfigPath: string; stop: () => Promise<void> }> {
  const name = '@testcontainers/k3s';
  let mod: K3sModule;
  try {
    mod = (await import(name)) as K3sModule;
  } catch {
    throw new Error('HOIST_TEST_K3S=1 needs @testcontainers/k3s: run `npm i --no-save @testcontainers/k3s` (and a Docker engine)');
  }
  const container = await new mod.K3sContainer(process.env.HOIST_K3S_IMAGE ?? 'rancher/k3s:v1.34.1-k3s1').start();
  const dir = await mkdtemp(join(tmpdir(), 'hoist-k3s-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  await writeFile(kubeconfigPath, container.getKubeConfig(), { mode: 0o600 });
  return { kubeconfigPath, stop: async () => void (await container.stop()) };
}
