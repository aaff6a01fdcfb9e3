import { describe, expect, it } from 'vitest';
import { CRD_NAME, bundleDeploymentCRD, type JSONSchemaProps } from '../../../api/v1alpha2/crd.ts';
import type { BundleDeploymentSpec, BundleDeploymentStatus } from '../../../api/v1alpha2/types.ts';

const crd = bundleDeploymentCRD();
const root = crd.spec.versions[0]!.schema.openAPIV3Schema;

/** Every schema node with its path, e.g. ".spec.sources[].image.ref". */
function* nodes(s: JSONSchemaProps, path = ''): Generator<[string, JSONSchemaProps]> {
  yield [path, s];
  for (const [k, v] of Object.entries(s.properties ?? {})) yield* nodes(v, `${path}.${k}`);
  if (s.items) yield* nodes(s.items, `${path}[]`);
  if (typeof s.additionalProperties === 'object' && s.additionalProperties !== null) {
    yield* nodes(s.additionalProperties as JSONSchemaProps, `${path}{}`);
  }
}

/** Paths of every leaf and object member in a value, in the same notation as nodes(). */
function valuePaths(v: unknown, path = ''): string[] {
  if (Array.isArray(v)) return v.flatMap((x) => valuePaths(x, `${path}[]`));
  if (v !== null && typeof v === 'object') {
    return Object.entries(v).flatMap(([k, x]) => [`${path}.${k}`, ...valuePaths(x, `${path}.${k}`)]);
  }
  return [];
}

describe('bundleDeploymentCRD', () => {
  it('is the cluster-scoped core.rukpak.io CRD with short name bd and a status subresource', () => {
    expect(crd.metadata.name).toBe(CRD_NAME);
    expect(crd.spec.scope).toBe('Cluster');
    expect(crd.spec.names.shortNames).toEqual(['bd']);
    expect(crd.spec.names.categories).toContain('rukpak');
    expect(crd.spec.versions[0]!.subresources).toEqual({ status: {} });
  });

  it('returns an independent copy on every call', () => {
    const a = bundleDeploymentCRD();
    a.metadata.labels = { changed: 'yes' };
    a.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!.format!.enum = [];
    const b = bundleDeploymentCRD();
    expect(b.metadata.labels).toBeUndefined();
    expect(b.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!.format!.enum).toEqual(['plain', 'helm', 'registry-v1', 'kustomize']);
  });

  it('expands YAML anchors into independent copies', () => {
    const sources = root.properties!.spec!.properties!.sources!.items!.properties!;
    const gitAuth = sources.git!.properties!.auth!;
    const httpAuth = sources.http!.properties!.auth!;
    expect(gitAuth).toEqual(httpAuth);
    expect(gitAuth).not.toBe(httpAuth);
  });

  // The API server estimates every rule's worst-case cost from these bounds and refuses the CRD
  // when they are missing; keeping them everywhere also bounds what a user can store.
  it('bounds every string and list that CEL rules can read', () => {
    const unbounded: string[] = [];
    for (const [path, s] of nodes(root)) {
      if (s['x-kubernetes-preserve-unknown-fields']) continue;
      if (s.type === 'string' && s.maxLength === undefined && !s.enum && s.format !== 'date-time' && path !== '.apiVersion' && path !== '.kind') {
        unbounded.push(path);
      }
      if (s.type === 'array' && s.maxItems === undefined) unbounded.push(path);
    }
    expect(unbounded).toEqual([]);
  });

  it('gives every CEL rule a message', () => {
    for (const [path, s] of nodes(root)) {
      for (const r of s['x-kubernetes-validations'] ?? []) {
        expect(r.message ?? r.messageExpression, `${path}: ${r.rule}`).toBeTruthy();
      }
    }
  });

  // types.ts and the schema are written by hand; a value setting every field of the types must
  // only use paths the schema declares (the API server would prune anything else silently).
  it('declares every field of the TypeScript spec and status types', () => {
    const spec = {
      paused: false,
      dependsOn: [{ name: 'crds', readyExpr: 'true' }],
      installNamespace: 'ns',
      format: 'helm',
      sources: [
        { kind: 'image', image: { ref: 'r', auth: { secretRef: { name: 's' } } }, destination: '' },
        { kind: 'git', git: { repository: 'u', ref: { commit: 'c', tag: 't', branch: 'b' }, directory: 'd', auth: { secretRef: { name: 's' } } } },
        { kind: 'http', http: { url: 'u', sha256: 'h', auth: { secretRef: { name: 's' } } } },
        {
          kind: 'helm',
          helm: {
            repoURL: 'u',
            chart: 'c',
            version: 'v',
            sha256: 'h',
            auth: { secretRef: { name: 's' } },
            caSecretRef: { name: 'ca', key: 'k' },
            caConfigMapRef: { name: 'ca' },
          },
        },
      ],
      config: {
        helm: { releaseName: 'r', values: {} },
        registryV1: {
          watchNamespace: '',
          watchNamespaces: ['a'],
          deploymentConfig: {
            nodeSelector: {},
            tolerations: [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule', tolerationSeconds: 1 }],
            resources: { limits: {}, requests: {}, claims: [{ name: 'c', request: 'r' }] },
            env: [{ name: 'n', value: 'v', valueFrom: {} }],
            envFrom: [{ prefix: 'p', configMapRef: { name: 'c', optional: true }, secretRef: { name: 's', optional: true } }],
            volumes: [{ name: 'v' }],
            volumeMounts: [
              { name: 'v', mountPath: '/m', readOnly: true, recursiveReadOnly: 'Disabled', subPath: 's', subPathExpr: 'e', mountPropagation: 'None' },
            ],
            affinity: { nodeAffinity: {}, podAffinity: {}, podAntiAffinity: {} },
            annotations: {},
          },
        },
      },
      postBuild: { substituteStrategy: 'Always', substitute: {}, substituteFrom: [{ kind: 'ConfigMap', name: 'vars', optional: true }] },
      pollInterval: '1m',
      upgrade: { onFailure: 'Rollback', progressDeadline: '1m', crdSafety: 'Enforce' },
      healthChecks: [
        {
          name: 'n',
          match: { group: 'g', kind: 'k', name: 'n', namespace: 'ns', selector: { a: 'b' } },
          condition: { type: 'Ready', status: 'True' },
          jsonPath: { path: 'p', value: 'v' },
          cel: 'true',
          periodSeconds: 1,
          failureThreshold: 1,
          initialDelaySeconds: 0,
        },
      ],
      driftIgnore: [
        {
          target: {
            group: 'apps',
            version: 'v1',
            kind: 'Deployment',
            name: 'n',
            namespace: 'ns',
            labelSelector: { matchLabels: { a: 'b' }, matchExpressions: [{ key: 'k', operator: 'In', values: ['v'] }] },
          },
          jsonPointers: ['/spec/replicas'],
        },
      ],
      revisionHistoryLimit: 3,
      collisionProtection: 'Prevent',
      serviceAccount: { name: 'sa' },
      decryption: { provider: 'sops', secretRef: { name: 'sops-age' } },
      kubeConfig: { secretRef: { name: 'c1-kubeconfig', namespace: 'clusters', key: 'value' } },
      deleteCRDsOnUninstall: false,
      deletionPolicy: 'Orphan',
    } satisfies Required<BundleDeploymentSpec>;
    const status = {
      observedGeneration: 1,
      conditions: [{ type: 'Installed', status: 'True', reason: 'Installed', message: '', observedGeneration: 1, lastTransitionTime: 't' }],
      resolvedSources: [
        { kind: 'image', digest: 'd', ref: 'r', commit: 'c', sha256: 's', generation: 1, etag: 'e', lastModified: 'l', resolvedAt: 't' },
        { kind: 'helm', version: 'v', chartURL: 'u', sha256: 's' },
      ],
      contentDigest: 'd',
      activeRevision: {
        number: 1,
        contentDigest: 'd',
        objects: 1,
        appliedDigest: 'a',
        appliedAt: 't',
        healthyAt: 't',
        inventory: {
          entries: [{ id: 'ns_n_apps_Deployment', v: 'apps/v1' }],
          truncated: true,
          total: 2,
          revisionSecrets: { namespace: 'ns', labelSelector: 's' },
        },
      },
      attemptedRevision: { number: 2, contentDigest: 'd', objects: 1, reason: 'ApplyFailed' },
      transition: {
        revision: 2,
        contentDigest: 'd',
        action: 'upgrade',
        startedAt: 't',
        phase: 'publish',
        waiting: 'w',
        hooks: [
          { event: 'pre-upgrade', kind: 'Job', name: 'j', namespace: 'ns', result: 'Succeeded', message: 'm', startedAt: 't', completedAt: 't', deleted: true },
        ],
      },
      revisions: [
        {
          number: 1,
          contentDigest: 'd',
          objects: 1,
          phase: 'Active',
          hooks: [
            { event: 'pre-install', kind: 'Job', name: 'j', namespace: 'ns', result: 'Failed', message: 'm', startedAt: 't', completedAt: 't', deleted: false },
          ],
        },
      ],
      skippedOptional: ['x'],
      keptObjects: [{ id: 'ns_n__PersistentVolumeClaim', v: 'v1', policy: 'helm.sh/resource-policy: keep', revision: 1 }],
      lastHandledRequest: 'r',
      target: { cluster: 'api.c1:6443', kubeConfigSecret: 'clusters/c1-kubeconfig' },
    } satisfies Required<BundleDeploymentStatus>;

    const declared = new Set([...nodes(root)].map(([p]) => p));
    const missing = [...valuePaths(spec, '.spec'), ...valuePaths(status, '.status')].filter(
      (p) =>
        !declared.has(p) &&
        !p.startsWith('.spec.config.helm.values.') &&
        !p.startsWith('.spec.healthChecks[].match.selector.') &&
        !p.startsWith('.spec.driftIgnore[].target.labelSelector.matchLabels.'),
    );
    expect(missing).toEqual([]);
  });
});
