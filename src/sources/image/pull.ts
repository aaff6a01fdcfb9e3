/**
 * Pulls one image (or Helm OCI chart) into a directory: manifest (through the index when there
 * is one, by platform), then every layer in order, each streamed from the registry through the
 * digest check into the shared safe unpacker. OCI whiteouts and opaque directories apply across
 * layers. Memory is bounded by the stream chunk size; the caller unpacks into a temp directory it
 * discards on failure (the content store's `put`), because files of a layer are written before the
 * layer's digest is known to match: nothing is published until every digest matched.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rename, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_UNPACK_LIMITS, unpackTar, type UnpackLimits } from '../../util/unpack-tar.ts';
import { imageError } from './errors.ts';
import type { FetchedManifest, OperationContext, RegistryClient } from './client.ts';
import {
  DEFAULT_PLATFORM,
  formatPlatform,
  isHelmChart,
  layerPlan,
  selectPlatform,
  type ImageManifest,
  type Platform,
} from './manifest.ts';
import { formatReference, withDigest, type ImageReference } from './reference.ts';

export interface PullOptions {
  platform?: Platform;
  /** limits for the whole image (all layers together) */
  limits?: Partial<UnpackLimits>;
}

export interface PullResult {
  /** digest of what the reference points at (an index or a manifest) */
  digest: string;
  /** digest of the image manifest that was unpacked (differs from `digest` for an index) */
  manifestDigest: string;
  /** `os/arch[/variant]` chosen from an index; undefined for a single manifest */
  platform?: string;
  kind: 'image' | 'helm-chart';
  layers: number;
  /** compressed bytes downloaded */
  downloadedBytes: number;
  /** entries and regular-file bytes written */
  files: number;
  bytes: number;
}

/** Resolves an index to the platform's manifest; a manifest is returned as is. */
export async function platformManifest(
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
    throw imageError(ctx.stage, 'unsupported-media-type', `index entry ${chosen.digest} for ${formatPlatform(platform)} is not an image manifest`, formatReference(ref), true);
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
  const plan = layerPlan(manifest, subject);
  const helm = isHelmChart(manifest);
  const limits: UnpackLimits = { ...DEFAULT_UNPACK_LIMITS, ...stripUndefined(options.limits ?? {}) };

  // a chart's tarball has one top-level directory (the chart name); it is unpacked aside and
  // lifted so that Chart.yaml lands at the destination root, where the helm processor looks
  const target = helm ? join(dest, `.hoist-chart-${randomBytes(6).toString('hex')}`) : dest;
  let files = 0;
  let bytes = 0;
  let downloaded = 0;
  for (const { descriptor } of plan) {
    const blob = await client.openBlob(ref, descriptor, ctx);
    try {
      // limits hold for the image as a whole, not per layer
      const r = await unpackTar(blob, target, {
        whiteouts: !helm,
        subject,
        signal: ctx.signal,
        limits: {
          maxTotalBytes: Math.max(0, limits.maxTotalBytes - bytes),
          maxFiles: Math.max(0, limits.maxFiles - files),
          maxFileBytes: limits.maxFileBytes,
          ...(limits.maxArchiveBytes === undefined ? {} : { maxArchiveBytes: limits.maxArchiveBytes }),
        },
      });
      // the tar reader may stop at the end-of-archive marker: hash the rest, then verify
      await blob.finish();
      files += r.files;
      bytes += r.bytes;
      downloaded += blob.bytesRead;
    } catch (e) {
      blob.abort();
      throw e;
    }
  }
  if (helm) await liftChart(target, dest);
  const result: PullResult = {
    digest: top.digest,
    manifestDigest,
    kind: helm ? 'helm-chart' : 'image',
    layers: plan.length,
    downloadedBytes: downloaded,
    files,
    bytes,
  };
  if (platform) result.platform = platform;
  return result;
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
