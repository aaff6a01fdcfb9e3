import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contentDigest } from '../../../src/processors/content-digest.ts';
import { listManifestFiles, plainProcessor, renderPlain } from '../../../src/processors/plain.ts';
import { expectNoControllerPaths } from '../../support/controller-paths.ts';
import { failure } from '../../support/failure.ts';
import type { HoistError } from '../../../src/util/errors.ts';

const FIXTURES = join(import.meta.dirname, '../../../testdata/fixtures/plain');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hoist-plain-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(rel: string, text: string): Promise<void> {
  await mkdir(join(dir, rel, '..'), { recursive: true });
  await writeFile(join(dir, rel), text);
}

function renderError(tree: string): Promise<HoistError> {
  return failure(plainProcessor.render(tree, undefined, { name: 'bd', installNamespace: 'ns' }));
}

const cm = (name: string, extra = '') => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}`;

describe('plain processor', () => {
  it('renders the argo-rollouts v1.8.4 install.yaml: 15 objects, in file order', async () => {
    const { objects, warnings } = await plainProcessor.render(join(FIXTURES, 'argo-rollouts-v1.8.4'), undefined, {
      name: 'rollouts',
      installNamespace: 'argo-rollouts',
    });
    expect(warnings).toEqual([]);
    expect(objects.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.name}`)).toEqual([
      'apiextensions.k8s.io/v1 CustomResourceDefinition analysisruns.argoproj.io',
      'apiextensions.k8s.io/v1 CustomResourceDefinition analysistemplates.argoproj.io',
      'apiextensions.k8s.io/v1 CustomResourceDefinition clusteranalysistemplates.argoproj.io',
      'apiextensions.k8s.io/v1 CustomResourceDefinition experiments.argoproj.io',
      'apiextensions.k8s.io/v1 CustomResourceDefinition rollouts.argoproj.io',
      'v1 ServiceAccount argo-rollouts',
      'rbac.authorization.k8s.io/v1 ClusterRole argo-rollouts',
      'rbac.authorization.k8s.io/v1 ClusterRole argo-rollouts-aggregate-to-admin',
      'rbac.authorization.k8s.io/v1 ClusterRole argo-rollouts-aggregate-to-edit',
      'rbac.authorization.k8s.io/v1 ClusterRole argo-rollouts-aggregate-to-view',
      'rbac.authorization.k8s.io/v1 ClusterRoleBinding argo-rollouts',
      'v1 ConfigMap argo-rollouts-config',
      'v1 Secret argo-rollouts-notification-secret',
      'v1 Service argo-rollouts-metrics',
      'apps/v1 Deployment argo-rollouts',
    ]);
    const deploy = objects.find((o) => o.kind === 'Deployment') as any;
    expect(deploy.spec.template.spec.containers[0].image).toBe('quay.io/argoproj/argo-rollouts:latest');
  });

  it('renders the argo-rollouts v1.9.1 install.yaml, with a different digest than v1.8.4', async () => {
    const ctx = { name: 'rollouts', installNamespace: 'argo-rollouts' };
    const v1 = await plainProcessor.render(join(FIXTURES, 'argo-rollouts-v1.8.4'), undefined, ctx);
    const v2 = await plainProcessor.render(join(FIXTURES, 'argo-rollouts-v1.9.1'), undefined, ctx);
    expect(v2.objects).toHaveLength(15);
    expect(v2.objects.map((o) => o.metadata.name).sort()).toEqual(v1.objects.map((o) => o.metadata.name).sort());
    expect(contentDigest(v2.objects)).not.toBe(contentDigest(v1.objects));
    expect(contentDigest(v1.objects)).toBe(contentDigest((await plainProcessor.render(join(FIXTURES, 'argo-rollouts-v1.8.4'), undefined, ctx)).objects));
  });

  it('reads *.yaml, *.yml and *.json recursively in kubectl -R order, skipping hidden entries and other files', async () => {
    await write('b.yaml', cm('b'));
    await write('a/z.yml', cm('az'));
    await write('a.json', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ajson' } }));
    await write('.git/config.yaml', cm('git'));
    await write('.gitlab-ci.yml', 'stages: [build]\n');
    await write('README.md', '# not yaml');
    await write('c/values.txt', 'x');
    const { files } = await listManifestFiles(dir);
    expect(files.map((f) => f.path)).toEqual(['a/z.yml', 'a.json', 'b.yaml']);
    const { objects } = await plainProcessor.render(dir, undefined, { name: 'bd' });
    expect(objects.map((o) => o.metadata.name)).toEqual(['az', 'ajson', 'b']);
  });

  it('multi-document files, empty documents, and List kinds flattened', async () => {
    await write(
      'all.yaml',
      `---\n${cm('one')}---\n# just a comment\n---\napiVersion: v1\nkind: List\nitems:\n- ${cm('two').replaceAll('\n', '\n  ')}\n- apiVersion: v1\n  kind: ConfigMapList\n  items:\n  - ${cm('three').replaceAll('\n', '\n    ')}\n`,
    );
    const { objects } = await plainProcessor.render(dir, undefined, { name: 'bd' });
    expect(objects.map((o) => o.metadata.name)).toEqual(['one', 'two', 'three']);
  });

  it('YAML 1.1 scalars as kubectl reads them', async () => {
    await write('cm.yaml', cm('x', 'data:\n  a: "yes"\nspec:\n  enabled: yes\n  mode: 0644\n  size: 1_000\n  time: 1:20\n'));
    const { objects } = await plainProcessor.render(dir, undefined, { name: 'bd' });
    expect(objects[0]).toMatchObject({ data: { a: 'yes' }, spec: { enabled: true, mode: 420, size: 1000, time: '1:20' } });
  });

  it('objects without apiVersion, kind or metadata.name are errors naming file and line; all problems are reported', async () => {
    await write('a.yaml', `${cm('ok')}---\nkind: ConfigMap\nmetadata:\n  name: noversion\n`);
    await write('b.yaml', `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: gen-\n---\napiVersion: v1\nmetadata:\n  name: nokind\n`);
    const err = await renderError(dir);
    expect(err.stage).toBe('process');
    expect(err.reason).toBe('ProcessFailed');
    expect(err.terminal).toBe(true);
    expect(err.code).toBe('invalid-object');
    expect(err.subject).toBe('a.yaml:6');
    expect(err.message).toContain('3 problems');
    expect(err.message).toContain('ConfigMap noversion: missing apiVersion');
    expect(err.message).toContain('b.yaml:1: v1 ConfigMap: missing metadata.name (generateName cannot be applied declaratively)');
    expect(err.message).toContain('b.yaml:6: nokind: missing kind');
  });

  it('a document that is not an object is an error', async () => {
    await write('a.yaml', '- a\n- b\n');
    const err = await renderError(dir);
    expect(err.subject).toBe('a.yaml:1');
    expect(err.message).toMatch(/not an object/);
  });

  it('duplicate objects are an error naming both files', async () => {
    await write('a.yaml', cm('same'));
    await write('sub/b.yaml', `${cm('other')}---\n${cm('same', 'data: {x: y}\n')}`);
    const err = await renderError(dir);
    expect(err.code).toBe('duplicate-object');
    expect(err.subject).toBe('sub/b.yaml:6');
    expect(err.message).toBe('duplicate object ConfigMap ns/same: defined in a.yaml:1 and sub/b.yaml:6');
  });

  it('the namespace counts for identity; a missing namespace is installNamespace', async () => {
    await write('a.yaml', `${cm('x', '  namespace: one\n')}---\n${cm('x', '  namespace: two\n')}`);
    await expect(plainProcessor.render(dir, undefined, { name: 'bd', installNamespace: 'ns' })).resolves.toBeDefined();
    await write('b.yaml', cm('x', '  namespace: ns\n'));
    await write('c.yaml', cm('x'));
    const err = await renderError(dir);
    expect(err.message).toContain('defined in b.yaml:1 and c.yaml:1');
  });

  it('the same name in different groups or kinds is not a duplicate', async () => {
    await write(
      'a.yaml',
      `${cm('x')}---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n---\napiVersion: example.com/v1\nkind: ConfigMap\nmetadata:\n  name: x\n`,
    );
    const { objects } = await plainProcessor.render(dir, undefined, { name: 'bd' });
    expect(objects).toHaveLength(3);
  });

  it('a YAML syntax error names the file and line', async () => {
    await write('ok.yaml', cm('fine'));
    await write('dir/bad.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n');
    const err = await renderError(dir);
    expect(err.code).toBe('parse-error');
    expect(err.subject).toMatch(/^dir\/bad\.yaml:\d+$/);
  });

  it('symlinks: links to files inside the tree are read; a link out of it fails the render, naming it, and nothing outside is read', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'hoist-outside-'));
    try {
      await writeFile(join(outside, 'secret.yaml'), cm('outside-secret'));
      await write('real/a.yaml', cm('a'));
      await symlink('real/a.yaml', join(dir, 'link.yaml'));
      const { files, errors } = await listManifestFiles(dir);
      expect(files.map((f) => f.path)).toEqual(['link.yaml', 'real/a.yaml']);
      expect(errors).toEqual([]);
      // the link and the real file are one object twice
      expect((await renderError(dir)).code).toBe('duplicate-object');

      await rm(join(dir, 'real'), { recursive: true });
      await write('real/a.yaml', cm('a'));
      await rm(join(dir, 'link.yaml'));
      await symlink(`../${basename(outside)}/secret.yaml`, join(dir, 'escape.yaml'));
      const err = await renderError(dir);
      expect(err).toMatchObject({ code: 'symlink-escape', subject: 'escape.yaml', terminal: true, stage: 'process' });
      expect(err.message).toBe(`plain processor: symlink "escape.yaml" leads outside the content tree`);
      expect(err.message).not.toContain('outside-secret');
      expectNoControllerPaths(err.describe(), [dir]);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('a symlinked directory fails the render (links must end at a regular file)', async () => {
    await write('real/a.yaml', cm('a'));
    await symlink('real', join(dir, 'more'));
    const err = await renderError(dir);
    expect(err).toMatchObject({ code: 'not-a-regular-file', subject: 'more' });
  });

  it('size caps: per file and per bundle, naming the processor, the file and the cap', async () => {
    await write('a.yaml', cm('a', `data:\n  x: "${'x'.repeat(3000)}"\n`));
    await write('b.yaml', cm('b', `data:\n  x: "${'x'.repeat(3000)}"\n`));
    const perFile = await failure(renderPlain(dir, {}, { maxFileBytes: 2048 }));
    expect(perFile).toMatchObject({ code: 'too-large', subject: 'a.yaml', terminal: true, stage: 'process' });
    expect(perFile.message).toMatch(/^2 problems: a\.yaml: plain processor: "a\.yaml" is \d+ bytes, over the limit of 2 KiB per file/);
    const perBundle = await failure(renderPlain(dir, {}, { maxTotalBytes: 4096 }));
    expect(perBundle).toMatchObject({ code: 'too-large', subject: 'b.yaml' });
    expect(perBundle.message).toBe('plain processor: files read add up to more than the limit of 4 KiB per bundle (at "b.yaml")');
  });

  it('an empty tree renders nothing, with a warning', async () => {
    const r = await plainProcessor.render(dir, undefined, { name: 'bd' });
    expect(r.objects).toEqual([]);
    expect(r.warnings[0]).toMatch(/no objects found/);
  });
});
