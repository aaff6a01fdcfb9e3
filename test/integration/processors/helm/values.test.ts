/**
 * config.helm.valuesFiles and the valuesFrom text (issue 28) through the real helm: the layers
 * merge as `helm template --values <each in order>` merges them (valuesFiles, then valuesFrom, then
 * `values` last, Flux's order), a targetPath value as `--set` types it, a values file outside the
 * chart or through a link out of the tree is refused, and a Secret's value that helm quotes in a
 * schema error does not reach the message.
 */
import { cp, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toolPath } from '../../../../src/devcluster/tools.ts';
import { createHelmProcessor } from '../../../../src/processors/helm/helm-processor.ts';
import type { ProcessContext, ValuesFromText } from '../../../../src/processors/processor.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';
import { failure } from '../../../support/failure.ts';
import { byKey, helmTemplateReference } from './reference.ts';

const FIXTURE = path.join(import.meta.dirname, 'testdata/values-layers');
const helm = toolPath('helm');
const processor = createHelmProcessor({ helmBinary: helm });

let work: string;
let tree: string;
let chart: string;

beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'hoist-helm-values-'));
  tree = path.join(work, 'tree');
  chart = path.join(tree, 'values-layers');
  await cp(FIXTURE, chart, { recursive: true });
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

const ctx = (helmValuesFrom: ValuesFromText[] = []): ProcessContext => ({ name: 'rel', installNamespace: 'apps', helmValuesFrom });
const merged = (objects: readonly KubeObject[]): unknown =>
  JSON.parse((objects.find((o) => o.kind === 'ConfigMap') as KubeObject & { data: Record<string, string> }).data['values.json']!);

describe('helm values layers', () => {
  it('merge in Flux order, each as helm --values merges it, equal to helm template with the same files', async () => {
    const fromSecret: ValuesFromText = {
      ref: 'secret ns/db key values.yaml',
      text: 'db:\n  password: s3cr3t-db-pw\n  port: 6432\nreplicas: 5\n',
      secret: true,
    };
    const hostAt: ValuesFromText = { ref: 'configmap ns/env key host', text: 'db.prod.internal', targetPath: 'db.host', secret: false };
    const inline = { replicas: 7, image: { tag: '2.0' } };
    const out = await processor.render(tree, { helm: { valuesFiles: ['values-prod.yaml', 'env/extra.yaml'], values: inline } }, ctx([fromSecret, hostAt]));

    // the reference: helm itself merging the same layers (--set after the files, as helm applies it;
    // the inline values do not touch db.host, so the order is the same)
    const files = path.join(work, 'ref');
    await cp(chart, files, { recursive: true });
    await writeFile(path.join(files, 'from-secret.yaml'), fromSecret.text);
    await writeFile(path.join(files, 'inline.json'), JSON.stringify(inline));
    const reference = helmTemplateReference(helm, {
      release: 'rel',
      chartDir: chart,
      namespace: 'apps',
      valuesFiles: ['values-prod.yaml', 'env/extra.yaml', 'from-secret.yaml', 'inline.json'].map((f) => path.join(files, f)),
      set: [`db.host=${hostAt.text}`],
    });
    expect(byKey(out.objects)).toEqual(byKey(reference));
    expect(merged(out.objects)).toEqual({
      replicas: 7,
      image: { repository: 'registry.example/app', tag: '2.0' },
      db: { host: 'db.prod.internal', port: 6432, user: 'prod-app', password: 's3cr3t-db-pw' },
      features: ['a', 'b'],
    });
    expect(out.objects.find((o) => o.kind === 'Secret')).toMatchObject({ stringData: { password: 's3cr3t-db-pw' } });
  });

  it('a targetPath value is typed as helm --set types it', async () => {
    const out = await processor.render(
      tree,
      undefined,
      ctx([
        { ref: 'configmap ns/c key n', text: '9', targetPath: 'replicas', secret: false },
        { ref: 'configmap ns/c key q', text: '"0042"', targetPath: 'image.tag', secret: false },
        { ref: 'configmap ns/c key a', text: 'x', targetPath: 'podAnnotations.app\\.kubernetes\\.io/part-of', secret: false },
      ]),
    );
    const values = merged(out.objects) as Record<string, unknown>;
    expect(values.replicas).toBe(9);
    expect(values.image).toEqual({ repository: 'registry.example/app', tag: '0042' });
    expect(values.podAnnotations).toEqual({ 'app.kubernetes.io/part-of': 'x' });
  });

  it.each([
    ['../outside.yaml', /'\.\.' path segment/],
    ['/etc/hostname', /relative path/],
    ['missing.yaml', /not-found|does not exist|no such/i],
  ])('a values file %s is refused, naming it', async (file, message) => {
    await writeFile(path.join(tree, 'outside.yaml'), 'replicas: 99\n');
    const err = await failure(processor.render(tree, { helm: { valuesFiles: [file] } }, ctx()));
    expect(err.terminal).toBe(true);
    expect(`${err.message} ${err.code}`).toMatch(message);
  });

  it('a values file that links out of the tree is refused before anything is read', async () => {
    await symlink('/etc/hostname', path.join(chart, 'escape.yaml'));
    const err = await failure(processor.render(tree, { helm: { valuesFiles: ['escape.yaml'] } }, ctx()));
    expect(err).toMatchObject({ code: 'symlink-escape', subject: 'values-layers/escape.yaml' });
  });

  it("a Secret's value helm quotes in a schema error does not reach the message", async () => {
    const err = await failure(
      processor.render(tree, undefined, ctx([{ ref: 'secret ns/db key values.yaml', text: 'db:\n  password: "Not Valid Pw!"\n', secret: true }])),
    );
    expect(err.code).toBe('values-schema');
    expect(err.message).toContain("at '/db/password': '<redacted>' does not match pattern");
    expect(err.describe()).not.toContain('Not Valid Pw!');
  });
});
