/**
 * The layers of docs/architecture.md ("Layers") as ESLint rules, so an editor shows a violation
 * where it is written and `npm run lint` fails on it:
 *   hoist/layers    a module imports only from the layers below it (the table below);
 *   hoist/no-cycle  no circular runtime imports (type-only imports are erased and do not count).
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
 *   src/revisions        the layers above, src/apply (stored revisions, their history, the objects a reconcile works from)
 *   src/webhook          api, src/util, src/kube (the push receiver; src/cli wires it to the reconciler)
 *   src/notify           the layers above src/reconciler's, but not src/reconciler (notifications; the reconciler hands it records)
 *   src/reconciler       everything below it
 *   src/cli              anything
 *   src/devcluster       src/util (no npm); nothing in src/ but src/cli may import it
 *   examples/            api, src/util, src/kube and itself: controllers built on Hoist's runtime
 *
 * Test files (*.test.ts) and files outside those folders are not checked: tests may reach across
 * layers. Paths are read relative to `settings.hoist.root` (eslint.config.js: the repository).
 */
import { dirname, join } from 'node:path';
import { NODE_BUILTINS, importsOf, pathBack, repoPath, targetsOf, under } from './imports.mjs';

/** @type {Record<string, {allow: string[], typeOnly?: string[], npm?: boolean}>} layer → what it may import */
export const LAYERS = {
  api: { allow: ['api', 'src/util'] },
  'src/util': { allow: ['src/util'] },
  'src/kube': { allow: ['api', 'src/util', 'src/kube'] },
  'src/cache': { allow: ['api', 'src/util', 'src/cache'], typeOnly: ['src/kube/types.ts'] },
  'src/processors': { allow: ['api', 'src/util', 'src/processors'], typeOnly: ['src/kube/types.ts'] },
  'src/health': { allow: ['api', 'src/util', 'src/health'], typeOnly: ['src/kube/types.ts'] },
  'src/sources': { allow: ['api', 'src/util', 'src/kube', 'src/cache', 'src/processors', 'src/health', 'src/sources'] },
  'src/apply': { allow: ['api', 'src/util', 'src/kube', 'src/cache', 'src/processors', 'src/health', 'src/apply'] },
  'src/revisions': { allow: ['api', 'src/util', 'src/kube', 'src/cache', 'src/processors', 'src/health', 'src/apply', 'src/revisions'] },
  'src/notify': {
    allow: ['api', 'src/util', 'src/kube', 'src/cache', 'src/processors', 'src/health', 'src/sources', 'src/apply', 'src/revisions', 'src/notify'],
  },
  'src/reconciler': {
    allow: [
      'api',
      'src/util',
      'src/kube',
      'src/cache',
      'src/processors',
      'src/health',
      'src/sources',
      'src/apply',
      'src/revisions',
      'src/notify',
      'src/reconciler',
    ],
  },
  'src/webhook': { allow: ['api', 'src/util', 'src/kube', 'src/webhook'] },
  'src/cli': { allow: ['api', 'src', 'bin'] },
  'src/devcluster': { allow: ['src/util', 'src/devcluster'], npm: false },
  examples: { allow: ['api', 'src/util', 'src/kube', 'examples'] },
};

/** the layer a repo path belongs to: the longest LAYERS key that prefixes it */
export function layerOf(path) {
  let best;
  for (const key of Object.keys(LAYERS)) if (under(path, key) && (!best || key.length > best.length)) best = key;
  return best;
}

/** the repository root the rules read paths against */
export function rootOf(context) {
  return context.settings?.hoist?.root ?? context.cwd;
}

/** a checked file: in a layer, TypeScript, not a test or a declaration file */
export function checked(root, abs) {
  const path = repoPath(root, abs);
  if (!/\.m?ts$/.test(path) || path.endsWith('.d.ts') || path.endsWith('.d.mts') || path.endsWith('.test.ts')) return undefined;
  const layer = layerOf(path);
  return layer ? { path, layer } : undefined;
}

/** where an import's specifier is in the file, for a report */
function locOf(context, i) {
  return { start: context.sourceCode.getLocFromIndex(i.start), end: context.sourceCode.getLocFromIndex(i.end) };
}

/** the verdict on one import of `file` (a layer's file), or undefined when it is allowed */
export function layerViolation(file, layer, spec, typeOnly, target) {
  const rules = LAYERS[layer];
  if (!spec.startsWith('.') && !spec.startsWith('/')) {
    if (NODE_BUILTINS.has(spec) || spec.startsWith('node:') || rules.npm !== false) return undefined;
    return `imports npm package '${spec}' (${layer} may use node built-ins and src/util only)`;
  }
  if (under(target, 'src/devcluster') && !under(file, 'src/cli') && !under(file, 'src/devcluster')) {
    return `imports ${target} (only src/cli may import src/devcluster)`;
  }
  if (rules.allow.some((a) => under(target, a))) return undefined;
  if (typeOnly && rules.typeOnly?.includes(target)) return undefined;
  const why = rules.typeOnly?.includes(target) ? ' (type-only imports of it are allowed: use `import type`)' : '';
  return `imports ${target}, outside what ${layer} may use${why}`;
}

/** @type {import('eslint').Rule.RuleModule} */
export const layersRule = {
  meta: {
    type: 'problem',
    docs: { description: 'a module imports only from the layers below it (docs/architecture.md "Layers")' },
    schema: [],
    messages: { layer: '{{file}}: {{why}}' },
  },
  create(context) {
    const root = rootOf(context);
    const me = checked(root, context.filename);
    if (!me) return {};
    return {
      Program() {
        for (const i of importsOf(context.sourceCode.text, context.filename)) {
          const target = repoPath(root, join(dirname(context.filename), i.spec));
          const why = layerViolation(me.path, me.layer, i.spec, i.typeOnly, target);
          if (why) context.report({ loc: locOf(context, i), messageId: 'layer', data: { file: me.path, why } });
        }
      },
    };
  },
};

/** @type {import('eslint').Rule.RuleModule} */
export const noCycleRule = {
  meta: {
    type: 'problem',
    docs: { description: 'no circular imports among the layers’ modules (type-only imports do not count)' },
    schema: [],
    messages: { cycle: 'circular import: {{cycle}}' },
  },
  create(context) {
    const root = rootOf(context);
    if (!checked(root, context.filename)) return {};
    return {
      Program() {
        const file = context.filename;
        const follow = (abs) => checked(root, abs) !== undefined;
        for (const i of importsOf(context.sourceCode.text, file)) {
          const [target] = targetsOf(file, [i]);
          if (!target || !follow(target)) continue;
          const back = pathBack(target, file, follow);
          if (back) context.report({ loc: locOf(context, i), messageId: 'cycle', data: { cycle: [file, ...back].map((f) => repoPath(root, f)).join(' -> ') } });
        }
      },
    };
  },
};
