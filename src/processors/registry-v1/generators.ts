/**
 * The registry+v1 → plain objects conversion, one generator per kind of output, each a pure
 * function of the bundle and the render options, mirroring OLM v1's
 * rukpak/render/registryv1/generators/generators.go (function names in the comments). Output
 * objects are fresh copies; the bundle is never modified.
 */
import type { RegistryV1DeploymentConfig } from '../../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../kube/types.ts';
import { isJsonObject } from '../yaml/values.ts';
import type { JsonObject, JsonValue } from '../yaml/values.ts';
import { cloneObject } from './bundle.ts';
import type { RegistryV1Bundle } from './bundle.ts';
import { certProvisionerFor } from './certificates.ts';
import { applyDeploymentConfig } from './deployment-config.ts';
import type { CertificateProvider, CertSecretInfo } from './certificates.ts';
import type { PolicyRule, StrategyPermissions, WebhookDefinition } from './csv.ts';
import { uniqueNameForPermissions } from './names.ts';
import { SUPPORTED_KINDS } from './validate.ts';

export interface RenderOptions {
  installNamespace: string;
  /** [""] means all namespaces */
  targetNamespaces: string[];
  /** undefined: leave certificates to the bundle (OLM v1 without a provider) */
  certificateProvider?: CertificateProvider;
  /** OLM v1's deploymentConfig, applied to every Deployment last */
  deploymentConfig?: RegistryV1DeploymentConfig;
}

export type Generator = (bundle: RegistryV1Bundle, opts: RenderOptions) => KubeObject[];

const RBAC_GROUP = 'rbac.authorization.k8s.io';
const RBAC_VERSION = `${RBAC_GROUP}/v1`;
const DEFAULT_WEBHOOK_PORT = 443;

function isAllNamespaces(opts: RenderOptions): boolean {
  return opts.targetNamespaces.length === 1 && opts.targetNamespaces[0] === '';
}

function saNameOrDefault(name: string): string {
  return name || 'default';
}

/** A PolicyRule as Go's rbacv1 type serializes it: verbs always, the rest only when non-empty. */
function ruleObject(rule: PolicyRule): JsonObject {
  const out: JsonObject = {};
  for (const key of ['apiGroups', 'nonResourceURLs', 'resourceNames', 'resources'] as const) {
    const list = rule[key];
    if (list !== undefined && list.length > 0) out[key] = [...list];
  }
  out['verbs'] = rule.verbs === null ? null : [...rule.verbs];
  return out;
}

function rulesValue(rules: PolicyRule[] | null): JsonValue {
  return rules === null ? null : rules.map(ruleObject);
}

/** BundleCSVServiceAccountGenerator: one ServiceAccount per distinct name, except "default". */
export const serviceAccounts: Generator = (b, opts) => {
  const names = new Set([...b.csv.permissions, ...b.csv.clusterPermissions].map((p) => saNameOrDefault(p.serviceAccountName)));
  names.delete('default');
  // OLM iterates a Go set (random order); sorted here so renders are reproducible
  return [...names].sort().map((name) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: opts.installNamespace } }));
};

/**
 * BundleCSVPermissionsGenerator: a Role and RoleBinding per permission in every target
 * namespace. In AllNamespaces mode nothing: the permissions become cluster-wide instead.
 */
export const permissions: Generator = (b, opts) => {
  if (isAllNamespaces(opts)) return [];
  const out: KubeObject[] = [];
  for (const ns of opts.targetNamespaces) {
    for (const p of b.csv.permissions) {
      const sa = saNameOrDefault(p.serviceAccountName);
      const name = uniqueNameForPermissions(`${b.csv.name}-${sa}`, p);
      out.push(
        { apiVersion: RBAC_VERSION, kind: 'Role', metadata: { name, namespace: ns }, rules: rulesValue(p.rules) },
        {
          apiVersion: RBAC_VERSION,
          kind: 'RoleBinding',
          metadata: { name, namespace: ns },
          roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name },
          subjects: [{ kind: 'ServiceAccount', name: sa, namespace: opts.installNamespace }],
        },
      );
    }
  }
  return out;
};

/** OLM v0's extra rule for operators promoted to cluster scope (operatorgroup.go). */
const NAMESPACES_READ_RULE: PolicyRule = { verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['namespaces'] };

/**
 * BundleCSVClusterPermissionsGenerator: a ClusterRole and ClusterRoleBinding per
 * clusterPermission; in AllNamespaces mode also per permission, with read access to namespaces
 * added (the name hash covers the added rule, as in OLM).
 */
export const clusterPermissions: Generator = (b, opts) => {
  const all: StrategyPermissions[] = [...b.csv.clusterPermissions];
  if (isAllNamespaces(opts)) {
    for (const p of b.csv.permissions) all.push({ ...p, rules: [...(p.rules ?? []), NAMESPACES_READ_RULE] });
  }
  return all.flatMap((p): KubeObject[] => {
    const sa = saNameOrDefault(p.serviceAccountName);
    const name = uniqueNameForPermissions(`${b.csv.name}-${sa}`, p);
    return [
      { apiVersion: RBAC_VERSION, kind: 'ClusterRole', metadata: { name }, rules: rulesValue(p.rules) },
      {
        apiVersion: RBAC_VERSION,
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name: sa, namespace: opts.installNamespace }],
      },
    ];
  });
};

/** Fields OLM's typed round-trip (runtime.DefaultUnstructuredConverter + util.ToUnstructured) drops. */
function stripServerFields(obj: KubeObject): KubeObject {
  delete obj['status'];
  // bundles generated by operator-sdk carry `creationTimestamp: null`
  const meta = obj.metadata as unknown as Record<string, unknown>;
  if (meta['creationTimestamp'] === null) delete meta['creationTimestamp'];
  return obj;
}

function mergeAnnotations(obj: KubeObject, extra: Record<string, string>): void {
  obj.metadata.annotations = { ...(obj.metadata.annotations ?? {}), ...extra };
}

function webhookPort(w: WebhookDefinition): number {
  return w.containerPort > 0 ? w.containerPort : DEFAULT_WEBHOOK_PORT;
}

/**
 * BundleCRDGenerator: the bundle's CRDs; a CRD named by a conversion webhook gets
 * spec.conversion pointing at the webhook Service (path defaults to "/"), and the certificate
 * provider's CA injection annotation. preserveUnknownFields must be false for conversion.
 */
export function crdsWithConversion(b: RegistryV1Bundle, opts: RenderOptions): { objects: KubeObject[]; problems: string[] } {
  const conversionFor = new Map<string, WebhookDefinition>();
  const problems: string[] = [];
  for (const w of b.csv.webhookDefinitions) {
    if (w.type !== 'ConversionWebhook') continue;
    for (const crd of w.conversionCRDs) {
      if (conversionFor.has(crd)) problems.push(`custom resource definition '${crd}' is referenced by multiple conversion webhook definitions`);
      conversionFor.set(crd, w);
    }
  }
  const objects = b.crds.map((source) => {
    const crd = stripServerFields(cloneObject(source.object));
    const w = conversionFor.get(crd.metadata.name);
    if (w === undefined) return crd;
    const spec = isJsonObject(crd['spec'] as JsonValue) ? (crd['spec'] as JsonObject) : {};
    if (spec['preserveUnknownFields'] === true) {
      problems.push(
        `custom resource definition '${crd.metadata.name}' must have .spec.preserveUnknownFields set to false to let API Server call webhook to do the conversion`,
      );
    }
    const cert = certProvisionerFor(w.deploymentName, opts.installNamespace);
    const conversionWebhook: JsonObject = {
      clientConfig: {
        service: { name: cert.serviceName, namespace: opts.installNamespace, path: w.webhookPath ?? '/', port: webhookPort(w) },
      },
    };
    if (w.admissionReviewVersions !== undefined) conversionWebhook['conversionReviewVersions'] = w.admissionReviewVersions;
    spec['conversion'] = { strategy: 'Webhook', webhook: conversionWebhook };
    crd['spec'] = spec;
    if (opts.certificateProvider) mergeAnnotations(crd, opts.certificateProvider.injectionAnnotations(cert));
    return crd;
  });
  return { objects, problems };
}

/** BundleAdditionalResourcesGenerator: the bundle's other manifests, namespaced kinds put in the install namespace. */
export const additionalResources: Generator = (b, opts) =>
  b.others.map((source) => {
    const obj = stripServerFields(cloneObject(source.object));
    if (SUPPORTED_KINDS.get(obj.kind) === true) obj.metadata.namespace = opts.installNamespace;
    return obj;
  });

const CERT_VOLUMES = [
  { name: 'webhook-cert', path: '/tmp/k8s-webhook-server/serving-certs', certPath: 'tls.crt', keyPath: 'tls.key' },
  { name: 'apiservice-cert', path: '/apiserver.local.config/certificates', certPath: 'apiserver.crt', keyPath: 'apiserver.key' },
] as const;

function asObjectList(v: JsonValue | undefined): JsonObject[] {
  return Array.isArray(v) ? v.filter(isJsonObject) : [];
}

/**
 * ensureCorrectDeploymentCertVolumes: replace whatever the bundle mounted at the certificate
 * paths (or named webhook-cert / apiservice-cert) with the provider's secret, in every container.
 */
function ensureCertVolumes(podSpec: JsonObject, secret: CertSecretInfo): void {
  const remove = new Set<string>(CERT_VOLUMES.map((c) => c.name));
  const protectedPaths = new Set<string>(CERT_VOLUMES.map((c) => c.path));
  const containers = asObjectList(podSpec['containers']);
  for (const c of containers) {
    for (const m of asObjectList(c['volumeMounts'])) {
      if (typeof m['mountPath'] === 'string' && protectedPaths.has(m['mountPath']) && typeof m['name'] === 'string') remove.add(m['name']);
    }
  }
  const keep = (v: JsonObject): boolean => !(typeof v['name'] === 'string' && remove.has(v['name']));
  podSpec['volumes'] = [
    ...asObjectList(podSpec['volumes']).filter(keep),
    ...CERT_VOLUMES.map((c) => ({
      name: c.name,
      secret: {
        secretName: secret.secretName,
        items: [
          { key: secret.certificateKey, path: c.certPath },
          { key: secret.privateKeyKey, path: c.keyPath },
        ],
      },
    })),
  ];
  for (const c of containers) {
    c['volumeMounts'] = [...asObjectList(c['volumeMounts']).filter(keep), ...CERT_VOLUMES.map((v) => ({ mountPath: v.path, name: v.name }))];
  }
}

/**
 * BundleCSVDeploymentGenerator: a Deployment per install strategy deployment, in the install
 * namespace, labelled with its `label`; the pod template's annotations are the CSV's annotations
 * overlaid with the template's own, plus olm.targetNamespaces (the watched namespaces joined by
 * ","; "" for all) and olm.operatorNamespace (the install namespace), the annotations OLM v0's
 * OperatorGroup put on CSVs; revisionHistoryLimit 1 (OLM v0 parity); certificate volumes for
 * Deployments that serve webhooks; then the deploymentConfig (deployment-config.ts).
 */
export const deployments: Generator = (b, opts) => {
  const webhookDeployments = new Set(b.csv.webhookDefinitions.map((w) => w.deploymentName));
  return b.csv.deployments.map((d) => {
    const spec = cloneObject(d.spec);
    const template = isJsonObject(spec['template']) ? spec['template'] : {};
    const templateMeta = isJsonObject(template['metadata']) ? template['metadata'] : {};
    const templateAnnotations = isJsonObject(templateMeta['annotations']) ? templateMeta['annotations'] : {};
    templateMeta['annotations'] = {
      ...b.csv.annotations,
      ...templateAnnotations,
      'olm.targetNamespaces': opts.targetNamespaces.join(','),
      'olm.operatorNamespace': opts.installNamespace,
    };
    template['metadata'] = templateMeta;
    spec['template'] = template;
    spec['revisionHistoryLimit'] = 1;
    if (opts.certificateProvider && webhookDeployments.has(d.name)) {
      const podSpec = isJsonObject(template['spec']) ? template['spec'] : {};
      template['spec'] = podSpec;
      ensureCertVolumes(podSpec, opts.certificateProvider.secretInfo(certProvisionerFor(d.name, opts.installNamespace)));
    }
    const metadata: KubeObject['metadata'] = { name: d.name, namespace: opts.installNamespace };
    if (d.label !== undefined) metadata.labels = { ...d.label };
    const deployment: KubeObject = { apiVersion: 'apps/v1', kind: 'Deployment', metadata, spec };
    applyDeploymentConfig(deployment, opts.deploymentConfig);
    return deployment;
  });
};

/** getWebhookNamespaceSelector: limit admission webhooks to the watched namespaces (none for all). */
function namespaceSelector(opts: RenderOptions): JsonObject | undefined {
  if (opts.targetNamespaces.length === 0 || opts.targetNamespaces.includes('')) return undefined;
  return { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [...opts.targetNamespaces] }] };
}

function admissionWebhooks(type: 'ValidatingAdmissionWebhook' | 'MutatingAdmissionWebhook'): Generator {
  const kind = type === 'ValidatingAdmissionWebhook' ? 'ValidatingWebhookConfiguration' : 'MutatingWebhookConfiguration';
  return (b, opts) =>
    b.csv.webhookDefinitions
      .filter((w) => w.type === type)
      .map((w) => {
        const cert = certProvisionerFor(w.deploymentName, opts.installNamespace);
        const name = w.generateName.replace(/-$/, '');
        const service: JsonObject = { name: cert.serviceName, namespace: opts.installNamespace, port: webhookPort(w) };
        if (w.webhookPath !== undefined) service['path'] = w.webhookPath;
        const hook: JsonObject = { name, clientConfig: { service } };
        const fields = ['admissionReviewVersions', 'failurePolicy', 'matchPolicy', 'objectSelector', 'rules', 'sideEffects', 'timeoutSeconds'] as const;
        for (const key of fields) {
          const v = w[key];
          if (v !== undefined) hook[key] = structuredClone(v);
        }
        if (type === 'MutatingAdmissionWebhook' && w.reinvocationPolicy !== undefined) hook['reinvocationPolicy'] = w.reinvocationPolicy;
        const selector = namespaceSelector(opts);
        if (selector) hook['namespaceSelector'] = selector;
        // OLM v1 also sets metadata.namespace on these cluster-scoped objects; the API server
        // drops it, and here it would only blur the object's identity, so it is left out
        const obj: KubeObject = { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name }, webhooks: [hook] };
        if (opts.certificateProvider) mergeAnnotations(obj, opts.certificateProvider.injectionAnnotations(cert));
        return obj;
      });
}

/** BundleValidatingWebhookResourceGenerator */
export const validatingWebhooks: Generator = admissionWebhooks('ValidatingAdmissionWebhook');
/** BundleMutatingWebhookResourceGenerator */
export const mutatingWebhooks: Generator = admissionWebhooks('MutatingAdmissionWebhook');

function targetPortNumber(p: number | string): number {
  // intstr.IntValue(): a name counts as 0 (or its numeric value when it is digits)
  if (typeof p === 'number') return p;
  return /^\d+$/.test(p) ? Number(p) : 0;
}

/**
 * BundleDeploymentServiceResourceGenerator: a Service "<deployment>-service" for each Deployment
 * that serves webhooks, selecting the Deployment's pods (spec.selector.matchLabels), with one
 * port per distinct (containerPort, targetPort), named after the port, sorted.
 */
export const webhookServices: Generator = (b, opts) => {
  const portsByDeployment = new Map<string, Map<string, { name: string; port: number; targetPort: number | string }>>();
  for (const w of b.csv.webhookDefinitions) {
    const port = webhookPort(w);
    const targetPort = w.targetPort ?? port;
    const ports = portsByDeployment.get(w.deploymentName) ?? new Map();
    ports.set(JSON.stringify([port, targetPort]), { name: String(port), port, targetPort });
    portsByDeployment.set(w.deploymentName, ports);
  }
  return b.csv.deployments.flatMap((d): KubeObject[] => {
    const ports = portsByDeployment.get(d.name);
    if (!ports) return [];
    const sortedPorts = [...ports.values()].sort((x, y) => x.port - y.port || targetPortNumber(x.targetPort) - targetPortNumber(y.targetPort));
    const selector = isJsonObject(d.spec['selector']) ? d.spec['selector']['matchLabels'] : undefined;
    const spec: JsonObject = { ports: sortedPorts };
    if (isJsonObject(selector)) spec['selector'] = structuredClone(selector);
    const cert = certProvisionerFor(d.name, opts.installNamespace);
    return [{ apiVersion: 'v1', kind: 'Service', metadata: { name: cert.serviceName, namespace: opts.installNamespace }, spec }];
  });
};

/** CertProviderResourceGenerator: the provider's objects for every Deployment that serves webhooks. */
export const certificateResources: Generator = (b, opts) => {
  const provider = opts.certificateProvider;
  if (!provider) return [];
  const names = [...new Set(b.csv.webhookDefinitions.map((w) => w.deploymentName))].sort();
  return names.flatMap((name) => provider.additionalObjects(certProvisionerFor(name, opts.installNamespace)));
};
