import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { contentDigest } from '../../../src/processors/content-digest.ts';
import { createProcessorRegistry } from '../../../src/processors/registry.ts';
import { RenderPool, threadedRegistry } from '../../../src/processors/threads/render-pool.ts';
import { fromWire, toWire } from '../../../src/processors/threads/wire.ts';
import { HoistError, isHoistError } from '../../../src/util/errors.ts';
import { createLogger } from '../../../src/util/log.ts';

const FIXTURES = join(import.meta.dirname, '../../../testdata/fixtures');
const ROLLOUTS = join(FIXTURES, 'plain/argo-rollouts-v1.9.1');
const ARGOCD = join(FIXTURES, 'registry-v1/argocd-operator.v0.6.0');
const local = createProcessorRegistry({ helmBinary: () => 'helm', kustomizeBinary: () => 'kustomize' });
const pools: RenderPool[] = [];
const dirs: string[] = [];

function pool(threads: number, maxOldGenerationSizeMb?: number, lines?: string[]): RenderPool {
  const log = lines
    ? createLogger({
        destination: new Writable({
          write(c: Buffer, _e, done) {
            lines.push(c.toString());
            done();
          },
        }),
      })
    : undefined;
  const p = new RenderPool({ threads, ...(maxOldGenerationSizeMb ? { maxOldGenerationSizeMb } : {}), ...(log ? { log } : {}) });
  pools.push(p);
  return p;
}
async function failure(p: Promise<unknown>): Promise<HoistError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!isHoistError(e)) throw new Error(`expected a HoistError, got ${String(e)}`);
  return e;
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('render threads (hoist run --render-threads)', () => {
  it('render plain and registry+v1 bundles to the same objects, warnings and digest as the controller thread', async () => {
    const threaded = threadedRegistry(local, pool(2));
    const cases = [
      { format: 'plain', tree: ROLLOUTS, config: undefined, ctx: { name: 'bd', installNamespace: 'ns' } },
      { format: 'registry-v1', tree: ARGOCD, config: { registryV1: { watchNamespace: 'team-b' } }, ctx: { name: 'bd', installNamespace: 'argocd' } },
    ] as const;
    for (const c of cases) {
      const want = await local.processorFor(c.format).render(c.tree, c.config, c.ctx);
      const got = await threaded.processorFor(c.format).render(c.tree, c.config, c.ctx);
      expect(got.objects.length, c.format).toBeGreaterThan(5);
      expect(got).toEqual(want);
      expect(contentDigest(got.objects)).toBe(contentDigest(want.objects));
    }
  });

  it('a bad bundle fails with the same HoistError (stage, code, subject, terminal, message) as on the controller thread', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hoist-render-pool-'));
    dirs.push(dir);
    await writeFile(join(dir, 'bad.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n');
    const threaded = threadedRegistry(local, pool(1));
    const want = await failure(local.processorFor('plain').render(dir, undefined, { name: 'bd' }));
    const got = await failure(threaded.processorFor('plain').render(dir, undefined, { name: 'bd' }));
    expect(got).toBeInstanceOf(HoistError);
    expect({ stage: got.stage, code: got.code, subject: got.subject, terminal: got.terminal, reason: got.reason, message: got.message }).toEqual({
      stage: want.stage,
      code: want.code,
      subject: want.subject,
      terminal: want.terminal,
      reason: want.reason,
      message: want.message,
    });
  });

  it('spreads concurrent renders over at most its threads', async () => {
    const p = pool(2);
    const threaded = threadedRegistry(local, p);
    const want = await local.processorFor('plain').render(ROLLOUTS, undefined, { name: 'bd' });
    const sizes: number[] = [];
    const all = Array.from({ length: 8 }, async () => {
      const r = await threaded.processorFor('plain').render(ROLLOUTS, undefined, { name: 'bd' });
      sizes.push(p.size);
      return r;
    });
    for (const r of await Promise.all(all)) expect(r).toEqual(want);
    expect(Math.max(...sizes)).toBe(2);
  });

  it('a thread that stops (here: out of its heap limit) fails only its renders, which then run on the controller thread; the next render starts a new one', async () => {
    const lines: string[] = [];
    // 3 ConfigMaps of 150,000 keys each (within the node budget): a parse far over a 16 MiB heap
    const dir = await mkdtemp(join(tmpdir(), 'hoist-render-pool-'));
    dirs.push(dir);
    for (let f = 0; f < 3; f++) {
      const keys = Array.from({ length: 150_000 }, (_, i) => `  k${i}: v${i}`).join('\n');
      await writeFile(join(dir, `cm-${f}.yaml`), `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${f}\ndata:\n${keys}\n`);
    }
    const p = pool(1, 16, lines);
    const threaded = threadedRegistry(local, p);
    const got = await threaded.processorFor('plain').render(dir, undefined, { name: 'bd' });
    expect(got.objects.map((o) => o.metadata.name)).toEqual(['cm-0', 'cm-1', 'cm-2']);
    expect(lines.some((l) => l.includes('render thread stopped'))).toBe(true);
    expect(p.size).toBe(0);
    // the failure is the pool's, transient: a caller without the fallback would retry
    const e = await failure(p.render({ format: 'plain', tree: dir, config: undefined, ctx: { name: 'bd' } }));
    expect({ code: e.code, terminal: e.terminal, stage: e.stage }).toEqual({ code: 'render-thread-failed', terminal: false, stage: 'process' });
  });

  it('formats rendered by processes of their own (helm, kustomize) stay on the controller thread', () => {
    const threaded = threadedRegistry(local, pool(1));
    expect(threaded.processorFor('helm')).toBe(local.processorFor('helm'));
    expect(threaded.processorFor('kustomize')).toBe(local.processorFor('kustomize'));
    expect(() => threaded.processorFor('nope')).toThrow(/unsupported format/);
  });
});

describe('wire', () => {
  it('carries a HoistError across as a HoistError and anything else as an Error with its message', () => {
    const h = new HoistError('bad', { stage: 'process', code: 'parse-error', subject: 'a.yaml:3', terminal: true });
    const back = fromWire(toWire(h));
    expect(back).toBeInstanceOf(HoistError);
    expect(back).toMatchObject({ message: 'bad', stage: 'process', code: 'parse-error', subject: 'a.yaml:3', terminal: true, reason: h.reason });
    const plain = fromWire(toWire(new TypeError('x')));
    expect(plain).not.toBeInstanceOf(HoistError);
    expect({ message: plain.message, name: plain.name }).toEqual({ message: 'x', name: 'TypeError' });
    expect(fromWire(toWire('text')).message).toBe('text');
  });
});
