/**
 * `npm run bench`: every benchmark in bench/ (apply, render, yaml-parse, image-pull, git-fetch, helm-index, scale, isolation, remote, peers), one after the
 * other so they don't compete for the machine, then a summary. Each module exports `run()` and
 * writes its own bench/results/<name>.json; a failing benchmark is reported and the rest still run.
 */
import { availableParallelism } from 'node:os';

const MODULES = ['apply', 'render', 'yaml-parse', 'image-pull', 'git-fetch', 'helm-index', 'scale', 'isolation', 'remote', 'peers'] as const;

interface Outcome {
  name: string;
  ok: boolean;
  seconds: number;
  result?: unknown;
  error?: string;
}

/** the headline numbers of a result: its cases' name and ratio when it has them */
function headline(result: unknown): string {
  if (Array.isArray(result)) return result.map(headline).filter(Boolean).join('\n    ');
  const r = result as
    { cases?: Array<{ name?: string; ratio?: number }>; noChangeReconcile?: { medianMs?: number }; n?: number; source?: string; ratio?: number } | undefined;
  const parts = (r?.cases ?? []).filter((c) => c.ratio !== undefined).map((c) => `${c.name}: ratio ${c.ratio}`);
  if (r?.n !== undefined && r.ratio !== undefined) parts.push(`${r.n} BundleDeployments${r.source ? ` (${r.source})` : ''}: ratio ${r.ratio}`);
  if (r?.noChangeReconcile?.medianMs !== undefined) parts.push(`no-change reconcile ${r.noChangeReconcile.medianMs} ms`);
  return parts.join('\n    ');
}

async function main(): Promise<number> {
  const only = process.argv.slice(2);
  const outcomes: Outcome[] = [];
  for (const name of MODULES) {
    if (only.length && !only.includes(name)) continue;
    console.log(`\n=== bench/${name}.ts ===`);
    const started = performance.now();
    try {
      const mod = (await import(`./${name}.ts`)) as { run(): Promise<unknown> };
      const result = await mod.run();
      outcomes.push({ name, ok: true, seconds: (performance.now() - started) / 1000, result });
    } catch (e) {
      console.error(e);
      outcomes.push({ name, ok: false, seconds: (performance.now() - started) / 1000, error: e instanceof Error ? e.message : String(e) });
    }
  }
  console.log(`\n=== summary (nproc ${availableParallelism()}, ${new Date().toISOString()}; ratio = hoist / reference, below 1 is faster) ===`);
  for (const o of outcomes) {
    console.log(`${o.ok ? 'ok  ' : 'FAIL'} ${o.name} (${o.seconds.toFixed(0)} s)${o.ok ? '' : `: ${o.error}`}`);
    if (o.ok) {
      const h = headline(o.result);
      if (h) console.log(`    ${h}`);
    }
  }
  return outcomes.every((o) => o.ok) ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  },
);
