/**
 * Render time of every fixture, each against a reference measured in the same run, so the
 * ratios mean something on any machine:
 *   - helm charts: Hoist's helm processor (chart location, dependency check, helm, parsing, hook
 *     rule) vs the `helm template` process alone with the same arguments;
 *   - plain manifests: the plain processor (kubectl-compatible YAML 1.1 reading, validation,
 *     duplicate check) vs reading the same files with the `yaml` package's parseAllDocuments;
 *   - registry-v1 bundles: the registry-v1 processor in AllNamespaces mode vs the same plain
 *     `yaml` read of the bundle's files.
 * Hoist and the reference alternate within each round so machine noise hits both alike; the
 * median of the rounds is reported. Results go to bench/results/render.json.
 *
 * Runnable alone: `npm exec -- tsx bench/render.ts`; `run()` is used by the bench runner.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { toolPath, toolVersions } from '../src/devcluster/tools.ts';
import { createHelmProcessor } from '../src/processors/helm/helm-processor.ts';
import { plainProcessor } from '../src/processors/plain.ts';
import { registryV1Processor } from '../src/processors/registry-v1/render.ts';
import { median, runWhenMain, writeResult } from './common.ts';

const repo = fileURLToPath(new URL('../', import.meta.url));
const fixtures = path.resolve(repo, 'testdata/fixtures');
const resultsFile = path.join(repo, 'bench', 'results', 'render.json');

export interface RenderBenchCase {
  name: string;
  format: 'plain' | 'helm' | 'registry-v1';
  objects: number;
  /** median wall time of one Hoist render */
  hoistMs: number;
  /** what Hoist is compared with */
  reference: string;
  referenceMs: number;
  /** hoistMs / referenceMs */
  ratio: number;
  rounds: number;
}

export interface RenderBenchResult {
  benchmark: 'render';
  date: string;
  nproc: number;
  node: string;
  helm: string;
  cases: RenderBenchCase[];
  /** cases that could not be measured, with why */
  skipped: string[];
}

export interface RenderBenchOptions {
  /** measured rounds per case after one warm-up; default 7 */
  rounds?: number;
  /** write bench/results/render.json; default true */
  write?: boolean;
  log?: (line: string) => void;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function measure(rounds: number, hoist: () => Promise<unknown>, reference: () => Promise<unknown>): Promise<{ hoistMs: number; referenceMs: number }> {
  await hoist();
  await reference();
  const h: number[] = [];
  const r: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // alternate which goes first so neither always runs on a warmer machine
    if (i % 2 === 0) {
      h.push(await timed(hoist));
      r.push(await timed(reference));
    } else {
      r.push(await timed(reference));
      h.push(await timed(hoist));
    }
  }
  return { hoistMs: median(h), referenceMs: median(r) };
}

/** The bare `helm template` process with Hoist's arguments, in a fresh helm home like Hoist's. */
async function helmTemplateAlone(helm: string, chartDir: string, valuesFile: string, home: string, kubeVersion: string): Promise<void> {
  const args = [
    'template',
    'bench',
    chartDir,
    '--namespace=bench',
    `--values=${valuesFile}`,
    '--include-crds',
    '--skip-tests',
    `--kube-version=${kubeVersion}`,
  ];
  await new Promise<void>((resolve, reject) => {
    const child = spawn(helm, args, {
      env: {
        HOME: home,
        HELM_CACHE_HOME: path.join(home, 'cache'),
        HELM_CONFIG_HOME: path.join(home, 'config'),
        HELM_DATA_HOME: path.join(home, 'data'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.resume();
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`helm template ${chartDir} failed: ${err}`))));
  });
}

async function yamlFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && /\.(ya?ml|json)$/i.test(e.name)) out.push(path.join(e.parentPath, e.name));
  }
  return out.sort();
}

/** Reading the same files with the `yaml` package and nothing else: the floor for any parser. */
async function plainYamlRead(files: string[]): Promise<void> {
  for (const f of files) {
    for (const doc of parseAllDocuments(await readFile(f, 'utf8'))) doc.toJS();
  }
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

export async function run(options: RenderBenchOptions = {}): Promise<RenderBenchResult> {
  const rounds = options.rounds ?? 7;
  const log = options.log ?? ((l: string) => console.log(l));
  const helm = toolPath('helm');
  const cases: RenderBenchCase[] = [];
  const skipped: string[] = [];
  const add = (c: Omit<RenderBenchCase, 'ratio' | 'rounds'>): void => {
    const full = { ...c, hoistMs: round1(c.hoistMs), referenceMs: round1(c.referenceMs), ratio: Math.round((c.hoistMs / c.referenceMs) * 100) / 100, rounds };
    cases.push(full);
    log(
      `${full.format.padEnd(11)} ${full.name.padEnd(34)} ${String(full.objects).padStart(4)} objects  hoist ${full.hoistMs.toFixed(1).padStart(7)} ms  ` +
        `${full.reference} ${full.referenceMs.toFixed(1).padStart(7)} ms  ratio ${full.ratio.toFixed(2)}`,
    );
  };

  // plain
  const plainDir = path.join(fixtures, 'plain');
  for (const name of (await readdir(plainDir)).sort()) {
    const tree = path.join(plainDir, name);
    const files = await yamlFiles(tree);
    const ctx = { name: 'bench', installNamespace: 'bench' };
    const { objects } = await plainProcessor.render(tree, undefined, ctx);
    const m = await measure(
      rounds,
      () => plainProcessor.render(tree, undefined, ctx),
      () => plainYamlRead(files),
    );
    add({ name, format: 'plain', objects: objects.length, ...m, reference: 'yaml parse' });
  }

  // helm
  const helmProcessor = createHelmProcessor({ helmBinary: helm });
  // the Kubernetes version the repository's control plane runs (scripts/tool-versions.env)
  const kubeVersion = toolVersions().K8S_VERSION!;
  const home = await mkdtemp(path.join(tmpdir(), 'hoist-bench-helm-'));
  try {
    for (const d of ['cache', 'config', 'data']) await mkdir(path.join(home, d));
    const valuesFile = path.join(home, 'values.json');
    await writeFile(valuesFile, '{}');
    const helmDir = path.join(fixtures, 'helm');
    for (const name of (await readdir(helmDir)).sort()) {
      const chartDir = path.join(helmDir, name);
      if (!existsSync(path.join(chartDir, 'Chart.yaml'))) continue;
      // .Capabilities.KubeVersion as Hoist's render has it in a cluster (the API server's version):
      // a helm built from its module defaults to v1.20.0, which charts requiring newer refuse
      const ctx = { name: 'bench', installNamespace: 'bench', kubeVersion };
      const { objects } = await helmProcessor.render(chartDir, undefined, ctx);
      const m = await measure(
        rounds,
        () => helmProcessor.render(chartDir, undefined, ctx),
        () => helmTemplateAlone(helm, chartDir, valuesFile, home, kubeVersion),
      );
      add({ name, format: 'helm', objects: objects.length, ...m, reference: 'helm template' });
    }
  } finally {
    await rm(home, { recursive: true, force: true });
  }

  // registry-v1, AllNamespaces install mode (every fixture bundle supports it)
  const bundlesDir = path.join(fixtures, 'registry-v1');
  for (const name of (await readdir(bundlesDir)).sort()) {
    const tree = path.join(bundlesDir, name);
    const files = await yamlFiles(tree);
    const ctx = { name: 'bench', installNamespace: 'bench' };
    const config = { registryV1: { watchNamespace: '' } };
    try {
      const { objects } = await registryV1Processor.render(tree, config, ctx);
      const m = await measure(
        rounds,
        () => registryV1Processor.render(tree, config, ctx),
        () => plainYamlRead(files),
      );
      add({ name, format: 'registry-v1', objects: objects.length, ...m, reference: 'yaml parse' });
    } catch (e) {
      // a bundle the processor refuses is reported, not allowed to hide the other numbers
      skipped.push(`registry-v1 ${name}: ${e instanceof Error ? e.message : String(e)}`);
      log(`registry-v1 ${name}: skipped (${e instanceof Error ? e.message : String(e)})`);
    }
  }

  const result: RenderBenchResult = {
    benchmark: 'render',
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    node: process.version,
    helm: toolVersions()['HELM_VERSION'] ?? 'unknown',
    cases,
    skipped,
  };
  if (options.write ?? true) await writeResult(resultsFile, result, log);
  return result;
}

runWhenMain(import.meta.url, run);
