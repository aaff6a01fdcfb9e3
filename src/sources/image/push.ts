/**
 * Building and pushing OCI images: layers from a directory or from explicit tar entries, blob
 * upload (POST + monolithic PUT, skipped when the registry already has the blob), manifest PUT.
 * Used by the tests and the benchmark to publish fixtures to real registries, and checked there
 * against `skopeo inspect`; the controller itself never pushes.
 *
 * Streaming: a layer is written to a file while its digest is computed (the monolithic PUT needs
 * the digest up front), then uploaded from that file, so memory stays bounded for any layer size.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, readdir, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as zlib from 'node:zlib';
import * as tar from 'tar-stream';
import { classifyStatus } from '../../util/http-status.ts';
import type { OperationContext, RegistryClient } from './client.ts';
import { imageError } from './errors.ts';
import { SourceCode } from '../errors.ts';
import { DEFAULT_PLATFORM, MEDIA_TYPES, type Compression, type Descriptor, type Platform } from './manifest.ts';
import { formatReference, withDigest, type ImageReference } from './reference.ts';

/** One tar entry to put in a layer; data for files, target for links. */
export interface LayerEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo';
  /** file content; a string is UTF-8 */
  data?: string | Buffer;
  /** for large files: streamed from this path instead of `data` */
  sourcePath?: string;
  /** for symlinks and hardlinks */
  linkname?: string;
  mode?: number;
}

export interface BuiltLayer extends Descriptor {
  /** the file holding the compressed blob */
  path: string;
  /** sha256 of the uncompressed tar (config rootfs.diff_ids) */
  diffId: string;
}

const LAYER_MEDIA_TYPE: Record<Compression, string> = {
  gzip: MEDIA_TYPES.ociLayerGzip,
  zstd: MEDIA_TYPES.ociLayerZstd,
  none: MEDIA_TYPES.ociLayerTar,
};

/** Every file, directory and symlink under `dir`, sorted, as layer entries (contents streamed). */
export async function* directoryEntries(dir: string, prefix = ''): AsyncGenerator<LayerEntry> {
  const names = (await readdir(join(dir, prefix))).sort();
  for (const name of names) {
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    const abs = join(dir, rel);
    const st = await lstat(abs);
    if (st.isDirectory()) {
      yield { name: `${rel}/`, type: 'directory', mode: st.mode & 0o777 };
      yield* directoryEntries(dir, rel);
    } else if (st.isSymbolicLink()) {
      yield { name: rel, type: 'symlink', linkname: await readlink(abs) };
    } else if (st.isFile()) {
      yield { name: rel, type: 'file', sourcePath: abs, mode: st.mode & 0o777 };
    }
  }
}

/**
 * Writes a layer blob to `outPath` from `entries`: a tar, compressed as asked, with fixed
 * timestamps and owners so equal inputs give equal digests.
 */
export async function writeLayer(
  entries: Iterable<LayerEntry> | AsyncIterable<LayerEntry>,
  outPath: string,
  compression: Compression = 'gzip',
): Promise<BuiltLayer> {
  const pack = tar.pack();
  const diff = createHash('sha256');
  const blob = createHash('sha256');
  let size = 0;
  const tapDiff = new Transform({
    transform(chunk: Buffer, _e, cb: TransformCallback) {
      diff.update(chunk);
      cb(null, chunk);
    },
  });
  const tapBlob = new Transform({
    transform(chunk: Buffer, _e, cb: TransformCallback) {
      blob.update(chunk);
      size += chunk.length;
      cb(null, chunk);
    },
  });
  const compressor = compression === 'gzip' ? zlib.createGzip({ level: 6 }) : compression === 'zstd' ? zlib.createZstdCompress() : new PassThrough();
  const written = pipeline(pack, tapDiff, compressor, tapBlob, createWriteStream(outPath));
  const mtime = new Date(0);
  for await (const e of entries) {
    const type = e.type ?? 'file';
    const header: Parameters<tar.Pack['entry']>[0] = {
      name: e.name,
      type,
      mtime,
      uid: 0,
      gid: 0,
      uname: '',
      gname: '',
      mode: e.mode ?? (type === 'directory' ? 0o755 : 0o644),
    };
    if (e.linkname !== undefined) header.linkname = e.linkname;
    if (type === 'file' && e.sourcePath) {
      const st = await stat(e.sourcePath);
      header.size = st.size;
      await new Promise<void>((resolve, reject) => {
        const w = pack.entry(header, (err) => (err ? reject(err) : resolve()));
        createReadStream(e.sourcePath as string)
          .on('error', reject)
          .pipe(w);
      });
    } else if (type === 'file') {
      const data = typeof e.data === 'string' ? Buffer.from(e.data) : (e.data ?? Buffer.alloc(0));
      header.size = data.length;
      await new Promise<void>((resolve, reject) => pack.entry(header, data, (err) => (err ? reject(err) : resolve())));
    } else {
      await new Promise<void>((resolve, reject) => pack.entry(header, (err) => (err ? reject(err) : resolve())).end(undefined));
    }
  }
  pack.finalize();
  await written;
  return { mediaType: LAYER_MEDIA_TYPE[compression], digest: `sha256:${blob.digest('hex')}`, size, path: outPath, diffId: `sha256:${diff.digest('hex')}` };
}

/** Sha256 digest and size of a file, streamed. */
export async function digestFile(path: string): Promise<{ digest: string; size: number }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    h.update(chunk);
    size += chunk.length;
  }
  return { digest: `sha256:${h.digest('hex')}`, size };
}

/**
 * Uploads a blob unless the registry has it: HEAD, then POST /blobs/uploads/ and one monolithic
 * PUT to the returned location with `?digest=`. `source` is bytes or a file path (streamed).
 */
export async function pushBlob(
  client: RegistryClient,
  ref: ImageReference,
  source: Buffer | { path: string; digest: string; size: number },
  ctx: OperationContext,
): Promise<{ digest: string; size: number }> {
  const subject = formatReference(ref);
  const digest = Buffer.isBuffer(source) ? `sha256:${createHash('sha256').update(source).digest('hex')}` : source.digest;
  const size = Buffer.isBuffer(source) ? source.length : source.size;
  const head = await client.request(ref, { method: 'HEAD', path: `/v2/${ref.repository}/blobs/${digest}`, scope: 'pull,push' }, ctx);
  await head.body.dump();
  // the registry has the blob already (any 2xx to HEAD): nothing to upload
  if (classifyStatus(head.statusCode) === 'ok') return { digest, size };
  const start = await client.request(
    ref,
    { method: 'POST', path: `/v2/${ref.repository}/blobs/uploads/`, headers: { 'content-length': '0' }, scope: 'pull,push' },
    ctx,
  );
  await start.body.dump();
  client.check(start, ref, ctx, 'blob upload');
  const location = start.headers.location;
  if (typeof location !== 'string') throw imageError(ctx.stage, SourceCode.HttpStatus, 'blob upload answered without a Location', subject, false);
  const url = new URL(location, start.url);
  url.searchParams.set('digest', digest);
  const put = await client.request(
    ref,
    {
      method: 'PUT',
      path: url.toString(),
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) },
      body: () => (Buffer.isBuffer(source) ? source : createReadStream(source.path)),
      scope: 'pull,push',
    },
    ctx,
  );
  await put.body.dump();
  client.check(put, ref, ctx, `blob ${digest} upload`);
  return { digest, size };
}

/** PUTs a manifest under `ref`'s tag (or its digest); returns the manifest's digest. */
export async function pushManifest(client: RegistryClient, ref: ImageReference, bytes: Buffer, mediaType: string, ctx: OperationContext): Promise<string> {
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  const target = ref.tag ?? digest;
  const res = await client.request(
    ref,
    { method: 'PUT', path: `/v2/${ref.repository}/manifests/${target}`, headers: { 'content-type': mediaType }, body: () => bytes, scope: 'pull,push' },
    ctx,
  );
  await res.body.dump();
  client.check(res, ref, ctx, 'manifest upload');
  return digest;
}

export interface PushImageOptions {
  /** config media type (default OCI image config); a Helm chart uses MEDIA_TYPES.helmConfig */
  configMediaType?: string;
  /** config blob content (default a minimal OCI image config for `platform` and the layers) */
  config?: Buffer;
  platform?: Platform;
  annotations?: Record<string, string>;
}

export interface PushedImage {
  digest: string;
  manifest: Buffer;
  /** the manifest's descriptor, e.g. for an index */
  descriptor: Descriptor;
  ref: string;
}

/** Pushes already-built layers plus a config and an OCI manifest; tags `ref` when it has a tag. */
export async function pushImage(
  client: RegistryClient,
  ref: ImageReference,
  layers: readonly (BuiltLayer | (Descriptor & { path: string }))[],
  ctx: OperationContext,
  options: PushImageOptions = {},
): Promise<PushedImage> {
  const platform = options.platform ?? DEFAULT_PLATFORM;
  for (const l of layers) await pushBlob(client, ref, { path: l.path, digest: l.digest, size: l.size }, ctx);
  const config =
    options.config ??
    Buffer.from(
      JSON.stringify({
        architecture: platform.architecture,
        os: platform.os,
        ...(platform.variant ? { variant: platform.variant } : {}),
        rootfs: { type: 'layers', diff_ids: layers.map((l) => ('diffId' in l ? l.diffId : l.digest)) },
        config: {},
      }),
    );
  const configDesc = await pushBlob(client, ref, config, ctx);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.ociManifest,
      config: { mediaType: options.configMediaType ?? MEDIA_TYPES.ociConfig, digest: configDesc.digest, size: configDesc.size },
      layers: layers.map((l) => ({ mediaType: l.mediaType, digest: l.digest, size: l.size, ...(l.annotations ? { annotations: l.annotations } : {}) })),
      ...(options.annotations ? { annotations: options.annotations } : {}),
    }),
  );
  const digest = await pushManifest(client, ref, manifest, MEDIA_TYPES.ociManifest, ctx);
  return {
    digest,
    manifest,
    descriptor: { mediaType: MEDIA_TYPES.ociManifest, digest, size: manifest.length, platform },
    ref: formatReference(withDigest(ref, digest)),
  };
}

/** Pushes an OCI index over already-pushed manifests; tags `ref` when it has a tag. */
export async function pushIndex(client: RegistryClient, ref: ImageReference, manifests: readonly Descriptor[], ctx: OperationContext): Promise<PushedImage> {
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.ociIndex,
      manifests: manifests.map((m) => ({ mediaType: m.mediaType, digest: m.digest, size: m.size, ...(m.platform ? { platform: m.platform } : {}) })),
    }),
  );
  const digest = await pushManifest(client, ref, index, MEDIA_TYPES.ociIndex, ctx);
  return {
    digest,
    manifest: index,
    descriptor: { mediaType: MEDIA_TYPES.ociIndex, digest, size: index.length },
    ref: formatReference(withDigest(ref, digest)),
  };
}

/** A ready blob file (e.g. a chart .tgz) as a layer descriptor with the given media type. */
export async function fileLayer(path: string, mediaType: string): Promise<Descriptor & { path: string }> {
  return { mediaType, ...(await digestFile(path)), path };
}
