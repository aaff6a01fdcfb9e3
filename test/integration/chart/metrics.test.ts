/**
 * Hoist's metrics against what the chart ships (issue 12): the PrometheusRule alerts and the
 * Grafana dashboard are rendered with the real helm, every metric their expressions use is read
 * out of them, and a real controller's /metrics, scraped over HTTP during a real reconcile, must
 * expose each one — and samples for those an install must produce.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { toolPath } from '../../../src/devcluster/tools.ts';
import { startManagerServer, type ManagerServer } from '../../../src/kube/manager-server.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { isDone } from '../../support/controller.ts';
import { controllerWithFiles } from '../../support/controller-fixture.ts';
import { cm, servePinned } from '../../support/upgrade-fixtures.ts';

const run = promisify(execFile);
const CHART = new URL('../../../charts/hoist/', import.meta.url).pathname;

let server: ManagerServer;

const { t, files } = controllerWithFiles();
beforeAll(async () => {
  server = await startManagerServer({ port: 0, host: '127.0.0.1', registry: t.ctl.registry });
});
afterAll(async () => {
  await server?.close();
});

/** metric names in a PromQL expression: identifiers of Hoist's and controller-runtime's families */
function metricsIn(expr: string): string[] {
  const names = expr.match(/\b(?:hoist|controller_runtime|workqueue)_[a-z_]+\b/g) ?? [];
  // a histogram is exposed as one family; PromQL names its _bucket/_sum/_count series
  return names.map((n) => n.replace(/_(bucket|sum|count)$/, ''));
}

async function shippedExpressions(): Promise<{ alerts: string[]; panels: string[] }> {
  const { stdout } = await run(
    toolPath('helm'),
    [
      'template',
      'hoist',
      CHART,
      '--namespace',
      'hoist-system',
      '--set',
      'metrics.prometheusRule.enabled=true',
      '--set',
      'metrics.grafanaDashboard.enabled=true',
    ],
    { maxBuffer: 64 << 20 },
  );
  const objs = parseAllDocuments(stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
  const rule = objs.find((o) => o.kind === 'PrometheusRule') as
    (KubeObject & { spec: { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> } }) | undefined;
  const dashboard = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard')) as
    (KubeObject & { data: Record<string, string> }) | undefined;
  expect(rule, 'PrometheusRule rendered').toBeDefined();
  expect(dashboard, 'dashboard ConfigMap rendered').toBeDefined();
  expect(dashboard!.metadata.labels?.grafana_dashboard).toBe('1');
  const json = JSON.parse(dashboard!.data['hoist.json']!) as { panels: Array<{ targets: Array<{ expr: string }> }> };
  return {
    alerts: rule!.spec.groups.flatMap((g) => g.rules.map((r) => r.expr)),
    panels: json.panels.flatMap((p) => p.targets.map((x) => x.expr)),
  };
}

describe('metrics the chart relies on', () => {
  it('every metric used by the alerts and the dashboard is exposed by a real controller', async () => {
    const bd = `metrics-${t.runId}`;
    const sources = await servePinned(files, `/${bd}.tgz`, { 'a.yaml': cm('a', { x: '1' }), 'b.yaml': cm('b', { y: '2' }) });
    await t.create(bd, { installNamespace: `metrics-${t.runId}`, format: 'plain', sources });
    await t.waitFor(bd, isDone, 'installed', 60_000);

    const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));

    const { alerts, panels } = await shippedExpressions();
    expect(alerts.length).toBeGreaterThanOrEqual(5);
    expect(panels.length).toBeGreaterThanOrEqual(10);
    const used = new Set([...alerts, ...panels].flatMap(metricsIn));
    const missing = [...used].filter((m) => !families.has(m));
    expect(missing, 'metrics used by the chart but not exposed').toEqual([]);

    // what this install must have produced
    const sample = (re: RegExp) => expect(text, re.source).toMatch(re);
    sample(/^hoist_bundledeployments\{condition="Installed",status="True",reason="Installed"\} [1-9]/m);
    sample(/^hoist_bundledeployments_done [1-9]/m);
    sample(/^hoist_objects_applied_total\{action="created"\} [2-9]/m);
    sample(/^hoist_source_fetches_total\{kind="http",result="downloaded"\} 1$/m);
    sample(/^hoist_source_fetch_bytes_total\{kind="http"\} [1-9]/m);
    sample(/^hoist_reconcile_stage_duration_seconds_count\{stage="apply"\} [1-9]/m);
    sample(/^hoist_reconcile_stage_duration_seconds_count\{stage="fetch"\} [1-9]/m);
    sample(/^hoist_revision_store_bytes [1-9]/m);
    sample(/^controller_runtime_reconcile_total\{controller="bundledeployment",result="success"\} [1-9]/m);
  });
});
