/**
 * The import graph the layer rules read: each file's import-like statements (static imports,
 * re-exports, side-effect imports, `import('…')` with a literal), parsed with TypeScript, and
 * which of them only bring types (erased at run time, so they neither load a module nor close a
 * cycle). Files on disk are parsed once per change (mtime); the file being linted is read from
 * its editor buffer.
 */
import { readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import ts from 'typescript';

export const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

const toPosix = (p) => p.split(sep).join('/');

/** `abs` as a repo path (posix, relative to `root`) */
export const repoPath = (root, abs) => toPosix(relative(root, abs));

/** `path` is `prefix` or inside it */
export const under = (path, prefix) => path === prefix || path.startsWith(`${prefix}/`);

/**
 * @typedef {{ spec: string, typeOnly: boolean, start: number, end: number }} Import
 *   start/end: the specifier's offsets in the text
 */

const typeOnlyNamed = (elements) => elements.length > 0 && elements.every((e) => e.isTypeOnly);

/** @type {Map<string, { text: string, imports: Import[] }>} file → its last text's imports (rules share one parse) */
const parsedText = new Map();

/** @returns {Import[]} the import-like statements of a TypeScript/JavaScript source text */
export function importsOf(text, fileName = 'file.ts') {
  const hit = parsedText.get(fileName);
  if (hit && hit.text === text) return hit.imports;
  const imports = parse(text, fileName);
  parsedText.set(fileName, { text, imports });
  return imports;
}

function parse(text, fileName) {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  /** @type {Import[]} */
  const out = [];
  const add = (lit, typeOnly) => out.push({ spec: lit.text, typeOnly, start: lit.getStart(sf), end: lit.getEnd() });
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const c = node.importClause;
      const named = c?.namedBindings && ts.isNamedImports(c.namedBindings) ? c.namedBindings.elements : undefined;
      // `import { type A, type B }` brings types only, like `import type { A, B }`
      add(node.moduleSpecifier, Boolean(c && (c.isTypeOnly || (!c.name && named && typeOnlyNamed(named)))));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined;
      add(node.moduleSpecifier, node.isTypeOnly || Boolean(named && typeOnlyNamed(named)));
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteralLike(arg)) add(arg, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** the file a relative specifier names, if it exists (specifiers here carry their extension) */
export function resolveFile(fromAbs, spec) {
  if (!spec.startsWith('.')) return undefined;
  const abs = join(dirname(fromAbs), spec);
  for (const candidate of [abs, `${abs}.ts`, `${abs}.mts`, join(abs, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** @type {Map<string, { mtimeMs: number, statAt: number, targets: string[] }>} abs path → its runtime imports' files */
const onDisk = new Map();
/** how long a file's mtime is trusted: one lint run walks the graph once per file, not once per stat */
const STAT_FRESH_MS = 1000;

/** the files a file on disk imports at run time (type-only imports left out) */
export function runtimeTargets(abs) {
  const now = Date.now();
  const hit = onDisk.get(abs);
  if (hit && now - hit.statAt < STAT_FRESH_MS) return hit.targets;
  let mtimeMs;
  try {
    mtimeMs = statSync(abs).mtimeMs;
  } catch {
    onDisk.delete(abs);
    return [];
  }
  if (hit && hit.mtimeMs === mtimeMs) {
    hit.statAt = now;
    return hit.targets;
  }
  const targets = targetsOf(abs, parse(readFileSync(abs, 'utf8'), abs));
  onDisk.set(abs, { mtimeMs, statAt: now, targets });
  return targets;
}

/** the existing files of the runtime imports among `imports` of the file at `abs` */
export function targetsOf(abs, imports) {
  return imports.flatMap((i) => {
    if (i.typeOnly) return [];
    const t = resolveFile(abs, i.spec);
    return t ? [t] : [];
  });
}

/**
 * A path of runtime imports from `from` back to `to` (both absolute), through files `follow`
 * admits, or undefined: the rest of a cycle that an import of `from` by `to` would close.
 */
export function pathBack(from, to, follow) {
  const seen = new Set();
  const walk = (node) => {
    if (node === to) return [node];
    if (seen.has(node) || !follow(node)) return undefined;
    seen.add(node);
    for (const next of runtimeTargets(node)) {
      const rest = walk(next);
      if (rest) return [node, ...rest];
    }
    return undefined;
  };
  return walk(from);
}
