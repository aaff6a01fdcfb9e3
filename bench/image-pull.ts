/**
 * Image pull throughput, against references measured in the same run on the same blob:
 *   (a) Hoist: the image source's fetch of a ~200 MB gzip layer from a local docker-registry —
 *       download, digest verification, gunzip, safe unpack, atomic store commit — run in a child
 *       process so its peak RSS is its own;
 *   (b) the machine's limit: streaming gunzip + sha256 of the same blob from a local file,
 *       in-process, nothing written;
 *   (c) skopeo: `skopeo copy docker://… oci:<dir>` followed by `tar xzf` of the layer.
 * Rounds alternate the three so noise hits all alike; medians are reported. The layer (random-ish,
 * compressible text) is generated once and cached under $HOIST_CACHE/bench/image-pull.
 * Results go to bench/results/image-pull.json.
 *
 * Runnable alone: `npm exec -- tsx bench/image-pull.ts`; `run()` is used by the bench runner.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { createGunzip } from 'node:zlib';
import { FsContentStore } from '../src/cache/fs-content-store.ts';
import { RegistryClient } from '../src/sources/image/client.ts';
import { ImageSource } from '../src/sources/image/image-source.ts';
import { pushImage, writeLayer, type BuiltLayer, type LayerEntry } from '../src/sources/image/push.ts';
import { parseReference } from '../src/sources/image/reference.ts';
import { startRegistry } from '../test/support/registry.ts';
import { median } from './common.ts';

const run$ = promisify(execFile);
const repo = fileURLToPath(new URL('../', import.meta.url));
const resultsFile = path.join(repo, 'bench', 'results', 'image-pull.json');
const MB = 1024 * 1024;

export interface ImagePullBenchOptions {
  /** rounds per measurement (default 3) */
  rounds?: number;
  /** uncompressed size of the generated layer in MiB (default 400, about 200 MiB gzipped) */
  uncompressedMiB?: number;
  log?: (line: string) => void;
}

export interface Measurement {
  /** median wall time */
  ms: number;
  /** compressed blob MiB per second */
  mibPerSec: number;
  allMs: number[];
}

export interface ImagePullBenchResult {
  date: string;
  nproc: number;
  node: string;
  layer: { compressedBytes: number; uncompressedBytes: number; files: number; digest: string };
  hoist: Measurement & { peakRssMiB: number };
  limit: Measurement;
  skopeoTar: Measurement;
  ratios: {
    /** hoist throughput / limit throughput (target ≥ 0.7) */
    hoistOfLimit: number;
    /** skopeo+tar time / hoist time (> 1: Hoist is faster) */
    skopeoOverHoist: number;
  };
  targets: { atLeast70PercentOfLimit: boolean; fasterThanSkopeoTar: boolean; peakRssUnder200MiB: boolean };
}

function cacheDir(): string {
  const base = process.env.HOIST_CACHE && process.env.HOIST_CACHE.length > 0 ? process.env.HOIST_CACHE : path.join(homedir(), '.cache', 'hoist');
  return path.join(base, 'bench', 'image-pull');
}

/** Pseudo-log text: random hex ids among repeated words, so gzip gets roughly 2:1. */
function* generatedEntries(totalMiB: number): Generator<LayerEntry> {
  const fileMiB = 8;
  const words = ['level=info', 'msg="reconciled"', 'controller=bundledeployment', 'revision=', 'digest=sha256:', 'objects=42', 'duration=12ms'];
  yield { name: 'data/', type: 'directory' };
  for (let f = 0; f * fileMiB < totalMiB; f++) {
    const parts: string[] = [];
    let size = 0;
    while (size < fileMiB * MB) {
      const line = `${words[size % words.length]} ${randomBytes(24).toString('hex')} ${words[(size >> 3) % words.length]} ${randomBytes(8).toString('base64')}\n`;
      parts.push(line);
      size += line.length;
    }
    yield { name: `data/part-${String(f).padStart(4, '0')}.log`, data: Buffer.from(parts.join('')) };
  }
}

async function ensureLayer(totalMiB: number, log: (l: string) => void): Promise<BuiltLayer & { uncompressedBytes: number; files: number }> {
  const dir = cacheDir();
  const meta = path.join(dir, `layer-${totalMiB}.json`);
  if (existsSync(meta)) {
    const m = JSON.parse(await readFile(meta, 'utf8')) as BuiltLayer & { uncompressedBytes: number; files: number };
    if (existsSync(m.path)) return m;
  }
  await mkdir(dir, { recursive: true });
  log(`image-pull: generating a ${totalMiB} MiB layer once (cached in ${dir}) …`);
  const t0 = performance.now();
  const tmp = path.join(dir, `layer-${totalMiB}.tgz.tmp`);
  const built = await writeLayer(generatedEntries(totalMiB), tmp, 'gzip');
  const final = path.join(dir, `layer-${totalMiB}.tgz`);
  await rename(tmp, final);
  const files = Math.ceil(totalMiB / 8);
  // uncompressed bytes of file content (what lands on disk)
  let uncompressedBytes = 0;
  await pipeline(
    createReadStream(final),
    createGunzip(),
    new Writable({
      write(chunk: Buffer, _e, cb) {
        uncompressedBytes += chunk.length;
        cb();
      },
    }),
  );
  const m = { ...built, path: final, uncompressedBytes, files };
  await writeFile(meta, JSON.stringify(m));
  log(`image-pull: layer ready, ${(built.size / MB).toFixed(0)} MiB gzip in ${((performance.now() - t0) / 1000).toFixed(1)}s`);
  return m;
}

/** (b) streaming gunzip + sha256 of the blob, nothing written. */
async function measureLimit(file: string, digest: string): Promise<number> {
  const t0 = performance.now();
  const h = createHash('sha256');
  // the same output chunk size Hoist uses: the reference should be the best this machine does
  const gunzip = createGunzip({ chunkSize: 512 * 1024 });
  const sink = new Writable({
    write(_c: Buffer, _e, cb) {
      cb();
    },
  });
  const done = pipeline(gunzip, sink);
  for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>) {
    h.update(chunk);
    if (!gunzip.write(chunk)) await new Promise((r) => gunzip.once('drain', r));
  }
  gunzip.end();
  await done;
  if (`sha256:${h.digest('hex')}` !== digest) throw new Error('limit measurement: digest mismatch');
  return performance.now() - t0;
}

/** (a) one Hoist fetch in a child process; returns its wall time and peak RSS. */
async function measureHoist(ref: string, insecureHost: string, work: string): Promise<{ ms: number; maxRssKiB: number }> {
  const root = await mkdtemp(path.join(work, 'store-'));
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child-pull', ref, insecureHost, root], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: repo,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  await rm(root, { recursive: true, force: true });
  if (code !== 0) throw new Error(`hoist pull child exited with ${code}`);
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as { ms: number; maxRssKiB: number };
}

/** The child: one fetch into a fresh store, timed from inside (no tsx start-up in the number). */
async function childPull(ref: string, insecureHost: string, root: string): Promise<void> {
  const source = new ImageSource({ insecureHosts: [insecureHost] });
  const store = new FsContentStore({ root });
  const spec = { kind: 'image' as const, image: { ref } };
  const t0 = performance.now();
  const resolved = await source.resolve(spec, {});
  await source.fetch(spec, resolved, store, {});
  const ms = performance.now() - t0;
  await source.close();
  process.stdout.write(`${JSON.stringify({ ms, maxRssKiB: process.resourceUsage().maxRSS })}\n`);
}

/** (c) skopeo copy to an OCI layout, then tar xzf of the layer blob. */
async function measureSkopeoTar(registryHost: string, name: string, digest: string, work: string): Promise<number> {
  const dir = await mkdtemp(path.join(work, 'skopeo-'));
  const t0 = performance.now();
  await run$('skopeo', ['copy', '--src-tls-verify=false', `docker://${registryHost}/${name}`, `oci:${path.join(dir, 'layout')}:bench`], { maxBuffer: 16 * MB });
  const out = path.join(dir, 'rootfs');
  await mkdir(out);
  await run$('tar', ['xzf', path.join(dir, 'layout', 'blobs', 'sha256', digest.slice('sha256:'.length)), '-C', out]);
  const ms = performance.now() - t0;
  await rm(dir, { recursive: true, force: true });
  return ms;
}

function measurement(allMs: number[], bytes: number): Measurement {
  const ms = median(allMs);
  return { ms: Math.round(ms), mibPerSec: Math.round((bytes / MB / (ms / 1000)) * 10) / 10, allMs: allMs.map(Math.round) };
}

export async function run(options: ImagePullBenchOptions = {}): Promise<ImagePullBenchResult> {
  const log = options.log ?? ((l: string) => console.error(l));
  const rounds = options.rounds ?? 3;
  const layer = await ensureLayer(options.uncompressedMiB ?? 400, log);
  const work = await mkdtemp(path.join(tmpdir(), 'hoist-bench-image-'));
  const registry = await startRegistry({ auth: 'none', dir: path.join(work, 'registry') });
  const client = new RegistryClient({ insecureHosts: [registry.host] });
  try {
    const name = 'bench/layer:v1';
    const pushed = await pushImage(client, parseReference(`${registry.host}/${name}`), [layer], { stage: 'fetch' });
    const ref = `${registry.host}/bench/layer@${pushed.digest}`;
    log(`image-pull: pushed ${(layer.size / MB).toFixed(0)} MiB layer to ${registry.host}; ${rounds} rounds`);
    const hoistMs: number[] = [];
    const limitMs: number[] = [];
    const skopeoMs: number[] = [];
    let peakRssKiB = 0;
    for (let i = 0; i < rounds; i++) {
      const h = await measureHoist(ref, registry.host, work);
      hoistMs.push(h.ms);
      peakRssKiB = Math.max(peakRssKiB, h.maxRssKiB);
      limitMs.push(await measureLimit(layer.path, layer.digest));
      skopeoMs.push(await measureSkopeoTar(registry.host, name, layer.digest, work));
      log(`image-pull: round ${i + 1}: hoist ${hoistMs[i]!.toFixed(0)} ms, limit ${limitMs[i]!.toFixed(0)} ms, skopeo+tar ${skopeoMs[i]!.toFixed(0)} ms`);
    }
    const hoist = { ...measurement(hoistMs, layer.size), peakRssMiB: Math.round(peakRssKiB / 1024) };
    const limit = measurement(limitMs, layer.size);
    const skopeoTar = measurement(skopeoMs, layer.size);
    const result: ImagePullBenchResult = {
      date: new Date().toISOString(),
      nproc: availableParallelism(),
      node: process.version,
      layer: { compressedBytes: layer.size, uncompressedBytes: layer.uncompressedBytes, files: layer.files, digest: layer.digest },
      hoist,
      limit,
      skopeoTar,
      ratios: {
        hoistOfLimit: Math.round((limit.ms / hoist.ms) * 100) / 100,
        skopeoOverHoist: Math.round((skopeoTar.ms / hoist.ms) * 100) / 100,
      },
      targets: {
        atLeast70PercentOfLimit: limit.ms / hoist.ms >= 0.7,
        fasterThanSkopeoTar: hoist.ms < skopeoTar.ms,
        peakRssUnder200MiB: hoist.peakRssMiB < 200,
      },
    };
    await mkdir(path.dirname(resultsFile), { recursive: true });
    await writeFile(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
    return result;
  } finally {
    await client.close();
    await registry.stop();
    await rm(work, { recursive: true, force: true });
  }
}

function print(r: ImagePullBenchResult): void {
  const l = (s: string): void => console.log(s);
  l(
    `image pull, ${(r.layer.compressedBytes / MB).toFixed(0)} MiB gzip layer (${(r.layer.uncompressedBytes / MB).toFixed(0)} MiB unpacked, ${r.layer.files} files), nproc ${r.nproc}, ${r.node}`,
  );
  l(`  hoist pull+verify+unpack  ${String(r.hoist.ms).padStart(6)} ms  ${String(r.hoist.mibPerSec).padStart(6)} MiB/s  peak RSS ${r.hoist.peakRssMiB} MiB`);
  l(`  limit gunzip+sha256       ${String(r.limit.ms).padStart(6)} ms  ${String(r.limit.mibPerSec).padStart(6)} MiB/s`);
  l(`  skopeo copy + tar xzf     ${String(r.skopeoTar.ms).padStart(6)} ms  ${String(r.skopeoTar.mibPerSec).padStart(6)} MiB/s`);
  l(
    `  hoist = ${(r.ratios.hoistOfLimit * 100).toFixed(0)}% of the limit (target ≥ 70%: ${r.targets.atLeast70PercentOfLimit ? 'met' : 'MISSED'}); skopeo+tar takes ${r.ratios.skopeoOverHoist}× hoist's time (${r.targets.fasterThanSkopeoTar ? 'faster' : 'SLOWER'}); RSS < 200 MiB: ${r.targets.peakRssUnder200MiB ? 'met' : 'MISSED'}`,
  );
  l(`  written to ${path.relative(process.cwd(), resultsFile)}`);
}

if (process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  const i = process.argv.indexOf('--child-pull');
  if (i >= 0) {
    const [ref, host, root] = process.argv.slice(i + 1);
    await childPull(ref!, host!, root!);
  } else {
    print(await run());
  }
}
