/** What every benchmark module shares: writing its JSON summary and running when executed directly. */
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** writes bench/results/<name>.json and says so */
export async function writeResult(resultsFile: string, result: { nproc: number }, log: (line: string) => void): Promise<void> {
  await mkdir(path.dirname(resultsFile), { recursive: true });
  await writeFile(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
  log(`wrote ${path.relative(repoRoot, resultsFile)} (nproc ${result.nproc})`);
}

/** runs `run` when the module at `moduleUrl` is the process's entry point (`tsx bench/apply.ts`) */
export function runWhenMain(moduleUrl: string, run: () => Promise<unknown>): void {
  if (!process.argv[1] || pathToFileURL(path.resolve(process.argv[1])).href !== moduleUrl) return;
  run().catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** the q-quantile (0..1) of xs, linear between the two nearest ranks (q = 0.5 is the median) */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return s[lo]! + (s[hi]! - s[lo]!) * (at - lo);
}

/**
 * Runs a reference command and resolves its stdout; rejects with its stderr on a non-zero exit.
 * Async on purpose: servers the benchmark runs in this process must keep serving meanwhile.
 */
export function exec(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`))));
  });
}
