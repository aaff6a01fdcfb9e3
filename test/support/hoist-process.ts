/**
 * `hoist run` as a real process (tsx on src/cli/main.ts), as `npm run hoist -- run` starts it:
 * resolves its metrics port from the "serving /healthz" log line and its exit code. Killed by
 * the caller, by its own pid only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface HoistProcess {
  child: ChildProcess;
  port: Promise<number>;
  exit: Promise<number | null>;
  /** stdout and stderr so far (pino JSON lines) */
  output(): string;
}

/** `nodeFlags` go to node before the script, e.g. the image's (test/support/as-deployed.ts) */
export function startHoistRun(args: readonly string[], env: Record<string, string> = {}, nodeFlags: readonly string[] = []): HoistProcess {
  // tsx as a loader in this process, not its CLI: the CLI relays signals to a second process and
  // can report a SIGTERM as exit 143 instead of the controller's own graceful exit code
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', 'src/cli/main.ts', 'run', '--metrics-bind-address', '127.0.0.1:0', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HOIST_LOG_LEVEL: 'info', ...env },
  });
  let out = '';
  const port = new Promise<number>((resolve, reject) => {
    let found = false;
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      // scanned until found only: the output grows for the process's whole life
      const m = found ? null : /"port":(\d+).*serving \/healthz/.exec(out);
      if (m) {
        found = true;
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`hoist run exited ${code} before serving: ${out.slice(-2000)}`)));
  });
  port.catch(() => undefined);
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, port, exit, output: () => out };
}

/** SIGKILLs a controller process (by its own pid) and resolves once it has exited */
export async function sigkill(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise((r) => c.once('exit', r));
  c.kill('SIGKILL');
  await exited;
}
