/**
 * OCI and Docker v2 manifests and indexes (manifest lists): media types, validation of the JSON
 * we act on, and platform selection. Everything not listed here is refused with a terminal error,
 * so an unexpected artifact never reaches a processor half-understood.
 *
 * Pure: no I/O.
 */
import { HoistError } from '../../util/errors.ts';
import { isDigest } from './reference.ts';
import { SourceCode, sourceError } from '../errors.ts';

export const MEDIA_TYPES = {
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerManifestList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
  ociLayerTar: 'application/vnd.oci.image.layer.v1.tar',
  ociLayerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  ociLayerZstd: 'application/vnd.oci.image.layer.v1.tar+zstd',
  dockerLayerGzip: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  helmConfig: 'application/vnd.cncf.helm.config.v1+json',
  helmChart: 'application/vnd.cncf.helm.chart.content.v1.tar+gzip',
  helmProvenance: 'application/vnd.cncf.helm.chart.provenance.v1.prov',
  // `flux push artifact` (Flux RFC-0003)
  fluxConfig: 'application/vnd.cncf.flux.config.v1+json',
  fluxContent: 'application/vnd.cncf.flux.content.v1.tar+gzip',
} as const;

/** Accept header for manifest requests: every manifest type we can use. */
export const MANIFEST_ACCEPT = [MEDIA_TYPES.ociIndex, MEDIA_TYPES.ociManifest, MEDIA_TYPES.dockerManifestList, MEDIA_TYPES.dockerManifest].join(', ');

export type Compression = 'gzip' | 'zstd' | 'none';

function layerCompression(mediaType: string): Compression | undefined {
  switch (mediaType) {
    case MEDIA_TYPES.ociLayerGzip:
    case MEDIA_TYPES.dockerLayerGzip:
    case MEDIA_TYPES.helmChart:
    case MEDIA_TYPES.fluxContent:
      return 'gzip';
    case MEDIA_TYPES.ociLayerZstd:
      return 'zstd';
    case MEDIA_TYPES.ociLayerTar:
      return 'none';
    default:
      return undefined;
  }
}

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export const DEFAULT_PLATFORM: Platform = { os: 'linux', architecture: 'amd64' };

/** `os/arch[/variant]`, the form used by docker `--platform`. */
export function formatPlatform(p: Platform): string {
  return p.variant ? `${p.os}/${p.architecture}/${p.variant}` : `${p.os}/${p.architecture}`;
}

export function parsePlatform(s: string): Platform {
  const [os, architecture, variant] = s.split('/');
  if (!os || !architecture) throw new Error(`invalid platform "${s}": expected os/arch[/variant]`);
  return variant ? { os, architecture, variant } : { os, architecture };
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: Platform;
  annotations?: Record<string, string>;
}

export interface ImageManifest {
  kind: 'manifest';
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
}

export interface ImageIndex {
  kind: 'index';
  mediaType: string;
  manifests: Descriptor[];
}

export type ParsedManifest = ImageManifest | ImageIndex;

function unsupported(subject: string, what: string): HoistError {
  return sourceError(what, { stage: 'fetch', code: SourceCode.UnsupportedMediaType, subject, terminal: true });
}

function malformed(subject: string, what: string): HoistError {
  return sourceError(`malformed manifest: ${what}`, { stage: 'fetch', code: SourceCode.InvalidManifest, subject, terminal: true });
}

function descriptor(v: unknown, subject: string, where: string): Descriptor {
  if (typeof v !== 'object' || v === null) throw malformed(subject, `${where} is not an object`);
  const d = v as Record<string, unknown>;
  if (typeof d.mediaType !== 'string') throw malformed(subject, `${where} has no mediaType`);
  if (typeof d.digest !== 'string' || !isDigest(d.digest)) throw malformed(subject, `${where} has an invalid digest`);
  if (typeof d.size !== 'number' || !Number.isSafeInteger(d.size) || d.size < 0) throw malformed(subject, `${where} has an invalid size`);
  const out: Descriptor = { mediaType: d.mediaType, digest: d.digest, size: d.size };
  if (typeof d.platform === 'object' && d.platform !== null) {
    const p = d.platform as Record<string, unknown>;
    if (typeof p.os === 'string' && typeof p.architecture === 'string') {
      out.platform = { os: p.os, architecture: p.architecture };
      if (typeof p.variant === 'string' && p.variant !== '') out.platform.variant = p.variant;
    }
  }
  if (typeof d.annotations === 'object' && d.annotations !== null) out.annotations = d.annotations as Record<string, string>;
  return out;
}

/**
 * Parses manifest bytes already verified against their digest. `contentType` is the response's
 * Content-Type; the document's own `mediaType` wins when present (it is covered by the digest).
 */
export function parseManifest(bytes: Buffer, contentType: string | undefined, subject: string): ParsedManifest {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw malformed(subject, 'not JSON');
  }
  if (typeof doc !== 'object' || doc === null) throw malformed(subject, 'not a JSON object');
  const m = doc as Record<string, unknown>;
  const ct = contentType?.split(';')[0]?.trim();
  let mediaType = typeof m.mediaType === 'string' ? m.mediaType : ct;
  // An OCI document may omit mediaType; tell manifest from index by shape.
  if (!mediaType || mediaType === 'application/json' || mediaType === 'application/octet-stream') {
    if (Array.isArray(m.manifests)) mediaType = MEDIA_TYPES.ociIndex;
    else if (Array.isArray(m.layers)) mediaType = MEDIA_TYPES.ociManifest;
  }
  switch (mediaType) {
    case MEDIA_TYPES.ociIndex:
    case MEDIA_TYPES.dockerManifestList: {
      if (!Array.isArray(m.manifests)) throw malformed(subject, 'index without manifests');
      return { kind: 'index', mediaType, manifests: m.manifests.map((d, i) => descriptor(d, subject, `manifests[${i}]`)) };
    }
    case MEDIA_TYPES.ociManifest:
    case MEDIA_TYPES.dockerManifest: {
      if (!Array.isArray(m.layers)) throw malformed(subject, 'manifest without layers');
      return {
        kind: 'manifest',
        mediaType,
        config: descriptor(m.config, subject, 'config'),
        layers: m.layers.map((d, i) => descriptor(d, subject, `layers[${i}]`)),
      };
    }
    default:
      throw unsupported(subject, `unsupported manifest media type "${mediaType ?? 'none'}" (supported: OCI and Docker v2 manifests and indexes)`);
  }
}

/**
 * Picks the manifest for `want` from an index: exact os/arch, then the variant (an entry without a
 * variant matches any wanted variant; for arm64 a missing variant means v8). Entries that are not
 * image manifests (attestations, nested indexes) are skipped.
 */
export function selectPlatform(index: ImageIndex, want: Platform, subject: string): Descriptor {
  const candidates = index.manifests.filter(
    (d) =>
      (d.mediaType === MEDIA_TYPES.ociManifest || d.mediaType === MEDIA_TYPES.dockerManifest) &&
      d.platform?.os === want.os &&
      d.platform.architecture === want.architecture,
  );
  const normVariant = (v: string | undefined): string | undefined => (want.architecture === 'arm64' && v === undefined ? 'v8' : v);
  const exact = candidates.find((d) => normVariant(d.platform?.variant) === normVariant(want.variant));
  const chosen = exact ?? (want.variant === undefined ? candidates[0] : candidates.find((d) => d.platform?.variant === undefined));
  if (!chosen) {
    const offered = index.manifests.filter((d) => d.platform).map((d) => formatPlatform(d.platform as Platform));
    throw sourceError(`no manifest for platform ${formatPlatform(want)} in the index (offered: ${offered.join(', ') || 'none'})`, {
      stage: 'fetch',
      code: SourceCode.PlatformNotFound,
      subject,
      terminal: true,
    });
  }
  return chosen;
}

/** True when the manifest is a Helm chart artifact (config media type says so). */
export function isHelmChart(m: ImageManifest): boolean {
  return m.config.mediaType === MEDIA_TYPES.helmConfig;
}

/** What to do with a layer: unpack it as a tar (its compression), or store the blob as one file. */
export type LayerOperation = 'extract' | 'copy';

/** `image.layerSelector` (Flux's OCIRepository layerSelector): the first layer of this media type, extracted or copied. */
export interface LayerSelector {
  mediaType: string;
  operation?: LayerOperation;
}

export interface LayerStep {
  descriptor: Descriptor;
  compression: Compression;
  operation: LayerOperation;
}

/** True when the manifest is what `flux push artifact` writes (its config media type says so). */
export function isFluxArtifact(m: ImageManifest): boolean {
  return m.config.mediaType === MEDIA_TYPES.fluxConfig;
}

/**
 * The compression of a layer to extract: by its known media type, else by the suffix of a custom
 * one (`+gzip`, `+zstd`, `.tar`), else gzip — what Flux assumes of any layer it extracts.
 */
export function extractCompression(mediaType: string): Compression {
  const known = layerCompression(mediaType);
  if (known) return known;
  if (/[+.]zstd$/.test(mediaType)) return 'zstd';
  if (/[+.]tar$/.test(mediaType)) return 'none';
  return 'gzip';
}

/**
 * The layers to fetch and what to do with each, decided before anything is downloaded:
 * - a `layerSelector`: the first layer of its media type (none is `layer-not-found`, listing the
 *   ones offered), extracted or copied as it says;
 * - a Flux artifact without one: its first layer, extracted (Flux's default);
 * - a Helm chart: its one chart layer;
 * - any other image: every layer in order, each of a tar media type (others are refused).
 */
export function layerPlan(m: ImageManifest, subject: string, selector?: LayerSelector): LayerStep[] {
  if (selector) {
    const chosen = m.layers.find((l) => l.mediaType === selector.mediaType);
    if (!chosen) {
      throw sourceError(
        `no layer of media type "${selector.mediaType}" (layerSelector); the artifact has ${m.layers.map((l) => `"${l.mediaType}"`).join(', ') || 'no layers'}`,
        {
          stage: 'fetch',
          code: SourceCode.LayerNotFound,
          subject,
          terminal: true,
        },
      );
    }
    const operation = selector.operation ?? 'extract';
    return [{ descriptor: chosen, compression: operation === 'copy' ? 'none' : extractCompression(chosen.mediaType), operation }];
  }
  if (isFluxArtifact(m)) {
    const first = m.layers[0];
    if (!first) throw unsupported(subject, 'the Flux artifact has no layers');
    return [{ descriptor: first, compression: extractCompression(first.mediaType), operation: 'extract' }];
  }
  if (isHelmChart(m)) {
    const charts = m.layers.filter((l) => l.mediaType === MEDIA_TYPES.helmChart);
    if (charts.length !== 1) throw unsupported(subject, `helm chart artifact must have exactly one ${MEDIA_TYPES.helmChart} layer, found ${charts.length}`);
    // provenance files are signatures for `helm verify`, not chart content
    const other = m.layers.find((l) => l.mediaType !== MEDIA_TYPES.helmChart && l.mediaType !== MEDIA_TYPES.helmProvenance);
    if (other) throw unsupported(subject, `unsupported layer media type "${other.mediaType}" in a helm chart artifact`);
    return charts.map((d) => ({ descriptor: d, compression: 'gzip', operation: 'extract' }));
  }
  return m.layers.map((d) => {
    const compression = layerCompression(d.mediaType);
    if (!compression || d.mediaType === MEDIA_TYPES.helmChart) {
      throw unsupported(
        subject,
        `unsupported layer media type "${d.mediaType}" (supported: tar, tar+gzip, tar+zstd, Flux content; image.layerSelector picks one layer of any type)`,
      );
    }
    return { descriptor: d, compression, operation: 'extract' as const };
  });
}
