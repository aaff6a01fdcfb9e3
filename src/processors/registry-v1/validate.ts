/**
 * Bundle checks run before rendering, one per OLM v1 validator
 * (rukpak/render/registryv1/validators), with OLM's messages. Each returns every problem it
 * finds; the caller reports them together. Pure.
 */
import type { RegistryV1Bundle } from './bundle.ts';

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function isDns1123Subdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}

/**
 * Kinds a bundle may carry besides the CSV and CRDs (operator-registry
 * pkg/lib/bundle/supported_resources.go), with whether they are namespaced. OLM v1 refuses any
 * other kind. VerticalPodAutoscaler is namespaced in Kubernetes although operator-registry's
 * table marks it cluster-scoped; we follow Kubernetes, so it lands in the install namespace.
 */
export const SUPPORTED_KINDS: ReadonlyMap<string, boolean> = new Map([
  ['ClusterRole', false],
  ['ClusterRoleBinding', false],
  ['Service', true],
  ['ServiceAccount', true],
  ['Role', true],
  ['RoleBinding', true],
  ['PrometheusRule', true],
  ['ServiceMonitor', true],
  ['Secret', true],
  ['ConfigMap', true],
  ['PodDisruptionBudget', true],
  ['PriorityClass', false],
  ['VerticalPodAutoscaler', true],
  ['ConsoleYAMLSample', false],
]);

type Check = (b: RegistryV1Bundle) => string[];

const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

function duplicates(names: string[]): string[] {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) dup.add(n);
    seen.add(n);
  }
  return sorted(dup);
}

const checkDeploymentSpecUniqueness: Check = (b) =>
  duplicates(b.csv.deployments.map((d) => d.name)).map((d) => `cluster service version contains duplicate strategy deployment spec '${d}'`);

const checkDeploymentNameIsDns1123Subdomain: Check = (b) =>
  sorted(new Set(b.csv.deployments.map((d) => d.name).filter((n) => !isDns1123Subdomain(n)))).map(
    (n) => `invalid cluster service version strategy deployment name '${n}': must be a lowercase RFC 1123 subdomain`,
  );

const checkCrdResourceUniqueness: Check = (b) =>
  duplicates(b.crds.map((c) => c.object.metadata.name)).map((n) => `bundle contains duplicate custom resource definition '${n}'`);

const checkOwnedCrdExistence: Check = (b) => {
  const present = new Set(b.crds.map((c) => c.object.metadata.name));
  return sorted(new Set(b.csv.ownedCRDs.filter((n) => !present.has(n)))).map(
    (n) => `cluster service definition references owned custom resource definition '${n}' not found in bundle`,
  );
};

const checkPackageNameNotEmpty: Check = (b) => (b.packageName === '' ? ['package name is empty'] : []);

const checkConversionWebhookSupport: Check = (b) => {
  const conversion = b.csv.webhookDefinitions.filter((w) => w.type === 'ConversionWebhook');
  if (conversion.length === 0) return [];
  const modes = new Set(b.csv.installModes.filter((m) => m.supported).map((m) => m.type));
  if (modes.size === 1 && modes.has('AllNamespaces')) return [];
  return conversion.map(
    (w) =>
      `bundle contains conversion webhook "${w.generateName}" and supports install modes [${sorted(modes).join(' ')}] - conversion webhooks are only supported for bundles that only support AllNamespaces install mode`,
  );
};

const checkWebhookDeploymentReferentialIntegrity: Check = (b) => {
  const deployments = new Set(b.csv.deployments.map((d) => d.name));
  return b.csv.webhookDefinitions
    .filter((w) => !deployments.has(w.deploymentName))
    .sort((x, y) => x.deploymentName.localeCompare(y.deploymentName) || x.type.localeCompare(y.type) || x.generateName.localeCompare(y.generateName))
    .map((w) => `webhook of type '${w.type}' with name '${w.generateName}' references non-existent deployment '${w.deploymentName}'`);
};

const checkWebhookNameUniqueness: Check = (b) => {
  const out: string[] = [];
  for (const type of sorted(new Set(b.csv.webhookDefinitions.map((w) => w.type)))) {
    const names = b.csv.webhookDefinitions.filter((w) => w.type === type).map((w) => w.generateName);
    for (const n of duplicates(names)) out.push(`duplicate webhook '${n}' of type '${type}'`);
  }
  return out;
};

const checkWebhookNameIsDns1123Subdomain: Check = (b) =>
  b.csv.webhookDefinitions
    .filter((w) => !isDns1123Subdomain(w.generateName))
    .map((w) => `webhook of type '${w.type}' has invalid name '${w.generateName}': must be a lowercase RFC 1123 subdomain`);

const checkConversionWebhookCrdReferenceUniqueness: Check = (b) => {
  const byCrd = new Map<string, string[]>();
  for (const w of b.csv.webhookDefinitions.filter((x) => x.type === 'ConversionWebhook')) {
    for (const crd of w.conversionCRDs) byCrd.set(crd, [...(byCrd.get(crd) ?? []), w.generateName]);
  }
  return sorted(byCrd.keys())
    .filter((crd) => (byCrd.get(crd) ?? []).length > 1)
    .map((crd) => `conversion webhooks [${sorted(byCrd.get(crd) ?? []).join(',')}] reference same custom resource definition '${crd}'`);
};

const checkConversionWebhooksReferenceOwnedCrds: Check = (b) => {
  const owned = new Set(b.csv.ownedCRDs);
  const out: string[] = [];
  const hooks = b.csv.webhookDefinitions.filter((w) => w.type === 'ConversionWebhook').sort((x, y) => x.generateName.localeCompare(y.generateName));
  for (const w of hooks) {
    for (const crd of sorted(w.conversionCRDs)) {
      if (!owned.has(crd)) out.push(`conversion webhook '${w.generateName}' references custom resource definition '${crd}' not owned bundle`);
    }
  }
  return out;
};

const FORBIDDEN_RULE_GROUPS = new Set(['olm.operatorframework.io', '*']);
const FORBIDDEN_ADMISSION_RESOURCES = new Set([
  '*',
  'mutatingwebhookconfiguration',
  'mutatingwebhookconfigurations',
  'validatingwebhookconfiguration',
  'validatingwebhookconfigurations',
]);

const checkWebhookRules: Check = (b) => {
  const out: string[] = [];
  for (const w of b.csv.webhookDefinitions) {
    if (w.type === 'ConversionWebhook' || !Array.isArray(w.rules)) continue;
    for (const rule of w.rules) {
      if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) continue;
      const groups = Array.isArray(rule['apiGroups']) ? rule['apiGroups'] : [];
      const resources = Array.isArray(rule['resources']) ? rule['resources'] : [];
      for (const group of groups) {
        if (typeof group !== 'string') continue;
        if (FORBIDDEN_RULE_GROUPS.has(group)) {
          out.push(`webhook "${w.generateName}" contains forbidden rule: admission webhook rules cannot reference API group "${group}"`);
        }
        if (group === 'admissionregistration.k8s.io') {
          for (const r of resources) {
            if (typeof r === 'string' && FORBIDDEN_ADMISSION_RESOURCES.has(r.toLowerCase())) {
              out.push(
                `webhook "${w.generateName}" contains forbidden rule: admission webhook rules cannot reference resource "${r}" for API group "${group}"`,
              );
            }
          }
        }
      }
    }
  }
  return out;
};

const checkObjectSupport: Check = (b) =>
  b.others
    .filter((o) => !SUPPORTED_KINDS.has(o.object.kind))
    .map((o) => `bundle contains unsupported resource: Name: ${o.object.metadata.name}, Kind: ${o.object.kind} (${o.file})`);

/**
 * OLM v1 renders owned APIServices only in recent versions and with a certificate provider for
 * the aggregated API server; Hoist does not render them yet and says so rather than installing
 * an operator without its API.
 */
const checkNoOwnedApiServices: Check = (b) => b.csv.ownedAPIServices.map((n) => `owned APIService '${n}' (spec.apiservicedefinitions) is not supported`);

const CHECKS: readonly Check[] = [
  checkDeploymentSpecUniqueness,
  checkDeploymentNameIsDns1123Subdomain,
  checkCrdResourceUniqueness,
  checkOwnedCrdExistence,
  checkPackageNameNotEmpty,
  checkConversionWebhookSupport,
  checkWebhookDeploymentReferentialIntegrity,
  checkWebhookNameUniqueness,
  checkWebhookNameIsDns1123Subdomain,
  checkConversionWebhookCrdReferenceUniqueness,
  checkConversionWebhooksReferenceOwnedCrds,
  checkWebhookRules,
  checkObjectSupport,
  checkNoOwnedApiServices,
];

/** Every problem every check finds, in check order. Empty when the bundle can be rendered. */
export function validateBundle(bundle: RegistryV1Bundle): string[] {
  return CHECKS.flatMap((check) => check(bundle));
}
