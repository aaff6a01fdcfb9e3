/**
 * scripts/check-links.mjs: this repository's Markdown links, anchors and the repository paths its
 * comments cite all exist; scratch trees with a broken link, a missing anchor, a stale path in a
 * comment or a code span fail naming file and line, and another project's paths do not count.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { report, slug } from '../../../scripts/check-links.mjs';

const dirs: string[] = [];

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'hoist-links-'));
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

/** a small repository every case starts from: it passes as it is */
const BASE: Record<string, string> = {
  'README.md': '# Project\n\nSee [the guide](docs/guide.md#install-order-and-helm-hooks) and [api](api/v1/types.ts).\n',
  'docs/guide.md': [
    '# Guide',
    '',
    '## Install order and Helm hooks',
    '',
    '## Objects Hoist never deletes: `resource-policy: keep`, `prune: disabled`',
    '',
    '## Notes',
    '',
    '## Notes',
    '',
    '```sh',
    '# not a heading',
    'see [x](missing.md)',
    '```',
    '',
    'Back to [the top](#guide), [keep](#objects-hoist-never-deletes-resource-policy-keep-prune-disabled), [second notes](#notes-1).',
    'Upstream: [flux](https://fluxcd.io/flux/) and [mail](mailto:a@b.c); `[not](a-link.md)`.',
    '',
  ].join('\n'),
  'api/v1/types.ts': '/** mirrored by api/v1/crd.yaml; see docs/guide.md#notes */\nexport type T = string;\n',
  'api/v1/crd.yaml': 'kind: CustomResourceDefinition\n',
  'src/sources/transport/transport.ts': 'export const t = 1;\n',
  'src/sources/git/source.ts': [
    '/**',
    " * Network rules are the shared transport's (../transport/transport.ts), as Flux judges them",
    " * (fluxcd/source-controller/docs/spec/v1/helmrepositories.md) and helm's pkg/kube/ready.go,",
    ' * https://github.com/fluxcd/flux2/blob/main/src/cmd/main.go; every src/**/README.md; ../../etc/passwd',
    ' */',
    "const url = 'https://example.com/docs/missing.md'; // trailing: see src/sources/transport",
    'export { url };',
    '',
  ].join('\n'),
  'src/sources/README.md': '# sources\n\n[transport](transport/transport.ts), `../sources/git/source.ts`; [up](../../README.md#project).\n',
  'testdata/fixture/upstream/README.md': '[gone](nowhere.md)\n',
};

async function check(changes: Record<string, string>) {
  return report(await tree({ ...BASE, ...changes }));
}

describe('scripts/check-links.mjs', () => {
  it('passes on this repository', () => {
    const r = report();
    expect(r.lines.join('\n')).toMatch(/^links: \d+ Markdown pages and \d+ code files/);
    expect(r.code).toBe(0);
  });

  it('passes the base tree: anchors as GitHub slugs them, fenced code, external links, upstream paths, fixtures', async () => {
    const r = await check({});
    expect(r.lines).toEqual([expect.stringMatching(/^links: 3 Markdown pages and 3 code files/)]);
    expect(r.code).toBe(0);
  });

  it('a link to a missing file fails with file and line', async () => {
    const r = await check({ 'docs/ops.md': '# Ops\n\nSee [the guide](guide.md) and [old](old-guide.md#x).\n' });
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(['docs/ops.md:3: link old-guide.md#x: no such file']);
  });

  it('a link to a heading the target does not have fails', async () => {
    const r = await check({ 'docs/ops.md': '# Ops\n\n[a](guide.md#install-order) [b](#ops) [c](#nope)\n' });
    expect(r.lines).toEqual([
      'docs/ops.md:3: link guide.md#install-order: no heading #install-order in docs/guide.md',
      'docs/ops.md:3: link #nope: no heading #nope in docs/ops.md',
    ]);
  });

  it('a code span that is a stale repository path fails; code holding a path does not count', async () => {
    const r = await check({ 'src/sources/README.md': '# s\n\n`../http/transport.ts` and `STYLE.md`; `git checkout src/old.ts`\n' });
    expect(r.lines).toEqual([
      'src/sources/README.md:3: `../http/transport.ts`: not in the repository',
      'src/sources/README.md:3: `STYLE.md`: not in the repository',
    ]);
  });

  it('a comment citing a missing repository path, a stale relative path or a missing capitals page fails', async () => {
    const r = await check({
      'src/sources/image/client.ts': [
        '/**',
        ' * Retries as ../http/backoff.ts says; layers of STYLE.md.',
        ' */',
        'export const x = 1; // see src/sources/image/gone.ts, docs/guide.md#missing-anchor',
        '// every ../http/* module',
        '',
      ].join('\n'),
    });
    expect(r.code).toBe(1);
    expect(r.lines).toEqual([
      'src/sources/image/client.ts:2: comment cites ../http/backoff.ts: not in the repository',
      'src/sources/image/client.ts:2: comment cites STYLE.md: not in the repository',
      'src/sources/image/client.ts:4: comment cites src/sources/image/gone.ts: not in the repository',
      'src/sources/image/client.ts:4: comment cites docs/guide.md#missing-anchor: not in the repository',
      'src/sources/image/client.ts:5: comment cites ../http/*: not in the repository',
    ]);
  });

  it('paths in code, not in comments, are not checked', async () => {
    const r = await check({ 'test/a.test.ts': "const p = 'src/nothing/here.ts';\nexport { p };\n" });
    expect(r.code).toBe(0);
  });

  it('slugs headings as GitHub does', () => {
    expect(slug('Semver ranges: the newest 1.9.x')).toBe('semver-ranges-the-newest-19x');
    expect(slug("Post-build variables (Flux's postBuild)")).toBe('post-build-variables-fluxs-postbuild');
    expect(slug('The hoist CLI')).toBe('the-hoist-cli');
    expect(slug('a  b_c')).toBe('a--b_c');
  });
});
