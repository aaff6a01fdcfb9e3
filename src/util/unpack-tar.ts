/**
 * Streams a tar archive (plain, gzip or zstd — detected from magic bytes) into a directory,
 * refusing anything that could write or point outside it. Shared by the http source (tarballs),
 * OCI image layers and git.
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
import { constants as fsConstants } from 'node:fs';
import { lstat, mkdir, open, readdir, rm, symlink, link, unlink } from 'node:fs/promises';
import { posix, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import * as zlib from 'node:zlib';
import * as tar from 'tar-stream';

/** one entry as the extractor yields it: header plus a stream of its data */
type TarEntry = tar.Extract extends AsyncIterable<infer E> ? E : never;
import { HoistError } from './errors.ts';
import { ContainmentProblem, resolveInTree } from './content-tree.ts';

export interface UnpackLimits {
  /** sum of regular-file sizes */
  maxTotalBytes: number;
  /** entries created (files, directories, links) */
  maxFiles: number;
  /** size of any single file */
  maxFileBytes: number;
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
}

export interface UnpackResult {
  compression: Compression;
  /** entries created */
  files: number;
  /** sum of regular-file sizes written */
  bytes: number;
}

const GZIP_MAGIC = [0x1f, 0x8b];
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];
const WHITEOUT_PREFIX = '.wh.';
const OPAQUE_WHITEOUT = '.wh..wh..opq';

type ZstdFactory = () => Transform;
/** Node's zstd decompressor, when this Node has one (24+ does; older ones report 'bad-archive'). */
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
export async function unpackTar(
  input: AsyncIterable<Uint8Array>,
  dest: string,
  options: UnpackOptions = {},
): Promise<UnpackResult> {
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
    if (!createZstdDecompress) throw fail('bad-archive', 'zstd-compressed archive, but this node has no zstd decoder', subject);
    stages.push(createZstdDecompress());
  }
  stages.push(new ByteLimit(limits.maxArchiveBytes, subject));

  const extract = tar.extract();
  const writer = new TreeWriter(dest, limits, options.whiteouts === true, subject, options.allowLinks !== false);
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
    await writer.finish();
  })().catch((e: unknown) => {
    record(e);
    abort.abort(e);
  });

  try {
    await Promise.all([feed, consume]);
  } finally {
    options.signal?.removeEventListener('abort', onOuterAbort);
  }
  if (errors.length === 0) return { compression, files: writer.files, bytes: writer.bytes };
  if (inputError !== undefined) throw inputError;
  if (options.signal?.aborted) throw options.signal.reason;
  const refusal = errors.find((e) => e instanceof HoistError);
  if (refusal) throw refusal;
  const first = errors[0];
  const message = first instanceof Error ? first.message : String(first);
  throw fail('bad-archive', `not a valid ${compression === 'none' ? 'tar' : `${compression} tar`} archive: ${lower(message)}`, subject, first);
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
      cb(fail('too-large', `decompressed archive exceeds ${this.max} bytes`, this.subject));
      return;
    }
    cb(null, chunk);
  }
}

/** Writes entries one at a time; holds only bookkeeping (paths), never file contents. */
class TreeWriter {
  files = 0;
  bytes = 0;
  /** directories known to be real directories (not symlinks), relative to dest; '' is dest */
  private readonly dirs = new Set<string>(['']);
  /** paths created by this archive: whiteouts only remove what earlier layers put there */
  private readonly created = new Set<string>();
  private readonly symlinks = new Set<string>();

  constructor(
    private readonly dest: string,
    private readonly limits: Required<UnpackLimits>,
    private readonly whiteouts: boolean,
    private readonly subject: string | undefined,
    private readonly allowLinks: boolean,
  ) {}

  async entry(entry: TarEntry): Promise<void> {
    const h = entry.header;
    const rel = this.safePath(h.name);
    try {
      if (rel === undefined) return; // the archive root itself ("./")
      this.count(h.name);
      if (this.whiteouts && posix.basename(rel).startsWith(WHITEOUT_PREFIX)) return await this.whiteout(rel);
      // tar-stream reports unknown typeflags as null, so the type is wider than its declaration says
      switch (h.type as string | null) {
        case 'file':
        case 'contiguous-file':
          return await this.file(entry, rel);
        case 'directory':
          await this.parents(rel, h.name);
          await this.directory(rel, h.name);
          return;
        case 'symlink':
        case 'link':
          if (!this.allowLinks) {
            throw fail('link-refused', `entry ${quote(h.name)} is a ${h.type === 'link' ? 'hard link' : 'symlink'}; this archive may hold regular files and directories only`, this.subject);
          }
          return h.type === 'link' ? await this.hardlink(rel, h.name, h.linkname ?? '') : await this.symlink(rel, h.name, h.linkname ?? '');
        case 'character-device':
        case 'block-device':
        case 'fifo':
          throw fail('special-file', `entry ${quote(h.name)} is a ${h.type}; device and fifo files are refused`, this.subject);
        default:
          throw fail('bad-archive', `entry ${quote(h.name)} has unsupported type ${h.type}`, this.subject);
      }
    } finally {
      // the extractor waits for every entry's data to be drained before the next header
      entry.resume();
    }
  }

  /** Final pass: every symlink still in the tree must resolve inside it, whatever order they came in. */
  async finish(): Promise<void> {
    for (const rel of this.symlinks) {
      let st;
      try {
        st = await lstat(join(this.dest, rel));
      } catch {
        continue; // removed by a later entry or whiteout
      }
      if (!st.isSymbolicLink()) continue;
      await this.resolveInside(rel);
    }
  }

  private count(name: string): void {
    this.files++;
    if (this.files > this.limits.maxFiles) {
      throw fail('too-many-files', `archive has more than ${this.limits.maxFiles} entries (at ${quote(name)})`, this.subject);
    }
  }

  /** Normalises an entry name to a dest-relative path; undefined for the root. */
  private safePath(name: string): string | undefined {
    if (name.includes('\0')) throw fail('bad-archive', `entry name ${quote(name)} contains a nul byte`, this.subject);
    if (name.startsWith('/')) throw fail('path-traversal', `entry ${quote(name)} has an absolute path`, this.subject);
    const parts = name.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.includes('..')) throw fail('path-traversal', `entry ${quote(name)} contains a ".." segment`, this.subject);
    return parts.length === 0 ? undefined : parts.join('/');
  }

  /** Makes every parent of `rel` a real directory; refuses to go through a symlink. */
  private async parents(rel: string, name: string): Promise<void> {
    const parts = rel.split('/');
    let cur = '';
    for (let i = 0; i < parts.length - 1; i++) {
      cur = cur === '' ? parts[i]! : `${cur}/${parts[i]!}`;
      if (this.dirs.has(cur)) continue;
      await this.directory(cur, name);
    }
  }

  private async directory(rel: string, name: string): Promise<void> {
    if (this.dirs.has(rel)) return;
    const abs = join(this.dest, rel);
    const st = await lstatOrUndefined(abs);
    if (st?.isSymbolicLink()) {
      throw fail('path-traversal', `entry ${quote(name)} goes through symlink ${quote(rel)}`, this.subject);
    }
    if (st && !st.isDirectory()) {
      throw fail('bad-archive', `entry ${quote(name)} needs ${quote(rel)} to be a directory, but it is a file`, this.subject);
    }
    if (!st) await mkdir(abs, { mode: 0o755 });
    this.dirs.add(rel);
    this.created.add(rel);
  }

  private async file(entry: TarEntry, rel: string): Promise<void> {
    const name = entry.header.name;
    const size = entry.header.size ?? 0;
    // refuse from the header, before reading a byte of the data
    this.checkSize(name, size);
    await this.parents(rel, name);
    const abs = join(this.dest, rel);
    await this.clear(rel);
    // O_EXCL|O_NOFOLLOW: never write through a link planted at this path
    const fh = await open(abs, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, fileMode(entry.header.mode));
    let written = 0;
    try {
      for await (const chunk of entry as AsyncIterable<Buffer>) {
        written += chunk.length;
        // the header already passed; this is defence against a stream that does not match it
        this.checkSize(name, written);
        await fh.write(chunk);
      }
    } finally {
      await fh.close();
    }
    this.bytes += written;
    this.created.add(rel);
  }

  /** `size`: the current file's size (from its header, or written so far); this.bytes excludes it */
  private checkSize(name: string, size: number): void {
    if (size > this.limits.maxFileBytes) {
      throw fail('too-large', `entry ${quote(name)} is larger than ${this.limits.maxFileBytes} bytes`, this.subject);
    }
    if (this.bytes + size > this.limits.maxTotalBytes) {
      throw fail('too-large', `archive content exceeds ${this.limits.maxTotalBytes} bytes (at ${quote(name)})`, this.subject);
    }
  }

  private async symlink(rel: string, name: string, target: string): Promise<void> {
    if (target === '') throw fail('bad-archive', `symlink ${quote(name)} has an empty target`, this.subject);
    if (target.startsWith('/')) {
      throw fail('symlink-escape', `symlink ${quote(name)} points to absolute path ${quote(target)}`, this.subject);
    }
    const resolved = posix.normalize(posix.join(posix.dirname(rel), target));
    if (resolved === '..' || resolved.startsWith('../')) {
      throw fail('symlink-escape', `symlink ${quote(name)} points outside the tree (${quote(target)})`, this.subject);
    }
    await this.parents(rel, name);
    await this.clear(rel);
    await symlink(target, join(this.dest, rel));
    this.symlinks.add(rel);
    this.created.add(rel);
  }

  private async hardlink(rel: string, name: string, linkname: string): Promise<void> {
    const escape = (why: string): HoistError =>
      fail('hardlink-escape', `hardlink ${quote(name)} ${why} (${quote(linkname)})`, this.subject);
    if (linkname.startsWith('/')) throw escape('points to an absolute path');
    const parts = linkname.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.length === 0 || parts.includes('..')) throw escape('points outside the tree');
    const target = parts.join('/');
    // the target's parents must be real directories too, or link() would follow a symlink out
    await this.parents(target, name);
    const st = await lstatOrUndefined(join(this.dest, target));
    if (!st) throw fail('bad-archive', `hardlink ${quote(name)} points to missing entry ${quote(linkname)}`, this.subject);
    if (!st.isFile()) throw escape('must point to a regular file');
    await this.parents(rel, name);
    await this.clear(rel);
    await link(join(this.dest, target), join(this.dest, rel));
    this.created.add(rel);
  }

  private async whiteout(rel: string): Promise<void> {
    const dir = posix.dirname(rel) === '.' ? '' : posix.dirname(rel);
    const base = posix.basename(rel);
    if (dir !== '') await this.parents(rel, rel);
    if (base === OPAQUE_WHITEOUT) {
      const absDir = join(this.dest, dir);
      for (const child of await readdir(absDir)) {
        const childRel = dir === '' ? child : `${dir}/${child}`;
        if (!this.created.has(childRel)) await this.clear(childRel);
      }
      return;
    }
    const victim = dir === '' ? base.slice(WHITEOUT_PREFIX.length) : `${dir}/${base.slice(WHITEOUT_PREFIX.length)}`;
    if (victim === '' || victim.endsWith('/')) return;
    if (!this.created.has(victim)) await this.clear(victim);
  }

  /** Removes whatever is at `rel` (file, link or directory tree) and forgets its bookkeeping. */
  private async clear(rel: string): Promise<void> {
    const abs = join(this.dest, rel);
    const st = await lstatOrUndefined(abs);
    if (!st) return;
    if (st.isDirectory()) {
      await rm(abs, { recursive: true, force: true });
      const prefix = `${rel}/`;
      for (const d of this.dirs) if (d === rel || d.startsWith(prefix)) this.dirs.delete(d);
    } else {
      await unlink(abs);
    }
  }

  /**
   * Follows `rel` through the tree's links with the shared resolver (./content-tree.ts), refusing
   * any that leaves dest. A dangling link is left for the final check of the composed tree: a
   * later layer may still add its target.
   */
  private async resolveInside(rel: string): Promise<void> {
    try {
      await resolveInTree(this.dest, rel);
    } catch (e) {
      if (!(e instanceof ContainmentProblem)) throw e;
      if (e.code === 'symlink-escape') throw fail('symlink-escape', `symlink ${quote(rel)} resolves outside the tree: ${e.message}`, this.subject);
    }
  }
}

function fileMode(mode: number | undefined): number {
  // keep the execute bits, drop setuid/setgid/sticky and group/other write; we must be able to read and delete
  return ((mode ?? 0o644) & 0o755) | 0o600;
}

async function lstatOrUndefined(abs: string): Promise<Awaited<ReturnType<typeof lstat>> | undefined> {
  try {
    return await lstat(abs);
  } catch (e) {
    const code = typeof e === 'object' && e !== null && 'code' in e ? (e as { code: unknown }).code : undefined;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw e;
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

function quote(s: string): string {
  return JSON.stringify(s);
}

function lower(s: string): string {
  return s.length > 0 ? s[0]!.toLowerCase() + s.slice(1) : s;
}

function fail(code: string, message: string, subject: string | undefined, cause?: unknown): HoistError {
  return new HoistError(message, { stage: 'fetch', reason: 'UnpackFailed', code, subject, terminal: true, cause });
}
