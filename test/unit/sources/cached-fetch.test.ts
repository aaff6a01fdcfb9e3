import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FsContentStore } from '../../../src/cache/fs-content-store.ts';
import { fetchThroughStore } from '../../../src/sources/cached-fetch.ts';
import { HoistError } from '../../../src/util/errors.ts';
import { sleep } from '../../support/wait.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('fetchThroughStore with concurrent misses', () => {
  it("a caller that joined another origin's failed download makes its own", async () => {
    const root = await mkdtemp(join(tmpdir(), 'hoist-cached-fetch-'));
    dirs.push(root);
    const store = new FsContentStore({ root });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const downloads: string[] = [];
    const origin = { location: 'https://git.corp/a.git', credential: undefined, display: 'https://git.corp/a.git' };
    const fetchAs = (subject: string, download: (dir: string) => Promise<void>) =>
      fetchThroughStore({ store, key: 'git:abc:', origin, subject, prove: async () => undefined, download });
    // A (no CA) starts first and fails once B has joined its in-flight write
    const a = fetchAs('a', async () => {
      downloads.push('a');
      await gate;
      throw new HoistError('tls verification failed: certificate signed by unknown authority', {
        stage: 'fetch',
        reason: 'FetchFailed',
        code: 'tls-verify-failed',
        subject: 'a',
        terminal: true,
      });
    });
    // B starts only once A's download is under way (under load A could otherwise come second and join B's)
    while (!downloads.includes('a')) await sleep(5);
    const b = fetchAs('b', async (dir) => {
      downloads.push('b');
      await writeFile(join(dir, 'cm.yaml'), 'kind: ConfigMap\n');
    });
    // time for B to join A's in-flight write; should B come after A's failure instead, it downloads
    // on its own all the same, so the outcome below does not depend on this wait
    await sleep(50);
    release();
    await expect(a).rejects.toThrow('unknown authority');
    expect(await readFile(join(await b, 'cm.yaml'), 'utf8')).toBe('kind: ConfigMap\n');
    expect(downloads).toEqual(['a', 'b']);
  });
});
