/**
 * One file (about 400 lines) because it is one rule: `verifyTree` and `ContentTree` share the
 * resolver and its errors, and keeping them together is what keeps the rule single.
 *
 * The one containment rule for content trees (a fetched source, a composed bundle, a chart):
 *
 *   every symlink in the tree, followed through any chain of links as the kernel would but with
 *   the tree's root as "/" boundary, must end at a regular file inside the tree.
 *
 * Refused: absolute targets, targets that climb above the root (also through a chain, e.g.
 * `y -> .`, `x -> y/..`), links to directories (helm walks them: cycles and fan-out), to
 * fifos, sockets or devices, dangling links, loops. Special files themselves are refused too.
 * Paths in every error are relative to the tree root (the bundle's own paths); the absolute
 * location of the tree (the controller's cache) never appears in a message.
 *
 * Two uses, one resolver:
 *   - `verifyTree(root)` walks a whole tree once (after it is composed, or before helm reads it);
 *   - `ContentTree.read(rel)` is how processors read a file: resolved inside the root, a regular
 *     file, at most `maxBytes` (checked on the bytes actually read, so a file that grows or lies
 *     about its size cannot exceed it), opened with O_NOFOLLOW.
 * Both only read the tree; may block on I/O.
 */
import { constants as fsConstants, type Dirent, type Stats } from 'node:fs';
import { lstat, open, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ContentCode, HoistError, type FailureReason, type Stage } from './errors.ts';

/** Links followed before a chain counts as a loop (Linux's own limit): the budget per chain. */
export const MAX_SYMLINK_HOPS = 40;

/**
 * Symlinks `verifyTree` resolves in one tree before it refuses the tree: the budget per tree.
 * A chain costs up to MAX_SYMLINK_HOPS lookups (about 17 ms measured for a 40-hop chain), so
 * this bounds one verification to a few minutes of I/O at worst, under the fetch deadline.
 */
export const DEFAULT_MAX_LINKS = 10_000;

/**
 * Links followed, over all chains, while one tree is checked: the hop budget per tree. Two per
 * link at the link budget (most trees' links are one hop). A hop is an lstat and a readlink
 * (about 60 µs of CPU measured), so a tree of the worst chains the other budgets allow (9,960
 * links in chains of 40, about 200,000 hops and 13 s of CPU) is refused after at most this many.
 */
export const DEFAULT_MAX_LINK_HOPS = 2 * DEFAULT_MAX_LINKS;

export type ContainmentCode =
  | typeof ContentCode.SymlinkEscape
  | typeof ContentCode.NotARegularFile
  | typeof ContentCode.SpecialFile
  | typeof ContentCode.NotFound
  | typeof ContentCode.TooLarge
  | typeof ContentCode.TooManyLinks
  | typeof ContentCode.ReadError;

export interface TreeErrorContext {
  stage: Stage;
  /** condition reason of the errors when narrower than the stage's, e.g. UnpackFailed */
  reason?: FailureReason;
  /** names the tree's owner in messages, e.g. "plain processor"; optional */
  who?: string;
}

export interface TreeLimits {
  /** most bytes of one file */
  maxFileBytes?: number;
  /** most bytes of all regular files together (verifyTree only) */
  maxTotalBytes?: number;
}

export interface Resolved {
  /** canonical path relative to the root, no links in it; "" is the root */
  path: string;
  stats: Stats;
}

/** Why a path does not resolve to something usable inside the tree (no absolute paths in it). */
export class ContainmentProblem extends Error {
  constructor(
    readonly code: ContainmentCode,
    readonly path: string,
    message: string,
    /** true when the path itself is absent (no link led there): callers may treat it as optional */
    readonly absent = false,
    /** true when a budget ran out: the whole check stops, this is no finding about one link */
    readonly stop = false,
  ) {
    super(message);
  }
}

/**
 * The hop budget of one tree check, shared by every chain it resolves: counts hops and checks
 * the operation's abort signal (its deadline) at each. Exhausted, it throws a ContainmentProblem
 * with `stop` set: the check ends there rather than collecting it as one more bad link.
 */
export class LinkBudget {
  hops = 0;

  constructor(
    readonly maxHops: number = DEFAULT_MAX_LINK_HOPS,
    private readonly signal?: AbortSignal,
  ) {}

  /** one more link followed at `path` (tree-relative, as messages show it) */
  hop(path: string): void {
    this.signal?.throwIfAborted();
    if (++this.hops > this.maxHops) {
      throw new ContainmentProblem(
        ContentCode.TooManyLinks,
        path,
        `resolving the symlinks of the content tree took more than ${this.maxHops} link hops (the limit per tree: chains too long or too many), at ${quote(path)}`,
        false,
        true,
      );
    }
  }
}

function quote(s: string): string {
  return JSON.stringify(s);
}

function errnoCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}

/** an error of a Node fs call (it names its syscall), not e.g. an abort reason */
function isFsError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && 'syscall' in e;
}

/** Node's fs error, without the path Node puts in its message. */
export function describeFsError(e: unknown): string {
  switch (errnoCode(e)) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    case 'ENOTDIR':
      return 'a parent is not a directory';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    case 'EMFILE':
    case 'ENFILE':
      return 'too many open files';
    case 'EIO':
      return 'input/output error';
    default: {
      const code = errnoCode(e);
      return code ? `i/o error ${code}` : 'i/o error';
    }
  }
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a fifo';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** lstat, or undefined when nothing is there (a missing entry or a file where a directory was expected) */
export async function lstatOrUndefined(abs: string): Promise<Stats | undefined> {
  try {
    return await lstat(abs);
  } catch (e) {
    const code = errnoCode(e);
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw e;
  }
}

/**
 * Follows `rel` through the tree's links, component by component, never leaving `root`. Returns
 * the canonical path and its lstat (never a link). Throws ContainmentProblem: symlink-escape
 * (absolute target, `..` above the root, a loop), not-found; with `budget`, too-many-links (`stop`)
 * when the tree's hops run out. `dirs` caches paths known to be real directories, so reading many
 * files of one tree costs one lstat per directory.
 */
export async function resolveInTree(root: string, rel: string, dirs: Set<string> = new Set(), prefix = '', budget?: LinkBudget): Promise<Resolved> {
  /** a tree path as messages show it */
  const show = (p: string): string => quote(prefix + p);
  const stack: string[] = [];
  let pending = rel.split('/');
  let hops = 0;
  let via: string | undefined;
  const escape = (why: string): ContainmentProblem =>
    new ContainmentProblem(ContentCode.SymlinkEscape, prefix + rel, `${via === undefined ? `path ${show(rel)}` : `symlink ${show(via)}`} ${why}`);
  let stats: Stats | undefined;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (stack.length === 0) throw escape('leads outside the content tree');
      stack.pop();
      stats = undefined;
      continue;
    }
    stack.push(part);
    const cur = stack.join('/');
    if (pending.length > 0 && dirs.has(cur)) {
      stats = undefined;
      continue;
    }
    const st = await lstatOrUndefined(join(root, ...stack));
    if (st === undefined) {
      if (via === undefined) throw new ContainmentProblem(ContentCode.NotFound, prefix + rel, `${show(rel)} does not exist`, true);
      throw new ContainmentProblem(ContentCode.NotFound, prefix + rel, `symlink ${show(via)} points to ${show(cur)}, which does not exist in the content tree`);
    }
    if (!st.isSymbolicLink()) {
      if (st.isDirectory()) dirs.add(cur);
      else if (pending.some((p) => p !== '' && p !== '.')) throw new ContainmentProblem(ContentCode.NotFound, prefix + rel, `${show(cur)} is not a directory`);
      stats = st;
      continue;
    }
    if (++hops > MAX_SYMLINK_HOPS) throw escape(`has more than ${MAX_SYMLINK_HOPS} levels of links (the limit per chain: a loop, or a chain too long)`);
    via ??= cur;
    budget?.hop(prefix + rel);
    const target = await readlink(join(root, ...stack));
    if (target.startsWith('/')) throw escape(`leads to absolute path ${quote(target)}, outside the content tree`);
    stack.pop();
    pending = [...target.split('/'), ...pending];
    stats = undefined;
  }
  stats ??= await lstat(join(root, ...stack));
  return { path: stack.join('/'), stats };
}

/** Resolves `rel` and requires a regular file at the end of it. */
async function resolveFileInTree(root: string, rel: string, dirs?: Set<string>, prefix = '', budget?: LinkBudget): Promise<Resolved> {
  const r = await resolveInTree(root, rel, dirs, prefix, budget);
  if (!r.stats.isFile()) {
    const linked = r.path !== rel;
    const what = kindOf(r.stats);
    throw new ContainmentProblem(
      r.stats.isDirectory() ? ContentCode.NotARegularFile : ContentCode.SpecialFile,
      prefix + rel,
      linked
        ? `symlink ${quote(prefix + rel)} points to ${quote(prefix + r.path || '.')}, which is ${what}; links must end at a regular file in the content tree`
        : `${quote(prefix + rel)} is ${what}`,
    );
  }
  return r;
}

function toHoistError(p: ContainmentProblem, ctx: TreeErrorContext): HoistError {
  const message = ctx.who ? `${ctx.who}: ${p.message}` : p.message;
  return new HoistError(message, { stage: ctx.stage, ...(ctx.reason ? { reason: ctx.reason } : {}), code: p.code, subject: p.path, terminal: true });
}

export interface VerifyResult {
  files: number;
  symlinks: number;
  bytes: number;
}

/**
 * Checks a whole tree against the rule (module comment), and the limits when given. Throws a
 * terminal HoistError naming the worst offending link relative to the root (with `prefix`), and
 * the other offending links after it; a special file, a size limit or the link budget
 * (`maxLinks` per tree, `maxLinkHops` per tree, MAX_SYMLINK_HOPS per chain) stops the walk at
 * once. Bounded work: at most `maxLinks` chains and `maxLinkHops` links followed over all of them;
 * stops with the signal's reason when it fires (checked at every directory, link and hop).
 */
export async function verifyTree(
  root: string,
  ctx: TreeErrorContext & {
    limits?: TreeLimits;
    /** shown in front of every path: where this tree sits in the bundle */
    prefix?: string;
    /** walk only this directory of the tree (links still resolve against the whole tree) */
    under?: string;
    /** most symlinks resolved in this tree; default DEFAULT_MAX_LINKS (terminal `too-many-links`) */
    maxLinks?: number;
    /** most links followed over all chains; default DEFAULT_MAX_LINK_HOPS (terminal `too-many-links`) */
    maxLinkHops?: number;
    /** the operation's deadline or abort: checked before every directory, every link and every hop */
    signal?: AbortSignal;
  },
): Promise<VerifyResult> {
  const maxLinks = ctx.maxLinks ?? DEFAULT_MAX_LINKS;
  const budget = new LinkBudget(ctx.maxLinkHops ?? DEFAULT_MAX_LINK_HOPS, ctx.signal);
  const prefix = ctx.prefix ? `${ctx.prefix.replace(/\/+$/, '')}/` : '';
  const result: VerifyResult = { files: 0, symlinks: 0, bytes: 0 };
  const dirs = new Set<string>();
  const problems: ContainmentProblem[] = [];
  const fail = (code: ContainmentCode, rel: string, message: string): HoistError => toHoistError(new ContainmentProblem(code, prefix + rel, message), ctx);
  const walk = async (dirRel: string): Promise<void> => {
    ctx.signal?.throwIfAborted();
    let entries: Dirent[];
    try {
      entries = await readdir(dirRel === '' ? root : join(root, dirRel), { withFileTypes: true });
    } catch (e) {
      throw fail(ContentCode.ReadError, dirRel || '.', `cannot read directory ${quote(prefix + (dirRel || '.'))}: ${describeFsError(e)}`);
    }
    // bytewise order: the first problem reported is the same on every run
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const rel = dirRel === '' ? entry.name : `${dirRel}/${entry.name}`;
      if (entry.isDirectory()) {
        dirs.add(rel);
        await walk(rel);
      } else if (entry.isSymbolicLink()) {
        if (++result.symlinks > maxLinks) {
          throw fail(ContentCode.TooManyLinks, rel, `more than ${maxLinks} symlinks in the content tree (the limit per tree), at ${quote(prefix + rel)}`);
        }
        ctx.signal?.throwIfAborted();
        try {
          await resolveFileInTree(root, rel, dirs, prefix, budget);
        } catch (e) {
          if (!(e instanceof ContainmentProblem)) {
            // the signal's reason (checked at each hop) ends the walk as itself
            if (!isFsError(e)) throw e;
            throw fail(ContentCode.ReadError, rel, `cannot resolve symlink ${quote(prefix + rel)}: ${describeFsError(e)}`);
          }
          if (e.stop) throw toHoistError(e, ctx);
          problems.push(new ContainmentProblem(e.code, prefix + rel, e.message));
        }
      } else if (entry.isFile()) {
        result.files++;
        if (ctx.limits?.maxFileBytes !== undefined || ctx.limits?.maxTotalBytes !== undefined) {
          const size = (
            await lstat(join(root, rel)).catch((e: unknown) => {
              throw fail(ContentCode.ReadError, rel, `cannot read ${quote(prefix + rel)}: ${describeFsError(e)}`);
            })
          ).size;
          result.bytes += size;
          checkSize(ctx.limits, prefix + rel, size, result.bytes, (code, m) => fail(code, rel, m));
        }
      } else {
        throw fail(
          ContentCode.SpecialFile,
          rel,
          `${quote(prefix + rel)} is a special file (fifo, socket or device); only regular files, directories and symlinks to files are allowed`,
        );
      }
    }
  };
  await walk(ctx.under ?? '');
  if (problems.length > 0) {
    // the worst first: a link out of the tree matters more than a link to a directory
    const worst = [...problems].sort((a, b) => SEVERITY.indexOf(a.code) - SEVERITY.indexOf(b.code))[0]!;
    const others = problems.filter((p) => p !== worst);
    const more =
      others.length === 0
        ? ''
        : `; other offending links: ${others
            .slice(0, 10)
            .map((p) => quote(p.path))
            .join(', ')}${others.length > 10 ? ` and ${others.length - 10} more` : ''}`;
    throw toHoistError(new ContainmentProblem(worst.code, worst.path, worst.message + more), ctx);
  }
  return result;
}

const SEVERITY: readonly ContainmentCode[] = [
  ContentCode.SymlinkEscape,
  ContentCode.SpecialFile,
  ContentCode.NotARegularFile,
  ContentCode.NotFound,
  ContentCode.TooLarge,
  ContentCode.TooManyLinks,
  ContentCode.ReadError,
];

function checkSize(limits: TreeLimits | undefined, rel: string, size: number, total: number, fail: (code: ContainmentCode, m: string) => HoistError): void {
  if (limits?.maxFileBytes !== undefined && size > limits.maxFileBytes) {
    throw fail(ContentCode.TooLarge, `${quote(rel)} is ${size} bytes, over the limit of ${formatBytes(limits.maxFileBytes)} per file`);
  }
  if (limits?.maxTotalBytes !== undefined && total > limits.maxTotalBytes) {
    throw fail(ContentCode.TooLarge, `files add up to more than the limit of ${formatBytes(limits.maxTotalBytes)} (at ${quote(rel)})`);
  }
}

/** "64 MiB" for round sizes, bytes otherwise. */
export function formatBytes(n: number): string {
  const mib = 1024 * 1024;
  if (n >= mib && n % mib === 0) return `${n / mib} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

export interface ReadOptions {
  /** most bytes this file may have; default: the tree's maxFileBytes */
  maxBytes?: number;
}

/**
 * Reads files of one tree under the rule, with a per-file cap and an optional running total.
 * Not safe to share between trees; cheap to create (one per render).
 */
export class ContentTree {
  private readonly dirs = new Set<string>();
  /** bytes returned by read() so far */
  bytesRead = 0;

  constructor(
    readonly root: string,
    private readonly ctx: TreeErrorContext & { limits: Required<TreeLimits> },
  ) {}

  /** the running total passed its limit: every further read fails the same way */
  get exhausted(): boolean {
    return this.bytesRead > this.ctx.limits.maxTotalBytes;
  }

  /** The HoistError for a problem with `rel`, in this tree's stage and wording. */
  error(code: ContainmentCode, rel: string, message: string): HoistError {
    return toHoistError(new ContainmentProblem(code, rel, message), this.ctx);
  }

  /** Resolves `rel` to a regular file inside the tree; undefined when nothing is there (no link involved). */
  async resolveFile(rel: string): Promise<Resolved | undefined> {
    try {
      return await resolveFileInTree(this.root, rel, this.dirs);
    } catch (e) {
      if (e instanceof ContainmentProblem) {
        if (e.absent) return undefined;
        throw toHoistError(e, this.ctx);
      }
      throw this.error(ContentCode.ReadError, rel, `cannot read ${quote(rel)}: ${describeFsError(e)}`);
    }
  }

  /** The file's bytes; undefined when `rel` does not exist. Throws a HoistError for anything unsafe. */
  async readOptional(rel: string, opts: ReadOptions = {}): Promise<Buffer | undefined> {
    const r = await this.resolveFile(rel);
    if (r === undefined) return undefined;
    const max = opts.maxBytes ?? this.ctx.limits.maxFileBytes;
    const tooLarge = (size: number | string): HoistError =>
      this.error(ContentCode.TooLarge, rel, `${quote(rel)} is ${size} bytes, over the limit of ${formatBytes(max)} per file`);
    if (r.stats.size > max) throw tooLarge(r.stats.size);
    let fh;
    try {
      // O_NOFOLLOW: the resolved path has no links; refuse one planted since
      fh = await open(join(this.root, r.path), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    } catch (e) {
      throw this.error(ContentCode.ReadError, rel, `cannot read ${quote(rel)}: ${describeFsError(e)}`);
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw this.error(ContentCode.SpecialFile, rel, `${quote(rel)} is ${kindOf(st)}`);
      // read until EOF, never more than max+1 bytes: the cap holds whatever the size said
      const chunks: Buffer[] = [];
      let n = 0;
      for (;;) {
        const chunk = Buffer.allocUnsafe(Math.min(max + 1 - n, Math.max(st.size - n, 0) + 64 * 1024));
        const { bytesRead } = await fh.read(chunk, 0, chunk.length, n);
        if (bytesRead === 0) break;
        chunks.push(chunk.subarray(0, bytesRead));
        n += bytesRead;
        if (n > max) break;
        // a regular file's short read is its end: no further read to learn that (the chunk has
        // room past the size fstat gave, so a file that grew since fills it and is read on)
        if (bytesRead < chunk.length) break;
      }
      if (n > max) throw tooLarge(`more than ${max}`);
      this.bytesRead += n;
      if (this.bytesRead > this.ctx.limits.maxTotalBytes) {
        throw this.error(
          ContentCode.TooLarge,
          rel,
          `files read add up to more than the limit of ${formatBytes(this.ctx.limits.maxTotalBytes)} per bundle (at ${quote(rel)})`,
        );
      }
      // a file read in one go (the usual case) is returned as read, not copied once more
      return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, n);
    } catch (e) {
      if (e instanceof HoistError) throw e;
      throw this.error(ContentCode.ReadError, rel, `cannot read ${quote(rel)}: ${describeFsError(e)}`);
    } finally {
      await fh.close();
    }
  }

  /** The file's bytes; a missing file is a read-error naming it. */
  async read(rel: string, opts: ReadOptions = {}): Promise<Buffer> {
    const b = await this.readOptional(rel, opts);
    if (b === undefined) throw this.error(ContentCode.NotFound, rel, `${quote(rel)} does not exist`);
    return b;
  }

  /** UTF-8 text of the file; undefined when it does not exist. */
  async readTextOptional(rel: string, opts: ReadOptions = {}): Promise<string | undefined> {
    return (await this.readOptional(rel, opts))?.toString('utf8');
  }

  async readText(rel: string, opts: ReadOptions = {}): Promise<string> {
    return (await this.read(rel, opts)).toString('utf8');
  }

  /** Entries of a directory of the tree (which must be a real directory inside it), sorted bytewise. */
  async list(rel: string): Promise<Dirent[] | undefined> {
    if (rel !== '' && rel !== '.') {
      let r: Resolved;
      try {
        r = await resolveInTree(this.root, rel, this.dirs);
      } catch (e) {
        if (e instanceof ContainmentProblem) {
          if (e.absent) return undefined;
          throw toHoistError(e, this.ctx);
        }
        throw this.error(ContentCode.ReadError, rel, `cannot read directory ${quote(rel)}: ${describeFsError(e)}`);
      }
      if (r.path !== rel)
        throw this.error(ContentCode.NotARegularFile, rel, `${quote(rel)} is a symlink to a directory; links must end at a regular file in the content tree`);
      if (!r.stats.isDirectory()) return undefined;
    }
    try {
      const entries = await readdir(rel === '' || rel === '.' ? this.root : join(this.root, rel), { withFileTypes: true });
      return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } catch (e) {
      throw this.error(ContentCode.ReadError, rel || '.', `cannot read directory ${quote(rel || '.')}: ${describeFsError(e)}`);
    }
  }
}
