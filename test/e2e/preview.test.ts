/**
 * A preview is what the controller applies (issue 9): `previewBundle` (the code behind `hoist
 * render` and `hoist diff`) given the cluster's kubeconfig renders the same objects, with the same
 * namespaces and the same content digest, as the controller's revision — for plain, helm and
 * registry-v1 bundles served over http. The controller's side is read from its revision store
 * (what it stored to apply), so the comparison does not depend on the apply succeeding.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_VERSION, KIND, type BundleDeployment, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { RevisionStore } from '../../src/revisions/revision-store.ts';
import { previewBundle } from '../../src/cli/render.ts';
import { cond } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { kubeconfigPath } from '../support/env.ts';
import { sha256, tarGz } from '../support/http-files.ts';
import { isolateGroup, isolatePlain } from '../support/upgrade-fixtures.ts';

const FIXTURES = join(import.meta.dirname, '../../testdata/fixtures');

/** serves a fixture directory, each file's text rewritten (cluster-scoped names made this file's own) */
async function serveDir(
  path: string,
  dir: string,
  rewrite: (text: string) => string = (x) => x,
): Promise<{ kind: 'http'; http: { url: string; sha256: string } }> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out[relative(dir, join(e.parentPath, e.name))] = rewrite(await readFile(join(e.parentPath, e.name), 'utf8'));
  }
  const body = await tarGz(out);
  files.set(path, body);
  return { kind: 'http', http: { url: files.url(path), sha256: sha256(body) } };
}

const { t, files } = controllerWithFiles();

describe('preview equals controller', () => {
  const cases: Array<[string, () => Promise<BundleDeploymentSpec>]> = [
    // the controller applies what it stored: CRDs and cluster roles other files install too (at
    // the same time) are renamed for this file
    [
      'plain',
      async () => ({
        format: 'plain',
        sources: [await serveDir('/plain.tgz', join(FIXTURES, 'plain', 'argo-rollouts-v1.9.1'), (x) => isolatePlain(x, `pv${t.runId}`))],
      }),
    ],
    [
      'helm',
      async () => ({
        format: 'helm',
        sources: [await serveDir('/helm.tgz', join(FIXTURES, 'helm', 'kube-state-metrics'))],
        config: { helm: { values: { fullnameOverride: `ksm-preview-${t.runId}` } } },
      }),
    ],
    // the operator renamed too: its cluster roles (named after the CSV) are formats.test.ts's otherwise
    [
      'registry-v1',
      async () => ({
        format: 'registry-v1',
        sources: [
          await serveDir('/rv1.tgz', join(FIXTURES, 'registry-v1', 'argocd-operator.v0.6.0'), (x) =>
            isolateGroup(x, `pv${t.runId}`).replaceAll('argocd-operator', `argocd-operator-pv${t.runId}`),
          ),
        ],
      }),
    ],
  ];

  it.each(cases)('%s: same objects, namespaces and content digest', async (format, specOf) => {
    const name = `preview-${format}`;
    const spec: BundleDeploymentSpec = { ...(await specOf()), installNamespace: `preview-${format}-${t.runId}`, paused: false };
    const bd: BundleDeployment = { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec };

    const preview = await previewBundle(bd, { kubeconfig: kubeconfigPath() });

    await t.create(name, spec);
    // the revision is stored before it is applied: compare what the controller stored to apply
    const done = await t.waitFor(name, (b) => cond(b, 'Unpacked')?.status === 'True' && (b.status?.revisions?.length ?? 0) > 0, 'rendered and stored', 120_000);
    expect(done.status?.contentDigest).toBe(preview.contentDigest);
    const rev = done.status!.revisions!.at(-1)!;
    const stored = await new RevisionStore(t.client, t.namespace).load(name, rev);
    expect(stored).toBeDefined();
    expect(preview.objects).toEqual(stored);
    // namespaced kinds went to the install namespace in both (the processors leave most unset)
    expect(preview.objects.some((o) => o.metadata.namespace === spec.installNamespace)).toBe(true);
  });
});
