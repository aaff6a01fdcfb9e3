import { cp, mkdtemp, readFile, rename, rm, symlink, writeFile, mkdir, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadRegistryV1Bundle } from '../../../src/processors/registry-v1/bundle.ts';
import { registryV1Processor, renderRegistryV1 } from '../../../src/processors/registry-v1/render.ts';
import { expectNoControllerPaths } from '../../support/controller-paths.ts';
import { createProcessorRegistry } from '../../../src/processors/registry.ts';

const { processorFor, supportedFormats } = createProcessorRegistry({ helmBinary: () => 'helm', kustomizeBinary: () => 'kustomize' });
import { plainProcessor } from '../../../src/processors/plain.ts';
import { contentDigest } from '../../../src/processors/content-digest.ts';
import type { HoistError } from '../../../src/util/errors.ts';
import { isHoistError } from '../../../src/util/errors.ts';
import { failure } from '../../support/failure.ts';

const FIXTURES = join(import.meta.dirname, '../../../testdata/fixtures/registry-v1');
const TESTDATA = join(import.meta.dirname, '../../../testdata/registry-v1');
const ARGOCD = join(FIXTURES, 'argocd-operator.v0.6.0');
const WEBHOOK5 = join(FIXTURES, 'webhook-operator.v0.0.5');
const WEBHOOK1 = join(FIXTURES, 'webhook-operator.v0.0.1');

/** API versions a current cluster serves (with cert-manager installed). */
const SERVED = ['v1', 'apps/v1', 'rbac.authorization.k8s.io/v1', 'apiextensions.k8s.io/v1', 'admissionregistration.k8s.io/v1', 'cert-manager.io/v1'];

const temps: string[] = [];
afterEach(async () => {
  for (const t of temps.splice(0)) await rm(t, { recursive: true, force: true });
});

async function copyBundle(src: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hoist-rv1-'));
  temps.push(dir);
  await cp(src, dir, { recursive: true });
  return dir;
}

/** every error of these tests is a condition message: it must not name the controller's directories */
function errorOf(p: Promise<unknown>): Promise<HoistError> {
  return failure(p);
}

const names = (objs: { kind: string; metadata: { name: string; namespace?: string } }[]) =>
  objs.map((o) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);

describe('registry-v1 install modes', () => {
  it('AllNamespaces: permissions become ClusterRoles with read access to namespaces; olm.targetNamespaces is ""', async () => {
    const r = await renderRegistryV1(ARGOCD, { installNamespace: 'argocd', watchNamespace: '' });
    expect(r.mode).toBe('AllNamespaces');
    expect(r.objects.filter((o) => o.kind === 'Role' || o.kind === 'RoleBinding')).toEqual([]);
    const clusterRoles = r.objects.filter((o) => o.kind === 'ClusterRole');
    expect(names(clusterRoles)).toEqual([
      'ClusterRole argocd-operator.v0-1dhiybrldl1gyksid1dk2dqjsc72psdybc7iyvse5gpx',
      'ClusterRole argocd-operator.v0.-3gkm3u8zfarktdile5wekso69zs9bgzb988mhjm0y6p',
      'ClusterRole argocd-operator-metrics-reader',
    ]);
    expect((clusterRoles[1] as any).rules.at(-1)).toEqual({ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] });
    const deploy = r.objects.find((o) => o.kind === 'Deployment') as any;
    expect(deploy.spec.template.metadata.annotations['olm.targetNamespaces']).toBe('');
    expect(deploy.spec.revisionHistoryLimit).toBe(1);
  });

  it('OwnNamespace: Roles and RoleBindings in the install namespace', async () => {
    const r = await renderRegistryV1(ARGOCD, { installNamespace: 'argocd', watchNamespace: 'argocd' });
    expect(r.mode).toBe('OwnNamespace');
    expect(names(r.objects.filter((o) => o.kind === 'Role' || o.kind === 'RoleBinding'))).toEqual([
      'Role argocd/argocd-operator.v0-22gmilmgp91wu25is5i2ec598hni8owq3l71bbkl7iz3',
      'RoleBinding argocd/argocd-operator.v0-22gmilmgp91wu25is5i2ec598hni8owq3l71bbkl7iz3',
    ]);
  });

  it('SingleNamespace: Roles and RoleBindings in the watched namespace, bound to the ServiceAccount in the install namespace', async () => {
    const r = await renderRegistryV1(ARGOCD, { installNamespace: 'argocd', watchNamespace: 'team-a' });
    expect(r.mode).toBe('SingleNamespace');
    const binding = r.objects.find((o) => o.kind === 'RoleBinding') as any;
    expect(binding.metadata.namespace).toBe('team-a');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'argocd-operator-controller-manager', namespace: 'argocd' }]);
    const deploy = r.objects.find((o) => o.kind === 'Deployment') as any;
    expect(deploy.metadata.namespace).toBe('argocd');
    expect(deploy.spec.template.metadata.annotations['olm.targetNamespaces']).toBe('team-a');
  });

  it("the bundle's other manifests get the install namespace when namespaced", async () => {
    const r = await renderRegistryV1(ARGOCD, { installNamespace: 'argocd' });
    expect(names(r.objects.filter((o) => ['Service', 'ConfigMap'].includes(o.kind)))).toEqual([
      'Service argocd/argocd-operator-controller-manager-metrics-service',
      'ConfigMap argocd/argocd-operator-manager-config',
    ]);
    const svc = r.objects.find((o) => o.kind === 'Service') as any;
    expect(svc.status).toBeUndefined();
    expect(svc.metadata.creationTimestamp).toBeUndefined();
  });

  it('an install mode the CSV does not support is a clear error naming the CSV and what it supports', async () => {
    const err = await errorOf(renderRegistryV1(WEBHOOK5, { installNamespace: 'webhooks', watchNamespace: 'webhooks' }));
    expect(err.stage).toBe('process');
    expect(err.reason).toBe('ProcessFailed');
    expect(err.terminal).toBe(true);
    expect(err.code).toBe('unsupported-install-mode');
    expect(err.subject).toBe('manifests/webhook-operator.clusterserviceversion.yaml');
    expect(err.message).toBe(
      'ClusterServiceVersion webhook-operator.v0.0.5 does not support install mode OwnNamespace; it supports AllNamespaces (leave config.registryV1.watchNamespace empty for AllNamespaces)',
    );
    const single = await errorOf(renderRegistryV1(WEBHOOK5, { installNamespace: 'webhooks', watchNamespace: 'other' }));
    expect(single.message).toMatch(/does not support install mode SingleNamespace/);
  });

  it('refuses an invalid watch namespace and a missing install namespace', async () => {
    expect((await errorOf(renderRegistryV1(ARGOCD, { installNamespace: 'argocd', watchNamespace: 'Bad_NS' }))).code).toBe('invalid-config');
    expect((await errorOf(registryV1Processor.render(ARGOCD, undefined, { name: 'bd' }))).message).toMatch(/need spec.installNamespace/);
  });

  it('the processor reads watchNamespace from config.registryV1', async () => {
    const r = await registryV1Processor.render(ARGOCD, { registryV1: { watchNamespace: 'team-b' } }, { name: 'bd', installNamespace: 'argocd' });
    expect((r.objects.find((o) => o.kind === 'Role') as any).metadata.namespace).toBe('team-b');
  });
});

describe('registry-v1 MultiNamespace (config.registryV1.watchNamespaces)', () => {
  const MULTI = join(TESTDATA, 'argocd-operator.v0.6.0-multinamespace');

  it('two or more namespaces: a Role and RoleBinding in each, olm.targetNamespaces lists them, olm.operatorNamespace is the install namespace', async () => {
    const r = await renderRegistryV1(MULTI, { installNamespace: 'argocd', watchNamespaces: ['team-a', 'team-b'] });
    expect(r.mode).toBe('MultiNamespace');
    expect(r.targetNamespaces).toEqual(['team-a', 'team-b']);
    expect(names(r.objects.filter((o) => o.kind === 'Role' || o.kind === 'RoleBinding'))).toEqual([
      'Role team-a/argocd-operator.v0-22gmilmgp91wu25is5i2ec598hni8owq3l71bbkl7iz3',
      'RoleBinding team-a/argocd-operator.v0-22gmilmgp91wu25is5i2ec598hni8owq3l71bbkl7iz3',
      'Role team-b/argocd-operator.v0-22gmilmgp91wu25is5i2ec598hni8owq3l71bbkl7iz3',
      'RoleBinding team-b/argocd-operator.v0-22gmilmgp91wu25is5i2ec598hni8owq3l71bbkl7iz3',
    ]);
    // no promotion to cluster scope outside AllNamespaces
    expect(r.objects.filter((o) => o.kind === 'ClusterRole').map((o) => o.metadata.name)).not.toContain(
      'argocd-operator.v0.-3gkm3u8zfarktdile5wekso69zs9bgzb988mhjm0y6p',
    );
    const annotations = (r.objects.find((o) => o.kind === 'Deployment') as any).spec.template.metadata.annotations;
    expect(annotations['olm.targetNamespaces']).toBe('team-a,team-b');
    expect(annotations['olm.operatorNamespace']).toBe('argocd');
  });

  it('a MultiNamespace-only bundle refuses one namespace and all namespaces, naming the CSV, its modes and what to set', async () => {
    for (const opts of [{ watchNamespace: 'team-a' }, { watchNamespaces: ['team-a'] }, { watchNamespace: 'argocd' }, {}]) {
      const err = await errorOf(renderRegistryV1(MULTI, { installNamespace: 'argocd', ...opts }));
      expect(err.code, JSON.stringify(opts)).toBe('unsupported-install-mode');
      expect(err.terminal).toBe(true);
      expect(err.subject).toBe('manifests/argocd-operator.v0.6.0.clusterserviceversion.yaml');
      expect(err.message).toMatch(
        /^ClusterServiceVersion argocd-operator\.v0\.6\.0 does not support install mode (Single|Own|All)Namespaces?; it supports MultiNamespace \(set config\.registryV1\.watchNamespaces to two or more namespaces other than "argocd" for MultiNamespace\)$/,
      );
    }
  });

  it('the install namespace among the targets also needs OwnNamespace (OLM v1)', async () => {
    const err = await errorOf(renderRegistryV1(MULTI, { installNamespace: 'argocd', watchNamespaces: ['argocd', 'team-a'] }));
    expect(err.code).toBe('unsupported-install-mode');
    expect(err.message).toMatch(
      /does not support install mode MultiNamespace with the install namespace "argocd" among its targets \(that needs OwnNamespace\)/,
    );
  });

  it('a bundle without MultiNamespace refuses two namespaces; one listed namespace is watchNamespace', async () => {
    const err = await errorOf(renderRegistryV1(ARGOCD, { installNamespace: 'argocd', watchNamespaces: ['team-a', 'team-b'] }));
    expect(err.message).toMatch(
      /^ClusterServiceVersion argocd-operator\.v0\.6\.0 does not support install mode MultiNamespace; it supports AllNamespaces, OwnNamespace, SingleNamespace /,
    );
    const one = await renderRegistryV1(ARGOCD, { installNamespace: 'argocd', watchNamespaces: ['team-a'] });
    const shorthand = await renderRegistryV1(ARGOCD, { installNamespace: 'argocd', watchNamespace: 'team-a' });
    expect(one.mode).toBe('SingleNamespace');
    expect(contentDigest(one.objects)).toBe(contentDigest(shorthand.objects));
  });

  it('refuses both fields, an empty list, duplicates and invalid names as invalid-config', async () => {
    const cases: Array<[object, RegExp]> = [
      [{ watchNamespace: 'a', watchNamespaces: ['b', 'c'] }, /set watchNamespace or watchNamespaces, not both/],
      [{ watchNamespaces: [] }, /watchNamespaces must not be empty/],
      [{ watchNamespaces: ['a', 'b', 'a'] }, /lists "a" twice/],
      [{ watchNamespaces: ['a', 'Bad_NS'] }, /"Bad_NS" is not a valid namespace name/],
    ];
    for (const [opts, message] of cases) {
      const err = await errorOf(renderRegistryV1(MULTI, { installNamespace: 'argocd', ...opts }));
      expect(err.code, JSON.stringify(opts)).toBe('invalid-config');
      expect(err.message).toMatch(message);
    }
  });

  it('the processor reads deploymentConfig from config.registryV1 and applies it to the Deployments', async () => {
    const config = {
      registryV1: { deploymentConfig: { nodeSelector: { 'node-role.kubernetes.io/infra': '' }, env: [{ name: 'HTTPS_PROXY', value: 'http://proxy:3128' }] } },
    };
    const r = await registryV1Processor.render(ARGOCD, config, { name: 'bd', installNamespace: 'argocd' });
    const pod = (r.objects.find((o) => o.kind === 'Deployment') as any).spec.template.spec;
    expect(pod.nodeSelector).toEqual({ 'node-role.kubernetes.io/infra': '' });
    for (const c of pod.containers) expect(c.env.at(-1)).toEqual({ name: 'HTTPS_PROXY', value: 'http://proxy:3128' });
  });

  it('the processor reads watchNamespaces from config.registryV1', async () => {
    const r = await registryV1Processor.render(MULTI, { registryV1: { watchNamespaces: ['x', 'y'] } }, { name: 'bd', installNamespace: 'argocd' });
    expect(r.objects.filter((o) => o.kind === 'Role').map((o) => o.metadata.namespace)).toEqual(['x', 'y']);
  });
});

describe('registry-v1 webhooks (cert-manager)', () => {
  it('conversion webhook patched into the CRD, with CA injection from the Certificate', async () => {
    const r = await renderRegistryV1(WEBHOOK1, { installNamespace: 'webhooks' });
    const crd = r.objects.find((o) => o.kind === 'CustomResourceDefinition') as any;
    expect(crd.spec.conversion).toEqual({
      strategy: 'Webhook',
      webhook: {
        clientConfig: { service: { name: 'webhook-operator-controller-manager-service', namespace: 'webhooks', path: '/convert', port: 443 } },
        conversionReviewVersions: ['v1'],
      },
    });
    expect(crd.metadata.annotations['cert-manager.io/inject-ca-from']).toBe('webhooks/webhook-operator-controller-manager-service-cert');
  });

  it('admission webhooks, their Service, and the Issuer and Certificate', async () => {
    const r = await renderRegistryV1(WEBHOOK5, { installNamespace: 'webhooks', apiVersions: SERVED });
    expect(names(r.objects)).toEqual([
      'ServiceAccount webhooks/webhook-operator-controller-manager',
      'ClusterRole webhook-operator.v-119edugfdvz48oyy2ctmbp4ec5c4a7zbv5k03vg4y3ve',
      'ClusterRoleBinding webhook-operator.v-119edugfdvz48oyy2ctmbp4ec5c4a7zbv5k03vg4y3ve',
      'ClusterRole webhook-operator.v-1zfvwth88plw3th2midra1jqduroo1q7omiagjujsiu3',
      'ClusterRoleBinding webhook-operator.v-1zfvwth88plw3th2midra1jqduroo1q7omiagjujsiu3',
      'CustomResourceDefinition webhooktests.webhook.operators.coreos.io',
      'Deployment webhooks/webhook-operator-controller-manager',
      'ValidatingWebhookConfiguration vwebhooktest-v1.kb.io',
      'MutatingWebhookConfiguration mwebhooktest-v1.kb.io',
      'Service webhooks/webhook-operator-controller-manager-service',
      'Issuer webhooks/webhook-operator-controller-manager-service-c-selfsigned-issuer',
      'Certificate webhooks/webhook-operator-controller-manager-service-cert',
    ]);
    const deploy = r.objects.find((o) => o.kind === 'Deployment') as any;
    const podSpec = deploy.spec.template.spec;
    // the bundle's own volume at the serving-cert path is replaced by the Certificate's secret
    expect(podSpec.volumes.map((v: any) => v.name)).toEqual(['webhook-cert', 'apiservice-cert']);
    expect(podSpec.volumes[0].secret.secretName).toBe('webhook-operator-controller-manager-service-cert');
    expect(podSpec.containers[0].volumeMounts).toEqual([
      { mountPath: '/tmp/k8s-webhook-server/serving-certs', name: 'webhook-cert' },
      { mountPath: '/apiserver.local.config/certificates', name: 'apiservice-cert' },
    ]);
    const cert = r.objects.find((o) => o.kind === 'Certificate') as any;
    expect(cert.spec.dnsNames).toEqual(['webhook-operator-controller-manager-service.webhooks.svc']);
    expect(r.warnings).toEqual(['webhook certificates are managed by cert-manager: it must be installed in the cluster']);
  });

  it('is an error when the cluster does not serve cert-manager.io/v1', async () => {
    const err = await errorOf(renderRegistryV1(WEBHOOK5, { installNamespace: 'webhooks', apiVersions: SERVED.filter((v) => !v.startsWith('cert-manager')) }));
    expect(err.code).toBe('unsupported-api');
    expect(err.message).toContain(
      'cert-manager.io/v1 Issuer webhooks/webhook-operator-controller-manager-service-c-selfsigned-issuer: the cluster does not serve cert-manager.io/v1 (webhook certificates need cert-manager installed)',
    );
  });

  it('rendering is deterministic: same bundle, same digest', async () => {
    const a = await renderRegistryV1(WEBHOOK5, { installNamespace: 'webhooks' });
    const b = await renderRegistryV1(WEBHOOK5, { installNamespace: 'webhooks' });
    expect(contentDigest(a.objects)).toBe(contentDigest(b.objects));
    expect(a.objects).toEqual(b.objects);
  });
});

describe('registry-v1 bundle errors', () => {
  it('an object whose API version the cluster does not serve is an error naming the file and object', async () => {
    const bundle = join(TESTDATA, 'legacy-rbac');
    const ok = await renderRegistryV1(bundle, { installNamespace: 'legacy' });
    expect(names(ok.objects)).toContain('ClusterRole legacy-metrics-reader');
    const err = await errorOf(renderRegistryV1(bundle, { installNamespace: 'legacy', apiVersions: SERVED }));
    expect(err.code).toBe('unsupported-api');
    expect(err.subject).toBe('manifests/legacy-metrics-reader_rbac.authorization.k8s.io_v1beta1_clusterrole.yaml');
    expect(err.message).toBe(
      'rbac.authorization.k8s.io/v1beta1 ClusterRole legacy-metrics-reader: the cluster does not serve rbac.authorization.k8s.io/v1beta1',
    );
  });

  it('missing metadata/annotations.yaml', async () => {
    const dir = await copyBundle(ARGOCD);
    await unlink(join(dir, 'metadata/annotations.yaml'));
    const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'argocd' }));
    expect(err.code).toBe('invalid-bundle');
    expect(err.subject).toBe('metadata/annotations.yaml');
    expect(err.message).toBe('not a registry+v1 bundle: metadata/annotations.yaml is missing');
  });

  it('a CSV that does not parse names the file and the fields', async () => {
    const dir = await copyBundle(WEBHOOK5);
    const csvPath = join(dir, 'manifests/webhook-operator.clusterserviceversion.yaml');
    const text = (await readFile(csvPath, 'utf8'))
      .replace('    - supported: true\n      type: AllNamespaces', '    - supported: sometimes\n      type: AllNamespaces')
      .replace('      containerPort: 443\n      conversionCRDs', '      containerPort: https\n      conversionCRDs');
    await writeFile(csvPath, text);
    const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'webhooks' }));
    expect(err.code).toBe('invalid-bundle');
    expect(err.subject).toBe('manifests/webhook-operator.clusterserviceversion.yaml');
    expect(err.message).toBe(
      'ClusterServiceVersion does not parse: spec.installModes[3].supported: must be true or false; spec.webhookdefinitions[0].containerPort: must be an integer',
    );
  });

  it('a CSV with a YAML syntax error names the file and line', async () => {
    const dir = await copyBundle(WEBHOOK5);
    await writeFile(
      join(dir, 'manifests/webhook-operator.clusterserviceversion.yaml'),
      'apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: x\n',
    );
    const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'webhooks' }));
    expect(err.code).toBe('parse-error');
    expect(err.subject).toMatch(/^manifests\/webhook-operator\.clusterserviceversion\.yaml:\d+$/);
  });

  it('no CSV, unsupported kinds, subdirectories and v1beta1 CRDs are errors, reported together', async () => {
    const dir = await copyBundle(ARGOCD);
    await unlink(join(dir, 'manifests/argocd-operator.v0.6.0.clusterserviceversion.yaml'));
    await mkdir(join(dir, 'manifests/extra'));
    const crd = await readFile(join(dir, 'manifests/argoproj.io_argocds.yaml'), 'utf8');
    await writeFile(join(dir, 'manifests/argoproj.io_argocds.yaml'), crd.replace('apiextensions.k8s.io/v1', 'apiextensions.k8s.io/v1beta1'));
    const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'argocd' }));
    expect(err.message).toContain('manifests/extra: subdirectories are not allowed in manifests/');
    expect(err.message).toContain(
      'CustomResourceDefinition argocds.argoproj.io uses apiextensions.k8s.io/v1beta1; registry+v1 bundles must use apiextensions.k8s.io/v1',
    );
  });

  it('a kind OLM does not allow in bundles is refused', async () => {
    const dir = await copyBundle(ARGOCD);
    await writeFile(join(dir, 'manifests/extra-deployment.yaml'), 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sneaky\nspec: {}\n');
    const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'argocd' }));
    expect(err.message).toBe('bundle contains unsupported resource: Name: sneaky, Kind: Deployment (manifests/extra-deployment.yaml)');
    expect(err.subject).toBe('manifests/argocd-operator.v0.6.0.clusterserviceversion.yaml');
  });

  it('OLM v1 validators: webhook referencing a missing deployment, owned CRD missing', async () => {
    const dir = await copyBundle(WEBHOOK5);
    const csvPath = join(dir, 'manifests/webhook-operator.clusterserviceversion.yaml');
    await writeFile(csvPath, (await readFile(csvPath, 'utf8')).replaceAll('deploymentName: webhook-operator-controller-manager', 'deploymentName: gone'));
    await unlink(join(dir, 'manifests/webhook.operators.coreos.io_webhooktests.yaml'));
    const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'webhooks' }));
    expect(err.message).toContain(
      "cluster service definition references owned custom resource definition 'webhooktests.webhook.operators.coreos.io' not found in bundle",
    );
    expect(err.message).toContain("webhook of type 'ConversionWebhook' with name 'cwebhooktests.kb.io' references non-existent deployment 'gone'");
  });

  it('conversion webhooks require a bundle that supports only AllNamespaces', async () => {
    const dir = await copyBundle(WEBHOOK1);
    const csvPath = join(dir, 'manifests/webhook-operator.clusterserviceversion.yaml');
    await writeFile(
      csvPath,
      (await readFile(csvPath, 'utf8')).replace('    - supported: false\n      type: OwnNamespace', '    - supported: true\n      type: OwnNamespace'),
    );
    const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'webhooks' }));
    expect(err.message).toContain('bundle contains conversion webhook "cwebhooktests.kb.io" and supports install modes [AllNamespaces OwnNamespace]');
  });

  it('metadata/properties.yaml is merged into the olm.properties annotation', async () => {
    const dir = await copyBundle(ARGOCD);
    await writeFile(
      join(dir, 'metadata/properties.yaml'),
      'properties:\n- type: olm.maxOpenShiftVersion\n  value: "4.14"\n- type: olm.package\n  value: {version: 0.6.0, packageName: argocd-operator}\n',
    );
    const r = await renderRegistryV1(dir, { installNamespace: 'argocd' });
    const deploy = r.objects.find((o) => o.kind === 'Deployment') as any;
    expect(deploy.spec.template.metadata.annotations['olm.properties']).toBe(
      '[{"type":"olm.maxOpenShiftVersion","value":"4.14"},{"type":"olm.package","value":{"packageName":"argocd-operator","version":"0.6.0"}}]',
    );
  });
});

describe('registry-v1 containment (links and size caps)', () => {
  const CM_FILE = 'manifests/argocd-operator-manager-config_v1_configmap.yaml';

  for (const [name, target] of [
    ["/proc/self/environ (the controller's environment)", '/proc/self/environ'],
    ['/dev/zero (endless)', '/dev/zero'],
    ['/dev/zero by a relative path', `${'../'.repeat(30)}dev/zero`],
  ] as const) {
    it(`a manifest that is a link to ${name} is refused, naming it`, async () => {
      const dir = await copyBundle(ARGOCD);
      await unlink(join(dir, CM_FILE));
      await symlink(target, join(dir, CM_FILE));
      const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'argocd' }));
      expect(err).toMatchObject({ code: 'symlink-escape', subject: CM_FILE, terminal: true, stage: 'process' });
      expect(err.message).toMatch(/^registry-v1 processor: symlink ".+" leads/);
      expectNoControllerPaths(err.describe(), [dir]);
    });
  }

  it('metadata/annotations.yaml as a link to a file outside the bundle is refused, and its content never appears', async () => {
    const dir = await copyBundle(ARGOCD);
    const outside = await mkdtemp(join(tmpdir(), 'hoist-rv1-outside-'));
    temps.push(outside);
    await writeFile(join(outside, 'a.yaml'), 'annotations:\n  operators.operatorframework.io.bundle.package.v1: stolen-package-name\n');
    await unlink(join(dir, 'metadata/annotations.yaml'));
    await symlink(`../../${basename(outside)}/a.yaml`, join(dir, 'metadata/annotations.yaml'));
    const err = await errorOf(renderRegistryV1(dir, { installNamespace: 'argocd' }));
    expect(err).toMatchObject({ code: 'symlink-escape', subject: 'metadata/annotations.yaml' });
    expect(err.message).not.toContain('stolen-package-name');
  });

  it('a manifest that is a link to another file inside the bundle is read', async () => {
    const dir = await copyBundle(ARGOCD);
    await mkdir(join(dir, 'common'));
    await rename(join(dir, CM_FILE), join(dir, 'common/cm.yaml'));
    await symlink('../common/cm.yaml', join(dir, CM_FILE));
    const linked = await renderRegistryV1(dir, { installNamespace: 'argocd' });
    const plain = await renderRegistryV1(ARGOCD, { installNamespace: 'argocd' });
    expect(contentDigest(linked.objects)).toBe(contentDigest(plain.objects));
  });

  it('a manifest over the per-file cap is refused, naming the processor, the file and the cap', async () => {
    const dir = await copyBundle(ARGOCD);
    const err = await errorOf(loadRegistryV1Bundle(dir, { maxFileBytes: 64 * 1024 }));
    expect(err.code).toBe('too-large');
    expect(err.message).toMatch(/registry-v1 processor: "manifests\/[^"]+" is \d+ bytes, over the limit of 64 KiB per file/);
  });
});

describe('processorFor', () => {
  it('maps formats to processors', () => {
    expect(processorFor('plain')).toBe(plainProcessor);
    expect(processorFor('registry-v1')).toBe(registryV1Processor);
    expect(supportedFormats()).toEqual(expect.arrayContaining(['plain', 'registry-v1']));
  });

  it('a format without a processor is a terminal unsupported-format error', () => {
    try {
      processorFor('jsonnet');
      expect.unreachable();
    } catch (e) {
      expect(isHoistError(e)).toBe(true);
      if (!isHoistError(e)) return;
      expect(e.code).toBe('unsupported-format');
      expect(e.terminal).toBe(true);
      expect(e.stage).toBe('process');
      expect(e.message).toMatch(/^unsupported format "jsonnet": this build of Hoist renders plain, registry-v1, helm, kustomize$/);
      expect(e.subject).toBe('format jsonnet');
    }
  });
});
