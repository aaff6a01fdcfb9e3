/**
 * Writes the entries of a tar archive into a directory for unpack-tar.ts, one at a time, refusing
 * anything that could write or point outside it (the guarantees listed in unpack-tar.ts: checked
 * paths, no write through a symlink, links resolved inside the tree, no special files, counts and
 * sizes within the limits). Holds only bookkeeping (paths), never file contents.
 *
 * May block on I/O. Every refusal is a terminal HoistError of stage 'fetch' naming the entry.
 */
import { constants as fsConstants } from 'node:fs';
import { lstat, mkdir, open, readdir, rm, symlink, link, unlink, type FileHandle } from 'node:fs/promises';
import { posix, join } from 'node:path';
import type * as tar from 'tar-stream';
import { ContentCode, FailureReason, HoistError } from './errors.ts';
import { ContainmentProblem, LinkBudget, lstatOrUndefined, resolveInTree } from './content-tree.ts';
import type { UnpackLimits } from './unpack-tar.ts';

/** one entry as the extractor yields it: header plus a stream of its data */
type TarEntry = tar.Extract extends AsyncIterable<infer E> ? E : never;

const WHITEOUT_PREFIX = '.wh.';
const OPAQUE_WHITEOUT = '.wh..wh..opq';

/** Writes entries one at a time; holds only bookkeeping (paths), never file contents. */
export class TreeWriter {
  files = 0;
  bytes = 0;
  links = 0;
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
    /** counts a file's bytes against the disk budget before they are written (see UnpackOptions.charge) */
    private readonly charge?: (bytes: number) => Promise<void>,
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
            throw unpackError(
              ContentCode.LinkRefused,
              `entry ${quote(h.name)} is a ${h.type === 'link' ? 'hard link' : 'symlink'}; this archive may hold regular files and directories only`,
              this.subject,
            );
          }
          return h.type === 'link' ? await this.hardlink(rel, h.name, h.linkname ?? '') : await this.symlink(rel, h.name, h.linkname ?? '');
        case 'character-device':
        case 'block-device':
        case 'fifo':
          throw unpackError(ContentCode.SpecialFile, `entry ${quote(h.name)} is a ${h.type}; device and fifo files are refused`, this.subject);
        default:
          throw unpackError(ContentCode.BadArchive, `entry ${quote(h.name)} has unsupported type ${h.type}`, this.subject);
      }
    } finally {
      // the extractor waits for every entry's data to be drained before the next header
      entry.resume();
    }
  }

  /**
   * Final pass: every symlink still in the tree must resolve inside it, whatever order they came
   * in. At most maxLinks chains of at most 40 hops, maxLinkHops hops over all of them; stops at
   * the signal (the fetch's deadline), checked at every link and hop.
   */
  async finish(signal?: AbortSignal): Promise<void> {
    const budget = new LinkBudget(this.limits.maxLinkHops, signal);
    for (const rel of this.symlinks) {
      signal?.throwIfAborted();
      let st;
      try {
        st = await lstat(join(this.dest, rel));
      } catch {
        continue; // removed by a later entry or whiteout
      }
      if (!st.isSymbolicLink()) continue;
      await this.resolveInside(rel, budget);
    }
  }

  private count(name: string): void {
    this.files++;
    if (this.files > this.limits.maxFiles) {
      throw unpackError(ContentCode.TooManyFiles, `archive has more than ${this.limits.maxFiles} entries (at ${quote(name)})`, this.subject);
    }
  }

  /** Normalises an entry name to a dest-relative path; undefined for the root. */
  private safePath(name: string): string | undefined {
    if (name.includes('\0')) throw unpackError(ContentCode.BadArchive, `entry name ${quote(name)} contains a nul byte`, this.subject);
    if (name.startsWith('/')) throw unpackError(ContentCode.PathTraversal, `entry ${quote(name)} has an absolute path`, this.subject);
    const parts = name.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.includes('..')) throw unpackError(ContentCode.PathTraversal, `entry ${quote(name)} contains a ".." segment`, this.subject);
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
    // mkdir first (it never follows a link at its own path): only when something is already
    // there does it need a look, to refuse a symlink or a file in the way
    const made = await mkdir(abs, { mode: 0o755 }).then(
      () => true,
      (e: unknown) => {
        if (errnoCode(e) !== 'EEXIST') throw e;
        return false;
      },
    );
    if (!made) {
      const st = await lstat(abs);
      if (st.isSymbolicLink()) {
        throw unpackError(ContentCode.PathTraversal, `entry ${quote(name)} goes through symlink ${quote(rel)}`, this.subject);
      }
      if (!st.isDirectory()) {
        throw unpackError(ContentCode.BadArchive, `entry ${quote(name)} needs ${quote(rel)} to be a directory, but it is a file`, this.subject);
      }
    }
    this.dirs.add(rel);
    this.created.add(rel);
  }

  private async file(entry: TarEntry, rel: string): Promise<void> {
    const name = entry.header.name;
    const size = entry.header.size ?? 0;
    // refuse from the header, before reading a byte of the data
    this.checkSize(name, size);
    await this.charge?.(size);
    await this.parents(rel, name);
    const abs = join(this.dest, rel);
    // O_EXCL|O_NOFOLLOW: never write through a link planted at this path. Whatever is there
    // (an earlier entry or layer, a link) fails the open and is cleared first: in a fresh tree
    // that is rare, so the common case costs one open and no lstat.
    const create = (): Promise<FileHandle> =>
      open(abs, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, fileMode(entry.header.mode));
    const fh = await create().catch(async (e: unknown) => {
      if (errnoCode(e) !== 'EEXIST') throw e;
      await this.clear(rel);
      return create();
    });
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
      throw unpackError(ContentCode.TooLarge, `entry ${quote(name)} is larger than ${this.limits.maxFileBytes} bytes`, this.subject);
    }
    if (this.bytes + size > this.limits.maxTotalBytes) {
      throw unpackError(ContentCode.TooLarge, `archive content exceeds ${this.limits.maxTotalBytes} bytes (at ${quote(name)})`, this.subject);
    }
  }

  private async symlink(rel: string, name: string, target: string): Promise<void> {
    if (target === '') throw unpackError(ContentCode.BadArchive, `symlink ${quote(name)} has an empty target`, this.subject);
    if (target.startsWith('/')) {
      throw unpackError(ContentCode.SymlinkEscape, `symlink ${quote(name)} points to absolute path ${quote(target)}`, this.subject);
    }
    const resolved = posix.normalize(posix.join(posix.dirname(rel), target));
    if (resolved === '..' || resolved.startsWith('../')) {
      throw unpackError(ContentCode.SymlinkEscape, `symlink ${quote(name)} points outside the tree (${quote(target)})`, this.subject);
    }
    if (++this.links > this.limits.maxLinks) {
      throw unpackError(
        ContentCode.TooManyLinks,
        `archive has more than ${this.limits.maxLinks} symlinks (the limit per tree), at ${quote(name)}`,
        this.subject,
      );
    }
    await this.parents(rel, name);
    await this.clear(rel);
    await symlink(target, join(this.dest, rel));
    this.symlinks.add(rel);
    this.created.add(rel);
  }

  private async hardlink(rel: string, name: string, linkname: string): Promise<void> {
    const escape = (why: string): HoistError => unpackError(ContentCode.HardlinkEscape, `hardlink ${quote(name)} ${why} (${quote(linkname)})`, this.subject);
    if (linkname.startsWith('/')) throw escape('points to an absolute path');
    const parts = linkname.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.length === 0 || parts.includes('..')) throw escape('points outside the tree');
    const target = parts.join('/');
    // the target's parents must be real directories too, or link() would follow a symlink out
    await this.parents(target, name);
    const st = await lstatOrUndefined(join(this.dest, target));
    if (!st) throw unpackError(ContentCode.BadArchive, `hardlink ${quote(name)} points to missing entry ${quote(linkname)}`, this.subject);
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
    const name = base.slice(WHITEOUT_PREFIX.length);
    // `.wh..` and `.wh...` would name the directory itself or its parent: a whiteout removes one entry of its own directory
    if (name === '' || name === '.' || name === '..')
      throw unpackError(ContentCode.BadArchive, `whiteout ${quote(rel)} names ${quote(name)}, not an entry of its directory`, this.subject);
    const victim = dir === '' ? name : `${dir}/${name}`;
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
  private async resolveInside(rel: string, budget: LinkBudget): Promise<void> {
    try {
      await resolveInTree(this.dest, rel, undefined, '', budget);
    } catch (e) {
      if (!(e instanceof ContainmentProblem)) throw e;
      if (e.stop) throw unpackError(e.code, e.message, this.subject);
      if (e.code === ContentCode.SymlinkEscape)
        throw unpackError(ContentCode.SymlinkEscape, `symlink ${quote(rel)} resolves outside the tree: ${e.message}`, this.subject);
    }
  }
}

function fileMode(mode: number | undefined): number {
  // keep the execute bits, drop setuid/setgid/sticky and group/other write; we must be able to read and delete
  return ((mode ?? 0o644) & 0o755) | 0o600;
}

function quote(s: string): string {
  return JSON.stringify(s);
}

function errnoCode(e: unknown): unknown {
  return typeof e === 'object' && e !== null && 'code' in e ? (e as { code: unknown }).code : undefined;
}

/** An unpack refusal: terminal, stage 'fetch', reason UnpackFailed. */
export function unpackError(code: ContentCode, message: string, subject: string | undefined, cause?: unknown): HoistError {
  return new HoistError(message, { stage: 'fetch', reason: FailureReason.UnpackFailed, code, subject, terminal: true, cause });
}
