/**
 * Child processes of the dev cluster: free loopback ports, a process whose output goes to a log
 * file, stopping one (SIGTERM, then SIGKILL after a grace period), waiting for a TCP listener,
 * and the last lines of a log for error messages. Node built-ins only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { sleep } from '../util/sleep.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export function startProcess(bin: string, args: string[], logFile: string): ChildProcess {
  const out = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  return child;
}

export async function stopProcess(child: ChildProcess | undefined, graceMs = 5000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export async function waitTcp(port: number, child: ChildProcess, what: string, logFile: string, host = '127.0.0.1'): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}:\n${tail(logFile)}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, host, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port}:\n${tail(logFile)}`);
    await sleep(100);
  }
}

export function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
