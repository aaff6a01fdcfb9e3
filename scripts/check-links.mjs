#!/usr/bin/env node
/**
 * Checks the repository's internal references (test/unit/scripts/check-links.test.ts runs it in
 * the suite):
 *
 * - Markdown (README.md, docs/**, every other README.md; not the READMEs that came with fixtures,
 *   those more than one folder below a testdata/ folder): each relative link `[text](target)` or
 *   `[label]: target` names a file or folder that exists, and a `#anchor` on a .md target (or on
 *   the page itself) is a heading of that page, slugged as GitHub slugs it. A code span that is
 *   a repository path as a whole (below) names something that exists.
 * - Comments in *.ts, *.mts and *.mjs under src/, test/, bench/, api/, examples/, scripts/: each
 *   path that is a repository path exists. A repository path is one of
 *     - a path whose first segment is a top-level folder of this repository
 *       (`api/v1alpha2/types.ts`, `docs/README.md#user-guide`), resolved from the root;
 *     - a `./` or `../` path ending in a file extension or `/` (`./check-links.mjs`), resolved
 *       from the commenting file's folder;
 *     - an all-capitals Markdown name (`README.md`), at the root or in the file's folder.
 *   A path that follows a `/`, a word character or `:` is not one: another project's files are
 *   cited with their owner/repo (`fluxcd/source-controller/docs/spec/v1/helmrepositories.md`) or
 *   by URL, or start with a folder this repository has not (helm's `pkg/kube/ready.go`). A glob
 *   (`src/**\/README.md`, `../src/*`) is checked up to its first wildcard; an extension-less
 *   path may name a module without its `.ts`.
 *
 * Exits 1 with one line per broken reference (file:line: what); prints a summary otherwise.
 * Usage: node scripts/check-links.mjs [tree]   (default: this repository)
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = normalize(join(dirname(fileURLToPath(import.meta.url)), '..'));
const toPosix = (p) => p.split(sep).join('/');
const SKIP_DIRS = new Set(['node_modules', '.git', 'dist', '.tmp']);
const CODE_DIRS = ['src', 'test', 'bench', 'api', 'examples', 'scripts'];

function walk(dir, out = []) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (SKIP_DIRS.has(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** the Markdown files checked, repository-relative */
export function markdownFiles(base) {
  return walk(base)
    .map((p) => toPosix(relative(base, p)))
    .filter((p) => {
      if (!p.endsWith('.md')) return false;
      if (p === 'README.md' || p.startsWith('docs/')) return true;
      if (!p.endsWith('/README.md') && p !== 'README.md') return false;
      // a fixture's own README (testdata/<fixture>/<project>/README.md) is upstream text
      const parts = p.split('/');
      const t = parts.lastIndexOf('testdata');
      return t === -1 || parts.length - t <= 3;
    })
    .sort();
}

/** GitHub's heading slug: lower case, punctuation dropped (not `-` or `_`), each space a `-` */
export function slug(text) {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** a heading's text as rendered: links as their text, code spans as their content, no emphasis or HTML */
function headingText(raw) {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__|\*|~~)/g, '')
    .trim();
}

/** lines outside fenced code blocks, with their 1-based numbers */
function proseLines(text) {
  const out = [];
  let fence = null;
  text.split('\n').forEach((line, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1][0];
      else if (m[1][0] === fence) fence = null;
      return;
    }
    if (fence === null) out.push({ line, n: i + 1 });
  });
  return out;
}

const anchorCache = new Map();

/** the anchors a Markdown page defines: heading slugs (duplicates numbered as GitHub does) and HTML ids/names */
export function anchors(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const set = new Set();
  const seen = new Map();
  for (const { line } of proseLines(readFileSync(file, 'utf8'))) {
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const s = slug(headingText(h[1]));
      const k = seen.get(s) ?? 0;
      set.add(k === 0 ? s : `${s}-${k}`);
      seen.set(s, k + 1);
    }
    for (const a of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) set.add(a[1]);
  }
  anchorCache.set(file, set);
  return set;
}

/** the link targets of one Markdown line, code spans removed */
function linkTargets(line) {
  const prose = line.replace(/(`+)(?:(?!\1).)+\1/g, '');
  const out = [];
  for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push(m[1]);
  const def = /^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)/.exec(prose);
  if (def) out.push(def[1]);
  return out;
}

const isExternal = (t) => /^[a-z][a-z0-9+.-]*:/i.test(t) || t.startsWith('//');

/** one Markdown page's broken links, and repository paths in its code spans that do not exist */
function checkMarkdown(base, rel, tops) {
  const file = join(base, rel);
  const problems = [];
  for (const { line, n } of proseLines(readFileSync(file, 'utf8'))) {
    // a code span that is a path as a whole (`src/apply/plan.ts`), not code that holds one
    for (const span of line.matchAll(/(`+)((?:(?!\1).)+)\1/g))
      for (const cited of /\s/.test(span[2].trim()) ? [] : citedPaths(span[2].trim(), tops))
        if (resolveCited(cited, base, rel) === null) problems.push(`${rel}:${n}: \`${cited.path}\`: not in the repository`);
    for (const target of linkTargets(line)) {
      if (isExternal(target)) continue;
      const [pathPart, anchor] = splitAnchor(target);
      const abs = pathPart === '' ? file : normalize(join(dirname(file), decodeURIComponent(pathPart)));
      if (!abs.startsWith(base) || !existsSync(abs)) {
        problems.push(`${rel}:${n}: link ${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && abs.endsWith('.md') && !anchors(abs).has(decodeURIComponent(anchor)))
        problems.push(`${rel}:${n}: link ${target}: no heading #${anchor} in ${toPosix(relative(base, abs))}`);
    }
  }
  return problems;
}

function splitAnchor(target) {
  const i = target.indexOf('#');
  return i === -1 ? [target, undefined] : [target.slice(0, i), target.slice(i + 1)];
}

/** the comment text of each line of a TypeScript or JavaScript file (line comments, block comments) */
export function commentLines(text) {
  const out = [];
  let inBlock = false;
  text.split('\n').forEach((line, i) => {
    const t = line.trim();
    if (inBlock) {
      out.push({ text: t, n: i + 1 });
      if (t.includes('*/')) inBlock = false;
      return;
    }
    if (t.startsWith('/*')) {
      out.push({ text: t, n: i + 1 });
      if (!t.includes('*/')) inBlock = true;
      return;
    }
    if (t.startsWith('//')) {
      out.push({ text: t, n: i + 1 });
      return;
    }
    // a trailing comment after code: ` // ` outside a string (a URL's `://` is not one)
    for (const m of line.matchAll(/\s\/\/\s/g)) {
      const before = line.slice(0, m.index);
      if (["'", '"', '`'].some((q) => before.split(q).length % 2 === 0)) continue;
      out.push({ text: line.slice(m.index + m[0].length), n: i + 1 });
      break;
    }
  });
  return out;
}

/** the folders and files at the top of the tree that make a path a repository path */
function topLevel(base) {
  return new Set(
    readdirSync(base, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !SKIP_DIRS.has(e.name))
      .map((e) => e.name),
  );
}

const TRAIL = /[.,;:)\]'"`]+$/;

/** repository paths cited in one comment line: [{ path, from: 'root' | 'file' | 'caps' }] */
export function citedPaths(text, tops) {
  const out = [];
  // a path starts at the line's start or after a space or an opening bracket/quote, never after / \w :
  for (const m of text.matchAll(/(?<![\w/:.\-@~$])((?:\.\.?\/)+[\w.\-/*{}]+|[\w.-]+\/[\w.\-/*{}#]*|[A-Z][A-Z0-9_-]*\.md\b)/g)) {
    let p = m[1].replace(TRAIL, '');
    if (p.startsWith('./') || p.startsWith('../')) {
      const lastSeg = p.split('/').pop();
      const globbed = /[*{]/.test(p);
      if (!globbed && !p.endsWith('/') && !/\.[a-z]{1,5}(#[\w-]+)?$/.test(lastSeg)) continue;
      out.push({ path: p, from: 'file' });
    } else if (/^[A-Z][A-Z0-9_-]*\.md$/.test(p)) {
      out.push({ path: p, from: 'caps' });
    } else {
      const first = p.split('/')[0];
      if (!tops.has(first)) continue;
      out.push({ path: p, from: 'root' });
    }
  }
  return out;
}

/** whether a cited path exists: a glob up to its first wildcard, a module without its extension */
function exists(abs) {
  if (existsSync(abs)) return true;
  if (!/\.[a-z]+$/.test(abs) && existsSync(`${abs}.ts`)) return true;
  // a .js specifier names the .ts module (rewriteRelativeImportExtensions)
  return abs.endsWith('.js') && existsSync(abs.replace(/\.js$/, '.ts'));
}

function resolveCited({ path, from }, base, fileRel) {
  const [p, anchor] = splitAnchor(path);
  const wild = p.search(/[*{]/);
  const stem = wild === -1 ? p : p.slice(0, p.lastIndexOf('/', wild) + 1);
  const dir = dirname(join(base, fileRel));
  if (from === 'caps') return [join(base, p), join(dir, p)].find((c) => exists(c)) ?? null;
  const abs = normalize(from === 'root' ? join(base, stem) : join(dir, stem));
  if (!abs.startsWith(base) || !exists(abs)) return null;
  if (anchor !== undefined && wild === -1 && abs.endsWith('.md') && !anchors(abs).has(anchor)) return null;
  return abs;
}

/** one code file's broken references */
function checkCode(base, rel, tops) {
  const problems = [];
  for (const { text, n } of commentLines(readFileSync(join(base, rel), 'utf8')))
    for (const cited of citedPaths(text, tops))
      if (resolveCited(cited, base, rel) === null) problems.push(`${rel}:${n}: comment cites ${cited.path}: not in the repository`);
  return problems;
}

export function codeFiles(base) {
  return CODE_DIRS.flatMap((d) => walk(join(base, d)))
    .map((p) => toPosix(relative(base, p)))
    .filter((p) => /\.(ts|mts|mjs)$/.test(p) && !p.split('/').includes('testdata'))
    .sort();
}

/** the verdict on a tree: exit code and lines */
export function report(base = root) {
  anchorCache.clear();
  const tops = topLevel(base);
  const md = markdownFiles(base);
  const code = codeFiles(base);
  const problems = [...md.flatMap((f) => checkMarkdown(base, f, tops)), ...code.flatMap((f) => checkCode(base, f, tops))];
  if (problems.length) return { code: 1, lines: problems };
  return { code: 0, lines: [`links: ${md.length} Markdown pages and ${code.length} code files cite only what exists`] };
}

if (process.argv[1] && normalize(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = process.argv[2];
  const r = report(arg ? normalize(join(process.cwd(), arg)) : root);
  for (const l of r.lines) (r.code ? console.error : console.log)(l);
  process.exit(r.code);
}
