/**
 * The time budget of one reconcile (issue 23, `hoist run --reconcile-timeout`) through a real
 * controller and API server: a BundleDeployment whose new source's server holds the download is
 * stopped when its budget runs out — the download's connection is closed, the BundleDeployment
 * says which budget stopped it, the installed revision stays as it was — and it is retried with
 * backoff, and installs once the server answers. The budget's timer runs on a fake clock the test
 * moves (the rest of the controller on the real one), so nothing here depends on how fast the
 * machine is.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cond, isDone, startTestController, type TestController } from '../support/controller.ts';
import { CM, configMap } from '../support/e2e-bundles.ts';
import { waitUntil } from '../support/wait.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../support/http-files.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { stringify } from 'yaml';

const budgetClock = new FakeClock();
let t: TestController;
let files: FileServer;

/** a server that holds every request until `release`, then answers each with `body` */
interface HoldingServer {
  url: string;
  /** requests received, and how many of them the client closed before an answer */
  received: number;
  closedEarly: number;
  release(body: Buffer): void;
  close(): Promise<void>;
}

async function holdingServer(): Promise<HoldingServer> {
  const held: ServerResponse[] = [];
  let body: Buffer | undefined;
  const state = { received: 0, closedEarly: 0 };
  const answer = (res: ServerResponse, b: Buffer) => res.writeHead(200, { 'content-length': b.length }).end(b);
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    state.received++;
    if (body) return answer(res, body);
    held.push(res);
    res.on('close', () => {
      if (!res.writableEnded) state.closedEarly++;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const a = server.address();
  const port = typeof a === 'object' && a ? a.port : 0;
  return {
    url: `http://127.0.0.1:${port}/held.tgz`,
    get received() {
      return state.received;
    },
    get closedEarly() {
      return state.closedEarly;
    },
    release(b) {
      body = b;
      for (const res of held.splice(0)) if (!res.destroyed) answer(res, b);
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

beforeAll(async () => {
  t = await startTestController({ reconcileTimeoutMs: 5 * 60_000, budgetClock });
  files = await startFileServer();
});
afterAll(async () => {
  await t?.stop();
  await files?.close();
});

const manifests = (color: string) => tarGz({ 'app.yaml': stringify(configMap('app-config', { color })) });

describe('a reconcile over its time budget', () => {
  it('is stopped (the download closed), says which budget stopped it, leaves the installed revision as it was, and is retried with backoff', async () => {
    const bd = `budget-${t.runId}`;
    const ns = `budget-${t.runId}`;
    const v1 = await manifests('blue');
    files.set('/budget-v1.tgz', v1);
    await t.create(bd, { installNamespace: ns, format: 'plain', sources: [{ kind: 'http', http: { url: files.url('/budget-v1.tgz'), sha256: sha256(v1) } }] });
    await t.waitFor(bd, isDone, 'revision 1 installed');

    // the next revision's server holds the download: without a budget, the worker would wait for
    // the fetch deadline (10 minutes)
    const held = await holdingServer();
    try {
      const v2 = await manifests('green');
      await t.patchSpec(bd, { sources: [{ kind: 'http', http: { url: held.url, sha256: sha256(v2) } }] });
      await waitUntil('the controller is downloading revision 2', async () => held.received === 1);
      expect(budgetClock.pending).toBe(1); // the budget of the reconcile under way, and only it

      await budgetClock.advance(5 * 60_000);
      const stopped = await t.waitFor(bd, (b) => cond(b, 'Progressing')?.reason === 'Retrying', 'stopped at the budget');
      const budget = 'reconcile stopped: it ran longer than its time budget of 5m (hoist run --reconcile-timeout)';
      expect(cond(stopped, 'Unpacked')).toMatchObject({ status: 'False', reason: 'FetchFailed' });
      expect(cond(stopped, 'Unpacked')!.message).toContain(budget);
      expect(cond(stopped, 'Progressing')!.message).toContain(`${budget}; retrying with backoff`);
      // what is installed is what was
      expect(cond(stopped, 'Installed')).toMatchObject({ status: 'True' });
      expect(cond(stopped, 'Installed')!.message).toMatch(/^revision 1: 1 objects/);
      expect(stopped.status?.activeRevision?.number).toBe(1);
      expect(((await t.client.get(CM, 'app-config', ns)) as unknown as { data: Record<string, string> }).data).toEqual({ color: 'blue' });
      // the download was aborted, not left running, and the controller came back for it
      await waitUntil('the held download was closed by the controller', async () => held.closedEarly >= 1);
      await waitUntil('the reconcile was retried', async () => held.received >= 2);

      // once the server answers, the retry installs revision 2
      held.release(v2);
      const done = await t.waitFor(bd, (b) => isDone(b) && b.status?.activeRevision?.number === 2, 'revision 2 installed after the retry');
      expect(cond(done, 'Progressing')?.reason).not.toBe('Retrying');
      expect(((await t.client.get(CM, 'app-config', ns)) as unknown as { data: Record<string, string> }).data).toEqual({ color: 'green' });
    } finally {
      await held.close();
    }
  }, 120_000);
});
