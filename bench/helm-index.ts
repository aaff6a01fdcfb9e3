/**
 * Resolving one chart from a large Helm repository index: wall time, peak RSS and the event
 * loop's longest stall of parseIndex, which parses only the chart's part of an index in a layout
 * Helm writes (src/sources/helm/index-slice.ts), against parsing the whole index (what Hoist did
 * before, and still does for a layout the cut does not read). Each measurement runs in a fresh
 * child process (after a warm-up parse of a small index), so its peak RSS is its own.
 *
 * Indexes: about 16 MiB written by the real `helm repo index` (1 320 charts of 20 versions,
 * each with the metadata a public chart carries), as YAML and with `--json`; and about 50 MiB of
 * the YAML one's entries repeated under other chart names (the default --helm-index-max-size),
 * whose whole parse Hoist refuses (it parses at most 16 MiB) and is not measured.
 * Results: bench/results/helm-index.json.
 *
 * `npx tsx bench/helm-index.ts [ROUNDS]` (default 3); `run()` is used by bench/run.ts.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { toolVersions } from '../src/devcluster/tools.ts';
import { MAX_PARSED_INDEX_BYTES, parseIndex, parseWholeIndex } from '../src/sources/helm/repo-index.ts';
import { DEFAULT_HELM_INDEX_MAX_BYTES } from '../src/sources/helm/helm-source.ts';
import { YAML_MAX_NODES_PER_DOCUMENT } from '../src/processors/yaml/budget.ts';
import { longestStall } from '../test/support/event-loop.ts';
import { makeChartRepo } from '../test/support/helm-repo.ts';
import { median, repoRoot, writeResult } from './common.ts';

const resultsFile = path.join(repoRoot, 'bench', 'results', 'helm-index.json');
const MiB = 1024 * 1024;
const CHARTS = 1320;
const VERSIONS = 20;

/** the node budget HelmSource gives parseIndex at the default limit */
const opts = {
  subject: 'bench/index.yaml',
  maxNodes: Math.max(YAML_MAX_NODES_PER_DOCUMENT, Math.ceil(Math.min(DEFAULT_HELM_INDEX_MAX_BYTES, MAX_PARSED_INDEX_BYTES) / 8)),
};

interface Measurement {
  ms: number;
  /** the parse's peak RSS over the child's RSS with the index read into memory, MiB */
  extraRssMiB: number;
  /** the longest time between two turns of a 1 ms timer, ms */
  longestStallMs: number;
  layout: string;
  parsedChars: number;
}

interface Case {
  name: string;
  indexBytes: number;
  charts: number;
  entries: number;
  /** the whole index parsed (before); null when Hoist refuses to */
  whole: Measurement | null;
  /** the chart's part only (after) */
  sliced: Measurement;
  /** sliced.ms / whole.ms (below 1 is faster), when the whole parse was measured */
  ratio?: number;
  rounds: number;
}

export interface HelmIndexBenchResult {
  benchmark: 'helm-index';
  date: string;
  nproc: number;
  node: string;
  helm: string;
  cases: Case[];
}

/** chart metadata like a public repository's (about 640 bytes of index per version) */
function metadata(c: number, v: number): { name: string; version: string } & Record<string, unknown> {
  const name = `chart-${c}`;
  return {
    name,
    version: `1.${v}.0`,
    appVersion: `2.${v}`,
    description: `Chart number ${c}, a longer description so the entry looks like a real one in a public repository`,
    home: `https://example.com/${name}`,
    sources: [`https://github.com/example/${name}`],
    keywords: ['a', 'b', 'c'],
    maintainers: [{ name: 'Someone', email: 'someone@example.com' }],
    annotations: { category: 'Infrastructure', licenses: 'Apache-2.0' },
  };
}

/** One measurement in a child process: `how` is sliced or whole. */
async function measure(file: string, chart: string, how: 'sliced' | 'whole'): Promise<Measurement> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', file, chart, how], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: repoRoot,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`helm-index child exited with ${code}`);
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Measurement;
}

/** The child: reads the index, warms the parser up on a small one, then measures one parse. */
async function child(file: string, chart: string, how: string): Promise<void> {
  const index = await readFile(file);
  await parseIndex('apiVersion: v1\nentries:\n  a:\n  - {version: 1.0.0, urls: [a.tgz]}\n', 'a', opts);
  await parseWholeIndex(Buffer.from('apiVersion: v1\nentries:\n  a:\n  - {version: 1.0.0, urls: [a.tgz]}\n'), 'a', opts, 'warm-up');
  const rssBefore = process.memoryUsage().rss;
  // the process's peak so far (start-up may have been higher than now): the parse's own peak is
  // a higher maxRSS afterwards, or else the highest RSS sampled while it runs
  const peakBefore = process.resourceUsage().maxRSS * 1024;
  let sampled = rssBefore;
  let ms = 0;
  const { value: parsed, longestMs } = await longestStall(
    async () => {
      const t0 = performance.now();
      const p =
        how === 'sliced' ? await parseIndex(index, chart, opts) : await parseWholeIndex(index, chart, { ...opts, maxParsedBytes: Infinity }, 'the bench');
      ms = performance.now() - t0;
      return p;
    },
    () => (sampled = Math.max(sampled, process.memoryUsage().rss)),
  );
  if (parsed.chart?.versions.length !== VERSIONS) throw new Error(`${chart}: ${parsed.chart?.versions.length} versions`);
  const m: Measurement = {
    ms: Math.round(ms),
    extraRssMiB: Math.round(
      (Math.max(sampled, process.resourceUsage().maxRSS * 1024 > peakBefore ? process.resourceUsage().maxRSS * 1024 : 0) - rssBefore) / MiB,
    ),
    longestStallMs: Math.round(longestMs),
    layout: parsed.read.layout,
    parsedChars: parsed.read.parsedChars,
  };
  process.stdout.write(`${JSON.stringify(m)}\n`);
}

const med = (ms: Measurement[]): Measurement => ({
  ms: Math.round(median(ms.map((m) => m.ms))),
  extraRssMiB: Math.round(median(ms.map((m) => m.extraRssMiB))),
  longestStallMs: Math.round(median(ms.map((m) => m.longestStallMs))),
  layout: ms[0]!.layout,
  parsedChars: ms[0]!.parsedChars,
});

export async function run(options: { rounds?: number; log?: (line: string) => void } = {}): Promise<HelmIndexBenchResult> {
  const log = options.log ?? ((l: string) => console.error(l));
  const rounds = options.rounds ?? 3;
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-helm-index-'));
  try {
    log(`writing ${CHARTS * VERSIONS} chart tarballs, then helm repo index (YAML and --json) ...`);
    const repo = makeChartRepo(path.join(work, 'repo'));
    for (let c = 0; c < CHARTS; c++) for (let v = 0; v < VERSIONS; v++) await repo.writeChart(metadata(c, v));
    repo.index();
    const yaml = await readFile(path.join(repo.dir, 'index.yaml'));
    repo.index(undefined, { json: true });
    const json = await readFile(path.join(repo.dir, 'index.yaml'));
    // the YAML entries again under other names, up to the default limit
    const text = yaml.toString();
    const body = text.slice(text.indexOf('entries:\n') + 'entries:\n'.length, text.indexOf('\ngenerated:') + 1);
    const copies = Math.floor((DEFAULT_HELM_INDEX_MAX_BYTES - 1024) / body.length);
    const large = `apiVersion: v1\nentries:\n${Array.from({ length: copies }, (_, k) => body.replace(/^ {2}(chart-\d+):$/gm, `  $1-r${k}:`)).join('')}generated: "2026-01-01T00:00:00Z"\n`;
    const files = { yaml: path.join(work, 'index.yaml'), json: path.join(work, 'index.json'), large: path.join(work, 'large.yaml') };
    await writeFile(files.yaml, yaml);
    await writeFile(files.json, json);
    await writeFile(files.large, large);
    const chart = `chart-${Math.floor(CHARTS / 2)}`;
    const cases: Case[] = [];
    for (const [name, file, bytes, charts, measureWhole, wanted] of [
      ['helm repo index, YAML', files.yaml, yaml.length, CHARTS, true, chart],
      ['helm repo index --json', files.json, json.length, CHARTS, true, chart],
      ['YAML at the default limit', files.large, Buffer.byteLength(large), CHARTS * copies, false, `${chart}-r${Math.floor(copies / 2)}`],
    ] as const) {
      const sliced: Measurement[] = [];
      const whole: Measurement[] = [];
      for (let r = 0; r < rounds; r++) {
        sliced.push(await measure(file, wanted, 'sliced'));
        if (measureWhole) whole.push(await measure(file, wanted, 'whole'));
      }
      const c: Case = { name, indexBytes: bytes, charts, entries: charts * VERSIONS, whole: measureWhole ? med(whole) : null, sliced: med(sliced), rounds };
      if (c.whole) c.ratio = Math.round((c.sliced.ms / c.whole.ms) * 1000) / 1000;
      log(
        `${name}: ${(bytes / MiB).toFixed(1)} MiB, ${c.entries} entries: chart part ${c.sliced.ms} ms, +${c.sliced.extraRssMiB} MiB RSS, longest stall ${c.sliced.longestStallMs} ms` +
          (c.whole
            ? `; whole ${c.whole.ms} ms, +${c.whole.extraRssMiB} MiB RSS, longest stall ${c.whole.longestStallMs} ms`
            : '; whole: refused (over 16 MiB)'),
      );
      cases.push(c);
    }
    const result: HelmIndexBenchResult = {
      benchmark: 'helm-index',
      date: new Date().toISOString(),
      nproc: availableParallelism(),
      node: process.version,
      helm: toolVersions()['HELM_VERSION'] ?? 'unknown',
      cases,
    };
    await writeResult(resultsFile, result, log);
    return result;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  const i = process.argv.indexOf('--child');
  if (i >= 0) {
    const [file, chart, how] = process.argv.slice(i + 1);
    await child(file!, chart!, how!);
  } else {
    await run({ rounds: Number(process.argv[2] ?? 3) });
  }
}
