/**
 * How the helm processor fails, with the real helm binary: every failure is a terminal
 * HoistError of stage 'process', reason ProcessFailed, naming the chart and, where helm names
 * one, the template file.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { toolPath } from '../../../../src/devcluster/tools.ts';
import { createHelmProcessor } from '../../../../src/processors/helm/helm-processor.ts';
import { HoistError } from '../../../../src/util/errors.ts';
import { expectNoControllerPaths } from '../../../support/controller-paths.ts';

const testdata = fileURLToPath(new URL('./testdata/', import.meta.url));
const scratch = mkdtempSync(path.join(tmpdir(), 'hoist-helm-errors-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const ctx = { name: 'demo', installNamespace: 'demo' };

async function renderError(tree: string, values?: Record<string, unknown>): Promise<HoistError> {
  const processor = createHelmProcessor({ helmBinary: toolPath('helm') });
  try {
    await processor.render(tree, values ? { helm: { values } } : undefined, ctx);
  } catch (e) {
    expect(e).toBeInstanceOf(HoistError);
    const err = e as HoistError;
    expect(err.stage).toBe('process');
    expect(err.reason).toBe('ProcessFailed');
    // a condition message: bundle-relative paths only, never the controller's directories (issue 16)
    expectNoControllerPaths(err.describe(), [testdata, scratch]);
    return err;
  }
  throw new Error('render succeeded, expected an error');
}

describe('helm processor errors', () => {
  it('enforces values.schema.json', async () => {
    const err = await renderError(path.join(testdata, 'schema-chart'), { replicas: 'two', extra: true });
    expect(err.code).toBe('values-schema');
    expect(err.terminal).toBe(true);
    expect(err.subject).toBe('helm chart schema-chart-0.1.0');
    expect(err.message).toMatch(/^values don't meet the specifications of the schema/);
    expect(err.message).toContain('/replicas');
    expect(err.message).toContain('extra');
    expect(err.describe()).toContain('process helm chart schema-chart-0.1.0: values');
  });

  it('accepts values that satisfy the schema', async () => {
    const processor = createHelmProcessor({ helmBinary: toolPath('helm') });
    const r = await processor.render(path.join(testdata, 'schema-chart'), { helm: { values: { replicas: 3 } } }, ctx);
    expect(r.objects).toEqual([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'demo-settings' }, data: { replicas: '3' } }]);
  });

  it('names the template with a syntax error', async () => {
    const err = await renderError(path.join(testdata, 'syntax-error'));
    expect(err.code).toBe('template-error');
    expect(err.terminal).toBe(true);
    expect(err.subject).toBe('helm chart syntax-error-1.2.3 syntax-error/templates/broken.yaml:6');
    expect(err.message).toContain('function "nosuchfunction" not defined');
    expect(err.message).not.toMatch(/^Error:|--debug/);
  });

  it('names the template whose execution fails', async () => {
    const tree = path.join(scratch, 'exec-error');
    cpSync(path.join(testdata, 'syntax-error'), tree, { recursive: true });
    rmSync(path.join(tree, 'templates', 'broken.yaml'));
    writeFileSync(path.join(tree, 'templates', 'required.yaml'), 'kind: ConfigMap\nname: {{ required "image.tag is required" .Values.image }}\n');
    const err = await renderError(tree);
    expect(err.code).toBe('template-error');
    expect(err.subject).toBe('helm chart syntax-error-1.2.3 syntax-error/templates/required.yaml:2');
    expect(err.message).toContain('image.tag is required');
  });

  it('refuses a dependency missing from charts/, naming it', async () => {
    const err = await renderError(path.join(testdata, 'missing-dependency'));
    expect(err.code).toBe('missing-dependency');
    expect(err.terminal).toBe(true);
    expect(err.subject).toBe('helm chart missing-dependency-0.3.0');
    expect(err.message).toContain('dependency "redis" 17.x.x from https://charts.example.com/stable is declared but missing from charts/');
  });

  it('refuses a vendored dependency at the wrong version and a subchart missing its own dependency', async () => {
    const err = await renderError(path.join(testdata, 'dependency-mismatch'));
    expect(err.code).toBe('missing-dependency');
    expect(err.message).toContain('dependency "cache" ~3.1.0 is vendored in charts/ at a version that does not satisfy the constraint');
    expect(err.message).toContain(
      'subchart charts/backend (backend-1.4.2): dependency "database" 5.0.0 from oci://registry.example.com/charts is declared but missing',
    );
    expect(err.message).not.toContain('"backend"');
  });

  it('refuses a tree without Chart.yaml', async () => {
    const tree = path.join(scratch, 'no-chart');
    mkdirSync(path.join(tree, 'templates'), { recursive: true });
    writeFileSync(path.join(tree, 'templates', 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n');
    const err = await renderError(tree);
    expect(err.code).toBe('chart-not-found');
    expect(err.terminal).toBe(true);
    expect(err.message).toContain('no Chart.yaml at the root of the content tree or in a directory directly below it');
  });

  it('refuses a tree with more than one chart one level down', async () => {
    const tree = path.join(scratch, 'two-charts');
    cpSync(path.join(testdata, 'schema-chart'), path.join(tree, 'a'), { recursive: true });
    cpSync(path.join(testdata, 'syntax-error'), path.join(tree, 'b'), { recursive: true });
    const err = await renderError(tree);
    expect(err.code).toBe('chart-ambiguous');
    expect(err.message).toContain('a/Chart.yaml, b/Chart.yaml');
  });

  it('finds a single chart one level below the root (an unpacked Helm OCI artifact)', async () => {
    const tree = path.join(scratch, 'oci-layout');
    cpSync(path.join(testdata, 'schema-chart'), path.join(tree, 'schema-chart'), { recursive: true });
    const processor = createHelmProcessor({ helmBinary: toolPath('helm') });
    const r = await processor.render(tree, undefined, ctx);
    expect(r.objects.map((o) => o.metadata.name)).toEqual(['demo-settings']);
  });

  it('requires installNamespace', async () => {
    const processor = createHelmProcessor({ helmBinary: toolPath('helm') });
    await expect(processor.render(path.join(testdata, 'schema-chart'), undefined, { name: 'x' })).rejects.toMatchObject({
      code: 'invalid-config',
      terminal: true,
    });
  });

  it('reports an invalid release name as a config error', async () => {
    const processor = createHelmProcessor({ helmBinary: toolPath('helm') });
    await expect(processor.render(path.join(testdata, 'schema-chart'), { helm: { releaseName: 'Not_Valid' } }, ctx)).rejects.toMatchObject({
      code: 'invalid-config',
      terminal: true,
    });
  });

  it('is transient when helm cannot be started', async () => {
    const processor = createHelmProcessor({ helmBinary: path.join(scratch, 'no-such-helm') });
    await expect(processor.render(path.join(testdata, 'schema-chart'), undefined, ctx)).rejects.toMatchObject({
      code: 'helm-unavailable',
      terminal: false,
    });
  });

  it('resolves a lazy helm binary once, on the first render, and is transient when that fails', async () => {
    let calls = 0;
    const lazy = createHelmProcessor({ helmBinary: () => (calls++, toolPath('helm')) });
    expect(calls).toBe(0);
    await lazy.render(path.join(testdata, 'schema-chart'), undefined, ctx);
    await lazy.render(path.join(testdata, 'schema-chart'), undefined, ctx);
    expect(calls).toBe(1);
    const broken = createHelmProcessor({
      helmBinary: () => {
        throw new Error('building helm failed');
      },
    });
    await expect(broken.render(path.join(testdata, 'schema-chart'), undefined, ctx)).rejects.toMatchObject({
      code: 'helm-unavailable',
      terminal: false,
    });
  });
});
