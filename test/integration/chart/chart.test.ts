/**
 * charts/hoist: `helm template` with default and non-default values renders what the values say
 * and values.schema.json refuses bad values; every rendered object applies to the real API server
 * (server-side apply dry-run, and for real in a unique namespace); and the RBAC the chart grants
 * is sufficient: a real controller authenticated as the chart's ServiceAccount (a token from the
 * TokenRequest API, so the API server's own authentication and RBAC decide) installs and deletes
 * a plain bundle. Without rbac.clusterAdmin a bundle whose ClusterRole grants "*" is refused by
 * RBAC's escalation check; with it (the default) the same bundle installs.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { CRD_PATH } from '../../../api/v1alpha2/crd.ts';
import { HEALTH_RULES_KEY, HEALTH_RULES_LABEL, parseHealthRules } from '../../../src/health/rules/config.ts';
import { TENANCY_POLICY_PATH } from '../../../api/v1alpha2/tenancy-policy.ts';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { installCRD, startController, type RunningController } from '../../../src/cli/controller.ts';
import { toolPath } from '../../../src/devcluster/tools.ts';
import { parseByteSize } from '../../../src/util/byte-size.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import { LeaderElector } from '../../../src/kube/leader-election.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { BD_TYPE, cond, describeStatus, isDone } from '../../support/controller.ts';
import { kubeconfigPath } from '../../support/env.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../../support/http-files.ts';
import { sleep } from '../../support/wait.ts';

const run = promisify(execFile);
const CHART = new URL('../../../charts/hoist/', import.meta.url).pathname;
const runId = Math.random().toString(16).slice(2, 10);
const log = pino({ level: process.env.HOIST_TEST_LOG ?? 'silent' });

async function helm(args: string[]): Promise<string> {
  const { stdout } = await run(toolPath('helm'), args, { maxBuffer: 64 << 20 });
  return stdout;
}

/** `helm template`, parsed; `set` values are passed as --set-json key=json */
async function render(release: string, namespace: string, set: Record<string, unknown> = {}): Promise<KubeObject[]> {
  const args = ['template', release, CHART, '--namespace', namespace, '--include-crds'];
  for (const [k, v] of Object.entries(set)) args.push('--set-json', `${k}=${JSON.stringify(v)}`);
  return parseAllDocuments(await helm(args))
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}
/** whether RBAC rules allow a request, matched as the API server's RBAC authorizer matches them ("*", "*\/sub") */
function rulesAllow(rules: PolicyRule[], req: Request): boolean {
  const combined = req.subresource ? `${req.resource}/${req.subresource}` : req.resource;
  return rules.some(
    (r) =>
      (r.verbs.includes('*') || r.verbs.includes(req.verb)) &&
      (r.apiGroups ?? []).some((g) => g === '*' || g === req.group) &&
      (r.resources ?? []).some((x) => x === '*' || x === combined || (req.subresource !== undefined && x === `*/${req.subresource}`)) &&
      !r.resourceNames?.length,
  );
}
interface Request {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
}
/** "verb resource[/subresource][.group]", as kubectl auth can-i names them */
function request(text: string): Request {
  const [verb, name] = text.split(' ') as [string, string];
  const dot = name.indexOf('.');
  const [resource, subresource] = (dot < 0 ? name : name.slice(0, dot)).split('/') as [string, string | undefined];
  return { verb, group: dot < 0 ? '' : name.slice(dot + 1), resource, ...(subresource ? { subresource } : {}) };
}
/** what the controller's ServiceAccount must not be able to do once rbac.clusterAdmin is false (issue 23) */
const FORBIDDEN_TO_CONTROLLER = [
  'create serviceaccounts/token',
  'create pods/exec',
  'get pods/exec',
  'create pods/attach',
  'get pods/attach',
  'create pods/portforward',
  'get pods/portforward',
  'patch pods/ephemeralcontainers',
  'get nodes/proxy',
  'create pods/proxy',
  'get services/proxy',
  'escalate clusterroles.rbac.authorization.k8s.io',
  'bind clusterroles.rbac.authorization.k8s.io',
  'escalate roles.rbac.authorization.k8s.io',
  'bind roles.rbac.authorization.k8s.io',
  'impersonate users',
  'impersonate groups',
  'impersonate uids.authentication.k8s.io',
  'impersonate userextras.authentication.k8s.io',
  'deletecollection configmaps',
].map(request);
/** what it needs for itself and for bundles without a ServiceAccount */
const NEEDED_BY_CONTROLLER = [
  'impersonate serviceaccounts',
  'list widgets.example.com',
  'watch secrets',
  'create configmaps',
  'patch serviceaccounts',
  'create namespaces',
  'delete deployments.apps',
  'create roles.rbac.authorization.k8s.io',
  'get customresourcedefinitions.apiextensions.k8s.io',
  'update bundledeployments/status.core.rukpak.io',
].map(request);
const describeRequest = (r: Request) => `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''}${r.group ? `.${r.group}` : ''}`;

const find = (objs: KubeObject[], kind: string, name?: string) => objs.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
const kinds = (objs: KubeObject[]) => objs.map((o) => `${o.kind}/${o.metadata.name}`).sort();

interface Container {
  args: string[];
  env: Array<{ name: string; value?: string }>;
  image: string;
  securityContext: Record<string, unknown>;
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  volumeMounts: Array<{ name: string; mountPath: string }>;
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
}
function podSpec(objs: KubeObject[]) {
  const dep = find(objs, 'Deployment') as KubeObject & { spec: { replicas: number; template: { spec: Record<string, unknown> } } };
  const spec = dep.spec.template.spec as {
    serviceAccountName: string;
    securityContext: Record<string, unknown>;
    containers: Container[];
    volumes: Array<{ name: string; emptyDir?: Record<string, unknown> }>;
  };
  return { dep, spec, c: spec.containers[0]! };
}

describe('helm template', () => {
  it('passes helm lint --strict', async () => {
    const out = await helm(['lint', '--strict', CHART]);
    expect(out).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('ships the same CRD as api/v1alpha2 (byte for byte)', () => {
    expect(readFileSync(join(CHART, 'crds', 'bundledeployment-crd.yaml'), 'utf8')).toBe(readFileSync(CRD_PATH, 'utf8'));
  });

  it('ships the same tenancy policy as api/v1alpha2 (byte for byte)', () => {
    expect(readFileSync(join(CHART, 'files', 'tenancy-policy.yaml'), 'utf8')).toBe(readFileSync(TENANCY_POLICY_PATH, 'utf8'));
  });

  it('renders the defaults: CRD, ServiceAccount, RBAC bound to cluster-admin, Deployment, metrics Service', async () => {
    const objs = await render('hoist', 'hoist-system');
    expect(kinds(objs)).toEqual([
      'ClusterRole/hoist-controller',
      'ClusterRoleBinding/hoist-cluster-admin',
      'ClusterRoleBinding/hoist-controller',
      'CustomResourceDefinition/bundledeployments.core.rukpak.io',
      'CustomResourceDefinition/notificationproviders.core.rukpak.io',
      'CustomResourceDefinition/notificationroutes.core.rukpak.io',
      'Deployment/hoist',
      'Role/hoist-controller',
      'RoleBinding/hoist-controller',
      'Service/hoist-metrics',
      'ServiceAccount/hoist',
      'ValidatingAdmissionPolicy/hoist-tenancy',
      'ValidatingAdmissionPolicyBinding/hoist-tenancy',
    ]);
    expect((find(objs, 'ClusterRoleBinding', 'hoist-cluster-admin') as unknown as { roleRef: { name: string } }).roleRef.name).toBe('cluster-admin');
    const { dep, spec, c } = podSpec(objs);
    expect(dep.metadata.namespace).toBe('hoist-system');
    expect(dep.spec.replicas).toBe(1);
    expect(spec.serviceAccountName).toBe('hoist');
    expect(c.args).toEqual([
      'run',
      '--namespace=hoist-system',
      '--leader-elect',
      '--metrics-bind-address=:8080',
      '--workers=16',
      '--max-concurrent-renders=4',
      '--cache-max-size=1536Mi',
      '--fetch-timeout=10m',
      '--reconcile-timeout=5m',
      '--max-revision-size=8Mi',
    ]);
    expect(c.image).toBe('hoist:0.1.0');
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true });
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    const cacheDir = c.env.find((e) => e.name === 'HOIST_CACHE')?.value;
    expect(cacheDir).toBe('/var/cache/hoist');
    expect(c.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'cache', mountPath: cacheDir },
        { name: 'tmp', mountPath: '/tmp' },
      ]),
    );
    expect(spec.volumes.find((v) => v.name === 'cache')?.emptyDir).toEqual({ sizeLimit: '2Gi' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    expect(c.resources.requests).toBeDefined();
    expect(c.resources.limits?.memory).toBeDefined();
    const svc = find(objs, 'Service') as KubeObject & { spec: { ports: Array<{ port: number; targetPort: string }> } };
    expect(svc.spec.ports).toEqual([{ name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' }]);
  });

  it('renders non-default values', async () => {
    const digest = `sha256:${'ab'.repeat(32)}`;
    const objs = await render('edge', 'ops', {
      'rbac.clusterAdmin': false,
      replicaCount: 2,
      workers: 8,
      maxConcurrentRenders: 2,
      logLevel: 'debug',
      image: { repository: 'registry.example/hoist', tag: 'v9', digest, pullPolicy: 'Always' },
      serviceAccount: { create: false, name: 'existing-sa' },
      'metrics.service.enabled': false,
      'metrics.port': 9090,
      cache: { sizeLimit: '', medium: 'Memory', maxSize: '' },
      fetchTimeout: '90s',
      reconcileTimeout: '2m',
      maxRevisionSize: '4Mi',
      extraArgs: ['--install-crd'],
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      commonLabels: { team: 'platform' },
    });
    expect(kinds(objs)).toEqual([
      'ClusterRole/edge-hoist-controller',
      'ClusterRoleBinding/edge-hoist-controller',
      'CustomResourceDefinition/bundledeployments.core.rukpak.io',
      'CustomResourceDefinition/notificationproviders.core.rukpak.io',
      'CustomResourceDefinition/notificationroutes.core.rukpak.io',
      'Deployment/edge-hoist',
      'Role/edge-hoist-controller',
      'RoleBinding/edge-hoist-controller',
      'ValidatingAdmissionPolicy/edge-hoist-tenancy',
      'ValidatingAdmissionPolicyBinding/edge-hoist-tenancy',
    ]);
    const { dep, spec, c } = podSpec(objs);
    expect(dep.spec.replicas).toBe(2);
    expect(dep.metadata.labels).toMatchObject({ team: 'platform' });
    expect(spec.serviceAccountName).toBe('existing-sa');
    expect((find(objs, 'RoleBinding') as unknown as { subjects: unknown[] }).subjects).toEqual([
      { kind: 'ServiceAccount', name: 'existing-sa', namespace: 'ops' },
    ]);
    expect(c.image).toBe(`registry.example/hoist:v9@${digest}`);
    // no cache budget when maxSize is empty
    expect(c.args).toEqual([
      'run',
      '--namespace=ops',
      '--leader-elect',
      '--metrics-bind-address=:9090',
      '--workers=8',
      '--max-concurrent-renders=2',
      '--fetch-timeout=90s',
      '--reconcile-timeout=2m',
      '--max-revision-size=4Mi',
      '--install-crd',
    ]);
    expect(c.env).toContainEqual({ name: 'HOIST_LOG_LEVEL', value: 'debug' });
    expect(spec.volumes.find((v) => v.name === 'cache')?.emptyDir).toEqual({ medium: 'Memory' });
    expect(spec).toMatchObject({ nodeSelector: { 'kubernetes.io/os': 'linux' } });
    const rules = (find(objs, 'ClusterRole') as unknown as { rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }> }).rules;
    expect(rules).toContainEqual({ apiGroups: [''], resources: ['serviceaccounts'], verbs: ['impersonate'] });
    expect(rules).toContainEqual({ apiGroups: ['*'], resources: ['*'], verbs: ['list', 'watch'] });
  });

  it('rbac.clusterAdmin=false: no token requests, exec, attach, port-forward, proxies, escalate, bind or impersonation beyond ServiceAccounts (issue 23)', async () => {
    const objs = await render('least', 'ops', { 'rbac.clusterAdmin': false });
    expect(find(objs, 'ClusterRoleBinding', 'least-hoist-cluster-admin')).toBeUndefined();
    const rules = (find(objs, 'ClusterRole') as unknown as { rules: PolicyRule[] }).rules;
    const nsRules = (find(objs, 'Role') as unknown as { rules: PolicyRule[] }).rules;
    for (const req of FORBIDDEN_TO_CONTROLLER) expect(rulesAllow([...rules, ...nsRules], req), describeRequest(req)).toBe(false);
    for (const req of NEEDED_BY_CONTROLLER) expect(rulesAllow(rules, req), describeRequest(req)).toBe(true);
    // no wildcard write on the core group, in any rule
    for (const r of rules) {
      const core = r.apiGroups?.includes('') || r.apiGroups?.includes('*');
      if (core && r.resources?.includes('*')) expect(r.verbs, JSON.stringify(r)).toEqual(['list', 'watch']);
    }
    // the custom resources of bundles without a ServiceAccount: their groups are granted by name
    const withGroup = (
      find(await render('least', 'ops', { 'rbac.clusterAdmin': false, 'rbac.extraApiGroups': ['cert-manager.io'] }), 'ClusterRole') as unknown as {
        rules: PolicyRule[];
      }
    ).rules;
    expect(rulesAllow(rules, request('create certificates.cert-manager.io'))).toBe(false);
    expect(rulesAllow(withGroup, request('create certificates.cert-manager.io'))).toBe(true);
    for (const req of FORBIDDEN_TO_CONTROLLER) expect(rulesAllow(withGroup, req), describeRequest(req)).toBe(false);
    await expect(render('bad', 'ns', { 'rbac.extraApiGroups': [''] })).rejects.toThrow(/extraApiGroups/);
    await expect(render('bad', 'ns', { 'rbac.extraApiGroups': ['*'] })).rejects.toThrow(/extraApiGroups/);
  });

  it('mounts a registries.conf ConfigMap and a CA directory, passing --registries-conf and --ca-dir', async () => {
    const conf = '[[registry]]\nlocation = "quay.io"\n[[registry.mirror]]\nlocation = "mirror.corp/quay"\n';
    const objs = await render('air', 'ops', { registriesConf: conf, caDir: { secretName: 'corp-cas' } });
    const cm = find(objs, 'ConfigMap', 'air-hoist-registries') as unknown as { data: Record<string, string> };
    expect(cm.data['registries.conf']).toBe(conf);
    const { dep, spec, c } = podSpec(objs);
    expect(c.args).toContain('--registries-conf=/etc/hoist/registries/registries.conf');
    expect(c.args).toContain('--ca-dir=/etc/hoist/certs.d');
    const mounts = (c as unknown as { volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }> }).volumeMounts;
    expect(mounts).toContainEqual({ name: 'registries-conf', mountPath: '/etc/hoist/registries', readOnly: true });
    expect(mounts).toContainEqual({ name: 'ca-dir', mountPath: '/etc/hoist/certs.d', readOnly: true });
    expect(spec.volumes).toContainEqual({ name: 'registries-conf', configMap: { name: 'air-hoist-registries' } });
    expect(spec.volumes).toContainEqual({ name: 'ca-dir', secret: { secretName: 'corp-cas' } });
    // caConfigMapRef of BundleDeployments without a ServiceAccount: ConfigMaps in the release namespace
    const role = find(objs, 'Role') as unknown as { metadata: { namespace: string }; rules: Array<Record<string, unknown>> };
    expect(role.metadata.namespace).toBe('ops');
    expect(role.rules).toContainEqual({ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] });
    expect(
      (dep.spec as unknown as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations['checksum/registries-conf'],
    ).toMatch(/^[a-f0-9]{64}$/);

    const fromCm = podSpec(await render('air', 'ops', { caDir: { configMapName: 'corp-cas' } }));
    expect(fromCm.spec.volumes).toContainEqual({ name: 'ca-dir', configMap: { name: 'corp-cas' } });
    expect(fromCm.c.args.filter((a) => a.startsWith('--registries-conf'))).toEqual([]);
    await expect(render('air', 'ops', { caDir: { configMapName: 'a', secretName: 'b' } })).rejects.toThrow(/caDir/);
  });

  it('renders healthRules into a labelled ConfigMap mounted for --health-rules, which parses as the controller reads it; none by default', async () => {
    const rules = [
      { name: 'widgets', group: 'example.com', kinds: ['Widget'], ready: 'self.status.phase == "Running"', message: 'self.status.phase' },
      { name: 'gadgets', group: ['*.gadgets.example'], ready: 'true' },
    ];
    const objs = await render('ops', 'hoist-system', { healthRules: rules });
    const cm = find(objs, 'ConfigMap', 'ops-hoist-health-rules') as unknown as { metadata: { labels: Record<string, string> }; data: Record<string, string> };
    expect(cm.metadata.labels[HEALTH_RULES_LABEL]).toBe('true');
    expect(parseHealthRules(cm.data[HEALTH_RULES_KEY]!, 'rules.yaml').map((r) => [r.id, r.spec])).toEqual(
      rules.map((r) => [`cluster:${r.name}`, expect.objectContaining(r)]),
    );
    const { dep, spec, c } = podSpec(objs);
    expect(c.args).toContain('--health-rules=/etc/hoist/health-rules/rules.yaml');
    const mounts = (c as unknown as { volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }> }).volumeMounts;
    expect(mounts).toContainEqual({ name: 'health-rules', mountPath: '/etc/hoist/health-rules', readOnly: true });
    expect(spec.volumes).toContainEqual({ name: 'health-rules', configMap: { name: 'ops-hoist-health-rules' } });
    expect(
      (dep.spec as unknown as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations['checksum/health-rules'],
    ).toMatch(/^[a-f0-9]{64}$/);

    const none = await render('ops', 'hoist-system');
    expect(none.filter((o) => o.metadata.name === 'ops-hoist-health-rules')).toEqual([]);
    expect(podSpec(none).c.args.filter((a) => a.startsWith('--health-rules'))).toEqual([]);
    await expect(render('bad', 'ns', { healthRules: [{ name: 'x', group: 'g' }] })).rejects.toThrow(/ready/);
    await expect(render('bad', 'ns', { healthRules: [{ name: 'x', group: 'g', ready: 'true', raedy: 'true' }] })).rejects.toThrow(/raedy|additional/i);
  });

  it("tenancy policy: on by default, filled in with the chart's ServiceAccount and defaultServiceAccount, bound to itself; off with tenancyPolicy.enabled=false", async () => {
    type Variables = { spec: { variables: Array<{ name: string; expression: string }> } };
    const vars = (objs: KubeObject[], name: string) =>
      Object.fromEntries((find(objs, 'ValidatingAdmissionPolicy', name) as unknown as Variables).spec.variables.map((v) => [v.name, v.expression]));
    const defaults = await render('hoist', 'hoist-system');
    expect(vars(defaults, 'hoist-tenancy')).toMatchObject({ controllerUser: "'system:serviceaccount:hoist-system:hoist'", defaultServiceAccount: "''" });
    expect((find(defaults, 'ValidatingAdmissionPolicyBinding') as unknown as { spec: unknown }).spec).toEqual({
      policyName: 'hoist-tenancy',
      validationActions: ['Deny'],
    });
    const set = await render('t', 'ops', { serviceAccount: { create: false, name: 'existing-sa' }, defaultServiceAccount: 'installer' });
    expect(vars(set, 't-hoist-tenancy')).toMatchObject({ controllerUser: "'system:serviceaccount:ops:existing-sa'", defaultServiceAccount: "'installer'" });
    const off = await render('hoist', 'hoist-system', { 'tenancyPolicy.enabled': false });
    expect(kinds(off).filter((k) => k.startsWith('ValidatingAdmission'))).toEqual([]);
  });

  it('renders rbac.impersonationOnly with --default-service-account', async () => {
    const objs = await render('imp', 'ops', { 'rbac.clusterAdmin': false, 'rbac.impersonationOnly': true, defaultServiceAccount: 'hoist-installer' });
    expect(find(objs, 'ClusterRoleBinding', 'imp-hoist-cluster-admin')).toBeUndefined();
    const rules = (find(objs, 'ClusterRole') as unknown as { rules: Array<Record<string, unknown>> }).rules;
    expect(rules).toContainEqual({ apiGroups: ['*'], resources: ['*'], verbs: ['list', 'watch'] });
    expect(rules).toContainEqual({ apiGroups: [''], resources: ['namespaces'], resourceNames: ['ops'], verbs: ['get'] });
    expect(rules).toContainEqual({ apiGroups: [''], resources: ['serviceaccounts'], verbs: ['impersonate'] });
    expect(podSpec(objs).c.args).toContain('--default-service-account=hoist-installer');
  });

  it("webhook: the default shard serves it (flag, port, Service on that shard's pods only), an optional Ingress for /hooks/ only", async () => {
    expect(kinds(await render('hoist', 'hoist-system')).filter((k) => k.includes('webhook'))).toEqual([]);
    const objs = await render('hoist', 'hoist-system', {
      webhook: { enabled: true, port: 9393, secretName: 'forge-hooks', ingress: { enabled: true, className: 'nginx', host: 'hooks.example.com' } },
      shards: ['a'],
    });
    const deps = objs.filter((o) => o.kind === 'Deployment') as unknown as Array<{
      metadata: { name: string };
      spec: { template: { spec: { containers: Array<Container & { ports: Array<{ name: string; containerPort: number }> }> } } };
    }>;
    const byName = Object.fromEntries(deps.map((d) => [d.metadata.name, d.spec.template.spec.containers[0]!]));
    expect(byName.hoist!.args).toEqual(expect.arrayContaining(['--webhook-bind-address=:9393', '--webhook-secret=hoist-system/forge-hooks']));
    expect(byName.hoist!.ports).toContainEqual({ name: 'webhook', containerPort: 9393, protocol: 'TCP' });
    expect(byName['hoist-a']!.args.some((a) => a.startsWith('--webhook'))).toBe(false);
    const svc = find(objs, 'Service', 'hoist-webhook') as unknown as { spec: { selector: Record<string, string>; ports: unknown[] } };
    expect(svc.spec.selector).toEqual({ 'app.kubernetes.io/name': 'hoist', 'app.kubernetes.io/instance': 'hoist', 'hoist.rukpak.io/shard': '' });
    expect(svc.spec.ports).toEqual([{ name: 'webhook', port: 80, targetPort: 'webhook', protocol: 'TCP' }]);
    const ing = find(objs, 'Ingress', 'hoist-webhook') as unknown as { spec: Record<string, unknown> };
    expect(ing.spec).toEqual({
      ingressClassName: 'nginx',
      rules: [
        {
          host: 'hooks.example.com',
          http: { paths: [{ path: '/hooks/', pathType: 'Prefix', backend: { service: { name: 'hoist-webhook', port: { name: 'webhook' } } } }] },
        },
      ],
    });
  });

  it('renders overrideManagers as one --override-manager each, and refuses an empty name', async () => {
    const objs = await render('om', 'ops', { overrideManagers: ['my-tool', 'ops-script'] });
    expect(podSpec(objs).c.args.filter((a) => a.startsWith('--override-manager'))).toEqual(['--override-manager=my-tool', '--override-manager=ops-script']);
    expect(podSpec(await render('om', 'ops', {})).c.args.some((a) => a.startsWith('--override-manager'))).toBe(false);
    await expect(render('bad', 'ns', { overrideManagers: [''] })).rejects.toThrow(/overrideManagers/);
  });

  it('shards: one Deployment per shard beside the default one, each with its own selector and --shard', async () => {
    const objs = await render('hoist', 'hoist-system', { shards: ['a', 'b'] });
    const deployments = objs.filter((o) => o.kind === 'Deployment') as Array<
      KubeObject & {
        spec: {
          selector: { matchLabels: Record<string, string> };
          template: { metadata: { labels: Record<string, string> }; spec: { containers: Container[] } };
        };
      }
    >;
    expect(deployments.map((d) => d.metadata.name)).toEqual(['hoist', 'hoist-a', 'hoist-b']);
    expect(deployments.map((d) => d.spec.template.spec.containers[0]!.args.filter((a) => a.startsWith('--shard')))).toEqual([[], ['--shard=a'], ['--shard=b']]);
    expect(deployments.map((d) => d.spec.selector.matchLabels['hoist.rukpak.io/shard'])).toEqual(['', 'a', 'b']);
    for (const d of deployments) expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
    // one metrics Service for every shard's pods
    expect(objs.filter((o) => o.kind === 'Service')).toHaveLength(1);
    await expect(render('bad', 'ns', { shards: ['Upper'] })).rejects.toThrow(/shards/);
    await expect(render('bad', 'ns', { shards: ['a', 'a'] })).rejects.toThrow(/shards/);
  });

  it('the defaults keep the headroom rule of values.yaml: cache.maxSize at most three quarters of cache.sizeLimit', () => {
    const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { cache: { sizeLimit: string; maxSize: string } };
    const maxSize = parseByteSize(values.cache.maxSize);
    const sizeLimit = parseByteSize(values.cache.sizeLimit);
    expect(maxSize).toBeLessThanOrEqual(sizeLimit * 0.75);
    expect(readFileSync(join(CHART, 'values.yaml'), 'utf8')).toContain('keep maxSize at most three quarters of sizeLimit');
  });

  it('refuses bad values: schema types, unknown keys, several replicas without leader election', async () => {
    await expect(render('bad', 'ns', { 'rbac.impersonationOnly': true })).rejects.toThrow(/impersonationOnly needs rbac.clusterAdmin=false/);
    await expect(render('bad', 'ns', { defaultServiceAccount: 'Not A Name' })).rejects.toThrow(/defaultServiceAccount/);
    await expect(render('bad', 'ns', { replicaCount: 'two' })).rejects.toThrow(/replicaCount/);
    await expect(render('bad', 'ns', { rbac: { clusterAdmin: true, typo: 1 } })).rejects.toThrow(/typo/);
    await expect(render('bad', 'ns', { 'image.digest': 'latest' })).rejects.toThrow(/digest/);
    await expect(render('bad', 'ns', { 'cache.maxSize': '2 GB' })).rejects.toThrow(/maxSize/);
    await expect(render('bad', 'ns', { fetchTimeout: 'ten minutes' })).rejects.toThrow(/fetchTimeout/);
    await expect(render('bad', 'ns', { reconcileTimeout: '5 min' })).rejects.toThrow(/reconcileTimeout/);
    await expect(render('bad', 'ns', { maxRevisionSize: '8 MiB' })).rejects.toThrow(/maxRevisionSize/);
    await expect(render('bad', 'ns', { tenancyPolicy: { enabled: 'yes' } })).rejects.toThrow(/tenancyPolicy/);
    await expect(render('bad', 'ns', { replicaCount: 2, 'leaderElection.enabled': false })).rejects.toThrow(/needs leaderElection.enabled/);
  });
});

describe('the chart on a real API server', () => {
  let admin: RestKubeClient;
  let files: FileServer;
  const tmpDirs: string[] = [];
  const controllers: RunningController[] = [];
  const cleanup: KubeObject[] = [];

  beforeAll(async () => {
    admin = createKubeClient(loadKubeConfig(kubeconfigPath()));
    await installCRD(admin, log);
    files = await startFileServer();
  });
  afterAll(async () => {
    // BundleDeployments first, while their controllers run to remove the finalizer
    const bds = cleanup.filter((o) => o.kind === BD_TYPE.kind);
    for (const o of bds) await admin.delete(o, o.metadata.name, undefined).catch(() => undefined);
    const deadline = Date.now() + 30_000;
    for (const o of bds) while (Date.now() < deadline && (await admin.get(BD_TYPE, o.metadata.name))) await sleep(100);
    for (const c of controllers) await c.stop().catch(() => undefined);
    for (const o of cleanup.reverse()) if (o.kind !== BD_TYPE.kind) await admin.delete(o, o.metadata.name, o.metadata.namespace).catch(() => undefined);
    for (const d of tmpDirs) await rm(d, { recursive: true, force: true });
    await files?.close();
    await admin?.close();
  });

  /**
   * renders a release into a fresh namespace and applies it for real (the CRD and the tenancy
   * policy as a dry run: they act on every BundleDeployment of the shared test cluster;
   * test/integration/api/tenancy-policy.test.ts runs the policy for real, scoped to its own)
   */
  async function install(release: string, set: Record<string, unknown>): Promise<{ namespace: string; sa: string; objs: KubeObject[] }> {
    const namespace = `${release}-${runId}`;
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } };
    await admin.create(ns);
    cleanup.push(ns);
    const objs = await render(release, namespace, set);
    for (const o of objs) {
      const dryRun = o.kind === 'CustomResourceDefinition' || o.kind.startsWith('ValidatingAdmissionPolicy');
      const applied = await admin.apply(o, { fieldManager: 'helm-chart-test', dryRun });
      expect(applied.metadata.uid, `${o.kind} ${o.metadata.name}`).toBeDefined();
      if (!dryRun && !o.metadata.namespace) cleanup.push(o);
    }
    const sa = (find(objs, 'ServiceAccount') as KubeObject).metadata.name;
    return { namespace, sa, objs };
  }

  /** a kubeconfig that authenticates as the ServiceAccount with a real token (TokenRequest) */
  async function serviceAccountKubeconfig(namespace: string, sa: string): Promise<string> {
    const { stdout } = await run(toolPath('kubectl'), ['--kubeconfig', kubeconfigPath(), '-n', namespace, 'create', 'token', sa, '--duration=1h']);
    const kc = parse(readFileSync(kubeconfigPath(), 'utf8')) as {
      clusters: Array<{ name: string }>;
      'current-context': string;
      contexts: Array<{ name: string; context: { cluster: string } }>;
    };
    const cluster = kc.clusters.find((c) => c.name === kc.contexts.find((x) => x.name === kc['current-context'])!.context.cluster)!;
    const dir = await mkdtemp(join(tmpdir(), 'hoist-chart-'));
    tmpDirs.push(dir);
    const path = join(dir, 'kubeconfig');
    await writeFile(
      path,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [cluster],
        users: [{ name: sa, user: { token: stdout.trim() } }],
        contexts: [{ name: sa, context: { cluster: cluster.name, user: sa } }],
        'current-context': sa,
      }),
    );
    return path;
  }

  /** the real controller, authenticated as the chart's ServiceAccount, scoped to BDs labelled for it */
  async function controllerAs(namespace: string, sa: string, label: string, defaultServiceAccount?: string): Promise<RunningController> {
    const kubeconfig = await serviceAccountKubeconfig(namespace, sa);
    const cacheDir = await mkdtemp(join(tmpdir(), 'hoist-chart-cache-'));
    tmpDirs.push(cacheDir);
    const ctl = await startController({ kubeconfig, namespace, cacheDir, log, selector: `hoist.test/chart=${label}`, workers: 2, defaultServiceAccount });
    controllers.push(ctl);
    return ctl;
  }

  async function createBD(name: string, label: string, installNamespace: string, body: Buffer, serviceAccount?: string): Promise<void> {
    files.set(`/${name}.tgz`, body);
    const bd = {
      ...BD_TYPE,
      metadata: { name, labels: { 'hoist.test/chart': label } },
      spec: {
        installNamespace,
        format: 'plain',
        sources: [{ kind: 'http', http: { url: files.url(`/${name}.tgz`), sha256: sha256(body) } }],
        ...(serviceAccount ? { serviceAccount: { name: serviceAccount } } : {}),
      },
    };
    await admin.create(bd as unknown as KubeObject);
    cleanup.push(bd as unknown as KubeObject);
  }

  async function waitFor(name: string, pred: (bd: BundleDeployment) => boolean, what: string, timeoutMs = 60_000): Promise<BundleDeployment> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const bd = (await admin.get(BD_TYPE, name)) as unknown as BundleDeployment | undefined;
      if (bd && bd.status?.observedGeneration === bd.metadata.generation && pred(bd)) return bd;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${name}: ${what}\n${describeStatus(bd)}`);
      await sleep(100);
    }
  }

  const app = (ns: string) => [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'app' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { color: 'blue' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'app' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'app' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'app' },
      subjects: [{ kind: 'ServiceAccount', name: 'app', namespace: ns }],
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'app' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'app' } },
        template: { metadata: { labels: { app: 'app' } }, spec: { serviceAccountName: 'app', containers: [{ name: 'app', image: 'busybox:1.36' }] } },
      },
    },
  ];
  /** a ClusterRole granting "*": RBAC lets only a subject that holds every verb create it */
  const wide = (name: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
  });
  const bundle = async (objs: object[]) => tarGz({ 'objects.yaml': objs.map((o) => stringify(o)).join('---\n') });

  it('rbac.clusterAdmin=false: the controller as the chart ServiceAccount installs and deletes a plain bundle, takes the Lease, and is refused "*" RBAC', async () => {
    const { namespace, sa, objs } = await install('least', { 'rbac.clusterAdmin': false });
    expect(find(objs, 'ClusterRoleBinding', 'least-hoist-cluster-admin')).toBeUndefined();
    const label = `least-${runId}`;
    const ctl = await controllerAs(namespace, sa, label);

    // the client really is the ServiceAccount, held to the chart's RBAC
    await expect(
      ctl.client.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `probe-${runId}` }, rules: wide('x').rules }),
    ).rejects.toThrow(/forbidden/i);

    const installNs = `least-app-${runId}`;
    cleanup.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: installNs } });
    await createBD(`least-app-${runId}`, label, installNs, await bundle(app(installNs)));
    const bd = await waitFor(`least-app-${runId}`, isDone, 'installed');
    expect(cond(bd, 'Installed')).toMatchObject({ status: 'True', message: 'revision 1: 5 objects' });
    const cm = await admin.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app-config', installNs);
    expect((cm as { data?: Record<string, string> } | undefined)?.data).toEqual({ color: 'blue' });
    const revisions = await admin.list({ apiVersion: 'v1', kind: 'Secret' }, { namespace });
    expect(revisions.items.length).toBeGreaterThan(0);

    const wideName = `hoist-chart-wide-${runId}`;
    cleanup.push(wide(wideName));
    await createBD(`least-wide-${runId}`, label, installNs, await bundle([wide(wideName)]));
    const refused = await waitFor(`least-wide-${runId}`, (b) => cond(b, 'Installed')?.status === 'False', 'refused');
    expect(cond(refused, 'Installed')?.message).toMatch(/forbidden|escalat/i);
    expect(await admin.get({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' }, wideName)).toBeUndefined();

    // the Role is enough for leader election on a Lease in the release namespace
    const abort = new AbortController();
    let leading = false;
    const elector = new LeaderElector({
      client: ctl.client,
      name: 'hoist-controller',
      namespace,
      identity: `chart-test-${runId}`,
      retryPeriodMs: 200,
      onStartedLeading: () => {
        leading = true;
        abort.abort();
      },
      logger: log,
    });
    await elector.run(abort.signal);
    expect(leading).toBe(true);

    // deletion: the finalizer prunes what the bundle installed, as the ServiceAccount
    await admin.delete(BD_TYPE, `least-app-${runId}`, undefined);
    const deadline = Date.now() + 60_000;
    while (await admin.get(BD_TYPE, `least-app-${runId}`)) {
      if (Date.now() > deadline) throw new Error('BD not deleted within 60s');
      await sleep(100);
    }
    expect(await admin.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app-config', installNs)).toBeUndefined();
  }, 120_000);

  it("rbac.clusterAdmin=false on the API server: kubectl auth can-i as the chart's ServiceAccount says no to token requests, exec, attach, port-forward, proxies, escalate, bind and impersonating users (issue 23)", async () => {
    const { namespace, sa } = await install('nocan', { 'rbac.clusterAdmin': false });
    const kubeconfig = await serviceAccountKubeconfig(namespace, sa);
    /** `kubectl auth can-i` as the ServiceAccount itself (a SelfSubjectAccessReview with its own token) */
    const canI = async (req: Request): Promise<string> => {
      const resource = req.group ? `${req.resource}.${req.group}` : req.resource;
      const args = ['--kubeconfig', kubeconfig, 'auth', 'can-i', req.verb, resource, '-n', 'kube-system'];
      if (req.subresource) args.push(`--subresource=${req.subresource}`);
      return run(toolPath('kubectl'), args).then(
        (r) => r.stdout.trim(),
        (e: { stdout?: string }) => (e.stdout ?? '').trim(),
      );
    };
    // RBAC takes a new binding into account through its watch: wait until what it needs is granted
    const deadline = Date.now() + 60_000;
    for (const req of NEEDED_BY_CONTROLLER) {
      while ((await canI(req)) !== 'yes') {
        if (Date.now() > deadline) throw new Error(`${describeRequest(req)}: never allowed`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const answers = await Promise.all(FORBIDDEN_TO_CONTROLLER.map(async (req) => [describeRequest(req), await canI(req)]));
    expect(answers.filter(([, a]) => a !== 'no')).toEqual([]);
    // and for real: a token for another account is refused
    await expect(run(toolPath('kubectl'), ['--kubeconfig', kubeconfig, '-n', 'kube-system', 'create', 'token', 'default'])).rejects.toThrow(/forbidden/i);
  }, 120_000);

  it('rbac.impersonationOnly: the controller writes nothing itself; a BD installs and uninstalls only as its ServiceAccount, and one without is refused', async () => {
    const { namespace, sa, objs } = await install('imp', { 'rbac.clusterAdmin': false, 'rbac.impersonationOnly': true });
    expect(find(objs, 'ClusterRoleBinding', 'imp-hoist-cluster-admin')).toBeUndefined();
    const rules = (find(objs, 'ClusterRole') as unknown as { rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }> }).rules;
    // no write verb on anything but its own API, events and impersonation
    for (const r of rules) {
      const own = r.apiGroups.includes('core.rukpak.io') || r.resources.includes('events') || r.verbs.every((v) => v === 'impersonate');
      if (!own)
        expect(
          r.verbs.filter((v) => !['get', 'list', 'watch'].includes(v)),
          JSON.stringify(r),
        ).toEqual([]);
    }
    const label = `imp-${runId}`;
    const ctl = await controllerAs(namespace, sa, label);
    const tenant = `imp-tenant-${runId}`;
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: tenant } });
    cleanup.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: tenant } });

    // the controller's own identity can write no bundle object, nor read a Secret outside its namespace
    await expect(ctl.client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe', namespace: tenant } })).rejects.toThrow(/forbidden/i);
    await expect(ctl.client.get({ apiVersion: 'v1', kind: 'Secret' }, 'anything', tenant)).rejects.toThrow(/forbidden/i);
    // but it may read a ConfigMap in its own namespace (caConfigMapRef), where a get is otherwise refused
    expect(await ctl.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, `absent-ca-${runId}`, namespace)).toBeUndefined();
    await expect(ctl.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'anything', tenant)).rejects.toThrow(/forbidden/i);

    // without a ServiceAccount nothing is installed: the controller may not write it
    await createBD(`imp-nosa-${runId}`, label, tenant, await bundle([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'nosa' }, data: { a: 'b' } }]));
    const refused = await waitFor(`imp-nosa-${runId}`, (b) => cond(b, 'Installed')?.status === 'False', 'refused');
    // the first try is a presumed create (patch); retries after a refusal read first (get)
    expect(cond(refused, 'Installed')?.message).toMatch(new RegExp(`User "system:serviceaccount:${namespace}:${sa}" cannot (patch|get) resource "configmaps"`));
    expect(await admin.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'nosa', tenant)).toBeUndefined();

    // a tenant's account with rights in its namespace installs the app bundle as itself
    await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'installer', namespace: tenant } });
    await admin.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'installer-admin', namespace: tenant },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'installer', namespace: tenant }],
    } as KubeObject);
    await createBD(`imp-app-${runId}`, label, tenant, await bundle(app(tenant)), 'installer');
    const bd = await waitFor(`imp-app-${runId}`, isDone, 'installed as the tenant account');
    expect(cond(bd, 'Installed')).toMatchObject({ status: 'True', message: 'revision 1: 5 objects' });
    expect((await admin.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app-config', tenant))?.metadata.labels?.['core.rukpak.io/owner-name']).toBe(
      `imp-app-${runId}`,
    );

    await admin.delete(BD_TYPE, `imp-app-${runId}`, undefined);
    const deadline = Date.now() + 60_000;
    while (await admin.get(BD_TYPE, `imp-app-${runId}`)) {
      if (Date.now() > deadline) throw new Error('BD not deleted within 60s');
      await sleep(100);
    }
    expect(await admin.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app-config', tenant)).toBeUndefined();
    expect(await admin.get({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'app', tenant)).toBeUndefined();
  }, 120_000);

  it('rbac.clusterAdmin=true (default): the same "*" ClusterRole installs', async () => {
    const { namespace, sa, objs } = await install('admin', {});
    expect(find(objs, 'ClusterRoleBinding', 'admin-hoist-cluster-admin')).toBeDefined();
    const label = `admin-${runId}`;
    await controllerAs(namespace, sa, label);
    const wideName = `hoist-chart-wide-admin-${runId}`;
    cleanup.push(wide(wideName));
    await createBD(`admin-wide-${runId}`, label, `admin-app-${runId}`, await bundle([wide(wideName)]));
    cleanup.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `admin-app-${runId}` } });
    const bd = await waitFor(`admin-wide-${runId}`, isDone, 'installed');
    expect(cond(bd, 'Installed')?.status).toBe('True');
    expect(await admin.get({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' }, wideName)).toBeDefined();
  }, 120_000);
});
