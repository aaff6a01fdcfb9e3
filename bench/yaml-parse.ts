/**
 * The YAML reader against js-yaml's `loadAll` on the same text, in one process: CPU time and bytes
 * allocated per parse (V8's sampling heap profiler, counting objects already collected, as
 * bench/tools/gc-alloc-preload.ts does), for the scale benchmark's 4-object bundle and the largest
 * YAML fixture. Hoist's reader does more than loadAll (go-yaml v2's scalar rules, the node budget,
 * lines for errors), so the ratio says what that costs, not that the two are interchangeable.
 *
 * `npx tsx bench/yaml-parse.ts` writes bench/results/yaml-parse.json.
 */
import { readFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { loadAll } from 'js-yaml';
import { parseManifestStream } from '../src/processors/yaml/stream.ts';
import { repoRoot, runWhenMain, writeResult } from './common.ts';
import { bundleObjects, toYaml } from './scale.ts';

/** the largest YAML file under testdata/fixtures (argocd-operator's ApplicationSet CRD) */
const LARGE = 'testdata/fixtures/registry-v1/argocd-operator.v0.6.0/manifests/argoproj.io_applicationsets.yaml';

interface Measure {
  cpuMicrosPerParse: number;
  kibPerParse: number;
}

interface Case {
  name: string;
  chars: number;
  hoist: Measure;
  jsYaml: Measure;
  /** hoist / js-yaml CPU per parse */
  ratio: number;
  /** hoist / js-yaml bytes allocated per parse */
  allocRatio: number;
}

async function measure(session: Session, rounds: number, parse: () => unknown): Promise<Measure> {
  for (let i = 0; i < Math.max(50, rounds / 5); i++) parse();
  const t0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) parse();
  const t = process.cpuUsage(t0);
  await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const allocRounds = Math.max(20, Math.floor(rounds / 4));
  for (let i = 0; i < allocRounds; i++) parse();
  const { profile } = await session.post('HeapProfiler.stopSampling');
  const total = (n: { selfSize: number; children: unknown[] }): number =>
    n.selfSize + n.children.reduce<number>((a, c) => a + total(c as { selfSize: number; children: unknown[] }), 0);
  return {
    cpuMicrosPerParse: Number(((t.user + t.system) / rounds).toFixed(1)),
    kibPerParse: Number((total(profile.head as never) / allocRounds / 1024).toFixed(1)),
  };
}

export async function run(options: { write?: boolean; log?: (line: string) => void } = {}): Promise<{ cases: Case[]; nproc: number }> {
  const log = options.log ?? ((l: string) => console.log(l));
  const session = new Session();
  session.connect();
  const inputs = [
    { name: 'scale bundle (4 objects)', text: toYaml(bundleObjects(7)), rounds: 20_000 },
    { name: 'argocd-operator ApplicationSet CRD', text: await readFile(path.join(repoRoot, LARGE), 'utf8'), rounds: 200 },
  ];
  const cases: Case[] = [];
  for (const { name, text, rounds } of inputs) {
    const hoist = await measure(session, rounds, () => parseManifestStream(text, 'bench.yaml'));
    const jsYaml = await measure(session, rounds, () => loadAll(text));
    const c: Case = {
      name,
      chars: text.length,
      hoist,
      jsYaml,
      ratio: Number((hoist.cpuMicrosPerParse / jsYaml.cpuMicrosPerParse).toFixed(2)),
      allocRatio: Number((hoist.kibPerParse / jsYaml.kibPerParse).toFixed(2)),
    };
    log(
      `${name} (${text.length} chars): hoist ${hoist.cpuMicrosPerParse} µs, ${hoist.kibPerParse} KiB; js-yaml loadAll ${jsYaml.cpuMicrosPerParse} µs, ${jsYaml.kibPerParse} KiB; ratio ${c.ratio} (allocation ${c.allocRatio})`,
    );
    cases.push(c);
  }
  session.disconnect();
  const result = { benchmark: 'yaml-parse', date: new Date().toISOString(), nproc: availableParallelism(), node: process.version, cases };
  if (options.write ?? true) await writeResult(path.join(repoRoot, 'bench/results/yaml-parse.json'), result, log);
  return result;
}

runWhenMain(import.meta.url, run);
