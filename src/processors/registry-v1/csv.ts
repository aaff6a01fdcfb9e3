/**
 * The parts of an OLM ClusterServiceVersion (operators.coreos.com/v1alpha1) that rendering
 * needs, read from the parsed manifest with type checks. A field of the wrong type is a clear
 * error naming the CSV file and the field, where OLM would fail inside its unstructured
 * converter. Pure.
 */
import type { HoistError } from '../../util/errors.ts';
import { processError } from '../errors.ts';
import { isJsonObject } from '../yaml/values.ts';
import type { JsonObject, JsonValue } from '../yaml/values.ts';
import { ProcessCode } from '../errors.ts';

export type InstallModeType = 'OwnNamespace' | 'SingleNamespace' | 'MultiNamespace' | 'AllNamespaces';
export type WebhookType = 'ValidatingAdmissionWebhook' | 'MutatingAdmissionWebhook' | 'ConversionWebhook';

/**
 * rbac/v1 PolicyRule as OLM decodes it: unknown fields dropped; `verbs` keeps the difference
 * between absent (null) and empty, because Go's JSON encoding of the rule (which names are
 * hashed from) does.
 */
export interface PolicyRule {
  verbs: string[] | null;
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** One entry of spec.install.spec.permissions or clusterPermissions. */
export interface StrategyPermissions {
  /** as written; "" means the namespace's default service account */
  serviceAccountName: string;
  /** null when absent, as Go decodes a missing slice */
  rules: PolicyRule[] | null;
}

export interface StrategyDeployment {
  name: string;
  label?: Record<string, string>;
  /** apps/v1 DeploymentSpec, kept as written */
  spec: JsonObject;
}

export interface WebhookDefinition {
  type: WebhookType;
  generateName: string;
  deploymentName: string;
  /** 0 when absent; OLM's default is 443 */
  containerPort: number;
  targetPort?: number | string;
  webhookPath?: string;
  admissionReviewVersions?: JsonValue;
  rules?: JsonValue;
  failurePolicy?: JsonValue;
  matchPolicy?: JsonValue;
  objectSelector?: JsonValue;
  sideEffects?: JsonValue;
  timeoutSeconds?: JsonValue;
  reinvocationPolicy?: JsonValue;
  conversionCRDs: string[];
}

export interface ClusterServiceVersion {
  name: string;
  annotations: Record<string, string>;
  installModes: Array<{ type: string; supported: boolean }>;
  deployments: StrategyDeployment[];
  permissions: StrategyPermissions[];
  clusterPermissions: StrategyPermissions[];
  webhookDefinitions: WebhookDefinition[];
  ownedCRDs: string[];
  ownedAPIServices: string[];
}

const WEBHOOK_TYPES: ReadonlySet<string> = new Set(['ValidatingAdmissionWebhook', 'MutatingAdmissionWebhook', 'ConversionWebhook']);

class Reader {
  readonly errors: HoistError[] = [];
  constructor(readonly subject: string) {}

  problem(field: string, message: string): void {
    this.errors.push(processError(`ClusterServiceVersion ${field}: ${message}`, ProcessCode.InvalidBundle, this.subject));
  }

  object(v: JsonValue | undefined, field: string): JsonObject | undefined {
    if (v === undefined || v === null) return undefined;
    if (!isJsonObject(v)) {
      this.problem(field, 'must be an object');
      return undefined;
    }
    return v;
  }

  list(v: JsonValue | undefined, field: string): JsonValue[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) {
      this.problem(field, 'must be a list');
      return undefined;
    }
    return v;
  }

  string(v: JsonValue | undefined, field: string): string | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') {
      this.problem(field, 'must be a string');
      return undefined;
    }
    return v;
  }

  strings(v: JsonValue | undefined, field: string): string[] | undefined {
    const list = this.list(v, field);
    if (list === undefined) return undefined;
    if (!list.every((s) => typeof s === 'string')) {
      this.problem(field, 'must be a list of strings');
      return undefined;
    }
    return list as string[];
  }

  stringMap(v: JsonValue | undefined, field: string): Record<string, string> | undefined {
    const obj = this.object(v, field);
    if (obj === undefined) return undefined;
    const out: Record<string, string> = {};
    for (const [k, val] of Object.entries(obj)) {
      if (typeof val !== 'string') {
        this.problem(`${field}.${k}`, 'must be a string');
        continue;
      }
      out[k] = val;
    }
    return out;
  }
}

function readRule(r: Reader, v: JsonValue, field: string): PolicyRule {
  const obj = r.object(v, field) ?? {};
  const rule: PolicyRule = { verbs: r.strings(obj['verbs'], `${field}.verbs`) ?? null };
  for (const key of ['apiGroups', 'resources', 'resourceNames', 'nonResourceURLs'] as const) {
    const list = r.strings(obj[key], `${field}.${key}`);
    if (list !== undefined) rule[key] = list;
  }
  return rule;
}

function readPermissions(r: Reader, v: JsonValue | undefined, field: string): StrategyPermissions[] {
  return (r.list(v, field) ?? []).map((p, i) => {
    const f = `${field}[${i}]`;
    const obj = r.object(p, f) ?? {};
    const rulesList = r.list(obj['rules'], `${f}.rules`);
    return {
      serviceAccountName: r.string(obj['serviceAccountName'], `${f}.serviceAccountName`) ?? '',
      rules: rulesList === undefined ? null : rulesList.map((rule, j) => readRule(r, rule, `${f}.rules[${j}]`)),
    };
  });
}

function readDeployments(r: Reader, v: JsonValue | undefined): StrategyDeployment[] {
  const field = 'spec.install.spec.deployments';
  return (r.list(v, field) ?? []).map((d, i) => {
    const f = `${field}[${i}]`;
    const obj = r.object(d, f) ?? {};
    const name = r.string(obj['name'], `${f}.name`) ?? '';
    const spec = r.object(obj['spec'], `${f}.spec`);
    if (spec === undefined) r.problem(`${f}.spec`, 'is required');
    const label = r.stringMap(obj['label'], `${f}.label`);
    return { name, spec: spec ?? {}, ...(label === undefined ? {} : { label }) };
  });
}

function readWebhooks(r: Reader, v: JsonValue | undefined): WebhookDefinition[] {
  const field = 'spec.webhookdefinitions';
  return (r.list(v, field) ?? []).flatMap((w, i): WebhookDefinition[] => {
    const f = `${field}[${i}]`;
    const obj = r.object(w, f) ?? {};
    const type = r.string(obj['type'], `${f}.type`) ?? '';
    if (!WEBHOOK_TYPES.has(type)) {
      r.problem(`${f}.type`, `must be one of ValidatingAdmissionWebhook, MutatingAdmissionWebhook, ConversionWebhook (found "${type}")`);
      return [];
    }
    const containerPort = obj['containerPort'];
    if (containerPort !== undefined && containerPort !== null && (typeof containerPort !== 'number' || !Number.isInteger(containerPort))) {
      r.problem(`${f}.containerPort`, 'must be an integer');
    }
    const targetPort = obj['targetPort'];
    if (targetPort !== undefined && targetPort !== null && typeof targetPort !== 'number' && typeof targetPort !== 'string') {
      r.problem(`${f}.targetPort`, 'must be a port number or name');
    }
    const webhookPath = r.string(obj['webhookPath'], `${f}.webhookPath`);
    const def: WebhookDefinition = {
      type: type as WebhookType,
      generateName: r.string(obj['generateName'], `${f}.generateName`) ?? '',
      deploymentName: r.string(obj['deploymentName'], `${f}.deploymentName`) ?? '',
      containerPort: typeof containerPort === 'number' ? containerPort : 0,
      conversionCRDs: r.strings(obj['conversionCRDs'], `${f}.conversionCRDs`) ?? [],
      ...(typeof targetPort === 'number' || typeof targetPort === 'string' ? { targetPort } : {}),
      ...(webhookPath === undefined ? {} : { webhookPath }),
    };
    for (const key of [
      'admissionReviewVersions',
      'rules',
      'failurePolicy',
      'matchPolicy',
      'objectSelector',
      'sideEffects',
      'timeoutSeconds',
      'reinvocationPolicy',
    ] as const) {
      const val = obj[key];
      if (val !== undefined && val !== null) def[key] = val;
    }
    return [def];
  });
}

function readOwnedNames(r: Reader, v: JsonValue | undefined, field: string): string[] {
  const owned = r.list(r.object(v, field)?.['owned'], `${field}.owned`) ?? [];
  return owned.map((o, i) => r.string(r.object(o, `${field}.owned[${i}]`)?.['name'], `${field}.owned[${i}].name`) ?? '');
}

/**
 * Reads a CSV object. Throws one HoistError (code invalid-bundle, subject = the CSV's file) that
 * lists every malformed field.
 */
export function readClusterServiceVersion(obj: JsonObject, subject: string): ClusterServiceVersion {
  const r = new Reader(subject);
  const metadata = r.object(obj['metadata'], 'metadata') ?? {};
  const spec = r.object(obj['spec'], 'spec') ?? {};
  const install = r.object(spec['install'], 'spec.install') ?? {};
  const strategySpec = r.object(install['spec'], 'spec.install.spec') ?? {};
  const installModes = (r.list(spec['installModes'], 'spec.installModes') ?? []).map((m, i) => {
    const mode = r.object(m, `spec.installModes[${i}]`) ?? {};
    const supported = mode['supported'];
    if (typeof supported !== 'boolean') r.problem(`spec.installModes[${i}].supported`, 'must be true or false');
    return { type: r.string(mode['type'], `spec.installModes[${i}].type`) ?? '', supported: supported === true };
  });
  const csv: ClusterServiceVersion = {
    name: r.string(metadata['name'], 'metadata.name') ?? '',
    annotations: r.stringMap(metadata['annotations'], 'metadata.annotations') ?? {},
    installModes,
    deployments: readDeployments(r, strategySpec['deployments']),
    permissions: readPermissions(r, strategySpec['permissions'], 'spec.install.spec.permissions'),
    clusterPermissions: readPermissions(r, strategySpec['clusterPermissions'], 'spec.install.spec.clusterPermissions'),
    webhookDefinitions: readWebhooks(r, spec['webhookdefinitions']),
    ownedCRDs: readOwnedNames(r, spec['customresourcedefinitions'], 'spec.customresourcedefinitions'),
    ownedAPIServices: readOwnedNames(r, spec['apiservicedefinitions'], 'spec.apiservicedefinitions'),
  };
  const first = r.errors[0];
  if (first) {
    if (r.errors.length === 1) throw first;
    throw processError(
      `ClusterServiceVersion does not parse: ${r.errors.map((e) => e.message.replace(/^ClusterServiceVersion /, '')).join('; ')}`,
      ProcessCode.InvalidBundle,
      subject,
    );
  }
  return csv;
}

/** The install modes the CSV declares as supported. */
export function supportedInstallModes(csv: ClusterServiceVersion): Set<string> {
  return new Set(csv.installModes.filter((m) => m.supported).map((m) => m.type));
}
