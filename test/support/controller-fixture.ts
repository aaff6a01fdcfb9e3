/**
 * The setup most end-to-end files share: a test controller (./controller.ts) and a file server
 * for its bundles (./http-files.ts), started before the file's tests and stopped after them, with
 * every request of the controller's client recorded. Called once at the top of a test file:
 *
 *     const { t, files, sent, cleanup } = controllerWithFiles();
 *
 * `t` and `files` stand for the controller and server the file's beforeAll starts: usable from
 * any test, hook or helper, not while the module loads. `cleanup` registers what to undo after
 * the tests: it runs, newest first, once the controller has stopped (so nothing reacts to it)
 * and while the test's own client is still open.
 */
import { afterAll, beforeAll } from 'vitest';
import type { RequestEvent } from '../../src/kube/request-counter.ts';
import { startTestController, type TestController } from './controller.ts';
import { startFileServer, type FileServer } from './http-files.ts';

type StartOptions = NonNullable<Parameters<typeof startTestController>[0]>;

export interface ControllerWithFiles {
  readonly t: TestController;
  readonly files: FileServer;
  /** every request the controller's client sent since it started, in order */
  readonly sent: RequestEvent[];
  cleanup(fn: () => Promise<unknown>): void;
  /** `t` stands for `next` from now on (a restart); the previous one is stopped (again) and closed */
  replace(next: TestController): Promise<void>;
}

/** `opts` may be a function, for options known only once earlier beforeAll hooks have run */
export function controllerWithFiles(opts: StartOptions | (() => StartOptions) = {}): ControllerWithFiles {
  let controller: TestController | undefined;
  let server: FileServer | undefined;
  const sent: RequestEvent[] = [];
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    controller = await startTestController(typeof opts === 'function' ? opts() : opts);
    controller.ctl.client.onRequest((e) => sent.push(e));
    server = await startFileServer();
  });
  afterAll(async () => {
    await controller?.ctl.stop();
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    await controller?.stop();
    await server?.close();
  });

  return {
    t: lateBound('the test controller', () => controller),
    files: lateBound('the file server', () => server),
    sent,
    cleanup: (fn) => void cleanups.push(fn),
    async replace(next) {
      const previous = controller;
      controller = next;
      next.ctl.client.onRequest((e) => sent.push(e));
      await previous?.stop();
    },
  };
}

/**
 * An object that forwards every use to what `get()` returns at that moment: lets a test file
 * name a fixture at module level that only its beforeAll creates.
 */
function lateBound<T extends object>(what: string, get: () => T | undefined): T {
  const target = (): T => {
    const v = get();
    if (!v) throw new Error(`${what} is used before the file's beforeAll started it`);
    return v;
  };
  return new Proxy({} as T, {
    get(_, prop) {
      const v = target();
      const value: unknown = Reflect.get(v, prop, v);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(v) : value;
    },
    set: (_, prop, value) => Reflect.set(target(), prop, value),
    has: (_, prop) => Reflect.has(target(), prop),
  });
}
