/**
 * bench/scale.ts's request-floor reference: N apps of the same bundles through
 * bench/scale-floor-client.ts (the floor's requests and watches with Hoist's kube client, nothing
 * else), run as the controller runs (compiled, the image's node flags and environment), in its own
 * namespace of the same control plane before Hoist's wave. Its time, CPU and peak RSS are read
 * like the controller's; its requests per app from the audit log. With `warmUp` sources, those
 * apps go first and the measurement starts once they are done (the process's code warmed up as
 * the controller's is, see bench/scale.ts $HOIST_SCALE_WARMUP).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { KubeObject } from '../src/kube/types.ts';
import type { RestKubeClient } from '../src/kube/client.ts';
import { imageEnv } from '../test/support/as-deployed.ts';
import { auditEvents, auditOffset } from '../test/support/audit.ts';
import { diffThreads, procStat, stopProcess, threadCpu, type ThreadCpu } from './controller-process.ts';
import { pool, type PinnedSource } from './scale-sources.ts';

export interface FloorRun {
  /** first app created → every app done */
  seconds: number;
  cpuSeconds: number;
  cpuMsPerApp: number;
  /** its CPU seconds by thread group */
  cpuByThread: ThreadCpu;
  peakRssMiB: number;
  /** the floor client's API requests per app (audit log), other than its watches and their lists */
  requestsPerApp: number;
}

const FLOOR_UA = 'hoist-floor';

/** `main`: dist/src/cli/main.js; the floor client is compiled beside it (dist/bench/) */
export async function measureFloor(opts: {
  main: string;
  kubeconfig: string;
  auditLog: string;
  admin: RestKubeClient;
  namespace: string;
  sources: readonly PinnedSource[];
  /** apps done before the measurement starts (default none) */
  warmUp?: readonly PinnedSource[];
  nodeFlags: readonly string[];
  workers: number;
  timeoutSeconds: number;
}): Promise<FloorRun> {
  const n = opts.sources.length;
  const warmUp = opts.warmUp ?? [];
  const client = path.join(path.dirname(opts.main), '../../bench/scale-floor-client.js');
  await opts.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: opts.namespace } });
  const child = spawn(
    process.execPath,
    [...opts.nodeFlags, client, opts.kubeconfig, opts.namespace, String(n + warmUp.length), String(opts.workers), FLOOR_UA, String(warmUp.length)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...imageEnv(), PATH: process.env.PATH },
    },
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let out = '';
  let err = '';
  const checks = new Set<() => void>();
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    for (const check of checks) check();
  });
  /** resolves once the client printed `word` on a line of its own */
  const said = (word: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (out.split('\n').includes(word)) resolve();
      };
      checks.add(check);
      child.once('exit', (code) => reject(new Error(`the floor client exited (${code}) before "${word}": ${err.slice(-2000)}`)));
      check();
    });
  child.stderr!.on('data', (c: Buffer) => {
    if (err.length < 100_000) err += c.toString();
  });
  /** `p`, or an error once opts.timeoutSeconds have passed */
  const within = async (p: Promise<void>, word: string): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      p,
      new Promise(
        (_, reject) =>
          (timer = setTimeout(() => reject(new Error(`the floor client was not ${word} after ${opts.timeoutSeconds} s`)), opts.timeoutSeconds * 1000)),
      ),
    ]).finally(() => clearTimeout(timer));
  };
  const createApps = (sources: readonly PinnedSource[], prefix: string) =>
    pool(sources, 50, async (s, i) => {
      if (s.kind !== 'http' || !s.http?.sha256) throw new Error('the floor reference reads pinned http sources only');
      await opts.admin.create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `${prefix}-${i}`, namespace: opts.namespace },
        data: { url: s.http.url, sha256: s.http.sha256 },
      } as unknown as KubeObject);
    });
  try {
    const ready = said('ready');
    const warmed = warmUp.length ? said('warm') : Promise.resolve();
    const finished = said('done');
    // awaited below; an early exit rejects all, and only the first is awaited at once
    warmed.catch(() => undefined);
    finished.catch(() => undefined);
    await ready;
    if (warmUp.length) {
      await createApps(warmUp, 'warm');
      await within(warmed, 'warm');
    }
    const from = await auditOffset(opts.auditLog);
    const cpu0 = procStat(child.pid!).cpuSeconds;
    const threads0 = threadCpu(child.pid!);
    const t0 = performance.now();
    await createApps(opts.sources, 'app');
    await within(finished, 'done');
    const seconds = (performance.now() - t0) / 1000;
    const end = procStat(child.pid!);
    const cpuByThread = diffThreads(threadCpu(child.pid!), threads0);
    const cpuSeconds = end.cpuSeconds - cpu0;
    const requests = (await auditEvents(opts.auditLog, from, (ua) => ua === FLOOR_UA)).filter((e) => e.verb !== 'watch' && e.verb !== 'list').length;
    return {
      seconds: Number(seconds.toFixed(1)),
      cpuSeconds: Number(cpuSeconds.toFixed(2)),
      cpuMsPerApp: Number(((cpuSeconds * 1000) / n).toFixed(2)),
      cpuByThread,
      peakRssMiB: Number(end.hwmMiB.toFixed(1)),
      requestsPerApp: Number((requests / n).toFixed(2)),
    };
  } finally {
    await stopProcess(child, exited);
  }
}
