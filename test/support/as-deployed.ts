/**
 * How the image and the chart run the controller, read from the repository's own files at run
 * time so tests and benchmarks follow them when they change:
 *
 * - the node flags of the Dockerfile's ENTRYPOINT (between node and main.js);
 * - the MALLOC_* and NODE_* variables of its ENV;
 * - a V8 heap limit equal to the chart's memory limit (values.yaml resources.limits.memory): the
 *   heap can then never be what pushes the pod over its limit unnoticed — a heap that grows
 *   that far ends the process, as the kubelet's OOM kill would;
 * - the `hoist run` flags the chart sets from its values (workers, renders, cache budget, fetch
 *   deadline, revision size cap), with the chart's defaults.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseByteSize } from '../../src/util/byte-size.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MiB = 1024 * 1024;

/** the node flags of the image's ENTRYPOINT, e.g. --max-semi-space-size=2 --optimize-for-size */
export function imageNodeFlags(): string[] {
  const line = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(readFileSync(`${ROOT}Dockerfile`, 'utf8'))?.[1];
  const argv = line ? (JSON.parse(line) as string[]) : [];
  return argv.slice(1).filter((a) => a.startsWith('--'));
}

/** MALLOC_* and NODE_* variables of the image's ENV, so the allocator runs as in the image */
export function imageEnv(): Record<string, string> {
  const text = readFileSync(`${ROOT}Dockerfile`, 'utf8').replace(/\\\n/g, ' ');
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('ENV ')) continue;
    for (const m of line.slice(4).matchAll(/([A-Z_][A-Z0-9_]*)=(\S+)/g)) if (/^(MALLOC|NODE)_/.test(m[1]!)) out[m[1]!] = m[2]!;
  }
  return out;
}

interface ChartValues {
  workers: number;
  maxConcurrentRenders: number;
  fetchTimeout: string;
  maxRevisionSize: string;
  nodeOptions: string;
  cache: { maxSize: string };
  resources: { limits: { memory: string } };
}

function chartValues(): ChartValues {
  return parse(readFileSync(`${ROOT}charts/hoist/values.yaml`, 'utf8')) as ChartValues;
}

/** the chart's memory limit (resources.limits.memory) in MiB */
export function chartMemoryLimitMiB(): number {
  return Math.floor(parseByteSize(chartValues().resources.limits.memory, 'resources.limits.memory') / MiB);
}

/** the image's node flags, the chart's nodeOptions, and a heap limit equal to the chart's memory limit */
export function deployedNodeFlags(): string[] {
  const nodeOptions = chartValues().nodeOptions.split(/\s+/).filter(Boolean);
  return [...imageNodeFlags(), ...nodeOptions, `--max-old-space-size=${chartMemoryLimitMiB()}`];
}

/** the `hoist run` flags the chart's templates/deployment.yaml sets from its default values */
export function chartRunFlags(): string[] {
  const v = chartValues();
  return [
    '--workers',
    String(v.workers),
    '--max-concurrent-renders',
    String(v.maxConcurrentRenders),
    '--cache-max-size',
    v.cache.maxSize,
    '--fetch-timeout',
    v.fetchTimeout,
    '--max-revision-size',
    v.maxRevisionSize,
  ];
}
