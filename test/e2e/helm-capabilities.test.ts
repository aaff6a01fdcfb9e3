/**
 * Helm renders for this cluster (issue 12): `.Capabilities.KubeVersion` is the API server's
 * version and `.Capabilities.APIVersions` what it serves, so a chart's `kubeVersion` constraint
 * and version-dependent templates see the real cluster, not helm's compiled-in default.
 */
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/kube/types.ts';
import { isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { servePinned } from '../support/upgrade-fixtures.ts';

const { t, files } = controllerWithFiles();

describe('helm .Capabilities', () => {
  it('a chart constrained to this cluster version renders with its version and served APIs', async () => {
    const bd = `caps-${t.runId}`;
    const ns = `caps-${t.runId}`;
    const version = await t.client.discovery.serverVersion();
    expect(version).toMatch(/^v1\.\d+\.\d+/);
    const sources = await servePinned(files, `/${bd}.tgz`, {
      // helm's default KubeVersion (v1.20) fails this constraint: only the cluster's version passes
      'chart/Chart.yaml': 'apiVersion: v2\nname: caps\nversion: 0.1.0\nkubeVersion: ">= 1.30.0-0"\n',
      'chart/templates/cm.yaml': [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata: { name: caps }',
        'data:',
        '  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}',
        '  hasApps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}',
        '  hasMadeUp: {{ .Capabilities.APIVersions.Has "made.up/v9" | quote }}',
        '',
      ].join('\n'),
    });
    await t.create(bd, { installNamespace: ns, format: 'helm', sources: [{ ...sources[0]!, destination: '' }] });
    await t.waitFor(bd, isDone, 'installed', 60_000);
    const cm = (await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'caps', ns)) as (KubeObject & { data: Record<string, string> }) | undefined;
    expect(cm?.data).toEqual({ kubeVersion: version, hasApps: 'true', hasMadeUp: 'false' });
  });
});
