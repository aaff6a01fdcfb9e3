/**
 * `hoist run --render-threads N`: the renders of the formats processed in JavaScript (plain,
 * registry+v1: reading the tree, parsing YAML, generating objects) on N worker threads, so a
 * wave of installs spreads its CPU over more than the controller's one JavaScript thread. The
 * processor is the same code; only the thread differs. Fetch, apply and status stay on the
 * controller's thread (they share its caches and connections); helm and kustomize already run
 * as processes of their own.
 *
 * A thread is started on first need, up to N, and a render goes to the thread with the fewest in
 * flight. A thread that stops (out of its heap limit, a crash) fails only its renders in flight,
 * which are then rendered on the controller's thread, as without threads; the next render starts
 * a new thread. Each thread's heap is capped (maxOldGenerationSizeMb) so a thread cannot take
 * the pod's memory limit by itself.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { isHoistError } from '../../util/errors.ts';
import { processError, ProcessCode } from '../errors.ts';
import type { Processor, ProcessResult } from '../processor.ts';
import type { ProcessorRegistry } from '../registry.ts';
import { fromWire, type RenderReply, type RenderRequest } from './wire.ts';

/** the formats render-worker.ts renders */
export const THREADED_FORMATS: ReadonlySet<string> = new Set(['plain', 'registry-v1']);

export interface RenderPoolOptions {
  threads: number;
  /** each thread's old-generation heap limit in MiB (default 256; at least MIN_THREAD_HEAP_MB) */
  maxOldGenerationSizeMb?: number;
  log?: Logger;
}

/**
 * below this V8 cannot start a thread's isolate at all, and that failure is fatal to the whole
 * process rather than to the thread (measured on Node 24: 8 MiB aborts, 16 MiB stops the thread)
 */
export const MIN_THREAD_HEAP_MB = 16;

interface Pending {
  resolve(r: ProcessResult): void;
  reject(e: unknown): void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/** the worker's file beside this one: .js when compiled, .ts (through tsx) when run from source */
function workerEntry(): { url: URL; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  return {
    url: new URL(fromSource ? './render-worker.ts' : './render-worker.js', import.meta.url),
    // not the process's own flags: a --cpu-prof or --import preload is the main thread's
    execArgv: fromSource ? ['--import', 'tsx'] : [],
  };
}

export class RenderPool {
  private readonly slots: Slot[] = [];
  private nextId = 0;
  private closed = false;

  constructor(private readonly opts: RenderPoolOptions) {
    if (!(opts.threads >= 1)) throw new Error('a render pool needs at least one thread');
  }

  /** threads running now */
  get size(): number {
    return this.slots.length;
  }

  render(req: Omit<RenderRequest, 'id'>): Promise<ProcessResult> {
    if (this.closed) return Promise.reject(threadFailed('the render threads are stopped'));
    const slot = this.pick();
    const id = this.nextId++;
    return new Promise<ProcessResult>((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ ...req, id } satisfies RenderRequest);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
  }

  /** the thread with the fewest renders in flight; a new one while one is busy and there is room */
  private pick(): Slot {
    let best: Slot | undefined;
    for (const s of this.slots) if (!best || s.pending.size < best.pending.size) best = s;
    if (best && (best.pending.size === 0 || this.slots.length >= this.opts.threads)) return best;
    return this.start();
  }

  private start(): Slot {
    const { url, execArgv } = workerEntry();
    const worker = new Worker(url, {
      execArgv,
      name: `hoist-render-${this.slots.length}`,
      resourceLimits: { maxOldGenerationSizeMb: Math.max(MIN_THREAD_HEAP_MB, this.opts.maxOldGenerationSizeMb ?? 256) },
    });
    // idle threads do not keep the process alive
    worker.unref();
    const slot: Slot = { worker, pending: new Map() };
    this.slots.push(slot);
    worker.on('message', (r: RenderReply) => {
      const p = slot.pending.get(r.id);
      if (!p) return;
      slot.pending.delete(r.id);
      if ('result' in r) p.resolve(r.result);
      else p.reject(fromWire(r.error));
    });
    let why = 'exited';
    worker.on('error', (e) => (why = e.message));
    worker.on('exit', (code) => {
      const at = this.slots.indexOf(slot);
      if (at >= 0) this.slots.splice(at, 1);
      if (slot.pending.size > 0) this.opts.log?.warn({ thread: worker.threadId, code, why, inFlight: slot.pending.size }, 'render thread stopped');
      for (const p of slot.pending.values()) p.reject(threadFailed(`the render thread stopped (${why})`));
      slot.pending.clear();
    });
    return slot;
  }
}

function threadFailed(message: string) {
  return processError(message, ProcessCode.RenderThreadFailed, 'render thread');
}

/**
 * The registry with its JavaScript-rendered formats sent to `pool`; a render whose thread stopped
 * runs again on this thread (its parse budgets bound it here as they always have).
 */
export function threadedRegistry(registry: ProcessorRegistry, pool: RenderPool): ProcessorRegistry {
  const wrapped = new Map<string, Processor>();
  return {
    supportedFormats: () => registry.supportedFormats(),
    processorFor(format) {
      const local = registry.processorFor(format);
      if (!THREADED_FORMATS.has(format)) return local;
      let p = wrapped.get(format);
      if (!p) {
        p = {
          format: local.format,
          render: (tree, config, ctx) =>
            pool.render({ format: local.format, tree, config, ctx }).catch((e: unknown) => {
              if (isHoistError(e) && e.is(ProcessCode.RenderThreadFailed)) return local.render(tree, config, ctx);
              throw e;
            }),
        };
        wrapped.set(format, p);
      }
      return p;
    },
  };
}
