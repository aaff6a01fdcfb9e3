/**
 * The BundleDeployment CustomResourceDefinition as data, read from bundledeployment-crd.yaml
 * beside this module. The YAML file is the single source: the controller's installer, the Helm
 * chart and the tests all ship or apply exactly that file.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
// js-yaml, not `yaml`: the controller reads this at start-up, and `yaml` is otherwise loaded only
// when a manifest needs the reference reader (~10 MiB of resident memory, issue 10)
import { load } from 'js-yaml';
import { GROUP, KIND, PLURAL, VERSION } from './types.ts';

export const CRD_NAME = `${PLURAL}.${GROUP}`;

/** Path of the CRD manifest, e.g. for `kubectl apply -f` or for copying into a chart. */
export const CRD_PATH = fileURLToPath(new URL('./bundledeployment-crd.yaml', import.meta.url));

/** An OpenAPI v3 schema node as the API server stores it (only the members Hoist reads are named). */
export type JSONSchemaProps = {
  type?: string;
  description?: string;
  properties?: Record<string, JSONSchemaProps>;
  items?: JSONSchemaProps;
  required?: string[];
  default?: unknown;
  enum?: unknown[];
  'x-kubernetes-validations'?: ValidationRule[];
  [keyword: string]: unknown;
};

export type ValidationRule = {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
};

export type CustomResourceDefinitionVersion = {
  name: string;
  served: boolean;
  storage: boolean;
  schema: { openAPIV3Schema: JSONSchemaProps };
  subresources?: { status?: Record<string, never> };
  additionalPrinterColumns?: { name: string; type: string; jsonPath: string; description?: string; priority?: number }[];
};

/**
 * A type alias (not an interface) so that it is assignable to src/kube's KubeObject, which has
 * an index signature; api/ must not import from src/kube.
 */
export type CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    group: string;
    scope: 'Cluster' | 'Namespaced';
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames?: string[]; categories?: string[] };
    versions: CustomResourceDefinitionVersion[];
  };
};

// The file is read once; every call parses the cached JSON again so callers get an object they
// may mutate (e.g. add labels) without affecting anyone else. JSON also expands the YAML
// anchors into independent copies instead of shared references.
let cachedJson: string | undefined;

/**
 * The BundleDeployment CRD. Reads the YAML on first use (synchronous, cached); throws when the
 * file is missing or is not the CRD this module expects, which is a packaging bug.
 */
export function bundleDeploymentCRD(): CustomResourceDefinition {
  if (cachedJson === undefined) {
    const doc: unknown = load(readFileSync(CRD_PATH, 'utf8'));
    checkShape(doc);
    cachedJson = JSON.stringify(doc);
  }
  return JSON.parse(cachedJson) as CustomResourceDefinition;
}

function checkShape(doc: unknown): asserts doc is CustomResourceDefinition {
  const crd = doc as Partial<CustomResourceDefinition> | null;
  const ok =
    crd?.apiVersion === 'apiextensions.k8s.io/v1' &&
    crd.kind === 'CustomResourceDefinition' &&
    crd.metadata?.name === CRD_NAME &&
    crd.spec?.group === GROUP &&
    crd.spec.names?.kind === KIND &&
    crd.spec.versions?.some((v) => v.name === VERSION && v.storage && v.schema?.openAPIV3Schema !== undefined);
  if (!ok) throw new Error(`${CRD_PATH} is not the ${CRD_NAME} CustomResourceDefinition with a ${VERSION} schema`);
}
