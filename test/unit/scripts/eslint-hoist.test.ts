/**
 * The local ESLint plugin (scripts/eslint/, wired in eslint.config.js): through the repository's
 * own config, an upward import, an undeclared error code and a branch on error text are errors;
 * on scratch trees, each rule the layer table holds (type-only imports of src/kube/types.ts,
 * devcluster, npm in devcluster, examples, webhook) and circular runtime imports.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterEach, describe, expect, it } from 'vitest';
import { hoistConfig } from '../../../scripts/eslint/hoist.mjs';

const repo = join(import.meta.dirname, '../../..');
const dirs: string[] = [];

afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** "ruleId line: message" for each problem ESLint reports */
const problems = (results: ESLint.LintResult[]): string[] => results.flatMap((r) => r.messages.map((m) => `${m.ruleId ?? 'fatal'} ${m.line}: ${m.message}`));

/** a scratch tree laid out like this repository, linted with only the hoist rules */
async function lintTree(files: Record<string, string>): Promise<Record<string, string[]>> {
  const root = await mkdtemp(join(tmpdir(), 'hoist-eslint-'));
  dirs.push(root);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), body);
  }
  const eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, hoistConfig(root)],
  });
  const out: Record<string, string[]> = {};
  for (const r of await eslint.lintFiles(Object.keys(files))) {
    const p = problems([r]);
    if (p.length > 0) out[r.filePath.slice(root.length + 1)] = p;
  }
  return out;
}

const base = {
  'api/v1alpha2/types.ts': "import { x } from '../../src/util/errors.ts';\nexport const y = x;\n",
  'src/util/errors.ts': "import { createHash } from 'node:crypto';\nimport { parse } from 'yaml';\nexport const x = [createHash, parse];\n",
  'src/kube/types.ts': "import type { y } from '../../api/v1alpha2/types.ts';\nexport type T = typeof y;\nexport const helper = 1;\n",
  'src/kube/client.ts': "import { y } from '../../api/v1alpha2/types.ts';\nexport const c = y;\n",
};

describe('the repository config (npm run lint)', () => {
  const eslint = new ESLint({ cwd: repo });
  const lint = async (path: string, text: string) => problems(await eslint.lintText(text, { filePath: join(repo, path) }));

  it('refuses an upward import and an undeclared code, and passes the same file without them', async () => {
    const bad = [
      "import { HoistError } from './errors.ts';",
      "import { ApplyCode } from '../apply/errors.ts';",
      'export const a = ApplyCode.ApplyFailed;',
      "export const e = new HoistError('no', { stage: 'fetch', code: 'no-such-code', terminal: true });",
      "export const same = (err: HoistError) => err.code === 'not-a-code' || err.is('cache-ful');",
      '',
    ].join('\n');
    expect(await lint('src/util/fixture.ts', bad)).toEqual([
      'hoist/layers 2: src/util/fixture.ts: imports src/apply/errors.ts, outside what src/util may use',
      "hoist/declared-codes 4: code 'no-such-code' is declared by no layer: add it to a layer's *_CODES in its errors.ts, or name a declared one",
      "hoist/declared-codes 5: code 'not-a-code' is declared by no layer: add it to a layer's *_CODES in its errors.ts, or name a declared one",
      "hoist/declared-codes 5: code 'cache-ful' is declared by no layer: add it to a layer's *_CODES in its errors.ts, or name a declared one",
    ]);
    const good = [
      "import { HoistError } from './errors.ts';",
      "export const e = new HoistError('no', { stage: 'fetch', code: 'not-found', terminal: true });",
      "export const same = (err: HoistError) => err.code === 'cache-full' || err.is('revision-too-large') || Object.is(err, 'x-y');",
      "export const errno = (err: { code?: string }) => err.code === 'EPERM';",
      '',
    ].join('\n');
    expect(await lint('src/util/fixture.ts', good)).toEqual([]);
  });

  it('refuses a branch on error text', async () => {
    const text = [
      'export function f(err: Error, e: Error): number {',
      "  if (err.message === 'boom') return 1;",
      "  if (e.message.includes('boom')) return 2;",
      '  if (/boom/.test(err.name)) return 3;',
      '  return err.message.length + (e instanceof TypeError ? 4 : 5);',
      '}',
      '',
    ].join('\n');
    expect(await lint('src/util/fixture.ts', text)).toEqual([
      "hoist/no-error-text-branch 2: a branch on error text (err.message): branch on the error's type or code",
      "hoist/no-error-text-branch 3: a branch on error text (e.message): branch on the error's type or code",
      "hoist/no-error-text-branch 4: a branch on error text (err.name): branch on the error's type or code",
    ]);
  });

  it('leaves tests alone: they may reach across layers', async () => {
    expect(await lint('src/util/fixture.test.ts', "import { ApplyCode } from '../apply/errors.ts';\nexport const a = ApplyCode;\n")).toEqual([]);
  });
});

describe('hoist/layers and hoist/no-cycle on scratch trees', () => {
  it('pass a tree that keeps the rules, including type-only imports of src/kube/types.ts', async () => {
    expect(
      await lintTree({
        ...base,
        'src/processors/plain.ts':
          "import type { T } from '../kube/types.ts';\nimport { type T as U } from '../kube/types.ts';\n// import { c } from '../kube/client.ts';\nexport const p = (a: T, b: U) => [a, b];\n",
        'src/cli/main.ts': "import { c } from '../kube/client.ts';\nimport '../devcluster/tools.ts';\nexport const m = c;\n",
        'src/devcluster/tools.ts': "import { x } from '../util/errors.ts';\nexport const t = x;\n",
      }),
    ).toEqual({});
  });

  it('refuse an upward import, a value import of kube/types.ts from a pure layer, and devcluster imports', async () => {
    expect(
      await lintTree({
        ...base,
        'src/util/bad.ts': "import { c } from '../kube/client.ts';\nexport const b = c;\n",
        'src/processors/plain.ts': "import { helper } from '../kube/types.ts';\nexport const p = helper;\n",
        'src/health/readiness.ts': "export { c } from '../kube/client.ts';\n",
        'src/apply/applier.ts': "const m = await import('../devcluster/tools.ts');\nexport const a = m;\n",
        'src/devcluster/tools.ts': "import { pino } from 'pino';\nexport const t = pino;\n",
      }),
    ).toEqual({
      'src/util/bad.ts': ['hoist/layers 1: src/util/bad.ts: imports src/kube/client.ts, outside what src/util may use'],
      'src/processors/plain.ts': [
        'hoist/layers 1: src/processors/plain.ts: imports src/kube/types.ts, outside what src/processors may use (type-only imports of it are allowed: use `import type`)',
      ],
      'src/health/readiness.ts': ['hoist/layers 1: src/health/readiness.ts: imports src/kube/client.ts, outside what src/health may use'],
      'src/apply/applier.ts': ['hoist/layers 1: src/apply/applier.ts: imports src/devcluster/tools.ts (only src/cli may import src/devcluster)'],
      'src/devcluster/tools.ts': [
        "hoist/layers 1: src/devcluster/tools.ts: imports npm package 'pino' (src/devcluster may use node built-ins and src/util only)",
      ],
    });
  });

  it("let examples/ build on src/kube and api/, not on Hoist's reconciler; src/webhook not on the reconciler either", async () => {
    expect(
      await lintTree({
        ...base,
        'examples/operator/ok.ts':
          "import { c } from '../../src/kube/client.ts';\nimport { y } from '../../api/v1alpha2/types.ts';\nexport const o = [c, y];\n",
        'examples/operator/bad.ts': "import { m } from '../../src/reconciler/manager.ts';\nexport const b = m;\n",
        'src/reconciler/manager.ts': 'export const m = 1;\n',
        'src/webhook/receiver.ts': "import { m } from '../reconciler/manager.ts';\nimport { c } from '../kube/client.ts';\nexport const w = [m, c];\n",
      }),
    ).toEqual({
      'examples/operator/bad.ts': ['hoist/layers 1: examples/operator/bad.ts: imports src/reconciler/manager.ts, outside what examples may use'],
      'src/webhook/receiver.ts': ['hoist/layers 1: src/webhook/receiver.ts: imports src/reconciler/manager.ts, outside what src/webhook may use'],
    });
  });

  it('refuse a circular import among runtime imports, not among type-only ones', async () => {
    expect(
      await lintTree({
        ...base,
        'src/apply/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
        'src/apply/b.ts': "import { c } from './c.ts';\nexport const b = () => c;\n",
        'src/apply/c.ts': "import { a } from './a.ts';\nexport const c = () => a;\n",
      }),
    ).toEqual({
      'src/apply/a.ts': ['hoist/no-cycle 1: circular import: src/apply/a.ts -> src/apply/b.ts -> src/apply/c.ts -> src/apply/a.ts'],
      'src/apply/b.ts': ['hoist/no-cycle 1: circular import: src/apply/b.ts -> src/apply/c.ts -> src/apply/a.ts -> src/apply/b.ts'],
      'src/apply/c.ts': ['hoist/no-cycle 1: circular import: src/apply/c.ts -> src/apply/a.ts -> src/apply/b.ts -> src/apply/c.ts'],
    });
    expect(
      await lintTree({
        ...base,
        'src/apply/a.ts': "import type { B } from './b.ts';\nexport type A = { b?: B };\n",
        'src/apply/b.ts': "import type { A } from './a.ts';\nexport type B = { a?: A };\n",
      }),
    ).toEqual({});
  });
});
