/**
 * The controller as the image runs it, for benchmarks that measure its process: compiled with
 * `tsc` to dist/ (as scripts/image.sh compiles it), started as `node <flags> dist/src/cli/main.js
 * run` with the image's MALLOC_* and NODE_* variables (test/support/as-deployed.ts), its output
 * in <work>/controller.log, and its RSS and CPU read from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, createWriteStream, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { imageEnv } from '../test/support/as-deployed.ts';
import { exec, repoRoot } from './common.ts';

const MiB = 1024 * 1024;

/**
 * compiles api/ and src/ into dist/ as scripts/image.sh does (no type check, no tests) and returns
 * the path of main.js; $HOIST_SCALE_NO_BUILD=1 reuses dist/
 */
export async function buildController(log: (l: string) => void): Promise<string> {
  const dist = path.join(repoRoot, 'dist');
  if (process.env.HOIST_SCALE_NO_BUILD !== '1') {
    const t0 = performance.now();
    // inside the repository, as scripts/image.sh does: type libraries resolve from node_modules there
    mkdirSync(path.join(repoRoot, '.tmp'), { recursive: true });
    const cfg = path.join(repoRoot, '.tmp', 'scale-tsconfig.json');
    writeFileSync(
      cfg,
      JSON.stringify({
        extends: path.join(repoRoot, 'tsconfig.json'),
        // and the request-floor reference of bench/scale.ts, run as the controller runs, and the
        // allocation preload docs/benchmarks.md loads into both (--import dist/bench/tools/…)
        include: [
          path.join(repoRoot, 'api'),
          path.join(repoRoot, 'src'),
          path.join(repoRoot, 'bench/scale-floor-client.ts'),
          path.join(repoRoot, 'bench/tools/gc-alloc-preload.ts'),
        ],
        exclude: [path.join(repoRoot, '**/*.test.ts')],
        compilerOptions: { outDir: dist, rootDir: repoRoot, sourceMap: false, noCheck: true },
      }),
    );
    await exec(process.execPath, [path.join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', cfg], process.env);
    // the CRDs and the tenancy policy, read at run time beside the compiled modules (as scripts/image.sh copies them)
    for (const f of readdirSync(path.join(repoRoot, 'api/v1alpha2')).filter((x) => x.endsWith('.yaml')))
      copyFileSync(path.join(repoRoot, 'api/v1alpha2', f), path.join(dist, 'api/v1alpha2', f));
    mkdirSync(path.join(dist, 'scripts'), { recursive: true });
    copyFileSync(path.join(repoRoot, 'scripts/tool-versions.env'), path.join(dist, 'scripts/tool-versions.env'));
    log(`compiled the controller into dist/ in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  return path.join(dist, 'src/cli/main.js');
}

export interface ProcStat {
  rssMiB: number;
  hwmMiB: number;
  cpuSeconds: number;
}

/** VmRSS, VmHWM (peak RSS) and user+system CPU of a process (clock ticks are 100 Hz on Linux) */
export function procStat(pid: number): ProcStat {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rssMiB: kb('VmRSS') / MiB, hwmMiB: kb('VmHWM') / MiB, cpuSeconds: statCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8')) };
}

/** user + system CPU seconds of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line (clock ticks are 100 Hz on Linux) */
function statCpuSeconds(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is the state (field 3): utime and stime are fields 14 and 15
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * CPU seconds (user + system) by thread group: JavaScript (the main thread), the render threads
 * (hoist run --render-threads: JavaScript too), V8's helpers (GC, compiler), libuv's pool (file
 * system, zlib, crypto)
 */
export interface ThreadCpu {
  main: number;
  renderThreads: number;
  v8Helpers: number;
  libuvPool: number;
  other: number;
}

/** a thread's group by its comm: Node names the main thread and its pools, a Worker gets its `name` (render-pool.ts) */
function groupOf(comm: string): keyof ThreadCpu {
  if (comm.startsWith('hoist-render')) return 'renderThreads';
  if (comm.startsWith('V8')) return 'v8Helpers';
  if (comm.startsWith('libuv')) return 'libuvPool';
  return 'other';
}

/** the process's CPU by thread group, from /proc/<pid>/task/<tid>/stat and each thread's comm */
export function threadCpu(pid: number): ThreadCpu {
  const out: ThreadCpu = { main: 0, renderThreads: 0, v8Helpers: 0, libuvPool: 0, other: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const group: keyof ThreadCpu = tid === String(pid) ? 'main' : groupOf(comm);
    out[group] += statCpuSeconds(stat);
  }
  return out;
}

export function sumThreads(xs: readonly ThreadCpu[]): ThreadCpu {
  const out: ThreadCpu = { main: 0, renderThreads: 0, v8Helpers: 0, libuvPool: 0, other: 0 };
  for (const x of xs) for (const k of Object.keys(out) as Array<keyof ThreadCpu>) out[k] += x[k];
  return out;
}

/** `to` - `from`, rounded to 0.01 s */
export function diffThreads(to: ThreadCpu, from: ThreadCpu): ThreadCpu {
  const out = { ...to };
  for (const k of Object.keys(out) as Array<keyof ThreadCpu>) out[k] = Number((to[k] - from[k]).toFixed(2));
  return out;
}

export interface Controller {
  child: ChildProcess;
  /** its stdout and stderr */
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Starts `node <nodeFlags> <main> run --kubeconfig … --metrics-bind-address 127.0.0.1:0 <args>`
 * in `work` and resolves once it is ready (its BundleDeployment informer has synced).
 */
export async function startController(
  main: string,
  opts: { kubeconfig: string; work: string; nodeFlags: readonly string[]; args: readonly string[] },
): Promise<Controller> {
  const args = [...opts.nodeFlags, main, 'run', '--kubeconfig', opts.kubeconfig, '--metrics-bind-address', '127.0.0.1:0', ...opts.args];
  const child = spawn(process.execPath, args, {
    cwd: opts.work,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...imageEnv(), PATH: process.env.PATH, HOME: opts.work, HOIST_LOG_LEVEL: process.env.HOIST_LOG_LEVEL ?? 'info' },
  });
  const logFile = path.join(opts.work, 'controller.log');
  let head = '';
  const port = new Promise<number>((resolve, reject) => {
    const onData = (c: Buffer) => {
      if (head.length < 100_000) head += c.toString();
      const m = /"port":(\d+).*serving \/healthz/.exec(head);
      if (m) resolve(Number(m[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`hoist run exited ${code} before serving: ${head.slice(-2000)}`)));
  });
  const out = createWriteStream(logFile);
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const p = await port;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${p}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    child,
    logFile,
    stop: () => stopProcess(child, exited),
  };
}

/** SIGTERM, then SIGKILL after 20 s; resolves once the process has exited */
export async function stopProcess(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}
