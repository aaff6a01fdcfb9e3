/**
 * Writes one directory of one fetched commit into a target directory, after checking the whole
 * listing first: nothing is written when any entry is unsafe or a limit is exceeded, so a hostile
 * repository fails before it costs disk.
 *
 * Checks, made while `ls-tree -r` streams (git is killed at the first refusal, so a tree that
 * repeats one subtree at every level costs at most `maxFiles` entries of work, not its 10⁹
 * paths): every path segment is a plain name (no "", ".", "..", ".git"); entries, bytes and
 * symlinks stay within limits; each symlink's blob is at most MAX_SYMLINK_TARGET_BYTES (4 KiB:
 * a link target is a path). The targets are then read through `cat-file --batch`, streamed, and
 * each must stay inside the checked-out directory lexically (an early, cheap refusal). A lexical
 * check is not complete — a chain (`y -> .`, `x -> y/../..`) leaves the tree although every link
 * alone looks inside — so the written tree is then checked with the containment rule
 * (src/util/content-tree.ts), which follows chains as the kernel would, under the same link
 * budget and the fetch's signal. The files themselves are written by git (`read-tree` into a
 * private index, then `checkout-index`), which is as fast as `git clone`'s own checkout and
 * applies the same attributes (eol, ident). Every git step runs under the fetch's deadline.
 */
import { posix } from 'node:path';
import { DEFAULT_MAX_LINKS, formatBytes, verifyTree } from '../../util/content-tree.ts';
import { HoistError } from '../../util/errors.ts';
import { classifyFetchFailure, GitCommandError, runGit, type GitRunOptions } from './git-cli.ts';
import { SourceCode, sourceError } from '../errors.ts';

export interface CheckoutLimits {
  /** most entries (files, symlinks, submodule placeholders) in the directory */
  maxFiles: number;
  /** most bytes of file content in the directory */
  maxBytes: number;
  /** most symlinks in the directory; default DEFAULT_MAX_LINKS (the containment check's budget) */
  maxLinks?: number;
}

export interface TreeEntry {
  mode: string;
  type: 'blob' | 'commit' | 'tree';
  oid: string;
  /** bytes for blobs; 0 for submodules */
  size: number;
  path: string;
}

export interface CheckoutRequest {
  gitDir: string;
  commit: string;
  /** directory inside the commit, "" for the root */
  directory: string;
  target: string;
  limits: CheckoutLimits;
  subject: string;
  run: Omit<GitRunOptions, 'input' | 'env'>;
  /** a private path for the temporary index file */
  indexFile: string;
  /** counts the listing's bytes against the content store's budget before anything is written */
  charge?: (bytes: number) => Promise<void>;
}

function fetchError(message: string, code: SourceCode, subject: string, terminal: boolean): HoistError {
  return sourceError(message, { stage: 'fetch', code, subject, terminal });
}

/** Parses one `git ls-tree -r -l` record (without its NUL). */
function parseLsTreeRecord(record: string): TreeEntry {
  const tab = record.indexOf('\t');
  const [mode, type, oid, size] = record.slice(0, tab).split(/ +/);
  if (tab < 0 || !mode || !oid || (type !== 'blob' && type !== 'commit' && type !== 'tree')) {
    throw new Error(`unexpected ls-tree record`);
  }
  return { mode, type, oid, size: size === '-' || size === undefined ? 0 : Number(size), path: record.slice(tab + 1) };
}

/** Parses `git ls-tree -r -l -z` output held whole (tests; the checkout streams, see LsTreeStream). */
export function parseLsTree(out: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  const stream = new LsTreeStream((e) => entries.push(e));
  stream.push(out);
  stream.end();
  return entries;
}

/** Longest ls-tree record accepted (mode, type, id, size and a path): far above PATH_MAX. */
const MAX_LS_TREE_RECORD = 64 * 1024;

/**
 * Splits `git ls-tree -r -l -z` output into entries as it arrives, holding at most one partial
 * record (≤ 64 KiB): memory does not grow with the listing. `onEntry` may throw to stop it.
 */
export class LsTreeStream {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly onEntry: (e: TreeEntry) => void) {}

  push(chunk: Buffer): void {
    let pos = 0;
    for (let nul = chunk.indexOf(0, pos); nul >= 0; nul = chunk.indexOf(0, pos)) {
      const part = chunk.subarray(pos, nul);
      const record = this.pendingBytes === 0 ? part : Buffer.concat([...this.pending, part]);
      this.pending = [];
      this.pendingBytes = 0;
      pos = nul + 1;
      if (record.length > 0) this.onEntry(parseLsTreeRecord(record.toString('utf8')));
    }
    if (pos < chunk.length) {
      this.pendingBytes += chunk.length - pos;
      if (this.pendingBytes > MAX_LS_TREE_RECORD) throw new Error(`ls-tree record longer than ${MAX_LS_TREE_RECORD} bytes`);
      this.pending.push(chunk.subarray(pos));
    }
  }

  /** the listing ended: a partial record left over means it was cut short */
  end(): void {
    if (this.pendingBytes > 0) throw new Error('truncated ls-tree record');
  }
}

/** True when `path` is a relative path of plain names only. */
export function isSafeTreePath(path: string): boolean {
  if (path.length === 0 || path.startsWith('/')) return false;
  return path.split('/').every((seg) => seg.length > 0 && seg !== '.' && seg !== '..' && seg.toLowerCase() !== '.git');
}

/** True when a symlink at `linkPath` with `target` resolves inside the checked-out root. */
export function symlinkStaysInside(linkPath: string, target: string): boolean {
  if (target.length === 0 || target.includes('\0') || target.startsWith('/')) return false;
  const resolved = posix.normalize(posix.join(posix.dirname(linkPath), target));
  return resolved !== '..' && !resolved.startsWith('../') && !posix.isAbsolute(resolved);
}

/** A symlink target is a path: refused beyond this many bytes (PATH_MAX is 4096 on Linux). */
export const MAX_SYMLINK_TARGET_BYTES = 4096;

/** What the listing holds, counted while it streamed. */
export interface ListingSummary {
  /** entries (files, symlinks, submodule placeholders) */
  entries: number;
  bytes: number;
  /** the symlinks: path, blob id and size (≤ MAX_SYMLINK_TARGET_BYTES) */
  symlinks: TreeEntry[];
}

/**
 * Streams `ls-tree -r -l -z <tree>` and checks every entry as it arrives: a plain path, the
 * entry, byte and symlink limits, each symlink's blob at most MAX_SYMLINK_TARGET_BYTES. The first
 * refusal kills git, so a tree that repeats one subtree at every level (10⁹ paths from a 20 KiB
 * pack) costs no more than `maxFiles` entries of work. Keeps only the symlinks.
 */
async function listTree(req: CheckoutRequest, treeOid: string): Promise<ListingSummary> {
  const { limits, subject } = req;
  const maxLinks = limits.maxLinks ?? DEFAULT_MAX_LINKS;
  const summary: ListingSummary = { entries: 0, bytes: 0, symlinks: [] };
  const stream = new LsTreeStream((e) => {
    if (++summary.entries > limits.maxFiles) {
      throw fetchError(`directory has more than ${limits.maxFiles} entries (the limit)`, SourceCode.TooManyFiles, subject, true);
    }
    if (!isSafeTreePath(e.path)) throw fetchError(`unsafe path in tree: ${JSON.stringify(e.path)}`, SourceCode.UnsafePath, subject, true);
    summary.bytes += e.size;
    if (summary.bytes > limits.maxBytes) {
      throw fetchError(
        `directory holds more than ${formatBytes(limits.maxBytes)} (the limit), at ${JSON.stringify(e.path)}`,
        SourceCode.TooLarge,
        subject,
        true,
      );
    }
    if (e.mode !== '120000') return;
    if (e.size > MAX_SYMLINK_TARGET_BYTES) {
      throw fetchError(
        `symlink ${e.path}: its target is ${e.size} bytes, more than the limit of ${MAX_SYMLINK_TARGET_BYTES} bytes per link`,
        SourceCode.SymlinkTargetTooLarge,
        subject,
        true,
      );
    }
    if (summary.symlinks.length >= maxLinks) {
      throw fetchError(
        `directory has more than ${maxLinks} symlinks (the limit per tree), at ${JSON.stringify(e.path)}`,
        SourceCode.TooManyLinks,
        subject,
        true,
      );
    }
    summary.symlinks.push(e);
  });
  try {
    await runGit(['--git-dir', req.gitDir, 'ls-tree', '-r', '-l', '-z', treeOid], { ...req.run, onStdout: (d) => stream.push(d) });
    stream.end();
  } catch (e) {
    throw gitFailure(e, req);
  }
  return summary;
}

/** a failed git step of the checkout as a HoistError (HoistErrors pass through) */
function gitFailure(e: unknown, req: CheckoutRequest): unknown {
  if (e instanceof GitCommandError) return classifyFetchFailure(e, 'fetch', req.subject, false, req.run.timeoutMs);
  if (e instanceof HoistError) return e;
  return fetchError(`unexpected git output: ${(e as Error).message}`, SourceCode.ProtocolError, req.subject, false);
}

/**
 * Reads the symlinks' targets through one `git cat-file --batch` process, streamed: each blob is
 * at most MAX_SYMLINK_TARGET_BYTES (checked again on cat-file's own header), checked lexically as
 * it arrives and dropped. Throws symlink-escape / symlink-target-too-large.
 */
async function checkSymlinkTargets(symlinks: readonly TreeEntry[], req: CheckoutRequest): Promise<void> {
  const byOid = new Map<string, string[]>();
  for (const s of symlinks) {
    const paths = byOid.get(s.oid);
    if (paths) paths.push(s.path);
    else byOid.set(s.oid, [s.path]);
  }
  if (byOid.size === 0) return;
  const order = [...byOid.keys()];
  let next = 0;
  let buf: Buffer = Buffer.alloc(0);
  const onStdout = (chunk: Buffer): void => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    for (;;) {
      const nl = buf.indexOf(0x0a);
      if (nl < 0) {
        if (buf.length > 256) throw new Error('cat-file header too long');
        return;
      }
      const [oid, type, sizeText] = buf.subarray(0, nl).toString('latin1').split(' ');
      const size = Number(sizeText);
      const paths = byOid.get(order[next] ?? '') ?? [];
      if (oid !== order[next] || type !== 'blob' || !Number.isSafeInteger(size)) throw new Error(`cat-file: unexpected header for ${order[next] ?? '?'}`);
      if (size > MAX_SYMLINK_TARGET_BYTES) {
        throw fetchError(
          `symlink ${paths[0] ?? ''}: its target is ${size} bytes, more than the limit of ${MAX_SYMLINK_TARGET_BYTES} bytes per link`,
          SourceCode.SymlinkTargetTooLarge,
          req.subject,
          true,
        );
      }
      if (buf.length < nl + 1 + size + 1) return; // the rest of this blob is still coming
      const target = buf.subarray(nl + 1, nl + 1 + size).toString('utf8');
      buf = buf.subarray(nl + 1 + size + 1);
      next++;
      for (const path of paths) {
        if (!symlinkStaysInside(path, target)) {
          throw fetchError(`symlink ${path} points outside the directory (${JSON.stringify(target)})`, SourceCode.SymlinkEscape, req.subject, true);
        }
      }
    }
  };
  try {
    await runGit(['--git-dir', req.gitDir, 'cat-file', '--batch'], { ...req.run, input: order.join('\n') + '\n', onStdout });
  } catch (e) {
    throw gitFailure(e, req);
  }
  if (next !== order.length) throw fetchError('cat-file ended before every symlink target was read', SourceCode.ProtocolError, req.subject, false);
}

/**
 * Validates and writes `commit:directory` into `target` (which must exist and be empty). Returns
 * what the listing held. Throws HoistError: directory-missing, unsafe-path, symlink-escape,
 * symlink-target-too-large, not-a-regular-file, not-found (a dangling link), too-many-files,
 * too-many-links, too-large, output-too-large (all terminal); the deadline's reason when
 * `run.signal` fires.
 */
export async function checkoutDirectory(req: CheckoutRequest): Promise<ListingSummary> {
  const { gitDir, commit, directory, subject, run } = req;
  const treeish = `${commit}:${directory}`;
  // One batch-check answers both "is it a commit" and "is the directory a tree".
  const check = await runGit(['--git-dir', gitDir, 'cat-file', '--batch-check'], { ...run, input: `${commit}\n${treeish}\n` }).catch((e: unknown) => {
    throw gitFailure(e, req);
  });
  const [commitLine = '', dirLine = ''] = check.stdout.toString('utf8').split('\n');
  if (commitLine.endsWith(' missing')) {
    throw fetchError(`commit ${commit} was not received from the repository`, SourceCode.UnknownRef, subject, true);
  }
  if (!commitLine.includes(' commit ')) {
    throw fetchError(`object ${commit} is not a commit`, SourceCode.NotACommit, subject, true);
  }
  const dirType = dirLine.split(' ')[1];
  if (dirType !== 'tree') {
    const what = dirLine.endsWith('missing') ? 'does not exist' : 'is not a directory';
    throw fetchError(`directory "${directory}" ${what} in commit ${commit}`, SourceCode.DirectoryMissing, subject, true);
  }
  const treeOid = dirLine.split(' ')[0] ?? '';
  const listing = await listTree(req, treeOid);
  await checkSymlinkTargets(listing.symlinks, req);
  // git writes the files itself: the listing's total is charged before it starts
  await req.charge?.(listing.bytes);
  const indexEnv = { GIT_INDEX_FILE: req.indexFile };
  try {
    await runGit(['--git-dir', gitDir, 'read-tree', treeOid], { ...run, env: indexEnv });
    await runGit(['--git-dir', gitDir, '--work-tree', req.target, 'checkout-index', '-a', '-f'], { ...run, env: indexEnv });
  } catch (e) {
    throw gitFailure(e, req);
  }
  await verifyTree(req.target, {
    stage: 'fetch',
    who: `git ${subject}`,
    maxLinks: req.limits.maxLinks ?? DEFAULT_MAX_LINKS,
    ...(run.signal ? { signal: run.signal } : {}),
  });
  return listing;
}
