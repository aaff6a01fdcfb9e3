/**
 * First fetch + render of N distinct small pinned http tarballs (issue 10's scale workload: each
 * a tar.gz of one file holding 4 objects), through the controller's own path: HttpSource.fetch →
 * the content store (FsContentStore in a fresh directory) → composeTree → the plain processor
 * (renderBundle). 4 at a time, as the controller's 4 workers do. Reports the median and p90 of one
 * render and of its fetch stage, and the wall time of all N.
 *
 * `--busy` keeps the event loop about half busy with 2 ms synchronous slices, as a controller in
 * the middle of a wave is (watch events, JSON, other reconciles): every await that waits for the
 * libuv threadpool (each fs call) then waits behind them, which is what the scale benchmark sees.
 *
 * Reference in the same run: per tarball `curl -s URL | tee >(sha256sum) | tar -xz -C dir`-like
 * work, i.e. curl to a file, sha256sum it, tar -xzf it, 4 at a time.
 *
 * Also the process's CPU (all threads: the event loop, libuv's pool, V8's helpers, and the
 * in-process file server) per render over the N, and the fs calls of one first render; with
 * `--trace-fs`, the place in src/ of each of those calls.
 *
 * `npx tsx bench/first-fetch.ts [N] [--busy] [--trace-fs]` (default N 200). Prints only; writes no results file.
 */
import { createHook } from 'node:async_hooks';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { BundleDeploymentSpec } from '../api/v1alpha2/types.ts';
import { withDefaults } from '../api/v1alpha2/defaults.ts';
import { FsContentStore } from '../src/cache/fs-content-store.ts';
import { builtinScopes } from '../src/kube/builtin-scopes.ts';
import { plainProcessor } from '../src/processors/plain.ts';
import { renderBundle } from '../src/reconciler/render-bundle.ts';
import { HttpSource } from '../src/sources/http-source.ts';
import { sha256, startFileServer, tarGz } from '../test/support/http-files.ts';
import { exec, median, runWhenMain } from './common.ts';

function objects(i: number): string {
  const name = `app-${i}`;
  const labels = { app: name };
  const docs = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name },
      spec: { clusterIP: 'None', selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name },
      spec: {
        replicas: 0,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0.0' }] } },
      },
    },
    { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name }, spec: { rules: [{ host: `${name}.example.com` }] } },
  ];
  return docs.map((d) => `---\n${stringify(d)}`).join('');
}

async function pool<T>(items: readonly T[], limit: number, f: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await f(items[next++]!);
    }),
  );
}

const p90 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)] ?? 0;
const f1 = (x: number): string => x.toFixed(1);

/** a loop that keeps the event loop busy about half the time, in 2 ms slices */
function busyLoop(): () => void {
  let stop = false;
  const tick = (): void => {
    if (stop) return;
    const end = performance.now() + 2;
    while (performance.now() < end);
    setTimeout(tick, 2);
  };
  tick();
  return () => void (stop = true);
}

/** the first three frames in src/ of the current stack, for --trace-fs */
function srcPlace(): string {
  return (new Error().stack ?? '')
    .split('\n')
    .filter((l) => l.includes('/src/'))
    .slice(0, 3)
    .map((l) =>
      l
        .trim()
        .replace(/^.*\/src\//, '')
        .replace(/\)$/, ''),
    )
    .join(' <- ');
}

export async function run(n = 200, busy = false, traceFs = false): Promise<void> {
  const files = await startFileServer();
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-first-fetch-'));
  const id = Math.random().toString(36).slice(2, 6);
  const bundles: Array<{ url: string; digest: string }> = [];
  for (let i = 0; i < n; i++) {
    const tgz = await tarGz({ 'objects.yaml': objects(i) });
    files.set(`/${id}/app-${i}.tgz`, tgz);
    bundles.push({ url: files.url(`/${id}/app-${i}.tgz`), digest: sha256(tgz) });
  }
  const store = new FsContentStore({ root: path.join(work, 'cache') });
  const http = new HttpSource({});
  const renderOne = async (b: { url: string; digest: string }, into: FsContentStore, name: string): Promise<Record<string, number>> => {
    const spec = withDefaults({
      installNamespace: 'bench',
      format: 'plain',
      sources: [{ kind: 'http', http: { url: b.url, sha256: b.digest } }],
    } as BundleDeploymentSpec);
    const timings: Record<string, number> = {};
    const out = await renderBundle(
      { store: into, sourceFor: () => http, processorFor: () => plainProcessor, scopes: builtinScopes() },
      {
        name,
        spec,
        resolved: [{ status: { kind: 'http', sha256: b.digest }, key: `sha256:${b.digest}`, pinned: true }],
        credentials: async () => undefined,
        time: async (stage, p) => {
          const s = performance.now();
          try {
            return await p;
          } finally {
            timings[stage] = performance.now() - s;
          }
        },
      },
    );
    if (out.objects.length !== 4) throw new Error(`expected 4 objects, got ${out.objects.length}`);
    return timings;
  };
  const stopBusy = busy ? busyLoop() : () => {};
  // fs calls: each is a libuv threadpool round trip that waits for a thread and then for the event loop
  let hops = 0;
  const places: string[] = [];
  const hook = createHook({
    init(_id, type) {
      if (type !== 'FSREQPROMISE' && type !== 'FSREQCALLBACK') return;
      hops++;
      if (traceFs) places.push(srcPlace() || '(outside src/)');
    },
  });
  try {
    const total: number[] = [];
    const fetch: number[] = [];
    let t0 = performance.now();
    const cpu0 = process.cpuUsage();
    let i = 0;
    await pool(bundles, 4, async (b) => {
      const started = performance.now();
      const timings = await renderOne(b, store, `bd-${i++}`);
      total.push(performance.now() - started);
      fetch.push(timings.fetch ?? 0);
    });
    const hoistWall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    // round trips of one render, counted alone (nothing else running)
    hook.enable();
    await renderOne(bundles[0]!, new FsContentStore({ root: path.join(work, 'count') }), 'count');
    hook.disable();

    const ref: number[] = [];
    t0 = performance.now();
    // processes are costly on a shared machine: the reference runs over at most 50 tarballs
    const refBundles = bundles.slice(0, 50);
    await pool(refBundles, 4, async (b) => {
      const s = performance.now();
      const dir = await mkdtemp(path.join(work, 'ref-'));
      const script = `curl -sf -o "$1/a.tgz" "$2" && echo "$3  $1/a.tgz" | sha256sum -c --quiet - && tar -xzf "$1/a.tgz" -C "$1" && cat "$1/objects.yaml" >/dev/null`;
      await exec('sh', ['-c', script, 'sh', dir, b.url, b.digest], { PATH: process.env.PATH });
      ref.push(performance.now() - s);
    });
    const refWall = performance.now() - t0;
    console.log(`N=${n}${busy ? ' (event loop half busy)' : ''}, 4 at a time:`);
    console.log(
      `  hoist renderBundle: one render median ${f1(median(total))} ms (p90 ${f1(p90(total))}), fetch stage median ${f1(median(fetch))} ms (p90 ${f1(p90(fetch))}); all ${n} in ${f1(hoistWall)} ms`,
    );
    console.log(`  CPU per render (the whole process, all threads): ${((cpu.user + cpu.system) / 1000 / n).toFixed(2)} ms`);
    console.log(`  fs calls (threadpool round trips) of one first render, the store's first use included: ${hops}`);
    if (traceFs) for (const p of places) console.log(`    ${p}`);
    console.log(`  curl + sha256sum + tar -xzf: one median ${f1(median(ref))} ms (p90 ${f1(p90(ref))}); ${refBundles.length} in ${f1(refWall)} ms`);
  } finally {
    stopBusy();
    await http.close();
    await files.close();
    await rm(work, { recursive: true, force: true });
  }
}

runWhenMain(import.meta.url, () =>
  run(Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 200), process.argv.includes('--busy'), process.argv.includes('--trace-fs')),
);
