/**
 * Bounded storage (issue 23) through a real controller and API server: `--cache-max-size` counts
 * what is written towards the content store before it is an entry. A composition of sources that
 * would not fit beside the fetched sources is refused naming the budget (it used to be copied
 * into /tmp, outside every budget), and a download is refused while another one in flight holds
 * the room (downloads used to count only once they landed); the refused BundleDeployment retries
 * with backoff, the other installs, and no temp directory is left behind.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cond, isDone, startTestController, type TestController } from '../support/controller.ts';
import { CM, deleteBundleDeployment } from '../support/e2e-bundles.ts';
import { waitUntil } from '../support/wait.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../support/http-files.ts';

/** small, so a few hundred KiB of content fill it */
const BUDGET = 1024 * 1024;

let t: TestController;
let files: FileServer;

// each test has a controller (and a content store) of its own: entries fetched by one test stay
// in use for ten minutes and would take the other's room
beforeEach(async () => {
  t = await startTestController({ cacheMaxBytes: BUDGET });
});
afterEach(async () => {
  await t?.stop();
});
beforeAll(async () => {
  files = await startFileServer();
});
afterAll(async () => {
  await files?.close();
});

/** a plain bundle: one ConfigMap and `padding` bytes of random data beside it (not a manifest) */
async function bundle(name: string, padding: number): Promise<Buffer> {
  return tarGz({
    'app.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  a: b\n`,
    'padding.bin': randomBytes(padding),
  });
}

/** what is in the store's temp area (downloads in flight, compositions) */
const tmpEntries = () => readdir(join(t.cacheDir, 'tmp')).catch((): string[] => []);

describe('--cache-max-size counts composed trees and downloads in flight', () => {
  it('a composition that does not fit beside its sources is refused naming the budget; nothing is left in the temp area', async () => {
    const bd = `compose-${t.runId}`;
    const a = await bundle('part-a', 400 * 1024);
    const b = await bundle('part-b', 400 * 1024);
    files.set('/compose-a.tgz', a);
    files.set('/compose-b.tgz', b);
    await t.create(bd, {
      installNamespace: bd,
      format: 'plain',
      sources: [
        { kind: 'http', http: { url: files.url('/compose-a.tgz'), sha256: sha256(a) }, destination: 'a' },
        { kind: 'http', http: { url: files.url('/compose-b.tgz'), sha256: sha256(b) }, destination: 'b' },
      ],
    });
    // both sources are fetched (800 KiB, in use): copying them together needs 800 KiB more
    const refused = await t.waitFor(bd, (x) => cond(x, 'Unpacked')?.status === 'False', 'the composition refused');
    expect(cond(refused, 'Unpacked')).toMatchObject({ reason: 'FetchFailed' });
    expect(cond(refused, 'Unpacked')!.message).toMatch(
      /^fetch composed sources: content store is full: \d+ bytes of entries in use and 0 bytes of downloads and composed sources in flight leave no room for \d+ bytes more within its budget of 1 MiB \(hoist run --cache-max-size\)$/,
    );
    expect(cond(refused, 'Progressing')).toMatchObject({ status: 'True', reason: 'Retrying' });
    expect(cond(refused, 'Installed')?.status).toBe('False');
    expect(await t.client.get(CM, 'part-a', bd)).toBeUndefined();
    // the store holds the two sources, within the budget; the refused composition left nothing
    await waitUntil('the temp area is empty', async () => (await tmpEntries()).length === 0);
    await deleteBundleDeployment(t.client, bd);
  }, 120_000);

  it('a download is refused while another one in flight holds the room; the one in flight installs', async () => {
    const big = await bundle('big', 600 * 1024);
    const other = await bundle('other', 600 * 1024);
    // a server that sends the start of `big` (the archive's first entries) and holds the rest
    const held: ServerResponse[] = [];
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': big.length });
      res.write(big.subarray(0, 64 * 1024));
      held.push(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const first = `inflight-a-${t.runId}`;
      await t.create(first, {
        installNamespace: first,
        format: 'plain',
        sources: [{ kind: 'http', http: { url: `http://127.0.0.1:${port}/big.tgz`, sha256: sha256(big) } }],
      });
      // the unpacker has charged padding.bin (600 KiB) and started writing it
      await waitUntil('the first download is in flight', async () => {
        for (const dir of await tmpEntries()) {
          const content = await readdir(join(t.cacheDir, 'tmp', dir, 'content')).catch((): string[] => []);
          if (content.includes('padding.bin')) return true;
        }
        return false;
      });

      const second = `inflight-b-${t.runId}`;
      files.set('/other.tgz', other);
      await t.create(second, {
        installNamespace: second,
        format: 'plain',
        sources: [{ kind: 'http', http: { url: files.url('/other.tgz'), sha256: sha256(other) } }],
      });
      const refused = await t.waitFor(second, (x) => cond(x, 'Unpacked')?.status === 'False', 'the second download refused');
      expect(cond(refused, 'Unpacked')!.message).toMatch(
        /^fetch sha256:[0-9a-f]{64}: content store is full: 0 bytes of entries in use and \d+ bytes of downloads and composed sources in flight leave no room for 600 KiB more within its budget of 1 MiB \(hoist run --cache-max-size\)$/,
      );
      expect(cond(refused, 'Progressing')).toMatchObject({ status: 'True', reason: 'Retrying' });

      // the rest of the first download arrives: it lands and installs
      for (const res of held.splice(0)) res.end(big.subarray(64 * 1024));
      const installed = await t.waitFor(first, isDone, 'the first one installed');
      expect(cond(installed, 'Installed')?.status).toBe('True');
      expect(await t.client.get(CM, 'big', first)).toBeDefined();
      await deleteBundleDeployment(t.client, second);
      await deleteBundleDeployment(t.client, first);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  }, 120_000);
});
