/**
 * Streams a tar archive (plain, gzip or zstd — detected from magic bytes) into a directory,
 * refusing anything that could write or point outside it. Shared by the http source (tarballs),
 * OCI image layers and git. This file streams and decodes; ./tar-tree-writer.ts writes the
 * entries and enforces the per-entry rules below.
 *
 * Guarantees:
 * - nothing is written outside `dest`: entry paths with `..` or a leading `/` are refused, no
 *   entry is written through a symlink (every parent directory is checked with lstat and files
 *   are created with O_EXCL after unlinking whatever was there), symlinks whose target leaves the
 *   tree are refused both lexically when they arrive and by resolving them against the unpacked
 *   tree (with the shared resolver of ./content-tree.ts; links of one archive only: the full rule
 *   for a tree built from several archives, e.g. image layers, is `verifyTree` on the result),
 *   hardlinks may only point at regular files inside the tree;
 * - device, fifo and other special files are refused;
 * - limits (total bytes, file count, single file size, decompressed archive bytes) are enforced
 *   while streaming, from the tar headers before an entry's data is read and again on the bytes
 *   actually written, so a decompression bomb fails after reading little of its input and memory
 *   stays bounded (one chunk at a time, with backpressure).
 * Every refusal is a terminal HoistError of stage 'fetch' naming the entry. An error thrown by
 * the input itself (a network failure) is rethrown unchanged so the caller can classify it.
 * On failure `dest` may hold a partial tree; callers unpack into a temp dir they discard.
 */
import { mkdir } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import * as zlib from 'node:zlib';
import * as tar from 'tar-stream';
import { DEFAULT_MAX_LINK_HOPS, DEFAULT_MAX_LINKS } from './content-tree.ts';
import { ContentCode, HoistError } from './errors.ts';
import { TreeWriter, unpackError } from './tar-tree-writer.ts';

export interface UnpackLimits {
  /** sum of regular-file sizes */
  maxTotalBytes: number;
  /** entries created (files, directories, links) */
  maxFiles: number;
  /** size of any single file */
  maxFileBytes: number;
  /**
   * symlinks: each is resolved in the tree when the archive ends, up to 40 hops, so they are the
   * per-tree budget of ./content-tree.ts (DEFAULT_MAX_LINKS), counted as they arrive
   */
  maxLinks: number;
  /** links followed over all chains in that final pass (./content-tree.ts DEFAULT_MAX_LINK_HOPS) */
  maxLinkHops: number;
  /**
   * bytes of the decompressed tar stream itself (headers, padding, trailing blocks). Default:
   * maxTotalBytes plus 4 KiB per allowed entry, so an endless stream of empty blocks still ends.
   */
  maxArchiveBytes?: number;
}

export const DEFAULT_UNPACK_LIMITS: Readonly<UnpackLimits> = Object.freeze({
  maxTotalBytes: 1024 * 1024 * 1024,
  maxFiles: 100_000,
  maxFileBytes: 256 * 1024 * 1024,
  maxLinks: DEFAULT_MAX_LINKS,
  maxLinkHops: DEFAULT_MAX_LINK_HOPS,
});

export type Compression = 'none' | 'gzip' | 'zstd';

export interface UnpackOptions {
  limits?: Partial<UnpackLimits>;
  /**
   * OCI layer semantics: `.wh.<name>` removes <name> from earlier layers already in `dest`,
   * `.wh..wh..opq` empties its directory of earlier layers' content. Whiteout files themselves
   * are never written. Off by default: for a plain tarball they are ordinary files.
   */
  whiteouts?: boolean;
  /**
   * false: symlink and hardlink entries are refused (code link-refused). For archives whose
   * consumer never follows links, e.g. Helm chart archives, which helm reads as regular files only.
   */
  allowLinks?: boolean;
  /** names the archive in errors, e.g. a redacted URL or a layer digest */
  subject?: string;
  signal?: AbortSignal;
  /**
   * Counts each file's bytes (from its header) before they are written, and refuses by throwing:
   * the content store's budget for a download in flight. Its error ends the unpack unchanged.
   */
  charge?: (bytes: number) => Promise<void>;
}

export interface UnpackResult {
  compression: Compression;
  /** entries created */
  files: number;
  /** sum of regular-file sizes written */
  bytes: number;
  /** symlinks created */
  links: number;
}

const GZIP_MAGIC = [0x1f, 0x8b];
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

type ZstdFactory = () => Transform;
/** Node's zstd decompressor, when this Node has one (24+ does; older ones report ContentCode.BadArchive). */
const createZstdDecompress: ZstdFactory | undefined = (zlib as { createZstdDecompress?: ZstdFactory }).createZstdDecompress;

/** True when zstd-compressed archives can be unpacked by this Node. */
export function zstdSupported(): boolean {
  return createZstdDecompress !== undefined;
}

/** Detects compression from the first bytes of a stream. */
export function detectCompression(head: Uint8Array): Compression {
  if (startsWith(head, ZSTD_MAGIC)) return 'zstd';
  if (startsWith(head, GZIP_MAGIC)) return 'gzip';
  return 'none';
}

/** Unpacks `input` into `dest` (created if needed). May block on I/O; not idempotent on a used dest. */
export async function unpackTar(input: AsyncIterable<Uint8Array>, dest: string, options: UnpackOptions = {}): Promise<UnpackResult> {
  options.signal?.throwIfAborted();
  const limits: Required<UnpackLimits> = resolveLimits(options.limits);
  const subject = options.subject;
  await mkdir(dest, { recursive: true });

  // The input's own failures are remembered so they surface as themselves, not as "bad archive".
  let inputError: unknown;
  const iterator = input[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let headLen = 0;
  let inputDone = false;
  // peek at the first bytes to pick the decoder; they are replayed in front of the rest
  while (headLen < ZSTD_MAGIC.length) {
    const r = await iterator.next();
    if (r.done) {
      inputDone = true;
      break;
    }
    const b = Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength);
    head.push(b);
    headLen += b.length;
  }
  const compression = detectCompression(Buffer.concat(head));
  const source = async function* (): AsyncGenerator<Buffer> {
    yield* head;
    if (inputDone) return;
    try {
      for (;;) {
        let r: IteratorResult<Uint8Array>;
        try {
          r = await iterator.next();
        } catch (e) {
          // only a failure of next() is the input's; errors thrown in at the yield are our own aborts
          inputError = e;
          throw e;
        }
        if (r.done) {
          inputDone = true;
          return;
        }
        yield Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength);
      }
    } finally {
      // stops the input (e.g. an HTTP body) when unpacking ends early
      if (!inputDone && inputError === undefined) await iterator.return?.(undefined);
    }
  };

  const stages: Transform[] = [];
  if (compression === 'gzip') stages.push(zlib.createGunzip());
  if (compression === 'zstd') {
    if (!createZstdDecompress) throw unpackError(ContentCode.BadArchive, 'zstd-compressed archive, but this node has no zstd decoder', subject);
    stages.push(createZstdDecompress());
  }
  stages.push(new ByteLimit(limits.maxArchiveBytes, subject));

  const extract = tar.extract();
  const writer = new TreeWriter(dest, limits, options.whiteouts === true, subject, options.allowLinks !== false, options.charge);
  const abort = new AbortController();
  const onOuterAbort = (): void => abort.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  // Several things fail together when one does (the extractor, the decoder, the input); the
  // report is the root cause: the input's own error, else the first refusal, else the first error.
  const errors: unknown[] = [];
  const record = (e: unknown): void => {
    errors.push(e);
  };

  const decoded = stages[stages.length - 1]!;
  const chain = pipeline([Readable.from(source(), { objectMode: false }), ...stages], { signal: abort.signal });
  const pump = (async () => {
    for await (const chunk of decoded as AsyncIterable<Buffer>) {
      if (!extract.write(chunk)) await drained(extract);
    }
    extract.end(undefined);
  })();
  const feed = Promise.all([chain, pump]).catch((e: unknown) => {
    record(e);
    extract.destroy(e instanceof Error ? e : new Error(String(e)));
  });

  const consume = (async () => {
    for await (const entry of extract) {
      try {
        await writer.entry(entry);
      } catch (e) {
        // recorded before the loop's cleanup destroys the extractor and the feed fails in turn
        record(e);
        abort.abort(e);
        throw e;
      }
    }
    await writer.finish(abort.signal);
  })().catch((e: unknown) => {
    record(e);
    abort.abort(e);
  });

  try {
    await Promise.all([feed, consume]);
  } finally {
    options.signal?.removeEventListener('abort', onOuterAbort);
  }
  if (errors.length === 0) return { compression, files: writer.files, bytes: writer.bytes, links: writer.links };
  if (inputError !== undefined) throw inputError;
  if (options.signal?.aborted) throw options.signal.reason;
  const refusal = errors.find((e) => e instanceof HoistError);
  if (refusal) throw refusal;
  const first = errors[0];
  const message = first instanceof Error ? first.message : String(first);
  throw unpackError(ContentCode.BadArchive, `not a valid ${compression === 'none' ? 'tar' : `${compression} tar`} archive: ${lower(message)}`, subject, first);
}

function resolveLimits(partial: Partial<UnpackLimits> | undefined): Required<UnpackLimits> {
  const l = { ...DEFAULT_UNPACK_LIMITS, ...stripUndefined(partial ?? {}) };
  return { ...l, maxArchiveBytes: l.maxArchiveBytes ?? l.maxTotalBytes + l.maxFiles * 4096 };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Fails the stream once more than `max` bytes went through: bounds work on the decompressed side. */
class ByteLimit extends Transform {
  private seen = 0;
  constructor(
    private readonly max: number,
    private readonly subject: string | undefined,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.max) {
      cb(unpackError(ContentCode.TooLarge, `decompressed archive exceeds ${this.max} bytes`, this.subject));
      return;
    }
    cb(null, chunk);
  }
}

function drained(w: tar.Extract): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      w.off('drain', done);
      w.off('close', closed);
      resolve();
    };
    const closed = (): void => {
      w.off('drain', done);
      reject(new Error('tar extractor closed'));
    };
    w.once('drain', done);
    w.once('close', closed);
  });
}

function startsWith(buf: Uint8Array, magic: readonly number[]): boolean {
  return buf.length >= magic.length && magic.every((b, i) => buf[i] === b);
}

function lower(s: string): string {
  return s.length > 0 ? s[0]!.toLowerCase() + s.slice(1) : s;
}
