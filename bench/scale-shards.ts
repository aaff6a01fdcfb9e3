/**
 * The controller processes of one bench/scale.ts run: one unsharded `hoist run` (BundleDeployments
 * unlabelled), or S processes `hoist run --shard s<k>` with BundleDeployment i labelled
 * core.rukpak.io/shard=s<i mod S> (docs/design.md, Shards), each with its own work directory
 * (log, content cache). RSS and CPU are read per process from /proc; the run reports the largest
 * peak and the summed CPU next to each process's own figures.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { SHARD_LABEL } from '../src/cli/shard.ts';
import { procStat, type Controller, type ProcStat } from './controller-process.ts';

export interface ControllerGroup {
  /** each process with its shard (undefined: the one unsharded process) */
  readonly members: ReadonlyArray<{ shard: string | undefined; ctl: Controller }>;
  /** the labels that put BundleDeployment i in one process's shard (none when unsharded) */
  labelsFor(i: number): Record<string, string> | undefined;
  /** /proc figures per member, in order */
  stats(): ProcStat[];
  /** a member that exited, with its code and log, or undefined while all run */
  exited(): { code: number | null; logFile: string } | undefined;
  stop(): Promise<void>;
}

/**
 * Starts `processes` controllers one after the other (each installs the CRD; applying it twice is
 * idempotent) through `start(dir, extraArgs)`, which runs one in `dir` with `extraArgs` added.
 */
export async function startControllerGroup(
  processes: number,
  work: string,
  start: (dir: string, extraArgs: string[]) => Promise<Controller>,
): Promise<ControllerGroup> {
  const members: Array<{ shard: string | undefined; ctl: Controller }> = [];
  const stopAll = () => Promise.all(members.map((m) => m.ctl.stop())).then(() => undefined);
  try {
    if (processes <= 1) members.push({ shard: undefined, ctl: await start(work, []) });
    else
      for (let k = 0; k < processes; k++) {
        const shard = `s${k}`;
        const dir = path.join(work, `shard-${shard}`);
        await mkdir(dir, { recursive: true });
        members.push({ shard, ctl: await start(dir, ['--shard', shard]) });
      }
  } catch (e) {
    await stopAll();
    throw e;
  }
  return {
    members,
    labelsFor: (i) => (processes <= 1 ? undefined : { [SHARD_LABEL]: `s${i % processes}` }),
    stats: () => members.map((m) => procStat(m.ctl.child.pid!)),
    exited() {
      const m = members.find((x) => x.ctl.child.exitCode !== null);
      return m ? { code: m.ctl.child.exitCode, logFile: m.ctl.logFile } : undefined;
    },
    stop: stopAll,
  };
}

/** per-process figures of a run, and the run's: the largest RSS, the summed CPU */
export interface ProcessFigures {
  shard?: string;
  idleRssMiB: number;
  peakRssMiB: number;
  cpuSeconds: number;
  /** RSS at the end of the quiet window after the wave: the process at rest holding its N BDs */
  steadyRssMiB: number;
}

export const round1 = (x: number) => Number(x.toFixed(1));

/** one run against the baseline: the smallest single-process N of the same invocation */
export interface ScaleGrowth {
  n: number;
  processes: number;
  baselineN: number;
  /** n / baselineN */
  sizeFactor: number;
  timeFactor: number;
  /** the bound on timeFactor: 1.2 × sizeFactor */
  timeBound: number;
  withinTimeBound: boolean;
  kubectlFactor: number;
  cpuFactor: number;
  cpuMsPerBd: number;
  baselineCpuMsPerBd: number;
  peakRssFactor: number;
  idleRssFactor: number;
  steadyRssFactor: number;
}

interface GrowthInput {
  n: number;
  processes: number;
  hoistSeconds: number;
  kubectlSeconds: number;
  cpuSeconds: number;
  peakRssMiB: number;
  idleRssMiB: number;
  steady: { rssMiB: number };
}

/** every other run (a larger N, or the same N over shards) against the smallest single-process run */
export function scaleGrowth(runs: readonly GrowthInput[]): ScaleGrowth[] {
  const base = runs.filter((r) => r.processes === 1).sort((a, b) => a.n - b.n)[0];
  if (!base) return [];
  const f = (a: number, b: number) => Number((a / b).toFixed(2));
  return runs
    .filter((r) => r !== base && (r.n > base.n || r.processes > 1))
    .map((r) => ({
      n: r.n,
      processes: r.processes,
      baselineN: base.n,
      sizeFactor: f(r.n, base.n),
      timeFactor: f(r.hoistSeconds, base.hoistSeconds),
      timeBound: f(1.2 * r.n, base.n),
      withinTimeBound: r.hoistSeconds <= (1.2 * r.n * base.hoistSeconds) / base.n,
      kubectlFactor: f(r.kubectlSeconds, base.kubectlSeconds),
      cpuFactor: f(r.cpuSeconds, base.cpuSeconds),
      cpuMsPerBd: round1((r.cpuSeconds * 1000) / r.n),
      baselineCpuMsPerBd: round1((base.cpuSeconds * 1000) / base.n),
      peakRssFactor: f(r.peakRssMiB, base.peakRssMiB),
      idleRssFactor: f(r.idleRssMiB, base.idleRssMiB),
      steadyRssFactor: f(r.steady.rssMiB, base.steady.rssMiB),
    }));
}
