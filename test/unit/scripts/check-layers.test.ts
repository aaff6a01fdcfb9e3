/**
 * scripts/check-layers.mjs (run by `npm run lint`): the repository passes, and trees with a layer
 * violation, a value import where only types are allowed, a devcluster import or a circular
 * import fail with a line naming the file.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { report } from '../../../scripts/check-layers.mjs';

const SCRIPT = fileURLToPath(new URL('../../../scripts/check-layers.mjs', import.meta.url));
const dirs: string[] = [];

/** the script as `npm run lint` runs it, on this repository */
function runScript(): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** the same verdict on a scratch tree, in-process (a node start per case cost most of this file's time) */
function run(tree: string): { code: number; out: string } {
  const r = report(tree);
  return { code: r.code, out: r.lines.join('\n') };
}

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'hoist-layers-'));
  dirs.push(root);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), body);
  }
  return root;
}

afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const base = {
  'api/v1alpha2/types.ts': "import { x } from '../../src/util/errors.ts';\nexport const y = x;\n",
  'src/util/errors.ts': "import { createHash } from 'node:crypto';\nimport { parse } from 'yaml';\nexport const x = [createHash, parse];\n",
  'src/kube/types.ts': "import type { y } from '../../api/v1alpha2/types.ts';\nexport type T = typeof y;\nexport const helper = 1;\n",
  'src/kube/client.ts': "import { y } from '../../api/v1alpha2/types.ts';\nexport const c = y;\n",
};

describe('check-layers', () => {
  it('passes on this repository', () => {
    const r = runScript();
    expect(r.out).toMatch(/layers: \d+ files follow/);
    expect(r.code).toBe(0);
  });

  it('passes on a tree that keeps the rules, including type-only imports of src/kube/types.ts', async () => {
    const r = run(
      await tree({
        ...base,
        'src/processors/plain.ts':
          "import type { T } from '../kube/types.ts';\nimport { type T as U } from '../kube/types.ts';\n// import { c } from '../kube/client.ts';\nexport const p = (a: T, b: U) => [a, b];\n",
        'src/cli/main.ts': "import { c } from '../kube/client.ts';\nimport '../devcluster/tools.ts';\nexport const m = c;\n",
        'src/devcluster/tools.ts': "import { x } from '../util/errors.ts';\nexport const t = x;\n",
      }),
    );
    expect(r.out).toMatch(/layers: 7 files follow/);
    expect(r.code).toBe(0);
  });

  it('fails on an upward import, a value import of kube/types.ts from a pure layer, and devcluster imports', async () => {
    const r = run(
      await tree({
        ...base,
        'src/util/bad.ts': "import { c } from '../kube/client.ts';\nexport const b = c;\n",
        'src/processors/plain.ts': "import { helper } from '../kube/types.ts';\nexport const p = helper;\n",
        'src/health/readiness.ts': "export { c } from '../kube/client.ts';\n",
        'src/apply/applier.ts': "const m = await import('../devcluster/tools.ts');\nexport const a = m;\n",
        'src/devcluster/tools.ts': "import { pino } from 'pino';\nexport const t = pino;\n",
      }),
    );
    expect(r.code).toBe(1);
    expect(r.out).toContain('src/util/bad.ts: imports src/kube/client.ts, outside what src/util may use');
    expect(r.out).toContain('src/processors/plain.ts: imports src/kube/types.ts, outside what src/processors may use (type-only imports of it are allowed');
    expect(r.out).toContain('src/health/readiness.ts: imports src/kube/client.ts');
    expect(r.out).toContain('src/apply/applier.ts: imports src/devcluster/tools.ts (only src/cli may import src/devcluster)');
    expect(r.out).toContain("src/devcluster/tools.ts: imports npm package 'pino'");
    expect(r.out).toContain('5 violation(s), 0 cycle(s)');
  });

  it("examples/ may build on src/kube and api/, not on Hoist's reconciler; src/webhook not on the reconciler either", async () => {
    const r = run(
      await tree({
        ...base,
        'examples/operator/ok.ts':
          "import { c } from '../../src/kube/client.ts';\nimport { y } from '../../api/v1alpha2/types.ts';\nexport const o = [c, y];\n",
        'examples/operator/bad.ts': "import { m } from '../../src/reconciler/manager.ts';\nexport const b = m;\n",
        'src/reconciler/manager.ts': 'export const m = 1;\n',
        'src/webhook/receiver.ts': "import { m } from '../reconciler/manager.ts';\nimport { c } from '../kube/client.ts';\nexport const w = [m, c];\n",
      }),
    );
    expect(r.code).toBe(1);
    expect(r.out).toContain('examples/operator/bad.ts: imports src/reconciler/manager.ts, outside what examples may use');
    expect(r.out).toContain('src/webhook/receiver.ts: imports src/reconciler/manager.ts, outside what src/webhook may use');
    expect(r.out).not.toContain('examples/operator/ok.ts');
    expect(r.out).toContain('2 violation(s), 0 cycle(s)');
  });

  it('fails on a circular import among runtime imports, not among type-only ones', async () => {
    const cyclic = run(
      await tree({
        ...base,
        'src/apply/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
        'src/apply/b.ts': "import { c } from './c.ts';\nexport const b = () => c;\n",
        'src/apply/c.ts': "import { a } from './a.ts';\nexport const c = () => a;\n",
      }),
    );
    expect(cyclic.code).toBe(1);
    expect(cyclic.out).toContain('circular import: src/apply/a.ts -> src/apply/b.ts -> src/apply/c.ts -> src/apply/a.ts');
    const typesOnly = run(
      await tree({
        ...base,
        'src/apply/a.ts': "import type { B } from './b.ts';\nexport type A = { b?: B };\n",
        'src/apply/b.ts': "import type { A } from './a.ts';\nexport type B = { a?: A };\n",
      }),
    );
    expect(typesOnly.out).toMatch(/no circular imports/);
    expect(typesOnly.code).toBe(0);
  });
});
