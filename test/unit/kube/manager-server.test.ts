import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Controller } from '../../../src/kube/controller.ts';
import type { ElectorState } from '../../../src/kube/leader-election.ts';
import { startManagerServer } from '../../../src/kube/manager-server.ts';
import { handleShutdown } from '../../../src/kube/shutdown.ts';
import { waitUntil } from '../../support/wait.ts';

describe('manager server', () => {
  it('serves healthz, readiness from informers and leader election, and metrics', async () => {
    const registry = new Registry();
    const informer = {
      synced: false,
      hasSynced() {
        return this.synced;
      },
    };
    const elector = { state: 'candidate' as ElectorState };
    new Controller({ name: 'bd', registry, reconcile: async () => undefined });
    const srv = await startManagerServer({ port: 0, host: '127.0.0.1', registry, informers: () => [informer], elector });
    const get = async (p: string) => {
      const r = await fetch(`http://127.0.0.1:${srv.port}${p}`);
      return `${r.status} ${(await r.text()).trim()}`;
    };
    try {
      expect(await get('/healthz')).toBe('200 ok');
      expect(await get('/readyz')).toBe('503 1 informer(s) not synced');
      informer.synced = true;
      expect(await get('/readyz')).toBe('200 ok'); // standing by counts as ready
      elector.state = 'leading';
      expect(await get('/readyz')).toBe('200 ok');
      elector.state = 'stopped';
      expect(await get('/readyz')).toBe('503 leader election stopped');
      const metrics = await get('/metrics');
      expect(metrics).toContain('controller_runtime_reconcile_total{controller="bd",result="success"} 0');
      expect(metrics).toContain('workqueue_depth{name="bd"}');
      expect(await get('/nope')).toMatch(/^404/);
    } finally {
      await srv.close();
    }
  });

  it('shuts down on a signal: not ready, in-flight reconcile finishes, lease released, then done', async () => {
    const registry = new Registry();
    const order: string[] = [];
    // the reconcile runs until the test lets it end: in flight while the shutdown begins
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const c = new Controller({
      name: 'drain',
      registry,
      reconcile: async (key) => {
        order.push(`start ${key}`);
        started();
        await gate;
        order.push(`end ${key}`);
      },
    });
    c.start();
    c.enqueue('a');
    await running;
    const srv = await startManagerServer({ port: 0, host: '127.0.0.1', registry });
    const port = srv.port;
    const abort = new AbortController();
    const done = new Promise<void>((resolve) =>
      abort.signal.addEventListener('abort', () => {
        order.push('lease released');
        resolve();
      }),
    );
    let finished: boolean | undefined;
    const handle = handleShutdown({
      signals: ['SIGUSR2'],
      deadlineMs: 2000,
      server: {
        markShuttingDown: () => {
          order.push('not ready');
          srv.markShuttingDown();
        },
        close: () => srv.close(),
      },
      controllers: [c],
      leaderElection: { abort, done },
      informers: [{ stop: async () => void order.push('informers stopped') }],
      onDone: (clean) => (finished = clean),
      onForce: () => order.push('forced'),
    });
    try {
      process.emit('SIGUSR2', 'SIGUSR2');
      await waitUntil('the shutdown marked the server not ready', () => order.includes('not ready'), 60_000, 10);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
      expect(finished).toBeUndefined(); // the reconcile is still running: the shutdown waits for it
      release();
      await waitUntil('the shutdown finished', () => finished !== undefined, 60_000, 10);
      expect(finished).toBe(true);
      expect(order).toEqual(['start a', 'not ready', 'end a', 'lease released', 'informers stopped']);
    } finally {
      handle.dispose();
    }
  });
});
