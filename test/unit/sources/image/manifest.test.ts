import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../../../src/sources/transport/backoff.ts';
import {
  extractCompression,
  layerPlan,
  MEDIA_TYPES,
  parseManifest,
  parsePlatform,
  selectPlatform,
  type ImageIndex,
  type ImageManifest,
} from '../../../../src/sources/image/manifest.ts';

const d = (c: string): string => `sha256:${c.repeat(64)}`;

describe('manifests', () => {
  const index: ImageIndex = {
    kind: 'index',
    mediaType: MEDIA_TYPES.ociIndex,
    manifests: [
      { mediaType: MEDIA_TYPES.ociManifest, digest: d('1'), size: 1, platform: { os: 'linux', architecture: 'arm', variant: 'v7' } },
      { mediaType: MEDIA_TYPES.ociManifest, digest: d('2'), size: 1, platform: { os: 'linux', architecture: 'arm64' } },
      { mediaType: MEDIA_TYPES.ociManifest, digest: d('3'), size: 1, platform: { os: 'linux', architecture: 'amd64' } },
      { mediaType: MEDIA_TYPES.ociManifest, digest: d('4'), size: 1, platform: { os: 'unknown', architecture: 'unknown' } },
    ],
  };

  it('selects platforms like containerd', () => {
    expect(selectPlatform(index, parsePlatform('linux/amd64'), 's').digest).toBe(d('3'));
    expect(selectPlatform(index, parsePlatform('linux/arm64/v8'), 's').digest).toBe(d('2'));
    expect(selectPlatform(index, parsePlatform('linux/arm/v7'), 's').digest).toBe(d('1'));
    expect(() => selectPlatform(index, parsePlatform('linux/s390x'), 's')).toThrow(
      /no manifest for platform linux\/s390x .*offered: linux\/arm\/v7, linux\/arm64/,
    );
  });

  it('parses by mediaType or shape and refuses the rest', () => {
    const m = { schemaVersion: 2, config: { mediaType: MEDIA_TYPES.ociConfig, digest: d('a'), size: 2 }, layers: [] };
    expect(parseManifest(Buffer.from(JSON.stringify(m)), 'application/vnd.oci.image.manifest.v1+json', 's').kind).toBe('manifest');
    expect(parseManifest(Buffer.from(JSON.stringify({ schemaVersion: 2, manifests: [] })), undefined, 's').kind).toBe('index');
    expect(() => parseManifest(Buffer.from('{"schemaVersion":1,"fsLayers":[]}'), 'application/vnd.docker.distribution.manifest.v1+prettyjws', 's')).toThrow(
      /unsupported manifest media type "application\/vnd.docker.distribution.manifest.v1\+prettyjws"/,
    );
    expect(() =>
      parseManifest(Buffer.from(JSON.stringify({ ...m, layers: [{ mediaType: 'x', digest: 'sha256:zz', size: 1 }] })), MEDIA_TYPES.ociManifest, 's'),
    ).toThrow(/invalid digest/);
  });

  it('plans layers and refuses unsupported layer types before downloading', () => {
    const base: ImageManifest = {
      kind: 'manifest',
      mediaType: MEDIA_TYPES.ociManifest,
      config: { mediaType: MEDIA_TYPES.ociConfig, digest: d('c'), size: 1 },
      layers: [],
    };
    const l = (mediaType: string) => ({ mediaType, digest: d('e'), size: 1 });
    expect(
      layerPlan(
        { ...base, layers: [l(MEDIA_TYPES.ociLayerGzip), l(MEDIA_TYPES.ociLayerZstd), l(MEDIA_TYPES.ociLayerTar), l(MEDIA_TYPES.dockerLayerGzip)] },
        's',
      ).map((p) => p.compression),
    ).toEqual(['gzip', 'zstd', 'none', 'gzip']);
    expect(() => layerPlan({ ...base, layers: [l('application/vnd.example.thing')] }, 's')).toThrow(
      /unsupported layer media type "application\/vnd.example.thing"/,
    );
    const helm = { ...base, config: { ...base.config, mediaType: MEDIA_TYPES.helmConfig } };
    expect(layerPlan({ ...helm, layers: [l(MEDIA_TYPES.helmChart), l(MEDIA_TYPES.helmProvenance)] }, 's')).toHaveLength(1);
    expect(() => layerPlan({ ...helm, layers: [] }, 's')).toThrow(/exactly one/);
  });

  it('plans a Flux artifact, a layer selection and a copy', () => {
    const base: ImageManifest = {
      kind: 'manifest',
      mediaType: MEDIA_TYPES.ociManifest,
      config: { mediaType: MEDIA_TYPES.fluxConfig, digest: d('c'), size: 1 },
      layers: [],
    };
    const l = (mediaType: string, c = 'e') => ({ mediaType, digest: d(c), size: 1 });
    // flux push artifact: its first layer, extracted as gzip (Flux's default)
    expect(layerPlan({ ...base, layers: [l(MEDIA_TYPES.fluxContent, '1'), l('application/octet-stream', '2')] }, 's')).toEqual([
      { descriptor: l(MEDIA_TYPES.fluxContent, '1'), compression: 'gzip', operation: 'extract' },
    ]);
    expect(() => layerPlan({ ...base, layers: [] }, 's')).toThrow(/no layers/);
    // the Flux content type is a gzip tar in an ordinary image too
    const image = { ...base, config: { ...base.config, mediaType: MEDIA_TYPES.ociConfig } };
    expect(layerPlan({ ...image, layers: [l(MEDIA_TYPES.fluxContent)] }, 's').map((p) => p.compression)).toEqual(['gzip']);
    // a selector: the first layer of its type, by the media type's compression, or copied
    const two = {
      ...image,
      layers: [
        l('application/vnd.acme.config.v1+yaml', '1'),
        l('application/vnd.acme.manifests.v1.tar+zstd', '2'),
        l('application/vnd.acme.manifests.v1.tar+zstd', '3'),
      ],
    };
    expect(layerPlan(two, 's', { mediaType: 'application/vnd.acme.manifests.v1.tar+zstd' })).toEqual([
      { descriptor: l('application/vnd.acme.manifests.v1.tar+zstd', '2'), compression: 'zstd', operation: 'extract' },
    ]);
    expect(layerPlan(two, 's', { mediaType: 'application/vnd.acme.config.v1+yaml', operation: 'copy' })[0]).toMatchObject({
      operation: 'copy',
      descriptor: { digest: d('1') },
    });
    expect(() => layerPlan(two, 's', { mediaType: 'application/vnd.other' })).toThrow(
      /no layer of media type "application\/vnd.other" \(layerSelector\); the artifact has "application\/vnd.acme.config.v1\+yaml", /,
    );
  });

  it.each([
    ['application/vnd.oci.image.layer.v1.tar', 'none'],
    ['application/vnd.acme.bundle.v1.tar', 'none'],
    ['application/vnd.acme.bundle.v1.tar+zstd', 'zstd'],
    ['application/vnd.cncf.flux.content.v1.tar+gzip', 'gzip'],
    ['application/vnd.acme.bundle', 'gzip'],
  ] as const)('extracts %s as %s', (mediaType, compression) => {
    expect(extractCompression(mediaType)).toBe(compression);
  });

  it('parses Retry-After', () => {
    expect(parseRetryAfter('3', 0)).toBe(3000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
    expect(parseRetryAfter(undefined, 0)).toBeUndefined();
  });
});
