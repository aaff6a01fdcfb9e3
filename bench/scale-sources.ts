/**
 * Where bench/scale.ts's bundles come from: each source publishes the same bundles (untimed,
 * before the wave), pinned, and counts the requests its server answered, so the steady state can
 * show that pinned content is not fetched again.
 *   - http: one tarball per bundle from a local file server, pinned by sha256;
 *   - image: one OCI image per bundle (one gzip layer holding the same file) pushed to a local
 *     docker-registry over plain http, pinned by manifest digest; the controller is told the
 *     registry is insecure through --registries-conf.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BundleDeploymentSpec } from '../api/v1alpha2/types.ts';
import { RegistryClient } from '../src/sources/image/client.ts';
import { pushImage, writeLayer } from '../src/sources/image/push.ts';
import { parseReference } from '../src/sources/image/reference.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../test/support/http-files.ts';
import { startRegistry, type TestRegistry } from '../test/support/registry.ts';

export type ScaleSourceKind = 'http' | 'image';
export type PinnedSource = BundleDeploymentSpec['sources'][number];

export interface ScaleSource {
  kind: ScaleSourceKind;
  /** extra `hoist run` arguments the controller needs to reach this source */
  hoistArgs: string[];
  /** publishes each bundle's files under `id` and returns its pinned source, in order */
  publish(id: string, bundles: ReadonlyArray<Record<string, string>>): Promise<PinnedSource[]>;
  /** requests the content server has answered so far */
  requests(): Promise<number>;
  close(): Promise<void>;
}

/** runs `f` over `items` with at most `limit` in flight */
export async function pool<T>(items: readonly T[], limit: number, f: (x: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await f(items[i]!, i);
      }
    }),
  );
}

export async function startHttpSource(): Promise<ScaleSource> {
  const files: FileServer = await startFileServer();
  return {
    kind: 'http',
    hoistArgs: [],
    async publish(id, bundles) {
      const out: PinnedSource[] = [];
      for (const [i, content] of bundles.entries()) {
        const tgz = await tarGz(content);
        files.set(`/${id}/app-${i}.tgz`, tgz);
        out.push({ kind: 'http', http: { url: files.url(`/${id}/app-${i}.tgz`), sha256: sha256(tgz) } });
      }
      return out;
    },
    requests: () => Promise.resolve(files.requests),
    close: () => files.close(),
  };
}

/** docker-registry logs one "response completed" line per request it answered */
export async function registryRequests(registry: TestRegistry): Promise<number> {
  const log = path.join(registry.dir, 'registry.log');
  if (!(await stat(log).catch(() => undefined))) return 0;
  return (await readFile(log, 'utf8')).split('\n').filter((l) => l.includes('response completed')).length;
}

export async function startImageSource(work: string): Promise<ScaleSource> {
  const registry = await startRegistry({ auth: 'none', dir: path.join(work, 'registry') });
  const client = new RegistryClient({ insecureHosts: [registry.host] });
  const conf = path.join(work, 'registries.conf');
  await writeFile(conf, `[[registry]]\nlocation = "${registry.host}"\ninsecure = true\n`);
  return {
    kind: 'image',
    hoistArgs: ['--registries-conf', conf],
    async publish(id, bundles) {
      const out: PinnedSource[] = new Array<PinnedSource>(bundles.length);
      // the registry is a separate process: a few pushes in flight keep it busy without flooding it
      await pool(bundles, 8, async (content, i) => {
        const layer = await writeLayer(
          Object.entries(content).map(([name, data]) => ({ name, data })),
          path.join(work, `layer-${id}-${i}.tgz`),
        );
        const repo = `${registry.host}/bench/${id}/app-${i}`;
        const pushed = await pushImage(client, parseReference(`${repo}:v1`), [layer], { stage: 'fetch' });
        out[i] = { kind: 'image', image: { ref: `${repo}@${pushed.digest}` } };
      });
      return out;
    },
    requests: () => registryRequests(registry),
    async close() {
      await client.close();
      await registry.stop();
    },
  };
}
