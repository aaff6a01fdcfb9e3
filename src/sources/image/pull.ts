/**
 * Pulls one image (or Helm OCI chart) into a directory: manifest (through the index when there
 * is one, by platform), then every layer in order, each streamed from the registry through the
 * digest check and a decompressor into the shared safe unpacker. OCI whiteouts and opaque directories apply across
 * layers; the finished tree is checked once more as a whole against the containment rule
 * (src/util/content-tree.ts). Helm chart archives may not hold links at all. Memory is bounded by the stream chunk size; the caller unpacks into a temp directory it
 * discards on failure (the content store's `put`), because files of a layer are written before the
 * layer's digest is known to match: nothing is published until every digest matched.
 */
import { randomBytes } from 'node:crypto';
import { open, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createZstdDecompress } from 'node:zlib';
import { HoistError, FailureReason } from '../../util/errors.ts';
import { verifyTree } from '../../util/content-tree.ts';
import { DEFAULT_UNPACK_LIMITS, unpackTar, type UnpackLimits } from '../../util/unpack-tar.ts';
import { imageError } from './errors.ts';
import type { BlobStream } from './blob-stream.ts';
import type { FetchedManifest, OperationContext, RegistryClient } from './client.ts';
import {
  DEFAULT_PLATFORM,
  formatPlatform,
  isFluxArtifact,
  isHelmChart,
  layerPlan,
  type LayerSelector,
  type LayerStep,
  selectPlatform,
  type Compression,
  type ImageManifest,
  type Platform,
} from './manifest.ts';
import { formatReference, withDigest, type ImageReference } from './reference.ts';
import { SourceCode, sourceError } from '../errors.ts';

export interface PullOptions {
  platform?: Platform;
  /** image.layerSelector: one layer, extracted or copied (manifest.ts layerPlan) */
  layerSelector?: LayerSelector;
  /** limits for the whole image (all layers together) */
  limits?: Partial<UnpackLimits>;
  /** counts each file's bytes against the content store's budget before it is written */
  charge?: (bytes: number) => Promise<void>;
}

export interface PullResult {
  /** digest of what the reference points at (an index or a manifest) */
  digest: string;
  /** digest of the image manifest that was unpacked (differs from `digest` for an index) */
  manifestDigest: string;
  /** `os/arch[/variant]` chosen from an index; undefined for a single manifest */
  platform?: string;
  kind: 'image' | 'helm-chart' | 'flux-artifact' | 'layer';
  layers: number;
  /** compressed bytes downloaded */
  downloadedBytes: number;
  /** entries and regular-file bytes written */
  files: number;
  bytes: number;
}

/** Resolves an index to the platform's manifest; a manifest is returned as is. */
async function platformManifest(
  client: RegistryClient,
  ref: ImageReference,
  top: FetchedManifest,
  platform: Platform,
  ctx: OperationContext,
): Promise<{ manifest: ImageManifest; digest: string; platform?: string }> {
  if (top.manifest.kind === 'manifest') return { manifest: top.manifest, digest: top.digest };
  const chosen = selectPlatform(top.manifest, platform, formatReference(ref));
  const inner = await client.getManifest(withDigest(ref, chosen.digest), ctx);
  if (inner.manifest.kind !== 'manifest') {
    throw imageError(
      ctx.stage,
      SourceCode.UnsupportedMediaType,
      `index entry ${chosen.digest} for ${formatPlatform(platform)} is not an image manifest`,
      formatReference(ref),
      true,
    );
  }
  return { manifest: inner.manifest, digest: inner.digest, platform: formatPlatform(chosen.platform ?? platform) };
}

/**
 * Pulls `ref` (which must carry a digest) into `dest`. Not idempotent on a used `dest`: unpack
 * into a fresh directory.
 */
export async function pullImage(
  client: RegistryClient,
  ref: ImageReference,
  dest: string,
  ctx: OperationContext,
  options: PullOptions = {},
): Promise<PullResult> {
  if (!ref.digest) throw new Error('pullImage needs a reference pinned by digest');
  const subject = formatReference(ref);
  const top = await client.getManifest(ref, ctx);
  const { manifest, digest: manifestDigest, platform } = await platformManifest(client, ref, top, options.platform ?? DEFAULT_PLATFORM, ctx);
  // refuse unsupported media types before downloading a single layer
  const plan = layerPlan(manifest, subject, options.layerSelector);
  // a selected layer or a Flux artifact is a plain tarball, not an image layer: no whiteouts
  const kind: PullResult['kind'] = options.layerSelector
    ? 'layer'
    : isFluxArtifact(manifest)
      ? 'flux-artifact'
      : isHelmChart(manifest)
        ? 'helm-chart'
        : 'image';
  const helm = kind === 'helm-chart';
  const limits: UnpackLimits = { ...DEFAULT_UNPACK_LIMITS, ...stripUndefined(options.limits ?? {}) };

  // a chart's tarball has one top-level directory (the chart name); it is unpacked aside and
  // lifted so that Chart.yaml lands at the destination root, where the helm processor looks
  const target = helm ? join(dest, `.hoist-chart-${randomBytes(6).toString('hex')}`) : dest;
  let files = 0;
  let bytes = 0;
  let links = 0;
  let downloaded = 0;
  for (const step of plan) {
    const { descriptor, compression } = step;
    const blob = await client.openBlob(ref, descriptor, ctx);
    if (step.operation === 'copy') {
      // the blob's size is known (and held to by the blob stream): counted before it is written
      try {
        await options.charge?.(descriptor.size);
      } catch (e) {
        blob.abort();
        throw e;
      }
      const written = await copyBlob(blob, join(dest, copiedName(step)), Math.min(limits.maxFileBytes, limits.maxTotalBytes), subject);
      files += 1;
      bytes += written;
      downloaded += blob.bytesRead;
      continue;
    }
    try {
      // limits hold for the image as a whole, not per layer
      const r = await unpackTar(decompress(blob, compression), target, {
        whiteouts: kind === 'image',
        // helm reads chart archives as regular files only; a link there means nothing to helm
        allowLinks: !helm,
        subject,
        signal: ctx.signal,
        ...(options.charge ? { charge: options.charge } : {}),
        limits: {
          maxTotalBytes: Math.max(0, limits.maxTotalBytes - bytes),
          maxFiles: Math.max(0, limits.maxFiles - files),
          maxFileBytes: limits.maxFileBytes,
          maxLinks: Math.max(0, limits.maxLinks - links),
          ...(limits.maxArchiveBytes === undefined ? {} : { maxArchiveBytes: limits.maxArchiveBytes }),
        },
      });
      // the tar reader may stop at the end-of-archive marker: hash the rest, then verify
      await blob.finish();
      files += r.files;
      bytes += r.bytes;
      links += r.links;
      downloaded += blob.bytesRead;
    } catch (e) {
      if (e instanceof HoistError) {
        blob.abort();
        throw e;
      }
      // the decompressor failed: when the bytes are not the blob the manifest names (tampered or
      // corrupted in transit), that is the real cause, so finish hashing and report it
      try {
        await blob.finish();
      } catch (verify) {
        if (verify instanceof HoistError) throw verify;
      }
      blob.abort();
      const message = e instanceof Error ? e.message.toLowerCase() : String(e);
      throw sourceError(`layer ${descriptor.digest} (${descriptor.mediaType}) is not valid ${compression === 'none' ? 'tar' : compression} data: ${message}`, {
        stage: 'fetch',
        reason: FailureReason.UnpackFailed,
        code: SourceCode.BadArchive,
        subject,
        terminal: true,
        cause: e,
      });
    }
  }
  if (helm) await liftChart(target, dest);
  // the rule for the image as a whole: a later layer can make an earlier layer's link leave the
  // tree (turning a directory into a link), which no single layer's check can see
  await verifyTree(dest, { stage: 'fetch', reason: FailureReason.UnpackFailed, who: `image ${subject}`, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  const result: PullResult = {
    digest: top.digest,
    manifestDigest,
    kind,
    layers: plan.length,
    downloadedBytes: downloaded,
    files,
    bytes,
  };
  if (platform) result.platform = platform;
  return result;
}

// zlib's default 16 KiB output chunks turn into one awaited file write each; 512 KiB chunks more than halve
// unpack time on a large layer (bench/image-pull.ts)
const DECOMPRESS_CHUNK = 512 * 1024;

/**
 * Decompresses a layer as its media type says, with large output chunks, and hands the plain tar
 * to the unpacker (whose own size limits then apply to the decompressed bytes). Pulls lazily, so
 * the unpacker's backpressure bounds memory. A failure of the blob stream (digest, truncation) is
 * rethrown as itself.
 */
async function* decompress(blob: BlobStream, compression: Compression): AsyncGenerator<Buffer> {
  if (compression === 'none') {
    for await (const chunk of blob) yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    return;
  }
  const decoder = compression === 'gzip' ? createGunzip({ chunkSize: DECOMPRESS_CHUNK }) : createZstdDecompress({ chunkSize: DECOMPRESS_CHUNK });
  let blobError: unknown;
  const input = Readable.from(
    (async function* () {
      try {
        yield* blob;
      } catch (e) {
        blobError = e;
        throw e;
      }
    })(),
    { objectMode: false },
  );
  const done = pipeline(input, decoder).catch(() => undefined);
  try {
    for await (const chunk of decoder as AsyncIterable<Buffer>) yield chunk;
  } catch (e) {
    throw blobError ?? e;
  } finally {
    input.destroy();
    decoder.destroy();
    await done;
  }
  if (blobError !== undefined) throw blobError;
}

/**
 * The file a copied layer becomes: its `org.opencontainers.image.title` annotation (what oras and
 * Flux name a file layer after) when that is a plain file name, else `layer-<digest hex>`.
 */
export function copiedName(step: Pick<LayerStep, 'descriptor'>): string {
  const title = step.descriptor.annotations?.['org.opencontainers.image.title'];
  if (title !== undefined && /^[A-Za-z0-9_][A-Za-z0-9._-]{0,254}$/.test(title)) return title;
  return `layer-${step.descriptor.digest.replace(/^sha256:/, '')}`;
}

/** Streams a verified blob into a new file, at most `maxBytes`; returns the bytes written. */
async function copyBlob(blob: BlobStream, file: string, maxBytes: number, subject: string): Promise<number> {
  let written = 0;
  const out = await open(file, 'wx', 0o644);
  try {
    for await (const chunk of blob) {
      written += chunk.byteLength;
      if (written > maxBytes) {
        blob.abort();
        throw sourceError(`layer ${blob.descriptor.digest} is larger than the limit of ${maxBytes} bytes per file`, {
          stage: 'fetch',
          reason: FailureReason.UnpackFailed,
          code: SourceCode.TooLarge,
          subject,
          terminal: true,
        });
      }
      await out.write(chunk);
    }
    await blob.finish();
  } finally {
    await out.close();
  }
  return written;
}

/** Moves the chart's files from `from/<chart>/` (or `from/` when there is no wrapper) into `to`. */
async function liftChart(from: string, to: string): Promise<void> {
  const top = await readdir(from, { withFileTypes: true });
  const only = top.length === 1 && top[0]!.isDirectory() ? join(from, top[0]!.name) : from;
  for (const name of await readdir(only)) await rename(join(only, name), join(to, name));
  if (only !== from) await rmdir(only);
  await rm(from, { recursive: true, force: true });
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
