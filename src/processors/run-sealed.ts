/**
 * Runs a renderer binary (helm, kustomize) sealed off from the controller: only the environment
 * it is given (a private HOME, proxies pointing at a closed port so any network attempt fails at
 * once), its cwd in a private scratch directory, killed after `timeoutMs` or once stdout exceeds
 * `maxOutputBytes`. Asynchronous: never blocks the event loop.
 */
import { spawn } from 'node:child_process';

export interface SealedRunOptions {
  /** private scratch directory: the cwd (and, in `env`, usually HOME and TMPDIR) */
  home: string;
  timeoutMs: number;
  maxOutputBytes: number;
  /** the whole environment; nothing is inherited */
  env: Record<string, string>;
}

export interface SealedRunResult {
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
export const CLOSED_PROXY = 'http://127.0.0.1:9';

/** Spawns `binary args`, resolving with its outcome; rejects only when it cannot be started. */
export function runSealed(binary: string, args: readonly string[], opts: SealedRunOptions): Promise<SealedRunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, {
      cwd: opts.home,
      env: opts.env,
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
