/**
 * Writes one directory of one fetched commit into a target directory, after checking the whole
 * listing first: nothing is written when any entry is unsafe or a limit is exceeded, so a hostile
 * repository fails before it costs disk.
 *
 * Checks: every path segment is a plain name (no "", ".", "..", ".git"); each symlink's target,
 * read from the listing, stays inside the checked-out directory lexically (an early, cheap
 * refusal); file count and total bytes stay within limits. A lexical check is not complete — a
 * chain (`y -> .`, `x -> y/../..`) leaves the tree although every link alone looks inside — so
 * the written tree is then checked with the containment rule (src/util/content-tree.ts), which
 * follows chains as the kernel would. The files themselves are written by git (`read-tree` into a private index, then
 * `checkout-index`), which is as fast as `git clone`'s own checkout and applies the same
 * attributes (eol, ident).
 */
import { posix } from 'node:path';
import { verifyTree } from '../../util/content-tree.ts';
import { HoistError } from '../../util/errors.ts';
import { runGit, type GitRunOptions } from './git-cli.ts';

export interface CheckoutLimits {
  /** most entries (files, symlinks, submodule placeholders) in the directory */
  maxFiles: number;
  /** most bytes of file content in the directory */
  maxBytes: number;
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
}

function fetchError(message: string, code: string, subject: string, terminal: boolean): HoistError {
  return new HoistError(message, { stage: 'fetch', reason: 'FetchFailed', code, subject, terminal });
}

/** Parses `git ls-tree -r -l -z` output. */
export function parseLsTree(out: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const record of out.toString('utf8').split('\0')) {
    if (record.length === 0) continue;
    const tab = record.indexOf('\t');
    const [mode, type, oid, size] = record.slice(0, tab).split(/ +/);
    if (tab < 0 || !mode || !oid || (type !== 'blob' && type !== 'commit' && type !== 'tree')) {
      throw new Error(`unexpected ls-tree record`);
    }
    entries.push({ mode, type, oid, size: size === '-' || size === undefined ? 0 : Number(size), path: record.slice(tab + 1) });
  }
  return entries;
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

/** Reads blobs (symlink targets) through one `git cat-file --batch` process. */
async function readBlobs(oids: readonly string[], gitDir: string, run: CheckoutRequest['run']): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  if (oids.length === 0) return out;
  const unique = [...new Set(oids)];
  const { stdout } = await runGit(['--git-dir', gitDir, 'cat-file', '--batch'], { ...run, input: unique.join('\n') + '\n' });
  let pos = 0;
  for (const oid of unique) {
    const nl = stdout.indexOf(0x0a, pos);
    const header = stdout.subarray(pos, nl).toString('latin1').split(' ');
    const size = Number(header[2]);
    if (header[0] !== oid || header[1] !== 'blob' || !Number.isFinite(size)) throw new Error(`cat-file: unexpected header for ${oid}`);
    out.set(oid, stdout.subarray(nl + 1, nl + 1 + size));
    pos = nl + 1 + size + 1;
  }
  return out;
}

/**
 * Validates and writes `commit:directory` into `target` (which must exist and be empty). Returns
 * the entries written. Throws HoistError: directory-missing, unsafe-path, symlink-escape,
 * not-a-regular-file, not-found (a dangling link), too-many-files, too-large (all terminal).
 */
export async function checkoutDirectory(req: CheckoutRequest): Promise<TreeEntry[]> {
  const { gitDir, commit, directory, subject, run } = req;
  const treeish = `${commit}:${directory}`;
  // One batch-check answers both "is it a commit" and "is the directory a tree".
  const check = await runGit(['--git-dir', gitDir, 'cat-file', '--batch-check'], { ...run, input: `${commit}\n${treeish}\n` });
  const [commitLine = '', dirLine = ''] = check.stdout.toString('utf8').split('\n');
  if (commitLine.endsWith(' missing')) {
    throw fetchError(`commit ${commit} was not received from the repository`, 'unknown-ref', subject, true);
  }
  if (!commitLine.includes(' commit ')) {
    throw fetchError(`object ${commit} is not a commit`, 'not-a-commit', subject, true);
  }
  const dirType = dirLine.split(' ')[1];
  if (dirType !== 'tree') {
    const what = dirLine.endsWith('missing') ? 'does not exist' : 'is not a directory';
    throw fetchError(`directory "${directory}" ${what} in commit ${commit}`, 'directory-missing', subject, true);
  }
  const treeOid = dirLine.split(' ')[0] ?? '';
  const listing = await runGit(['--git-dir', gitDir, 'ls-tree', '-r', '-l', '-z', treeOid], run);
  const entries = parseLsTree(listing.stdout);
  if (entries.length > req.limits.maxFiles) {
    throw fetchError(`directory has ${entries.length} entries, more than the limit of ${req.limits.maxFiles}`, 'too-many-files', subject, true);
  }
  let bytes = 0;
  const symlinks: TreeEntry[] = [];
  for (const e of entries) {
    if (!isSafeTreePath(e.path)) throw fetchError(`unsafe path in tree: ${JSON.stringify(e.path)}`, 'unsafe-path', subject, true);
    bytes += e.size;
    if (e.mode === '120000') symlinks.push(e);
  }
  if (bytes > req.limits.maxBytes) {
    throw fetchError(`directory holds ${bytes} bytes, more than the limit of ${req.limits.maxBytes}`, 'too-large', subject, true);
  }
  const targets = await readBlobs(
    symlinks.map((s) => s.oid),
    gitDir,
    run,
  );
  for (const link of symlinks) {
    const target = targets.get(link.oid)?.toString('utf8') ?? '';
    if (!symlinkStaysInside(link.path, target)) {
      throw fetchError(`symlink ${link.path} points outside the directory (${JSON.stringify(target)})`, 'symlink-escape', subject, true);
    }
  }
  const indexEnv = { GIT_INDEX_FILE: req.indexFile };
  await runGit(['--git-dir', gitDir, 'read-tree', treeOid], { ...run, env: indexEnv });
  await runGit(['--git-dir', gitDir, '--work-tree', req.target, 'checkout-index', '-a', '-f'], { ...run, env: indexEnv });
  await verifyTree(req.target, { stage: 'fetch', reason: 'FetchFailed', who: `git ${subject}` });
  return entries;
}
