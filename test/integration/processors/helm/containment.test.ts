/**
 * What the real helm binary may read (issue 8): a chart is handed to helm only when every link in
 * it ends at a regular file inside the content tree and its values schemas refer only inside
 * themselves. Written as an attacker would: the outside file's content would land in a ConfigMap.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toolPath } from '../../../../src/devcluster/tools.ts';
import { createHelmProcessor } from '../../../../src/processors/helm/helm-processor.ts';
import { runHelm } from '../../../../src/processors/helm/run-helm.ts';
import type { HoistError } from '../../../../src/util/errors.ts';
import { expectNoControllerPaths } from '../../../support/controller-paths.ts';
import { failure } from '../../../support/failure.ts';

const SECRET = 'controller-token-0d1f';
const ctx = { name: 'demo', installNamespace: 'demo' };

let work: string;
/** the content tree: the chart lives in tree/chart, as after a git or http fetch */
let tree: string;
let chart: string;
let outside: string;

beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'hoist-helm-contain-'));
  tree = path.join(work, 'tree');
  chart = path.join(tree, 'chart');
  outside = path.join(work, 'outside');
  await mkdir(path.join(chart, 'templates'), { recursive: true });
  await mkdir(path.join(chart, 'files'));
  await mkdir(outside);
  await writeFile(path.join(outside, 'token'), SECRET);
  await writeFile(path.join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: thief\nversion: 0.1.0\n');
  await writeFile(
    path.join(chart, 'templates', 'cm.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loot\ndata:\n  p: {{ .Files.Get "files/p" | quote }}\n',
  );
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

const processor = (opts: { maxOutputBytes?: number } = {}) => createHelmProcessor({ helmBinary: toolPath('helm'), ...opts });

describe('helm gets a chart that cannot leak', () => {
  it('.Files.Get on a link to a file outside the tree: refused, naming chart/files/p; the file is not read', async () => {
    await symlink('../../../outside/token', path.join(chart, 'files', 'p'));
    // the attack is real: helm itself follows the link and copies the file into the ConfigMap
    const home = await mkdtemp(path.join(work, 'home-'));
    const direct = await runHelm(toolPath('helm'), ['template', 'x', chart], { home, timeoutMs: 60_000, maxOutputBytes: 1 << 20 });
    expect(direct.stdout).toContain(SECRET);

    const err = await failure(processor().render(tree, undefined, ctx));
    expect(err).toMatchObject({ stage: 'process', code: 'symlink-escape', subject: 'chart/files/p', terminal: true });
    expect(err.message).toBe('helm processor: symlink "chart/files/p" leads outside the content tree');
    expect(err.message).not.toContain(SECRET);
    expectNoControllerPaths(err.describe(), [work]);
  });

  it('a link to the ServiceAccount token by absolute path: refused before helm runs', async () => {
    await symlink('/var/run/secrets/kubernetes.io/serviceaccount/token', path.join(chart, 'files', 'p'));
    const err = await failure(processor().render(tree, undefined, ctx));
    expect(err).toMatchObject({ code: 'symlink-escape', subject: 'chart/files/p' });
    expect(err.message).toContain('absolute path "/var/run/secrets/kubernetes.io/serviceaccount/token"');
  });

  it('a fifo in the chart (helm would block reading it): refused', async () => {
    await writeFile(path.join(chart, 'files', 'p'), 'x');
    execFileSync('mkfifo', [path.join(chart, 'files', 'pipe')]);
    const err = await failure(processor().render(tree, undefined, ctx));
    expect(err).toMatchObject({ code: 'special-file', subject: 'chart/files/pipe' });
  });

  it("links that stay inside the tree keep working (also to a file next to the chart), and helm's warnings name no controller directory", async () => {
    await writeFile(path.join(tree, 'common.txt'), 'inside-value');
    await symlink('../../common.txt', path.join(chart, 'files', 'real'));
    await symlink('real', path.join(chart, 'files', 'p'));
    const r = await processor().render(tree, undefined, ctx);
    expect(r.objects).toEqual([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'loot' }, data: { p: 'inside-value' } }]);
    for (const w of r.warnings) expectNoControllerPaths(w, [work]);
  });

  it('values.schema.json referring to a file outside the tree: refused before helm loads it', async () => {
    await writeFile(path.join(chart, 'files', 'p'), 'x');
    await writeFile(path.join(outside, 'schema.json'), JSON.stringify({ type: 'object', required: ['proofHelmReadTheFile'] }));
    const ref = `file://${path.join(outside, 'schema.json')}`;
    await writeFile(path.join(chart, 'values.schema.json'), JSON.stringify({ type: 'object', properties: { a: { $ref: ref } }, $ref: ref }));
    // the attack is real: helm's schema compiler loads the file (its "required" shows up)
    const home = await mkdtemp(path.join(work, 'home-'));
    const direct = await runHelm(toolPath('helm'), ['template', 'x', chart], { home, timeoutMs: 60_000, maxOutputBytes: 1 << 20 });
    expect(direct.stderr).toContain('proofHelmReadTheFile');

    // not failure(): the message quotes the bundle's own reference, which here names /tmp
    const err = await processor()
      .render(tree, undefined, ctx)
      .then(
        () => {
          throw new Error('rendered');
        },
        (e: unknown) => e as HoistError,
      );
    expect(err).toMatchObject({ code: 'invalid-chart', subject: 'chart/values.schema.json', terminal: true });
    expect(err.message).toContain(`values.schema.json refers outside itself ($ref at /properties/a: "${ref}"; $ref at /: "${ref}")`);
  });

  it('a schema that refers only inside itself renders', async () => {
    await writeFile(path.join(chart, 'files', 'p'), 'x');
    await writeFile(
      path.join(chart, 'values.schema.json'),
      JSON.stringify({
        $schema: 'http://json-schema.org/draft-07/schema#',
        definitions: { s: { type: 'string' } },
        properties: { name: { $ref: '#/definitions/s' } },
      }),
    );
    const r = await processor().render(tree, { helm: { values: { name: 'ok' } } }, ctx);
    expect(r.objects).toHaveLength(1);
  });

  it('rendered output over the cap: refused, naming the processor and the cap', async () => {
    await writeFile(path.join(chart, 'files', 'p'), 'y'.repeat(20_000));
    const err = await failure(processor({ maxOutputBytes: 16 * 1024 }).render(tree, undefined, ctx));
    expect(err).toMatchObject({ code: 'output-too-large', subject: 'helm chart thief-0.1.0', terminal: true });
    expect(err.message).toBe('helm processor: helm template rendered more than the limit of 16 KiB of output');
  });
});
