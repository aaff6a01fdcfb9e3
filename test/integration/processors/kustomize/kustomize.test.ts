/**
 * The kustomize processor (issue 28) against the real `kustomize build` on the same overlays:
 * object for object equal for both overlays of the shop repository (base, component, patch,
 * configMapGenerator with merge behaviour and a file, images, namePrefix), and the spec's
 * overrides equal to kustomize building a kustomization written by hand over the overlay. Refused
 * before kustomize can fetch or run anything: a remote base (named), a base outside the tree, a
 * link out of the tree, an exec plugin (kustomize's own refusal), helm inflation.
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { KustomizeConfig } from '../../../../api/v1alpha2/types.ts';
import { toolPath } from '../../../../src/devcluster/tools.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';
import { createKustomizeProcessor } from '../../../../src/processors/kustomize/kustomize-processor.ts';
import { failure } from '../../../support/failure.ts';

const SHOP = path.join(import.meta.dirname, 'testdata/shop');
const kustomize = toolPath('kustomize');
const processor = createKustomizeProcessor({ kustomizeBinary: kustomize });
const ctx = { name: 'shop', installNamespace: 'shop' };

let work: string;
let tree: string;

beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'hoist-kustomize-'));
  tree = path.join(work, 'tree');
  await cp(SHOP, tree, { recursive: true });
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

/** `kustomize build dir`, run directly, its output read with the yaml package (not Hoist's reader) */
function kustomizeBuild(dir: string): KubeObject[] {
  const r = spawnSync(kustomize, ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`kustomize build failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as KubeObject)
    .filter(Boolean);
}

describe('kustomize processor vs kustomize build', () => {
  it.each(['overlays/prod', 'overlays/staging'])('%s: the same objects in the same order', async (overlay) => {
    const out = await processor.render(tree, { kustomize: { path: overlay } }, ctx);
    const reference = kustomizeBuild(path.join(tree, overlay));
    expect(out.objects).toEqual(reference);
    expect(out.objects.length).toBeGreaterThanOrEqual(3);
  });

  it('prod: what the overlay asks for is there (component, patch, merged generator, image, prefix)', async () => {
    const out = await processor.render(tree, { kustomize: { path: 'overlays/prod/' } }, ctx);
    const deploy = out.objects.find((o) => o.kind === 'Deployment') as KubeObject & {
      spec: {
        replicas: number;
        template: {
          metadata: { annotations: Record<string, string> };
          spec: { containers: Array<{ image: string; envFrom: Array<{ configMapRef: { name: string } }> }> };
        };
      };
    };
    expect(deploy.metadata.name).toBe('prod-shop');
    expect(deploy.spec.replicas).toBe(3);
    expect(deploy.spec.template.metadata.annotations['prometheus.io/scrape']).toBe('true');
    expect(deploy.spec.template.spec.containers[0]!.image).toBe('registry.example/shop-prod:1.0.3');
    const cm = out.objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('prod-shop-config-')) as KubeObject & {
      data: Record<string, string>;
    };
    expect(deploy.spec.template.spec.containers[0]!.envFrom[0]!.configMapRef.name).toBe(cm.metadata.name);
    expect(cm.data).toEqual({ FEATURE_CART: 'on', LOG_LEVEL: 'warn', 'banner.txt': 'Welcome to the shop\n' });
    expect(out.objects.map((o) => o.metadata.name)).toContain('prod-scrape');
  });

  it("the spec's namePrefix, images and patches equal a kustomization over the overlay, built by kustomize", async () => {
    const overrides: KustomizeConfig = {
      namePrefix: 'eu-',
      images: [{ name: 'registry.example/shop-prod', newTag: '1.0.4' }],
      patches: [{ target: { kind: 'Service', name: 'prod-shop' }, patch: '- op: replace\n  path: /spec/ports/0/port\n  value: 8080\n' }],
    };
    const out = await processor.render(tree, { kustomize: { path: 'overlays/prod', ...overrides } }, ctx);
    // the same fields written by hand in a kustomization whose only resource is the overlay
    const hand = path.join(tree, 'eu');
    await mkdir(hand);
    await writeFile(path.join(hand, 'kustomization.yaml'), JSON.stringify({ resources: ['../overlays/prod'], ...overrides }));
    expect(out.objects).toEqual(kustomizeBuild(hand));
    expect(out.objects.find((o) => o.kind === 'Deployment')?.metadata.name).toBe('eu-prod-shop');
  });

  it('without a path: the kustomization at the root', async () => {
    await writeFile(path.join(tree, 'kustomization.yaml'), 'resources: [overlays/staging]\n');
    const out = await processor.render(tree, undefined, ctx);
    expect(out.objects).toEqual(kustomizeBuild(tree));
  });
});

describe('kustomize processor refuses', () => {
  async function prodWith(extra: string): Promise<void> {
    await writeFile(path.join(tree, 'overlays/prod/kustomization.yaml'), `resources: [../../base${extra}]\n`);
  }

  it.each([
    ['a git base', 'github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.8.2'],
    ['an https URL', 'https://raw.example.com/deploy.yaml'],
    ['an scp-style git base', 'git@github.com:org/repo.git'],
  ])('%s, naming it', async (_what, base) => {
    await prodWith(`, "${base}"`);
    const err = await failure(processor.render(tree, { kustomize: { path: 'overlays/prod' } }, ctx));
    expect(err).toMatchObject({ code: 'remote-base', terminal: true, stage: 'process' });
    expect(err.message).toContain(`overlays/prod/kustomization.yaml: remote base ${JSON.stringify(base)} (resources) is refused`);
  });

  it('a remote patch, transformer or openapi file, naming each', async () => {
    await writeFile(
      path.join(tree, 'overlays/prod/kustomization.yaml'),
      'resources: [../../base]\npatches: [{path: "https://example.com/p.yaml"}]\ntransformers: ["https://example.com/t.yaml"]\nopenapi: {path: "https://example.com/schema.json"}\n',
    );
    const err = await failure(processor.render(tree, { kustomize: { path: 'overlays/prod' } }, ctx));
    expect(err.code).toBe('remote-base');
    for (const what of ['"https://example.com/t.yaml" (transformers)', '"https://example.com/p.yaml" (patches)', '"https://example.com/schema.json" (openapi)'])
      expect(err.message).toContain(`remote file ${what} is refused`);
  });

  it('a base that is not in the bundle (kustomize would try it as a remote one), and one leaving the tree', async () => {
    await prodWith(', ../../missing, ../../../outside');
    const err = await failure(processor.render(tree, { kustomize: { path: 'overlays/prod' } }, ctx));
    expect(err.code).toBe('remote-base');
    expect(err.message).toContain('resources entry "../../missing" is not a file or directory of the bundle');
    expect(err.message).toContain('resources entry "../../../outside" leaves the bundle');
  });

  it('a remote base in a base the overlay reaches', async () => {
    await writeFile(path.join(tree, 'base/kustomization.yaml'), 'resources: [deployment.yaml, "https://github.com/org/repo//base?ref=main"]\n');
    const err = await failure(processor.render(tree, { kustomize: { path: 'overlays/staging' } }, ctx));
    expect(err).toMatchObject({ code: 'remote-base', subject: 'base/kustomization.yaml resources https://github.com/org/repo//base?ref=main' });
  });

  it('a link out of the tree, before kustomize runs', async () => {
    await symlink('/etc/hostname', path.join(tree, 'overlays/prod/banner.txt'), 'file').catch(async () => {
      await rm(path.join(tree, 'overlays/prod/banner.txt'));
      await symlink('/etc/hostname', path.join(tree, 'overlays/prod/banner.txt'));
    });
    const err = await failure(processor.render(tree, { kustomize: { path: 'overlays/prod' } }, ctx));
    expect(err).toMatchObject({ code: 'symlink-escape', subject: 'overlays/prod/banner.txt' });
  });

  it('an exec plugin: kustomize refuses it (no plugin flags), and it never runs', async () => {
    const proof = path.join(work, 'ran');
    await writeFile(
      path.join(tree, 'overlays/prod/plugin.yaml'),
      `apiVersion: example.com/v1\nkind: Pwn\nmetadata:\n  name: pwn\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /usr/bin/touch ${proof}\n`,
    );
    await writeFile(path.join(tree, 'overlays/prod/kustomization.yaml'), 'resources: [../../base]\ntransformers: [plugin.yaml]\n');
    const err = await failure(processor.render(tree, { kustomize: { path: 'overlays/prod' } }, ctx));
    expect(err).toMatchObject({ code: 'kustomize-failed', terminal: true });
    expect(err.message).toContain("external plugins disabled; unable to load external plugin 'Pwn'");
    expect(spawnSync('test', ['-e', proof]).status).toBe(1);
  });

  it('helm inflation', async () => {
    await writeFile(path.join(tree, 'overlays/prod/kustomization.yaml'), 'helmCharts:\n  - name: redis\n    repo: https://charts.example.com\n');
    const err = await failure(processor.render(tree, { kustomize: { path: 'overlays/prod' } }, ctx));
    expect(err).toMatchObject({ code: 'unsupported-kustomization' });
    expect(err.message).toContain('helmCharts are not inflated');
  });

  it('a directory without a kustomization, and a path with ..', async () => {
    const none = await failure(processor.render(tree, { kustomize: { path: 'components' } }, ctx));
    expect(none).toMatchObject({ code: 'kustomization-not-found' });
    expect(none.message).toContain('"components" has no kustomization');
    const up = await failure(processor.render(tree, { kustomize: { path: 'overlays/../..' } }, ctx));
    expect(up).toMatchObject({ code: 'invalid-config', subject: 'config.kustomize.path' });
  });

  it("kustomize's own errors name the file relative to the tree", async () => {
    await writeFile(path.join(tree, 'overlays/prod/kustomization.yaml'), 'resources: [../../base]\npatches: [{path: nowhere.yaml}]\n');
    const err = await failure(processor.render(tree, { kustomize: { path: 'overlays/prod' } }, ctx));
    expect(err.code).toBe('kustomize-failed');
    expect(err.message).not.toContain(work);
  });
});
