/**
 * The hook rule against the real helm binary: a chart with pre/post, delete, rollback and test
 * hooks, a vendored subchart and a crds/ directory.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { toolPath } from '../../../../src/devcluster/tools.ts';
import { ANNOTATION_HOOK } from '../../../../src/processors/helm/hooks.ts';
import { createHelmProcessor } from '../../../../src/processors/helm/helm-processor.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';
import { helmTemplateReference, keyOf } from './reference.ts';

const chartDir = fileURLToPath(new URL('./testdata/hooks/', import.meta.url));

function withoutPhase(o: KubeObject): KubeObject {
  const annotations = { ...o.metadata.annotations };
  delete annotations[ANNOTATION_HOOK];
  const { annotations: _dropped, ...rest } = o.metadata;
  return { ...o, metadata: Object.keys(annotations).length === 0 ? rest : { ...rest, annotations } };
}

const EXPECTED = [
  ['CustomResourceDefinition', 'widgets.example.com', ''],
  ['ServiceAccount', 'rel-child', ''], // from the vendored subchart
  ['Deployment', 'rel-app', ''],
  ['ConfigMap', 'rel-migrate-config', 'pre-upgrade,pre-install'], // weight -1
  ['ConfigMap', 'rel-announce', 'post-install'], // weight 0, by name
  ['Job', 'rel-cleanup', 'pre-delete'],
  ['ConfigMap', 'rel-rollback-note', 'post-rollback'],
  ['Job', 'rel-migrate', 'pre-install,pre-upgrade'], // weight 5
];

describe('helm hooks', () => {
  it("keeps every hook helm runs, marked with its events and after the other objects in helm's order; drops test hooks", async () => {
    const helm = toolPath('helm');
    const processor = createHelmProcessor({ helmBinary: helm });
    const r = await processor.render(chartDir, undefined, { name: 'rel', installNamespace: 'apps' });

    expect(r.objects.map((o) => [o.kind, o.metadata.name, o.metadata.annotations?.[ANNOTATION_HOOK] ?? ''])).toEqual(EXPECTED);

    // apart from the phase annotation, every kept object is exactly what helm rendered
    const reference = new Map(helmTemplateReference(helm, { release: 'rel', chartDir, namespace: 'apps' }).map((o) => [keyOf(o), o]));
    for (const o of r.objects) expect(withoutPhase(o)).toEqual(reference.get(keyOf(o)));
    // and nothing was left out (helm --skip-tests already drops the test pod)
    const kept = new Set(r.objects.map(keyOf));
    expect([...reference.keys()].filter((k) => !kept.has(k))).toEqual([]);
    // the input objects are not mutated: helm's own annotations stay as they were
    const job = r.objects.find((o) => o.metadata.name === 'rel-migrate');
    expect(job?.metadata.annotations).toEqual({
      'helm.sh/hook': 'pre-install,pre-upgrade',
      'helm.sh/hook-weight': '5',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
      [ANNOTATION_HOOK]: 'pre-install,pre-upgrade',
    });
  });
});
