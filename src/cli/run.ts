/**
 * `hoist run`: the controller until SIGTERM/SIGINT, then a graceful drain.
 */
import type { Logger } from 'pino';
import { startController } from './controller.ts';

export interface RunOptions {
  kubeconfig?: string;
  namespace: string;
  installCRD: boolean;
  metricsBindAddress: string;
  leaderElect: boolean;
  workers: number;
  log: Logger;
}

export async function runController(opts: RunOptions): Promise<number> {
  const ctl = await startController({ kubeconfig: opts.kubeconfig, namespace: opts.namespace, installCRD: opts.installCRD, workers: opts.workers, log: opts.log });
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  opts.log.info({ signal }, 'shutting down');
  await ctl.stop();
  return 0;
}
