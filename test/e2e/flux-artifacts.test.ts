/**
 * Flux OCI artifacts and layer selection through a real registry (issue 28): an artifact in the
 * format `flux push artifact` writes (OCI manifest, config application/vnd.cncf.flux.config.v1+json,
 * one application/vnd.cncf.flux.content.v1.tar+gzip layer, its annotations), built by the test,
 * installs unchanged; `image.layerSelector` picks one layer of a two-layer artifact (extracted),
 * or copies a file layer under its title; the same digest with two selections gives two trees;
 * without a selector the unknown layer types are refused, naming layerSelector.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { RegistryClient } from '../../src/sources/image/client.ts';
import { MEDIA_TYPES } from '../../src/sources/image/manifest.ts';
import { fileLayer, pushImage, writeLayer } from '../../src/sources/image/push.ts';
import { parseReference } from '../../src/sources/image/reference.ts';
import { cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { startRegistry, type TestRegistry } from '../support/registry.ts';

const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const cm = (name: string, value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

let t: TestController;
let reg: TestRegistry;
let client: RegistryClient;
let work: string;
let seq = 0;

/** a gzip tar layer of these files, with the given media type */
async function tarLayer(files: Record<string, string>, mediaType: string): Promise<Awaited<ReturnType<typeof fileLayer>>> {
  const built = await writeLayer(
    Object.entries(files).map(([name, data]) => ({ name, data })),
    join(work, `layer-${seq++}.tgz`),
  );
  return { ...(await fileLayer(built.path, mediaType)) };
}

async function push(
  repo: string,
  tag: string,
  layers: Array<Awaited<ReturnType<typeof fileLayer>>>,
  configMediaType: string,
  config: Buffer,
  annotations?: Record<string, string>,
): Promise<string> {
  return (
    await pushImage(
      client,
      parseReference(`${reg.host}/${repo}:${tag}`),
      layers,
      { stage: 'fetch' },
      { configMediaType, config, ...(annotations ? { annotations } : {}) },
    )
  ).digest;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-flux-'));
  reg = await startRegistry();
  client = new RegistryClient({ insecureHosts: [reg.host] });
  t = await startTestController({ sources: { image: { insecureHosts: [reg.host], retry: { attempts: 2, baseDelayMs: 5 } } } });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await client?.close();
  await reg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const image = (ref: string, layerSelector?: NonNullable<SourceSpec['image']>['layerSelector']): SourceSpec => ({
  kind: 'image',
  image: { ref, ...(layerSelector ? { layerSelector } : {}) },
});

async function configMapsIn(ns: string): Promise<Record<string, string>> {
  const list = await t.client.list(CM, { namespace: ns });
  return Object.fromEntries(
    list.items
      .filter((c) => c.metadata.name !== 'kube-root-ca.crt')
      .map((c) => [c.metadata.name, (c as KubeObject & { data?: { value?: string } }).data?.value ?? '']),
  );
}

describe('Flux OCI artifacts', () => {
  it('an artifact as flux push artifact writes it installs unchanged', async () => {
    // what flux push artifact writes: the content tarball as its one layer, go-containerregistry's
    // empty image config under Flux's config media type, the source and revision as annotations
    const content = await tarLayer({ 'app/app.yaml': cm('flux-app', 'one'), 'app/extra/more.yaml': cm('flux-more', 'two') }, MEDIA_TYPES.fluxContent);
    const config = Buffer.from(
      JSON.stringify({ architecture: '', created: '0001-01-01T00:00:00Z', os: '', rootfs: { type: 'layers', diff_ids: [content.digest] }, config: {} }),
    );
    const digest = await push('flux/app', 'v1', [content], MEDIA_TYPES.fluxConfig, config, {
      'org.opencontainers.image.created': '2026-11-27T00:00:00Z',
      'org.opencontainers.image.source': 'https://git.example.com/app.git',
      'org.opencontainers.image.revision': 'main@sha1:0123456789abcdef0123456789abcdef01234567',
    });
    const name = `flux-${t.runId}`;
    await t.create(name, { installNamespace: name, format: 'plain', sources: [image(`${reg.host}/flux/app:v1`)] });
    const done = await t.waitFor(name, isDone, 'installed', 60_000);
    expect(done.status?.resolvedSources?.[0]).toMatchObject({ kind: 'image', digest });
    expect(await configMapsIn(name)).toEqual({ 'flux-app': 'one', 'flux-more': 'two' });
  }, 120_000);

  it('layerSelector picks one layer of a two-layer artifact; the same digest with two selections gives two trees', async () => {
    const a = await tarLayer({ 'a.yaml': cm('from-a', 'a') }, 'application/vnd.acme.manifests.v1.tar+gzip');
    const b = await tarLayer({ 'b.yaml': cm('from-b', 'b') }, 'application/vnd.acme.extra.v1.tar+gzip');
    const raw = join(work, 'copied.yaml');
    await writeFile(raw, cm('copied', 'c'));
    const file = { ...(await fileLayer(raw, 'application/vnd.acme.manifest.v1+yaml')), annotations: { 'org.opencontainers.image.title': 'copied.yaml' } };
    const digest = await push('acme/bundle', 'v1', [a, b, file], MEDIA_TYPES.ociConfig, Buffer.from('{}'));
    const ref = `${reg.host}/acme/bundle@${digest}`;

    const onlyB = `sel-b-${t.runId}`;
    const onlyA = `sel-a-${t.runId}`;
    const copied = `sel-copy-${t.runId}`;
    await t.create(onlyB, { installNamespace: onlyB, format: 'plain', sources: [image(ref, { mediaType: 'application/vnd.acme.extra.v1.tar+gzip' })] });
    await t.create(onlyA, {
      installNamespace: onlyA,
      format: 'plain',
      sources: [image(ref, { mediaType: 'application/vnd.acme.manifests.v1.tar+gzip', operation: 'extract' })],
    });
    await t.create(copied, {
      installNamespace: copied,
      format: 'plain',
      sources: [image(ref, { mediaType: 'application/vnd.acme.manifest.v1+yaml', operation: 'copy' })],
    });
    for (const n of [onlyB, onlyA, copied]) await t.waitFor(n, isDone, `${n} installed`, 60_000);
    expect(await configMapsIn(onlyB)).toEqual({ 'from-b': 'b' });
    expect(await configMapsIn(onlyA)).toEqual({ 'from-a': 'a' });
    expect(await configMapsIn(copied)).toEqual({ copied: 'c' });

    // without a selector the artifact's custom layer types are refused, nothing installed
    const none = `sel-none-${t.runId}`;
    await t.create(none, { installNamespace: none, format: 'plain', sources: [image(ref)] });
    const failed = await t.waitFor(none, (bd) => cond(bd, 'Unpacked')?.status === 'False', 'refused', 60_000);
    expect(cond(failed, 'Unpacked')!.message, describeStatus(failed)).toContain('unsupported layer media type "application/vnd.acme.manifests.v1.tar+gzip"');
    expect(cond(failed, 'Unpacked')!.message).toContain('image.layerSelector picks one layer');

    // a selector naming a media type the artifact lacks: the ones it has are named
    const missing = `sel-missing-${t.runId}`;
    await t.create(missing, { installNamespace: missing, format: 'plain', sources: [image(ref, { mediaType: 'application/vnd.acme.absent' })] });
    const absent = await t.waitFor(missing, (bd) => cond(bd, 'Unpacked')?.status === 'False', 'refused', 60_000);
    expect(cond(absent, 'Unpacked')!.message).toContain(
      'no layer of media type "application/vnd.acme.absent" (layerSelector); the artifact has "application/vnd.acme.manifests.v1.tar+gzip"',
    );
  }, 180_000);
});
