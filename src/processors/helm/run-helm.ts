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
import { spawn } from 'node:child_process';
import path from 'node:path';

export interface HelmRunOptions {
  /** private scratch directory; becomes HOME and holds the HELM_*_HOME directories */
  home: string;
  timeoutMs: number;
  maxOutputBytes: number;
}

export interface HelmRunResult {
  /** exit code, null when killed */
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  outputTooLarge: boolean;
}

/** stderr beyond this is cut: it is only used for messages */
const MAX_STDERR_BYTES = 256 * 1024;
/** a port nothing listens on (discard), so proxied requests are refused immediately */
const CLOSED_PROXY = 'http://127.0.0.1:9';

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

/** Spawns `binary args`, resolving with its outcome; rejects only when it cannot be started. */
export function runHelm(binary: string, args: readonly string[], opts: HelmRunOptions): Promise<HelmRunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, {
      cwd: opts.home,
      env: helmEnv(opts.home),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let timedOut = false;
    let outputTooLarge = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > opts.maxOutputBytes) {
        outputTooLarge = true;
        child.kill('SIGKILL');
        return;
      }
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (errBytes < MAX_STDERR_BYTES) err.push(chunk);
      errBytes += chunk.length;
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        timedOut,
        outputTooLarge,
      });
    });
  });
}
