/**
 * For every chart in testdata/fixtures/helm and each of its ci/*.yaml values files (and no
 * values), Hoist's helm processor yields exactly the objects `helm template` prints: the same
 * set keyed by apiVersion/kind/namespace/name, each deeply equal (hooks but for Hoist's
 * core.rukpak.io/hook marker), the chart's other objects in helm's order and its hooks after
 * them in the order helm runs them.
 */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { toolPath } from '../../../../src/devcluster/tools.ts';
import { createHelmProcessor } from '../../../../src/processors/helm/helm-processor.ts';
import { ANNOTATION_HOOK, compareHooks } from '../../../../src/processors/helm/hooks.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';
import { byKey, helmTemplateReference, keyOf } from './reference.ts';

const fixtures = fileURLToPath(new URL('../../../../testdata/fixtures/helm/', import.meta.url));
const charts = readdirSync(fixtures, { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(path.join(fixtures, e.name, 'Chart.yaml')))
  .map((e) => e.name)
  .sort();

const KUBE_VERSION = 'v1.34.4';
// APIs a typical cluster with the Prometheus operator and VPA serves, so templates gated on
// .Capabilities.APIVersions (ServiceMonitor, PodMonitor, VPA) render too.
const API_VERSIONS = [
  'v1',
  'apps/v1',
  'batch/v1',
  'policy/v1',
  'rbac.authorization.k8s.io/v1',
  'networking.k8s.io/v1',
  'apiextensions.k8s.io/v1',
  'monitoring.coreos.com/v1',
  'monitoring.coreos.com/v1alpha1',
  'autoscaling.k8s.io/v1',
  'gateway.networking.k8s.io/v1',
];

const cases = charts.flatMap((chart) => {
  const ciDir = path.join(fixtures, chart, 'ci');
  const ci = existsSync(ciDir)
    ? readdirSync(ciDir)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
    : [];
  return [{ chart, values: undefined as string | undefined }, ...ci.map((f) => ({ chart, values: path.join(ciDir, f) }))];
});

/** a rendered object without Hoist's hook marker, as helm printed it */
function unmarked(o: KubeObject): KubeObject {
  if (o.metadata.annotations?.[ANNOTATION_HOOK] === undefined) return o;
  const { [ANNOTATION_HOOK]: _marker, ...annotations } = o.metadata.annotations;
  return { ...o, metadata: { ...o.metadata, annotations } };
}

describe('helm processor vs helm template', () => {
  const helm = toolPath('helm');
  const processor = createHelmProcessor({ helmBinary: helm });

  it('covers every fixture chart', () => {
    expect(charts).toEqual([
      'argo-rollouts-2.40.10',
      'argo-rollouts-2.41.0',
      'ingress-nginx-4.15.0',
      'ingress-nginx-4.15.1',
      'kube-state-metrics',
      'prometheus-node-exporter',
    ]);
    expect(cases.length).toBeGreaterThanOrEqual(charts.length + 10);
  });

  it.each(cases.map((c) => [`${c.chart} ${c.values ? path.basename(c.values) : '(no values)'}`, c] as const))('%s', async (_name, c) => {
    const chartDir = path.join(fixtures, c.chart);
    const values = c.values ? ((parseYaml(readFileSync(c.values, 'utf8')) ?? {}) as Record<string, unknown>) : undefined;
    const result = await processor.render(chartDir, values ? { helm: { values } } : undefined, {
      name: 'hoist-test',
      installNamespace: 'monitoring',
      kubeVersion: KUBE_VERSION,
      apiVersions: API_VERSIONS,
    });
    const reference = helmTemplateReference(helm, {
      release: 'hoist-test',
      chartDir,
      namespace: 'monitoring',
      ...(c.values ? { valuesFile: c.values } : {}),
      kubeVersion: KUBE_VERSION,
      apiVersions: API_VERSIONS,
    });
    expect(reference.length).toBeGreaterThan(0);
    const ours = byKey(result.objects.map(unmarked));
    const theirs = byKey(reference);
    expect([...ours.keys()].sort()).toEqual([...theirs.keys()].sort());
    for (const [k, o] of theirs) expect(ours.get(k), k).toEqual(o);
    // the chart's other objects in helm's order, then its hooks in the order helm runs them
    const isHook = (o: KubeObject) => o.metadata.annotations?.['helm.sh/hook'] !== undefined;
    const main = reference.filter((o) => !isHook(o));
    const hooks = reference.filter(isHook).sort(compareHooks);
    expect(result.objects.map(keyOf)).toEqual([...main, ...hooks].map(keyOf));
  });

  it('renders the same objects every time (pure)', async () => {
    const chartDir = path.join(fixtures, 'argo-rollouts-2.41.0');
    const ctx = { name: 'r', installNamespace: 'argo', kubeVersion: KUBE_VERSION, apiVersions: API_VERSIONS };
    const config = { helm: { values: { dashboard: { enabled: true } } } };
    const [a, b] = await Promise.all([processor.render(chartDir, config, ctx), processor.render(chartDir, config, ctx)]);
    expect(JSON.stringify(a.objects)).toEqual(JSON.stringify(b.objects));
    expect(a.objects.length).toBeGreaterThan(10);
  });

  it('uses config.helm.releaseName over the BundleDeployment name', async () => {
    const chartDir = path.join(fixtures, 'kube-state-metrics');
    const r = await processor.render(chartDir, { helm: { releaseName: 'ksm' } }, { name: 'bd-name', installNamespace: 'kube-system' });
    const deployment = r.objects.find((o) => o.kind === 'Deployment');
    expect(deployment?.metadata.name).toBe('ksm-kube-state-metrics');
    expect(deployment?.metadata.namespace).toBe('kube-system');
  });
});
