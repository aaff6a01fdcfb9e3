/**
 * `hoist render --dir` without a cluster (issue 28): a chart declaring `kubeVersion: >=1.25.0-0`,
 * which helm's own default (v1.20.0) refuses, renders with the Kubernetes version Hoist's tools
 * are built at, and `--kube-version` / `--api-versions` give exactly what `helm template` gives
 * with the same flags on the same chart. `hoist render` runs as a process, helm is the real one.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultKubeVersion } from '../../../src/cli/capabilities.ts';
import { toolPath } from '../../../src/devcluster/tools.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { byKey, helmTemplateReference } from '../processors/helm/reference.ts';

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '../../..');
const CHART = join(import.meta.dirname, 'testdata/modern-chart');
const NS = 'modern-ns';

let work: string;
let bdFile: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-render-caps-'));
  bdFile = join(work, 'bd.yaml');
  const spec = { installNamespace: NS, format: 'helm', sources: [{ kind: 'http', http: { url: 'https://example.invalid/chart.tgz' } }] };
  await writeFile(bdFile, JSON.stringify({ apiVersion: 'core.rukpak.io/v1alpha2', kind: 'BundleDeployment', metadata: { name: 'modern' }, spec }));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

interface Rendered {
  code: number;
  objects: KubeObject[];
  stderr: string;
}

async function hoistRender(...flags: string[]): Promise<Rendered> {
  const args = ['--import', 'tsx', 'src/cli/main.ts', 'render', '-f', bdFile, '--dir', CHART, '-o', 'json', ...flags];
  try {
    const { stdout, stderr } = await run(process.execPath, args, { cwd: REPO, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, objects: (JSON.parse(stdout) as { items: KubeObject[] }).items, stderr };
  } catch (e) {
    const r = e as { code?: number; stderr?: string };
    return { code: r.code ?? -1, objects: [], stderr: r.stderr ?? '' };
  }
}

/** Hoist's output without the namespace it assigns to namespaced kinds (helm template prints none) */
function asHelmPrints(objects: readonly KubeObject[]): KubeObject[] {
  return objects.map((o) => {
    if (o.metadata.namespace !== NS) return o;
    const { namespace: _ns, ...metadata } = o.metadata;
    return { ...o, metadata };
  });
}

describe('hoist render: offline capabilities', () => {
  const helm = toolPath('helm');

  it("helm's own default refuses the chart (the case the flags are for)", () => {
    expect(() => helmTemplateReference(helm, { release: 'modern', chartDir: CHART, namespace: NS })).toThrow(/incompatible with Kubernetes v1\.20\.0/);
  });

  it('without flags: the version the tools are built at, said on stderr, as helm template --kube-version renders it', async () => {
    const out = await hoistRender();
    expect(out.code, out.stderr).toBe(0);
    const version = defaultKubeVersion();
    expect(out.stderr).toContain(`no cluster: assumed Kubernetes ${version} (the version Hoist's tools are built at`);
    const reference = helmTemplateReference(helm, { release: 'modern', chartDir: CHART, namespace: NS, kubeVersion: version });
    expect(byKey(asHelmPrints(out.objects))).toEqual(byKey(reference));
    const cm = out.objects.find((o) => o.kind === 'ConfigMap') as KubeObject & { data: Record<string, string> };
    expect(cm.data.kubeVersion).toBe(version);
    expect(out.objects.map((o) => o.kind)).not.toContain('ServiceMonitor');
  });

  it('--kube-version and --api-versions: the same objects as helm template with the same flags', async () => {
    const out = await hoistRender('--kube-version', '1.29.3', '--api-versions', 'monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor');
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toContain('assumed Kubernetes v1.29.3 (--kube-version)');
    expect(out.stderr).toContain('monitoring.coreos.com/v1/ServiceMonitor (--api-versions)');
    const reference = helmTemplateReference(helm, {
      release: 'modern',
      chartDir: CHART,
      namespace: NS,
      kubeVersion: '1.29.3',
      apiVersions: ['monitoring.coreos.com/v1', 'monitoring.coreos.com/v1/ServiceMonitor'],
    });
    expect(byKey(asHelmPrints(out.objects))).toEqual(byKey(reference));
    const cm = out.objects.find((o) => o.kind === 'ConfigMap') as KubeObject & { data: Record<string, string> };
    expect(cm.data).toMatchObject({ kubeVersion: 'v1.29.3', sidecars: 'init-container' });
    expect(out.objects.find((o) => o.kind === 'ServiceMonitor')?.metadata.name).toBe('modern');
    expect(out.objects.find((o) => o.kind === 'PodDisruptionBudget')?.apiVersion).toBe('policy/v1');
  });

  it("a version the chart refuses fails with helm's reason", async () => {
    const out = await hoistRender('--kube-version', 'v1.24.9');
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('chart requires kubeVersion: >=1.25.0-0 which is incompatible with Kubernetes v1.24.9');
  });

  it('a malformed flag is a usage error', async () => {
    const bad = await hoistRender('--kube-version', 'latest');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--kube-version "latest" is not a Kubernetes version');
    const badApi = await hoistRender('--api-versions', 'apps/v1,not a version');
    expect(badApi.code).toBe(2);
    expect(badApi.stderr).toContain('--api-versions "not a version" is not a group/version');
  });
});
