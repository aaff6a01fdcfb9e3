/**
 * Runs the helm binary in a sealed-off environment: its own HOME and HELM_*_HOME directories
 * (created by the caller in a temp dir, so no repositories, registries, plugins or kubeconfig
 * of the host leak into a render), plugins disabled, and proxies pointed at a closed port so any
 * network access helm might attempt fails at once instead of reaching out. `helm template` of a
 * local chart directory needs none of these.
 *
 * Asynchronous (never blocks the event loop); kills helm after `timeoutMs` or once stdout
 * exceeds `maxOutputBytes`.
 */
import path from 'node:path';
import { CLOSED_PROXY, runSealed, type SealedRunOptions, type SealedRunResult } from '../run-sealed.ts';

export type HelmRunOptions = Omit<SealedRunOptions, 'env'>;
export type HelmRunResult = SealedRunResult;

/** The whole environment helm runs with; nothing is inherited from the controller's process. */
export function helmEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    TMPDIR: home,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
    HELM_NO_PLUGINS: '1',
    // a kubeconfig that does not exist: template is client-only and must not read the host's
    KUBECONFIG: path.join(home, 'no-kubeconfig'),
    HTTP_PROXY: CLOSED_PROXY,
    HTTPS_PROXY: CLOSED_PROXY,
    NO_PROXY: '',
  };
}

/** Spawns helm with helmEnv (nothing of the controller's environment), resolving with its outcome; rejects only when it cannot be started. */
export function runHelm(binary: string, args: readonly string[], opts: HelmRunOptions): Promise<HelmRunResult> {
  return runSealed(binary, args, { ...opts, env: helmEnv(opts.home) });
}
