#!/usr/bin/env node
/**
 * Enforces the layers (listed below; docs/architecture.md draws them) over api/ and src/ without a
 * dependency: import/export statements are read with a regex, relative specifiers resolved to
 * repo paths, and each file's imports checked against what its layer may use. Also reports
 * circular imports among those files (type-only imports are erased at run time and do not count).
 *
 * Layers, bottom up (a module may import its own folder, node built-ins and npm packages unless
 * noted):
 *   api/                 src/util
 *   src/util             (node and npm only)
 *   src/kube             api, src/util
 *   src/cache, src/processors, src/health
 *                        api, src/util, src/kube/types.ts (type-only imports)
 *   src/sources, src/apply
 *                        the layers above, all of src/kube
 *   src/webhook          api, src/util, src/kube (the push receiver; src/cli wires it to the reconciler)
 *   src/notify           the layers above src/reconciler's, but not src/reconciler (notifications; the reconciler hands it records)
 *   src/reconciler       everything below it
 *   src/cli              anything
 *   src/devcluster       src/util (no npm); nothing in src/ but src/cli may import it
 *   examples/            api, src/util, src/kube and itself: controllers built on Hoist's runtime
 *
 * Test files (*.test.ts) are not checked: tests may reach across layers.
 * Exits 1 with one line per violation; prints a one-line summary otherwise.
 * Usage: node scripts/check-layers.mjs [tree]   (default: this repository)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = normalize(join(dirname(fileURLToPath(import.meta.url)), '..'));
const toPosix = (p) => p.split(sep).join('/');

/** @type {Record<string, {allow: string[], typeOnly?: string[], npm?: boolean}>} layer → what it may import */
const LAYERS = {
  api: { allow: ['api', 'src/util'] },
  'src/util': { allow: ['src/util'] },
  'src/kube': { allow: ['api', 'src/util', 'src/kube'] },
  'src/cache': { allow: ['api', 'src/util', 'src/cache'], typeOnly: ['src/kube/types.ts'] },
  'src/processors': { allow: ['api', 'src/util', 'src/processors'], typeOnly: ['src/kube/types.ts'] },
  'src/health': { allow: ['api', 'src/util', 'src/health'], typeOnly: ['src/kube/types.ts'] },
  'src/sources': { allow: ['api', 'src/util', 'src/kube', 'src/cache', 'src/processors', 'src/health', 'src/sources'] },
  'src/apply': { allow: ['api', 'src/util', 'src/kube', 'src/cache', 'src/processors', 'src/health', 'src/apply'] },
  'src/notify': {
    allow: ['api', 'src/util', 'src/kube', 'src/cache', 'src/processors', 'src/health', 'src/sources', 'src/apply', 'src/notify'],
  },
  'src/reconciler': {
    allow: ['api', 'src/util', 'src/kube', 'src/cache', 'src/processors', 'src/health', 'src/sources', 'src/apply', 'src/notify', 'src/reconciler'],
  },
  'src/webhook': { allow: ['api', 'src/util', 'src/kube', 'src/webhook'] },
  'src/cli': { allow: ['api', 'src', 'bin'] },
  'src/devcluster': { allow: ['src/util', 'src/devcluster'], npm: false },
  examples: { allow: ['api', 'src/util', 'src/kube', 'examples'] },
};

const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** the layer a repo path belongs to: the longest LAYERS key that prefixes it */
function layerOf(path) {
  let best;
  for (const key of Object.keys(LAYERS)) if ((path === key || path.startsWith(`${key}/`)) && (!best || key.length > best.length)) best = key;
  return best;
}

const under = (path, prefix) => path === prefix || path.startsWith(`${prefix}/`);

/** Strips comments while keeping string literals (import specifiers live in them). */
function stripComments(src) {
  return src.replace(/\/\*[\s\S]*?\*\/|(^|[^:'"`\\])\/\/[^\n]*|('(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`)/g, (m, pre, str) =>
    str !== undefined ? str : pre !== undefined ? pre : m.replace(/[^\n]/g, ' '),
  );
}

/**
 * Import-like statements of one file: static imports and re-exports (type-only when written
 * `import type`/`export type` or when every named specifier is `type X`), side-effect imports and
 * dynamic `import('...')` calls.
 */
export function importsOf(source) {
  const src = stripComments(source);
  const out = [];
  const stmt = /(?:^|[;\n}])\s*(import|export)\s+(type\s+)?([^;'"]*?)\s*from\s*['"]([^'"]+)['"]/g;
  for (let m; (m = stmt.exec(src));) {
    const clause = m[3];
    let typeOnly = Boolean(m[2]);
    if (!typeOnly) {
      const braces = /\{([^}]*)\}/.exec(clause);
      const outside = clause.replace(/\{[^}]*\}/, '').replace(/[\s,]/g, '');
      if (braces && outside === '') {
        const names = braces[1]
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        typeOnly = names.length > 0 && names.every((n) => n.startsWith('type '));
      }
    }
    out.push({ spec: m[4], typeOnly });
  }
  for (const m of src.matchAll(/(?:^|[;\n])\s*import\s*['"]([^'"]+)['"]/g)) out.push({ spec: m[1], typeOnly: false });
  for (const m of src.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push({ spec: m[1], typeOnly: false });
  return out;
}

/** checks `files` (absolute paths) as laid out under `base` (the repo root by default) */
export function check(files, base = root) {
  const violations = [];
  /** runtime import graph among checked files, for cycles */
  const graph = new Map();
  for (const abs of files) {
    const file = toPosix(relative(base, abs));
    const layer = layerOf(file);
    if (!layer) continue;
    const rules = LAYERS[layer];
    const test = file.endsWith('.test.ts');
    const edges = [];
    graph.set(file, edges);
    for (const { spec, typeOnly } of importsOf(readFileSync(abs, 'utf8'))) {
      if (!spec.startsWith('.') && !spec.startsWith('/')) {
        if (test || NODE_BUILTINS.has(spec) || spec.startsWith('node:')) continue;
        if (rules.npm === false) violations.push(`${file}: imports npm package '${spec}' (${layer} may use node built-ins and src/util only)`);
        continue;
      }
      const target = toPosix(relative(base, join(dirname(abs), spec)));
      if (!typeOnly) edges.push(target);
      if (test) continue;
      if (under(target, 'src/devcluster') && !under(file, 'src/cli') && !under(file, 'src/devcluster')) {
        violations.push(`${file}: imports ${target} (only src/cli may import src/devcluster)`);
        continue;
      }
      if (rules.allow.some((a) => under(target, a))) continue;
      if (typeOnly && rules.typeOnly?.includes(target)) continue;
      const why = rules.typeOnly?.includes(target) ? ' (type-only imports of it are allowed: use `import type`)' : '';
      violations.push(`${file}: imports ${target}, outside what ${layer} may use${why}`);
    }
  }
  return { violations, cycles: findCycles(graph), files: graph.size };
}

/** elementary cycles found by DFS, each reported once (rotated to start at its smallest file) */
function findCycles(graph) {
  const cycles = new Map();
  const state = new Map(); // 1 = on stack, 2 = done
  const stack = [];
  const visit = (node) => {
    state.set(node, 1);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 1) {
        const cycle = stack.slice(stack.indexOf(next));
        const start = cycle.indexOf([...cycle].sort()[0]);
        const rotated = [...cycle.slice(start), ...cycle.slice(0, start)];
        cycles.set(rotated.join(' -> '), rotated);
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 2);
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return [...cycles.keys()].map((k) => `${k} -> ${k.split(' -> ')[0]}`);
}

/**
 * The command's verdict on the tree at `base` (laid out like this repo): exit code, and the lines
 * it prints (to stderr on failure, stdout on success). The script's tests call it in-process.
 */
export function report(base = root) {
  const files = ['api', 'src', 'examples'].flatMap((d) => {
    try {
      return walk(join(base, d));
    } catch {
      return [];
    }
  });
  const { violations, cycles, files: n } = check(files, base);
  const lines = [...violations.map((v) => `layers: ${v}`), ...cycles.map((c) => `layers: circular import: ${c}`)];
  if (violations.length > 0 || cycles.length > 0) {
    lines.push(`layers: ${violations.length} violation(s), ${cycles.length} cycle(s) in ${n} files (rules: scripts/check-layers.mjs)`);
    return { code: 1, lines };
  }
  return { code: 0, lines: [`layers: ${n} files follow the layers, no circular imports`] };
}

if (process.argv[1] && normalize(process.argv[1]) === normalize(fileURLToPath(import.meta.url))) {
  // an optional argument names another tree laid out like this repo
  const { code, lines } = report(process.argv[2] ? normalize(process.argv[2]) : root);
  for (const l of lines) (code === 0 ? console.log : console.error)(l);
  process.exitCode = code;
}
