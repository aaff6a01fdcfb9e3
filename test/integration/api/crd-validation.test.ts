/**
 * The BundleDeployment CRD against a real kube-apiserver: the server accepts the schema (CEL cost
 * estimates included), admits valid specs of every format, applies the defaults the controller
 * relies on, and refuses bad specs with a message that says what is wrong.
 *
 * The CRD is installed with server-side apply and left installed: the control plane is shared
 * by every test file of the run, and other files create BundleDeployments concurrently. Every
 * BundleDeployment this file creates is deleted in afterAll.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRD_NAME, bundleDeploymentCRD } from '../../../api/v1alpha2/crd.ts';
import { withDefaults } from '../../../api/v1alpha2/defaults.ts';
import { API_VERSION, KIND, type BundleDeployment, type BundleDeploymentSpec } from '../../../api/v1alpha2/types.ts';
import { ApiError, isInvalid } from '../../../src/kube/api-error.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { untilServed } from '../../support/crds.ts';
import { kubeconfigPath } from '../../support/env.ts';

const BD_TYPE = { apiVersion: API_VERSION, kind: KIND };
const HEX64 = 'a'.repeat(64);
const HEX40 = '0123456789abcdef0123456789abcdef01234567';
const run = randomBytes(3).toString('hex');

const httpSource = { kind: 'http', http: { url: 'https://downloads.example.com/bundle.tar.gz' } } as const;
/** A valid plain spec that each invalid case changes in one place. */
const plain: BundleDeploymentSpec = { format: 'plain', sources: [httpSource] };

function bdObject(name: string, spec: unknown): KubeObject {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec };
}

describe('BundleDeployment CRD on a real API server', () => {
  let client: RestKubeClient;
  const created: string[] = [];
  let seq = 0;
  const nextName = (what: string): string => `crdv-${run}-${what}-${seq++}`;

  async function create(what: string, spec: unknown): Promise<BundleDeployment> {
    const name = nextName(what);
    const obj = await client.create<KubeObject>(bdObject(name, spec));
    created.push(name);
    return obj as unknown as BundleDeployment;
  }

  /** Creates a BD that must be refused; returns the API server's message. */
  async function refusal(spec: unknown, name = nextName('bad')): Promise<string> {
    const err = await client.create(bdObject(name, spec)).then(
      () => {
        created.push(name);
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err, `the API server accepted ${JSON.stringify(spec)}`).toBeInstanceOf(ApiError);
    expect(isInvalid(err)).toBe(true);
    return (err as ApiError).apiMessage;
  }

  beforeAll(async () => {
    client = createKubeClient(loadKubeConfig(kubeconfigPath()), { missRefreshIntervalMs: 0 });
    // The API server refuses the whole CRD when a rule's estimated cost is over budget, so this
    // apply is itself the test that every rule is bounded.
    await client.apply(bundleDeploymentCRD(), { fieldManager: 'hoist-test-api', force: true });
    await untilServed(CRD_NAME, { apiVersion: API_VERSION, kind: KIND }, [client]);
  });

  afterAll(async () => {
    await Promise.all(created.map((name) => client.delete(BD_TYPE, name, undefined)));
    await client.close();
  });

  describe('accepts valid specs', () => {
    it('plain from an http tarball', async () => {
      const bd = await create('plain', {
        format: 'plain',
        sources: [
          { kind: 'http', http: { url: 'https://downloads.example.com/rollouts-1.9.1.tar.gz', sha256: HEX64, auth: { secretRef: { name: 'http-creds' } } } },
        ],
        pollInterval: '10m',
      });
      expect(bd.spec.sources[0]?.http?.sha256).toBe(HEX64);
    });

    it('git and http with their own CA, the key defaulted to ca.crt', async () => {
      const bd = await create('ca-refs', {
        format: 'plain',
        sources: [
          { kind: 'http', http: { url: 'https://files.corp.example/a.tgz', caSecretRef: { name: 'corp-ca' } } },
          {
            kind: 'git',
            git: { repository: 'https://git.corp.example/a.git', ref: { branch: 'main' }, caConfigMapRef: { name: 'corp-ca', key: 'bundle.pem' } },
            destination: 'b',
          },
        ],
      });
      expect(bd.spec.sources[0]?.http?.caSecretRef).toEqual({ name: 'corp-ca', key: 'ca.crt' });
      expect(bd.spec.sources[1]?.git?.caConfigMapRef).toEqual({ name: 'corp-ca', key: 'bundle.pem' });
    });

    it('helm from git with config.helm', async () => {
      const bd = await create('helm', {
        format: 'helm',
        installNamespace: 'argo-rollouts',
        sources: [
          {
            kind: 'git',
            git: {
              repository: 'https://git.example.com/acme/deploy.git',
              ref: { commit: HEX40 },
              directory: 'charts/rollouts',
              auth: { secretRef: { name: 'git-creds' } },
            },
            destination: 'chart',
          },
        ],
        config: { helm: { releaseName: 'rollouts', values: { controller: { replicas: 2 }, list: [1, 'two'] } } },
        serviceAccount: { name: 'installer' },
      });
      // values are kept as written, not pruned
      expect(bd.spec.config?.helm?.values).toEqual({ controller: { replicas: 2 }, list: [1, 'two'] });
    });

    it('registry-v1 from an image with every optional member set', async () => {
      const bd = await create('registry-v1', {
        paused: true,
        format: 'registry-v1',
        installNamespace: 'operators',
        sources: [
          { kind: 'image', image: { ref: `quay.io/acme/rollouts-bundle:v1.9.1@sha256:${HEX64}`, auth: { secretRef: { name: 'acme-pull' } } } },
          {
            kind: 'image',
            image: { ref: 'localhost:5000/acme/extra_bits:latest', verify: { publicKeys: { configMapRef: { name: 'acme-keys' } }, policy: 'Warn' } },
            destination: 'extra/bits',
          },
          { kind: 'git', git: { repository: 'http://127.0.0.1:8080/acme/overlays.git', ref: { branch: 'release/1.9' } }, destination: 'overlays' },
          { kind: 'git', git: { repository: 'https://git.example.com/acme/x.git', ref: { tag: 'v1.2.3' } }, destination: './tagged' },
          { kind: 'git', git: { repository: 'git@github.com:acme/deploy.git', ref: { branch: 'main' } }, destination: 'scp' },
          { kind: 'git', git: { repository: 'ssh://git@git.corp.example:2222/acme/deploy.git', ref: { tag: 'v1' } }, destination: 'ssh' },
          { kind: 'git', git: { repository: 'git@[::1]:acme/deploy.git', ref: { tag: 'v1' } }, destination: 'ssh6' },
        ],
        config: { registryV1: { watchNamespaces: ['team-a', 'team-b'] } },
        pollInterval: '1h30m',
        upgrade: { onFailure: 'Hold', progressDeadline: '90s' },
        healthChecks: [
          { name: 'available', match: { group: 'apps', kind: 'Deployment', selector: { app: 'rollouts' } }, condition: { type: 'Available', status: 'True' } },
          {
            name: 'replicas',
            match: { kind: 'Deployment', name: 'rollouts', namespace: 'operators' },
            jsonPath: { path: '{.status.readyReplicas}', value: '2' },
            periodSeconds: 5,
          },
          { name: 'cel', match: { kind: 'ConfigMap' }, cel: "has(self.data) && self.data.ready == 'yes'", failureThreshold: 1, initialDelaySeconds: 30 },
        ],
        revisionHistoryLimit: 0,
        collisionProtection: 'IfNotOwned',
        serviceAccount: { name: 'installer' },
        deleteCRDsOnUninstall: true,
        driftIgnore: [
          { target: { group: 'apps', kind: 'Deployment', name: 'rollouts' }, jsonPointers: ['/spec/replicas'] },
          { target: { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' }, jsonPointers: ['/spec/conversion/webhook/clientConfig/caBundle'] },
          {
            target: { labelSelector: { matchLabels: { app: 'x' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] } },
            jsonPointers: ['/metadata/annotations/example.com~1hash'],
          },
        ],
      });
      // verify's defaults: provider cosign; an explicit policy is kept
      expect(bd.spec.sources[1]?.image?.verify).toEqual({ provider: 'cosign', publicKeys: { configMapRef: { name: 'acme-keys' } }, policy: 'Warn' });
      expect(bd.spec).toMatchObject({
        paused: true,
        revisionHistoryLimit: 0,
        collisionProtection: 'IfNotOwned',
        deleteCRDsOnUninstall: true,
        config: { registryV1: { watchNamespaces: ['team-a', 'team-b'] } },
      });
    });
  });

  it("registry-v1 deploymentConfig with every member (OLM v1's regression options) is kept as written", async () => {
    const deploymentConfig = {
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [
        { key: 'some/key', operator: 'Equal', effect: 'NoSchedule' },
        { key: 'someother/key', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
      ],
      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: 1, memory: '512Mi' } },
      env: [
        { name: 'HTTPS_PROXY', value: 'http://proxy:3128' },
        { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ],
      envFrom: [{ prefix: 'test' }, { configMapRef: { name: 'cm' } }, { secretRef: { name: 's', optional: true } }],
      volumes: [
        { name: 'cfg', configMap: { name: 'cm' } },
        { name: 'scratch', emptyDir: {} },
      ],
      volumeMounts: [{ name: 'cfg', mountPath: '/cfg', readOnly: true }],
      affinity: {
        nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'infra', operator: 'Exists' }] }] } },
        podAffinity: {},
      },
      annotations: { foo: 'bar' },
    };
    const bd = await create('deployment-config', {
      format: 'registry-v1',
      installNamespace: 'operators',
      sources: [httpSource],
      config: { registryV1: { deploymentConfig } },
    });
    expect(bd.spec.config?.registryV1?.deploymentConfig).toEqual(deploymentConfig);
  });

  it('keeps helm valuesFiles and valuesFrom, defaulting valuesKey and optional', async () => {
    const bd = await create('helm-values', {
      format: 'helm',
      installNamespace: 'apps',
      sources: [httpSource],
      config: {
        helm: {
          valuesFiles: ['values-prod.yaml', 'env/extra.yaml'],
          valuesFrom: [
            { kind: 'Secret', name: 'db' },
            { kind: 'ConfigMap', name: 'env.cfg', valuesKey: 'host', targetPath: 'podAnnotations.app\\.kubernetes\\.io/name', optional: true },
          ],
        },
      },
    });
    expect(bd.spec.config?.helm).toEqual({
      valuesFiles: ['values-prod.yaml', 'env/extra.yaml'],
      valuesFrom: [
        { kind: 'Secret', name: 'db', valuesKey: 'values.yaml', optional: false },
        { kind: 'ConfigMap', name: 'env.cfg', valuesKey: 'host', targetPath: 'podAnnotations.app\\.kubernetes\\.io/name', optional: true },
      ],
    });
  });

  it('keeps postBuild on plain and kustomize, defaulting substituteFrom optional', async () => {
    const postBuild = {
      substituteStrategy: 'Always' as const,
      substitute: { cluster_env: 'prod', _x1: '' },
      substituteFrom: [
        { kind: 'ConfigMap' as const, name: 'cluster-vars', optional: true },
        { kind: 'Secret' as const, name: 'cluster-secret-vars' },
      ],
    };
    for (const format of ['plain', 'kustomize'] as const) {
      const bd = await create(`post-build-${format}`, { format, sources: [httpSource], postBuild });
      expect(bd.spec.postBuild).toEqual({ ...postBuild, substituteFrom: [postBuild.substituteFrom[0], { ...postBuild.substituteFrom[1], optional: false }] });
    }
  });

  it('keeps semver ranges on an image repository and a git ref', async () => {
    const sources = [
      { kind: 'image' as const, image: { ref: 'localhost:5000/acme/app', semver: '>=1.9 <2.0' } },
      { kind: 'git' as const, git: { repository: 'https://git.example.com/a.git', ref: { semver: '~1.9' } } },
    ];
    const bd = await create('semver', { format: 'plain', sources });
    expect(bd.spec.sources.map((s) => s.image?.semver ?? s.git?.ref.semver)).toEqual(['>=1.9 <2.0', '~1.9']);
  });

  it('a chart from a Helm HTTP repository: repoURL, chart, a version or range, auth and a CA, the key defaulted', async () => {
    const bd = await create('helm-repo', {
      format: 'helm',
      installNamespace: 'apps',
      sources: [
        {
          kind: 'helm',
          helm: {
            repoURL: 'https://charts.example.com/stable',
            chart: 'ingress-nginx',
            version: '>=4.15 <5',
            auth: { secretRef: { name: 'charts' } },
            caConfigMapRef: { name: 'corp-ca' },
          },
        },
        { kind: 'helm', helm: { repoURL: 'http://127.0.0.1:8879', chart: 'greeter', version: '1.2.0', sha256: HEX64 }, destination: 'pinned' },
        { kind: 'helm', helm: { repoURL: 'https://charts.example.com', chart: 'greeter' }, destination: 'newest' },
      ],
    });
    expect(bd.spec.sources[0]?.helm?.caConfigMapRef).toEqual({ name: 'corp-ca', key: 'ca.crt' });
    expect(bd.spec.sources.map((s) => s.helm?.version)).toEqual(['>=4.15 <5', '1.2.0', undefined]);
  });

  it('defaults an image layerSelector to extract', async () => {
    const bd = await create('layer-selector', {
      format: 'plain',
      sources: [{ kind: 'image', image: { ref: 'quay.io/acme/a:v1', layerSelector: { mediaType: 'application/vnd.cncf.flux.content.v1.tar+gzip' } } }],
    });
    expect(bd.spec.sources[0]!.image!.layerSelector).toEqual({ mediaType: 'application/vnd.cncf.flux.content.v1.tar+gzip', operation: 'extract' });
  });

  it('keeps decryption as written', async () => {
    const bd = await create('decryption', { format: 'kustomize', sources: [httpSource], decryption: { provider: 'sops', secretRef: { name: 'sops-age' } } });
    expect(bd.spec.decryption).toEqual({ provider: 'sops', secretRef: { name: 'sops-age' } });
  });

  it('keeps config.kustomize as written', async () => {
    const kustomize = {
      path: 'overlays/prod',
      namePrefix: 'eu-',
      images: [{ name: 'registry.example/shop', newName: 'mirror.example/shop', newTag: '1.2', digest: `sha256:${'a'.repeat(64)}` }],
      patches: [{ patch: '- op: replace\n  path: /spec/replicas\n  value: 2\n', target: { kind: 'Deployment', labelSelector: 'app=shop' } }],
    };
    const bd = await create('kustomize', { format: 'kustomize', sources: [httpSource], config: { kustomize } });
    expect(bd.spec.config?.kustomize).toEqual(kustomize);
  });

  it('applies the defaults the controller relies on, the same ones withDefaults applies', async () => {
    const bd = await create('defaults', {
      format: 'plain',
      sources: [httpSource],
      healthChecks: [{ name: 'ready', match: { kind: 'Deployment' }, condition: { type: 'Available', status: 'True' } }],
    });
    expect(bd.spec).toEqual({
      format: 'plain',
      paused: false,
      sources: [{ ...httpSource, destination: '' }],
      upgrade: { onFailure: 'Rollback', progressDeadline: '10m', crdSafety: 'Enforce' },
      healthChecks: [
        {
          name: 'ready',
          match: { kind: 'Deployment' },
          condition: { type: 'Available', status: 'True' },
          periodSeconds: 10,
          failureThreshold: 3,
          initialDelaySeconds: 0,
        },
      ],
      revisionHistoryLimit: 3,
      collisionProtection: 'Prevent',
      deleteCRDsOnUninstall: false,
      deletionPolicy: 'Delete',
    });
    // withDefaults on the un-defaulted spec must agree with the server on every member.
    const local = withDefaults({
      format: 'plain',
      sources: [httpSource],
      healthChecks: [{ name: 'ready', match: { kind: 'Deployment' }, condition: { type: 'Available', status: 'True' } }],
    });
    const { pollIntervalMs: _p, progressDeadlineMs: _d, ...localSpec } = local;
    expect(localSpec).toEqual(bd.spec);
  });

  it('fills nested defaults inside a partially set upgrade', async () => {
    const bd = await create('upgrade', { ...plain, upgrade: { onFailure: 'Hold' } });
    expect(bd.spec.upgrade).toEqual({ onFailure: 'Hold', progressDeadline: '10m', crdSafety: 'Enforce' });
  });

  it('keeps status writes to the status subresource and validates them', async () => {
    const bd = await create('status', plain);
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const status = {
      observedGeneration: 1,
      conditions: [
        { type: 'Installed', status: 'True', reason: 'Installed', message: 'revision 1: 2 objects', observedGeneration: 1, lastTransitionTime: now },
        { type: 'Progressing', status: 'False', reason: 'Succeeded', message: '', observedGeneration: 1, lastTransitionTime: now },
      ],
      resolvedSources: [{ kind: 'http', sha256: HEX64, generation: 1, etag: '"abc"', resolvedAt: now }],
      contentDigest: `sha256:${HEX64}`,
      activeRevision: {
        number: 1,
        contentDigest: `sha256:${HEX64}`,
        objects: 2,
        inventory: {
          entries: [
            { id: 'ns_web_apps_Deployment', v: 'apps/v1' },
            { id: 'ns_web__Service', v: 'v1' },
          ],
        },
      },
      revisions: [{ number: 1, contentDigest: `sha256:${HEX64}`, objects: 2, phase: 'Active' }],
      skippedOptional: ['monitoring.coreos.com/v1 ServiceMonitor ns/metrics'],
      lastHandledRequest: '2026-11-28T10:00:00.123456789Z',
    };
    const updated = await client.updateStatus({ ...(bd as unknown as KubeObject), status });
    expect(updated.status).toEqual(status);

    const err = await client
      .updateStatus({
        ...updated,
        status: { ...status, conditions: [{ ...status.conditions[0], status: 'Maybe' }], revisions: [{ number: 0, contentDigest: 'x', phase: 'Gone' }] },
      })
      .catch((e: unknown) => e);
    expect(isInvalid(err)).toBe(true);
    const message = (err as ApiError).apiMessage;
    expect(message).toContain('status.conditions[0].status: Unsupported value: "Maybe"');
    expect(message).toContain('status.revisions[0].phase: Unsupported value: "Gone"');
    expect(message).toContain('status.revisions[0].number');
  });

  // Each case changes the valid plain spec in one place; the fragments are what a user needs
  // to see to fix it: the field path and the explanation.
  const invalid: [string, unknown, string[]][] = [
    ['no sources', { ...plain, sources: [] }, ['spec.sources', 'at least 1 items']],
    [
      'nine sources',
      { ...plain, sources: Array.from({ length: 9 }, (_, i) => ({ ...httpSource, destination: `d${i}` })) },
      ['spec.sources: Too many: 9: must have at most 8 items'],
    ],
    ['unknown format', { ...plain, format: 'jsonnet' }, ['spec.format: Unsupported value: "jsonnet"', '"plain", "helm", "registry-v1", "kustomize"']],
    [
      'two members in one source',
      { ...plain, sources: [{ ...httpSource, git: { repository: 'https://git.example.com/a.git', ref: { branch: 'main' } } }] },
      ['spec.sources[0].git: Forbidden: git is not allowed in a source of kind http'],
    ],
    [
      'kind and member mismatch',
      { ...plain, sources: [{ kind: 'image', http: httpSource.http }] },
      [
        'spec.sources[0].image: Required value: a source of kind image must set image',
        'spec.sources[0].http: Forbidden: http is not allowed in a source of kind image',
      ],
    ],
    [
      'bad image digest',
      { ...plain, sources: [{ kind: 'image', image: { ref: 'quay.io/acme/bundle@sha256:1234' } }] },
      ['spec.sources[0].image.ref', "digest must be '@sha256:' followed by 64 lowercase hex characters"],
    ],
    [
      'image without a registry host',
      { ...plain, sources: [{ kind: 'image', image: { ref: 'acme/bundle:v1' } }] },
      ['spec.sources[0].image.ref', 'must start with a registry host'],
    ],
    [
      'image repository with uppercase letters',
      { ...plain, sources: [{ kind: 'image', image: { ref: 'quay.io/Acme/bundle:v1' } }] },
      ['image ref quay.io/Acme/bundle:v1 is not of the form registry/repository[:tag][@sha256:<64 hex>]'],
    ],
    [
      'git commit not 40 hex',
      { ...plain, sources: [{ kind: 'git', git: { repository: 'https://git.example.com/a.git', ref: { commit: 'abc123' } } }] },
      ['spec.sources[0].git.ref.commit', 'full 40-character lowercase hex SHA-1, got abc123'],
    ],
    [
      'two git refs',
      { ...plain, sources: [{ kind: 'git', git: { repository: 'https://git.example.com/a.git', ref: { tag: 'v1', branch: 'main' } } }] },
      ['spec.sources[0].git.ref', 'exactly one of commit, tag, branch or semver'],
    ],
    [
      'no git ref',
      { ...plain, sources: [{ kind: 'git', git: { repository: 'https://git.example.com/a.git', ref: {} } }] },
      ['spec.sources[0].git.ref', 'exactly one of commit, tag, branch or semver'],
    ],
    [
      'git branch that looks like an option',
      { ...plain, sources: [{ kind: 'git', git: { repository: 'https://git.example.com/a.git', ref: { branch: '--upload-pack=x' } } }] },
      ['spec.sources[0].git.ref.branch', "not starting with '-'"],
    ],
    [
      'a git:// repository',
      { ...plain, sources: [{ kind: 'git', git: { repository: 'git://github.com/acme/deploy.git', ref: { branch: 'main' } } }] },
      ['spec.sources[0].git.repository', 'an ssh:// URL or an scp-like address'],
    ],
    [
      'a password in an ssh repository URL',
      { ...plain, sources: [{ kind: 'git', git: { repository: 'ssh://git:hunter2@github.com/acme/deploy.git', ref: { branch: 'main' } } }] },
      ['spec.sources[0].git.repository: Forbidden: must not contain credentials'],
    ],
    [
      'a local path as a git repository',
      { ...plain, sources: [{ kind: 'git', git: { repository: '/srv/git/deploy.git', ref: { branch: 'main' } } }] },
      ['spec.sources[0].git.repository', 'an ssh:// URL or an scp-like address'],
    ],
    [
      'credentials in a URL',
      { ...plain, sources: [{ kind: 'http', http: { url: 'https://user:secret@downloads.example.com/a.tgz' } }] },
      ['spec.sources[0].http.url: Forbidden: must not contain credentials'],
    ],
    [
      'ftp url',
      { ...plain, sources: [{ kind: 'http', http: { url: 'ftp://downloads.example.com/a.tgz' } }] },
      ['spec.sources[0].http.url', 'http:// or https://'],
    ],
    [
      'bad sha256',
      { ...plain, sources: [{ kind: 'http', http: { url: httpSource.http.url, sha256: HEX64.toUpperCase() } }] },
      ['spec.sources[0].http.sha256', 'sha256 must be 64 lowercase hex characters'],
    ],
    [
      'a helm source without a chart',
      { ...plain, sources: [{ kind: 'helm', helm: { repoURL: 'https://charts.example.com' } }] },
      ['spec.sources[0].helm.chart: Required value'],
    ],
    [
      'helm on a source of another kind, and a helm source without helm',
      {
        ...plain,
        sources: [
          { kind: 'http', http: httpSource.http, helm: { repoURL: 'https://charts.example.com', chart: 'a' } },
          { kind: 'helm', destination: 'c' },
        ],
      },
      [
        'spec.sources[0].helm: Forbidden: helm is not allowed in a source of kind http',
        'spec.sources[1].helm: Required value: a source of kind helm must set helm',
      ],
    ],
    [
      'an oci:// helm repository, credentials in repoURL, a bad chart name, sha256 and version',
      {
        ...plain,
        sources: [
          { kind: 'helm', helm: { repoURL: 'oci://ghcr.io/acme/charts', chart: 'a' } },
          { kind: 'helm', helm: { repoURL: 'https://u:p@charts.example.com', chart: 'a' }, destination: 'b' },
          { kind: 'helm', helm: { repoURL: 'https://charts.example.com', chart: '../a', sha256: 'abc', version: '' }, destination: 'c' },
          { kind: 'helm', helm: { repoURL: 'http://charts.example.com', chart: 'a', caSecretRef: { name: 'ca' } }, destination: 'd' },
        ],
      },
      [
        'spec.sources[0].helm.repoURL: Invalid value: "string": an oci:// chart repository is read by a source of kind image',
        'spec.sources[1].helm.repoURL: Forbidden: must not contain credentials',
        'spec.sources[2].helm.chart: Invalid value: "string": chart must be a chart name (letters, digits, . _ -, not starting with . or -), got ../a',
        'spec.sources[2].helm.sha256: Invalid value: "string": sha256 must be 64 lowercase hex characters, got abc',
        'spec.sources[2].helm.version: Invalid value: ""',
        'spec.sources[3].helm: Invalid value: "object": caSecretRef and caConfigMapRef need an https:// repoURL',
      ],
    ],
    [
      'destination with ..',
      { ...plain, sources: [{ ...httpSource, destination: 'a/../../etc' }] },
      ['spec.sources[0].destination', "must not contain a '..' path segment"],
    ],
    ['absolute destination', { ...plain, sources: [{ ...httpSource, destination: '/etc' }] }, ['spec.sources[0].destination', "must not start with '/'"]],
    [
      'destination with a backslash',
      { ...plain, sources: [{ ...httpSource, destination: 'a\\b' }] },
      ['spec.sources[0].destination', 'backslashes are not allowed'],
    ],
    [
      'git directory escaping the repository',
      { ...plain, sources: [{ kind: 'git', git: { repository: 'https://git.example.com/a.git', ref: { branch: 'main' }, directory: '..' } }] },
      ['spec.sources[0].git.directory', "'..' path segment"],
    ],
    [
      'config.helm with plain',
      { ...plain, config: { helm: { releaseName: 'x' } } },
      ['spec.config.helm: Forbidden: config.helm is only allowed with format: helm (format is plain)'],
    ],
    [
      'an image layerSelector without a media type, with a bad one or an unknown operation',
      {
        ...plain,
        sources: [
          { kind: 'image', image: { ref: 'quay.io/acme/a:v1', layerSelector: { mediaType: 'not a type' } } },
          { kind: 'image', image: { ref: 'quay.io/acme/a:v1', layerSelector: { mediaType: 'application/x', operation: 'move' } } },
        ],
      },
      ['spec.sources[1].image.layerSelector.operation: Unsupported value: "move"'],
    ],
    [
      'an image layerSelector with a bad media type',
      { ...plain, sources: [{ kind: 'image', image: { ref: 'quay.io/acme/a:v1', layerSelector: { mediaType: 'not a type' } } }] },
      ['spec.sources[0].image.layerSelector.mediaType', 'must be a media type'],
    ],
    [
      'image semver with a tagged ref',
      {
        ...plain,
        sources: [
          { kind: 'image', image: { ref: 'quay.io/acme/a:v1', semver: '>=1.9 <2.0' } },
          { kind: 'image', image: { ref: `quay.io/acme/a@sha256:${'a'.repeat(64)}`, semver: '~1' } },
        ],
      },
      ['spec.sources[0].image.ref', 'with semver, ref names the repository only', 'spec.sources[1].image.ref'],
    ],
    [
      'git semver beside a branch',
      { ...plain, sources: [{ kind: 'git', git: { repository: 'https://git.example.com/a.git', ref: { branch: 'main', semver: '~1.9' } } }] },
      ['git ref must set exactly one of commit, tag, branch or semver'],
    ],
    [
      'config.kustomize with helm',
      { ...plain, format: 'helm', installNamespace: 'ns', config: { kustomize: { path: 'a' } } },
      ['spec.config.kustomize: Forbidden: config.kustomize is only allowed with format: kustomize (format is helm)'],
    ],
    [
      'postBuild with helm',
      { ...plain, format: 'helm', installNamespace: 'ns', postBuild: { substitute: { a: 'b' } } },
      ['spec.postBuild: Forbidden: postBuild is only allowed with format: plain or kustomize (format is helm)'],
    ],
    [
      'a postBuild strategy and a substituteFrom kind that do not exist',
      { ...plain, postBuild: { substituteStrategy: 'Sometimes', substituteFrom: [{ kind: 'Pod', name: 'p' }] } },
      ['spec.postBuild.substituteStrategy: Unsupported value: "Sometimes"', 'spec.postBuild.substituteFrom[0].kind: Unsupported value: "Pod"'],
    ],
    [
      'a postBuild variable name Flux refuses and a bad substituteFrom name',
      { ...plain, postBuild: { substitute: { 'cluster.name': 'x' }, substituteFrom: [{ kind: 'ConfigMap', name: 'Bad_Name' }] } },
      [
        'spec.postBuild.substitute: Invalid value: "object": substitute: variable names must match',
        'spec.postBuild.substituteFrom[0].name: Invalid value: "string": name must be a DNS-1123 subdomain',
      ],
    ],
    [
      'a kustomize patch without its text',
      { ...plain, format: 'kustomize', config: { kustomize: { patches: [{ target: { kind: 'Deployment' } }] } } },
      ['spec.config.kustomize.patches[0].patch: Required value'],
    ],
    [
      'kustomize path, namePrefix and image digest out of bounds',
      { ...plain, format: 'kustomize', config: { kustomize: { path: '../x', namePrefix: 'Bad_', images: [{ name: 'a', digest: 'latest' }] } } },
      [
        'spec.config.kustomize.path',
        "'..' path segment",
        'spec.config.kustomize.namePrefix',
        'spec.config.kustomize.images[0].digest',
        'sha256:<64 lowercase hex>',
      ],
    ],
    [
      'helm valuesFiles out of the chart',
      { ...plain, format: 'helm', installNamespace: 'ns', config: { helm: { valuesFiles: ['../secrets.yaml', '/etc/passwd'] } } },
      ['spec.config.helm.valuesFiles[0]', "'..' path segment", 'spec.config.helm.valuesFiles[1]', "must not start with '/'"],
    ],
    [
      'helm valuesFrom of another kind or without a name',
      { ...plain, format: 'helm', installNamespace: 'ns', config: { helm: { valuesFrom: [{ kind: 'Pod', name: 'x' }, { kind: 'Secret' }] } } },
      ['spec.config.helm.valuesFrom[0].kind: Unsupported value: "Pod"', 'spec.config.helm.valuesFrom[1].name: Required value'],
    ],
    [
      'helm valuesFrom with a bad name, key or targetPath',
      {
        ...plain,
        format: 'helm',
        installNamespace: 'ns',
        config: {
          helm: {
            valuesFrom: [
              { kind: 'Secret', name: 'Bad_Name' },
              { kind: 'Secret', name: 'ok', valuesKey: 'a/b' },
              { kind: 'Secret', name: 'ok', targetPath: 'list[0]' },
            ],
          },
        },
      },
      [
        'spec.config.helm.valuesFrom[0].name',
        'DNS-1123 subdomain',
        'spec.config.helm.valuesFrom[1].valuesKey',
        'spec.config.helm.valuesFrom[2].targetPath',
        'list indexes are not supported',
      ],
    ],
    [
      'config.registryV1 with helm',
      { ...plain, format: 'helm', installNamespace: 'ns', config: { registryV1: { watchNamespace: 'ns' } } },
      ['spec.config.registryV1: Forbidden: config.registryV1 is only allowed with format: registry-v1 (format is helm)'],
    ],
    [
      'watchNamespace and watchNamespaces',
      { ...plain, format: 'registry-v1', installNamespace: 'ns', config: { registryV1: { watchNamespace: 'a', watchNamespaces: ['b', 'c'] } } },
      ['spec.config.registryV1.watchNamespaces: Forbidden: set watchNamespace or watchNamespaces, not both'],
    ],
    [
      'watchNamespaces with a duplicate',
      { ...plain, format: 'registry-v1', installNamespace: 'ns', config: { registryV1: { watchNamespaces: ['a', 'b', 'a'] } } },
      ['spec.config.registryV1.watchNamespaces[2]: Duplicate value: "a"'],
    ],
    [
      'watchNamespaces entry not a DNS label',
      { ...plain, format: 'registry-v1', installNamespace: 'ns', config: { registryV1: { watchNamespaces: ['a', 'Team_B'] } } },
      ['spec.config.registryV1.watchNamespaces[1]', 'watchNamespaces entries must be DNS-1123 labels, got "Team_B"'],
    ],
    [
      'empty watchNamespaces',
      { ...plain, format: 'registry-v1', installNamespace: 'ns', config: { registryV1: { watchNamespaces: [] } } },
      ['spec.config.registryV1.watchNamespaces', 'should have at least 1 items'],
    ],
    [
      'deploymentConfig toleration with an unknown operator',
      {
        ...plain,
        format: 'registry-v1',
        installNamespace: 'ns',
        config: { registryV1: { deploymentConfig: { tolerations: [{ key: 'k', operator: 'Is' }] } } },
      },
      ['spec.config.registryV1.deploymentConfig.tolerations[0].operator: Unsupported value: "Is"'],
    ],
    [
      'deploymentConfig volume without a name, mount without a path',
      {
        ...plain,
        format: 'registry-v1',
        installNamespace: 'ns',
        config: { registryV1: { deploymentConfig: { volumes: [{ emptyDir: {} }], volumeMounts: [{ name: 'v' }] } } },
      },
      [
        'spec.config.registryV1.deploymentConfig.volumes[0].name: Required value',
        'spec.config.registryV1.deploymentConfig.volumeMounts[0].mountPath: Required value',
      ],
    ],
    [
      'deploymentConfig resources that are not quantities',
      { ...plain, format: 'registry-v1', installNamespace: 'ns', config: { registryV1: { deploymentConfig: { resources: { limits: { memory: 'lots' } } } } } },
      ['spec.config.registryV1.deploymentConfig.resources.limits.memory'],
    ],
    [
      'deploymentConfig env without a name',
      { ...plain, format: 'registry-v1', installNamespace: 'ns', config: { registryV1: { deploymentConfig: { env: [{ value: 'x' }] } } } },
      ['spec.config.registryV1.deploymentConfig.env[0].name: Required value'],
    ],
    [
      'helm without installNamespace',
      { ...plain, format: 'helm' },
      ['spec.installNamespace: Required value: installNamespace is required when format is helm'],
    ],
    ['registry-v1 without installNamespace', { ...plain, format: 'registry-v1' }, ['installNamespace is required when format is registry-v1']],
    [
      'decryption with registry-v1',
      { ...plain, format: 'registry-v1', installNamespace: 'ns', decryption: { provider: 'sops', secretRef: { name: 'sops-age' } } },
      ['spec.decryption: Forbidden: decryption is not supported with format registry-v1'],
    ],
    [
      'decryption by another provider',
      { ...plain, decryption: { provider: 'vault', secretRef: { name: 'k' } } },
      ['spec.decryption.provider: Unsupported value: "vault"'],
    ],
    ['decryption without a secretRef', { ...plain, decryption: { provider: 'sops' } }, ['spec.decryption.secretRef: Required value']],
    ['installNamespace not a DNS label', { ...plain, installNamespace: 'Team_A' }, ['spec.installNamespace', 'must be a DNS-1123 label']],
    [
      'serviceAccount without installNamespace',
      { ...plain, serviceAccount: { name: 'installer' } },
      ['spec.installNamespace: Required value: serviceAccount requires installNamespace'],
    ],
    [
      'pollInterval in words',
      { ...plain, pollInterval: '10 minutes' },
      ['spec.pollInterval', 'must be a duration such as 30s, 10m or 1h30m', 'got 10 minutes'],
    ],
    ['pollInterval in days', { ...plain, pollInterval: '1d' }, ['spec.pollInterval', 'units ms, s, m, h']],
    ['zero pollInterval', { ...plain, pollInterval: '0s' }, ['spec.pollInterval', 'must be at least 10s']],
    ['pollInterval under the minimum', { ...plain, pollInterval: '9999ms' }, ['spec.pollInterval', 'must be at least 10s']],
    ['zero progressDeadline', { ...plain, upgrade: { progressDeadline: '0s' } }, ['spec.upgrade.progressDeadline', 'must be greater than zero']],
    ['bad progressDeadline', { ...plain, upgrade: { progressDeadline: 'soon' } }, ['spec.upgrade.progressDeadline', 'must be a duration']],
    ['unknown onFailure', { ...plain, upgrade: { onFailure: 'Retry' } }, ['spec.upgrade.onFailure: Unsupported value: "Retry"', '"Rollback", "Hold"']],
    ['unknown crdSafety', { ...plain, upgrade: { crdSafety: 'Warn' } }, ['spec.upgrade.crdSafety: Unsupported value: "Warn"', '"Enforce", "None"']],
    [
      'unknown collisionProtection',
      { ...plain, collisionProtection: 'Always' },
      ['spec.collisionProtection: Unsupported value: "Always"', '"Prevent", "IfNotOwned", "None"'],
    ],
    ['unknown deletionPolicy', { ...plain, deletionPolicy: 'Keep' }, ['spec.deletionPolicy: Unsupported value: "Keep"', '"Delete", "Orphan"']],
    ['revisionHistoryLimit above 100', { ...plain, revisionHistoryLimit: 101 }, ['spec.revisionHistoryLimit', 'less than or equal to 100']],
    ['negative revisionHistoryLimit', { ...plain, revisionHistoryLimit: -1 }, ['spec.revisionHistoryLimit', 'greater than or equal to 0']],
    [
      'secretRef name not a DNS subdomain',
      { ...plain, sources: [{ kind: 'http', http: { url: httpSource.http.url, auth: { secretRef: { name: 'My_Secret' } } } }] },
      ['spec.sources[0].http.auth.secretRef.name', 'DNS-1123 subdomain'],
    ],
    [
      'health check with two probes',
      { ...plain, healthChecks: [{ name: 'x', match: { kind: 'Job' }, cel: 'true', condition: { type: 'Complete', status: 'True' } }] },
      ['spec.healthChecks[0]', 'exactly one of condition, jsonPath or cel'],
    ],
    [
      'health check matching everything',
      { ...plain, healthChecks: [{ name: 'x', match: {}, cel: 'true' }] },
      ['spec.healthChecks[0].match', 'at least one of kind, name or selector'],
    ],
    [
      'health check period of zero',
      { ...plain, healthChecks: [{ name: 'x', match: { kind: 'Job' }, cel: 'true', periodSeconds: 0 }] },
      ['spec.healthChecks[0].periodSeconds', 'greater than or equal to 1'],
    ],
    [
      'duplicate health check names',
      {
        ...plain,
        healthChecks: [
          { name: 'x', match: { kind: 'Job' }, cel: 'true' },
          { name: 'x', match: { kind: 'Pod' }, cel: 'true' },
        ],
      },
      ['spec.healthChecks[1]: Duplicate value'],
    ],
    ['drift ignore rule without target', { ...plain, driftIgnore: [{ jsonPointers: ['/spec/replicas'] }] }, ['spec.driftIgnore[0].target: Required value']],
    [
      'drift ignore rule without pointers',
      { ...plain, driftIgnore: [{ target: { kind: 'Deployment' }, jsonPointers: [] }] },
      ['spec.driftIgnore[0].jsonPointers', 'at least 1 item'],
    ],
    [
      'drift ignore pointer without leading slash',
      { ...plain, driftIgnore: [{ target: { kind: 'Deployment' }, jsonPointers: ['spec/replicas'] }] },
      ['spec.driftIgnore[0].jsonPointers[0]', 'a JSON pointer starts with /'],
    ],
    [
      'drift ignore pointer with a bad escape',
      { ...plain, driftIgnore: [{ target: { kind: 'Deployment' }, jsonPointers: ['/metadata/annotations/a~2b'] }] },
      ['spec.driftIgnore[0].jsonPointers[0]', 'escapes ~ as ~0'],
    ],
    [
      'drift ignore of the object name',
      { ...plain, driftIgnore: [{ target: { kind: 'Deployment' }, jsonPointers: ['/metadata/name'] }] },
      ['spec.driftIgnore[0].jsonPointers[0]', 'cannot be ignored'],
    ],
    [
      'drift ignore selector In without values',
      { ...plain, driftIgnore: [{ target: { labelSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] } }, jsonPointers: ['/spec/replicas'] }] },
      ['spec.driftIgnore[0].target.labelSelector.matchExpressions[0]', 'In and NotIn need values'],
    ],
    ['missing format', { sources: plain.sources }, ['spec.format: Required value']],
    [
      'image.verify with both a Secret and a ConfigMap of keys',
      {
        ...plain,
        sources: [
          { kind: 'image', image: { ref: 'quay.io/acme/bundle:v1', verify: { publicKeys: { secretRef: { name: 'a' }, configMapRef: { name: 'b' } } } } },
        ],
      },
      ['spec.sources[0].image.verify.publicKeys', 'exactly one of secretRef or configMapRef'],
    ],
    [
      'image.verify without keys',
      { ...plain, sources: [{ kind: 'image', image: { ref: 'quay.io/acme/bundle:v1', verify: { publicKeys: {} } } }] },
      ['spec.sources[0].image.verify.publicKeys', 'exactly one of secretRef or configMapRef'],
    ],
    [
      'image.verify with provider notation (not supported)',
      {
        ...plain,
        sources: [{ kind: 'image', image: { ref: 'quay.io/acme/bundle:v1', verify: { provider: 'notation', publicKeys: { secretRef: { name: 'a' } } } } }],
      },
      ['spec.sources[0].image.verify.provider: Unsupported value: "notation"', '"cosign"'],
    ],
    [
      'image.verify with an unknown policy',
      {
        ...plain,
        sources: [{ kind: 'image', image: { ref: 'quay.io/acme/bundle:v1', verify: { policy: 'Audit', publicKeys: { secretRef: { name: 'a' } } } } }],
      },
      ['spec.sources[0].image.verify.policy: Unsupported value: "Audit"', '"Enforce", "Warn"'],
    ],
    [
      'both CA references',
      { ...plain, sources: [{ kind: 'http', http: { url: 'https://files.example.com/a.tgz', caSecretRef: { name: 'a' }, caConfigMapRef: { name: 'b' } } }] },
      ['spec.sources[0].http', 'set at most one of caSecretRef and caConfigMapRef'],
    ],
    [
      'a CA reference on a plain-http repository',
      {
        ...plain,
        sources: [{ kind: 'git', git: { repository: 'http://git.example.com/a.git', ref: { branch: 'main' }, caConfigMapRef: { name: 'corp-ca' } } }],
      },
      ['spec.sources[0].git', 'caSecretRef and caConfigMapRef need an https:// repository'],
    ],
    [
      'a CA key with a slash',
      {
        ...plain,
        sources: [
          { kind: 'git', git: { repository: 'https://git.example.com/a.git', ref: { branch: 'main' }, caSecretRef: { name: 'corp-ca', key: '../ca.crt' } } },
        ],
      },
      ['spec.sources[0].git.caSecretRef.key', 'must be a Secret or ConfigMap key'],
    ],
  ];

  it.each(invalid)('refuses %s', async (_what, spec, fragments) => {
    const message = await refusal(spec);
    for (const fragment of fragments) expect(message).toContain(fragment);
  });

  it('accepts dependsOn with and without readyExpr, and refuses a BundleDeployment depending on itself, a bad name and a name twice', async () => {
    const bd = await create('deps', {
      ...plain,
      dependsOn: [{ name: 'crds' }, { name: 'operator.v2', readyExpr: "dep.status.conditions.exists(c, c.type == 'Healthy' && c.status == 'True')" }],
    });
    expect(bd.spec.dependsOn).toEqual([
      { name: 'crds' },
      { name: 'operator.v2', readyExpr: "dep.status.conditions.exists(c, c.type == 'Healthy' && c.status == 'True')" },
    ]);
    const self = nextName('self');
    expect(await refusal({ ...plain, dependsOn: [{ name: self }] }, self)).toContain('spec.dependsOn must not name the BundleDeployment itself');
    expect(await refusal({ ...plain, dependsOn: [{ name: 'Not_A_Name' }] })).toContain('dependsOn name must be a BundleDeployment name');
    expect(await refusal({ ...plain, dependsOn: [{ name: 'a' }, { name: 'a' }] })).toContain('spec.dependsOn[1]: Duplicate value');
    expect(await refusal({ ...plain, dependsOn: [{ name: 'a', readyExpr: '' }] })).toContain('spec.dependsOn[0].readyExpr');
  });

  it('refuses names longer than 63 characters, which could not be label values', async () => {
    const message = await refusal(plain, `crdv-${run}-${'n'.repeat(60)}`);
    expect(message).toContain('metadata.name must be at most 63 characters');
  });
});
