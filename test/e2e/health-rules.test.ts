/**
 * Health rules through the real controller (issue 35): the shipped library judges a custom
 * resource kstatus cannot (a cert-manager Certificate, its status written as cert-manager writes
 * it), a cluster-wide rule given to `hoist run --health-rules` judges a custom kind, `hoist tree`
 * names the rule that judged each object (the flag's file, or the chart's ConfigMap), and a bad
 * rule stops `hoist run` naming it. Verdicts come from the watch: no request of their own.
 *
 * On a control plane of its own: the shared one must not serve cert-manager's API
 * (test/e2e/formats.test.ts expects it absent).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { API_VERSION, KIND, type BundleDeployment } from '../../api/v1alpha2/types.ts';
import { tree } from '../../src/cli/verbs/tree.ts';
import type { Io } from '../../src/cli/verbs/common.ts';
import { startControlPlane, type ControlPlane } from '../../src/devcluster/control-plane.ts';
import { HEALTH_RULES_KEY, HEALTH_RULES_LABEL } from '../../src/health/rules/config.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../src/kube/client.ts';
import type { RequestEvent } from '../../src/kube/request-counter.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { certificateIssuing, certificateReady } from '../support/cert-manager.ts';
import { cond, isDone, startTestController, type TestController } from '../support/controller.ts';
import { crdOf } from '../support/crds.ts';
import { isLocalControlPlane } from '../support/env.ts';
import { startHoistRun, sigkill, type HoistProcess } from '../support/hoist-process.ts';
import { startFileServer, type FileServer } from '../support/http-files.ts';
import { servePinned } from '../support/upgrade-fixtures.ts';
import { waitUntil } from '../support/wait.ts';

const CERTIFICATE = { apiVersion: 'cert-manager.io/v1', kind: 'Certificate' } as const;

let cp: ControlPlane;
let t: TestController;
let files: FileServer;
const sent: RequestEvent[] = [];

async function hoistTree(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = { code: 0, stdout: '', stderr: '' };
  const io: Io = { out: (s) => void (r.stdout += s), err: (s) => void (r.stderr += s) };
  r.code = await tree([...args, '--kubeconfig', cp.kubeconfigPath], io);
  return r;
}

/** the RULE column of `hoist tree`'s row for an object */
const ruleOf = (out: string, subject: string): string | undefined =>
  out
    .split('\n')
    .find((l) => l.includes(` ${subject} `))
    ?.trim()
    .split(/\s{2,}/)[4];

describe.runIf(isLocalControlPlane())('health rules', () => {
  beforeAll(async () => {
    cp = await startControlPlane({});
    t = await startTestController({ kubeconfig: cp.kubeconfigPath });
    t.ctl.client.onRequest((e) => sent.push(e));
    files = await startFileServer();
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await files?.close();
    await cp?.stop();
  });

  it('the shipped rule judges a cert-manager Certificate by the status cert-manager writes, from the watch alone; hoist tree names the rule', async () => {
    const bd = `cert-${t.runId}`;
    const ns = `cert-${t.runId}`;
    // a minimal stand-in for cert-manager's CRD: the kind, a status subresource, any fields
    const crd = crdOf('cert-manager.io', 'Certificate', { status: true });
    const certificate = {
      ...CERTIFICATE,
      metadata: { name: 'web-tls' },
      spec: { secretName: 'web-tls', dnsNames: ['web.example.com'], issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
    };
    const sources = await servePinned(files, `/${bd}.tgz`, { 'crd.yaml': stringify(crd), 'certificate.yaml': stringify(certificate) });
    await t.create(bd, { installNamespace: ns, format: 'plain', sources });

    const unwritten = await t.waitFor(
      bd,
      (b) => cond(b, 'Installed')?.status === 'True' && cond(b, 'Healthy')?.reason === 'Progressing',
      'installed, not issued',
      90_000,
    );
    expect(cond(unwritten, 'Healthy')!.message).toBe(`1 not ready: Certificate ${ns}/web-tls: Certificate generation 1 not observed yet`);
    expect(cond(unwritten, 'Progressing')).toMatchObject({ status: 'True', reason: 'RollingOut' });

    // from here on, the verdicts come from the Certificate watch alone
    const from = sent.length;
    t.client.discovery.invalidate();
    const write = async (status: Record<string, unknown>) => {
      const live = await t.client.get(CERTIFICATE, 'web-tls', ns);
      await t.client.updateStatus({ ...live!, status });
    };
    // a new message within the same readiness re-queues nothing (the watch re-queues on readiness
    // changes); hoist tree reads the object live and judges it as the controller does
    await write(certificateIssuing(1));
    const issuing = await waitUntil('hoist tree sees the Certificate issuing', async () => {
      const r = await hoistTree([bd, '-n', t.namespace]);
      return r.code === 0 && r.stdout.includes('Issuing certificate as Secret does not exist') ? r : undefined;
    });
    expect(ruleOf(issuing.stdout, `Certificate ${ns}/web-tls`)).toBe('builtin:cert-manager.io/Certificate');
    expect(issuing.stdout).toMatch(
      new RegExp(`Certificate ${ns}/web-tls\\s+${bd}\\s+InProgress\\s+builtin:cert-manager.io/Certificate\\s+Issuing certificate as Secret does not exist`),
    );
    // kstatus judges the CRD
    expect(ruleOf(issuing.stdout, `CustomResourceDefinition ${crd.metadata.name}`)).toBe('kstatus');

    await write(certificateReady(1));
    const healthy = await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'healthy once issued', 30_000);
    expect(cond(healthy, 'Progressing')).toMatchObject({ status: 'False', reason: 'Succeeded' });
    const reads = sent.slice(from).filter((e) => e.path.includes('/certificates') && e.verb !== 'watch');
    expect(reads, 'requests for certificates beyond the watch').toEqual([]);
  }, 180_000);

  it("a BundleDeployment's health check replaces the shipped rule for the objects it selects", async () => {
    // after the test above: the Certificate kind is served (its CRD belongs to that BundleDeployment)
    const bd = `cert-checked-${t.runId}`;
    const ns = `cert-checked-${t.runId}`;
    const certificate = { ...CERTIFICATE, metadata: { name: 'never-issued' }, spec: { secretName: 's', issuerRef: { name: 'none' } } };
    const sources = await servePinned(files, `/${bd}.tgz`, { 'certificate.yaml': stringify(certificate) });
    await t.create(bd, {
      installNamespace: ns,
      format: 'plain',
      sources,
      healthChecks: [{ name: 'exists', match: { group: 'cert-manager.io', kind: 'Certificate' }, cel: 'has(self.spec.secretName)' }],
    });
    await t.waitFor(bd, (b) => isDone(b) && cond(b, 'Healthy')?.status === 'True', 'healthy by its check, though never issued', 60_000);
    const out = await hoistTree([bd, '-n', t.namespace]);
    expect(ruleOf(out.stdout, `Certificate ${ns}/never-issued`)).toBe('healthChecks:exists');
  }, 120_000);

  describe('cluster-wide rules of hoist run --health-rules', () => {
    const run = randomBytes(4).toString('hex');
    const group = `g${run}.hoist.test`;
    const ns = `gadgets-${run}`;
    const controllerNs = `hoist-rules-${run}`;
    const selector = `hoist.test/rules=${run}`;
    const rules = stringify([
      {
        name: 'gadgets',
        group,
        kinds: ['Gadget'],
        observedGeneration: 'self.status.observedGeneration',
        ready: 'self.status.phase == "Ready"',
        failed: 'self.status.phase == "Broken"',
        message: '"phase " + self.status.phase',
        source: 'https://example.com/docs/gadgets',
      },
    ]);
    let dir: string;
    let client: RestKubeClient;
    let hoist: HoistProcess | undefined;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'hoist-rules-'));
      await writeFile(join(dir, 'rules.yaml'), rules);
      client = createKubeClient(loadKubeConfig(cp.kubeconfigPath));
    });
    afterAll(async () => {
      if (hoist) await sigkill(hoist.child);
      await client?.close();
      await rm(dir, { recursive: true, force: true });
    });

    const start = (rulesFile: string) =>
      startHoistRun([
        '--kubeconfig',
        cp.kubeconfigPath,
        '--namespace',
        controllerNs,
        '--selector',
        selector,
        '--cache-dir',
        join(dir, 'cache'),
        '--health-rules',
        rulesFile,
      ]);

    it('judge a custom kind: not observed, in progress, ready, failed; hoist tree shows the rule from the file or from the chart ConfigMap', async () => {
      hoist = start(join(dir, 'rules.yaml'));
      await hoist.port;
      expect(hoist.output()).toMatch(/"rules":\["gadgets"\].*cluster-wide health rules loaded/);

      const bd = `gadgets-${run}`;
      const gadget = { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 1 } };
      const sources = await servePinned(files, `/${bd}.tgz`, {
        'crd.yaml': stringify(crdOf(group, 'Gadget', { status: true })),
        'gadget.yaml': stringify(gadget),
      });
      await client.create({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: bd, labels: { 'hoist.test/rules': run } },
        spec: { installNamespace: ns, format: 'plain', sources },
      } as unknown as KubeObject);
      const bdOf = async () => (await client.get({ apiVersion: API_VERSION, kind: KIND }, bd)) as unknown as BundleDeployment | undefined;
      const healthyIs = (what: string, pred: (c: ReturnType<typeof cond>) => boolean) =>
        waitUntil(
          what,
          async () => {
            const b = await bdOf();
            return b && b.status?.observedGeneration === b.metadata.generation && pred(cond(b, 'Healthy')) ? b : undefined;
          },
          90_000,
        );

      await healthyIs('not observed yet', (c) => c?.message === `1 not ready: Gadget ${ns}/g1: Gadget generation 1 not observed yet`);
      client.discovery.invalidate();
      const write = async (status: Record<string, unknown>) => {
        const live = await client.get({ apiVersion: `${group}/v1`, kind: 'Gadget' }, 'g1', ns);
        await client.updateStatus({ ...live!, status });
      };
      await write({ phase: 'Pending', observedGeneration: 1 });
      // the same readiness with a new message re-queues nothing: hoist tree reads it live
      await waitUntil('hoist tree sees phase Pending', async () =>
        (await hoistTree([bd, '-n', controllerNs, '--health-rules', join(dir, 'rules.yaml')])).stdout.includes('phase Pending'),
      );

      const fromFile = await hoistTree([bd, '-n', controllerNs, '--health-rules', join(dir, 'rules.yaml')]);
      expect(fromFile.code, fromFile.stderr).toBe(0);
      expect(ruleOf(fromFile.stdout, `Gadget ${ns}/g1`)).toBe('cluster:gadgets');
      // without the file nor a ConfigMap of rules: the library and kstatus only
      expect(ruleOf((await hoistTree([bd, '-n', controllerNs])).stdout, `Gadget ${ns}/g1`)).toBe('kstatus');
      // the chart's ConfigMap of rules in the controller's namespace
      await client.create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'hoist-health-rules', namespace: controllerNs, labels: { [HEALTH_RULES_LABEL]: 'true' } },
        data: { [HEALTH_RULES_KEY]: rules },
      });
      const fromConfigMap = await hoistTree([bd, '-n', controllerNs]);
      expect(fromConfigMap.stderr).toBe('');
      expect(ruleOf(fromConfigMap.stdout, `Gadget ${ns}/g1`)).toBe('cluster:gadgets');

      await write({ phase: 'Ready', observedGeneration: 1 });
      await healthyIs('healthy', (c) => c?.status === 'True');
      await write({ phase: 'Broken', observedGeneration: 1 });
      const broken = await healthyIs('failed', (c) => c?.reason === 'Unhealthy');
      expect(cond(broken, 'Healthy')!.message).toBe(`1 failing: Gadget ${ns}/g1: phase Broken`);
    }, 240_000);

    it('a bad rule stops hoist run, naming the file, the rule and the field', async () => {
      const bad = join(dir, 'bad.yaml');
      await writeFile(bad, stringify([{ name: 'typo', group, ready: 'self.status.phase ==' }]));
      const p = start(bad);
      expect(await p.exit).toBe(1);
      expect(p.output()).toContain(`hoist: --health-rules ${bad}: rule typo (rules[0]): ready: cel: `);
    }, 60_000);
  });
});
