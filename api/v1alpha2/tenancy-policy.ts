/**
 * Hoist's tenancy policy (a ValidatingAdmissionPolicy and its binding) as data, read from
 * tenancy-policy.yaml beside this module. The YAML file is the single source: `hoist run
 * --install-crd` applies it and the Helm chart ships a byte-for-byte copy; both fill in the same
 * tokens. Pure apart from reading the file once.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
// js-yaml, as crd.ts: read at start-up, without the reference reader's memory
import { loadAll } from 'js-yaml';

/** Path of the policy template, e.g. for copying into the chart. */
export const TENANCY_POLICY_PATH = fileURLToPath(new URL('./tenancy-policy.yaml', import.meta.url));

/** the policy's (and its binding's) name when the controller installs it */
export const TENANCY_POLICY_NAME = 'hoist-tenancy';

export interface TenancyPolicyOptions {
  /** name of the policy and of its binding (cluster-scoped: one per installation) */
  name?: string;
  /** the user name the controller's requests authenticate as, e.g. system:serviceaccount:hoist-system:hoist */
  controllerUser: string;
  /** the controller's --default-service-account, if any */
  defaultServiceAccount?: string;
}

/** A cluster-scoped admissionregistration.k8s.io/v1 object (a type alias: assignable to src/kube's KubeObject). */
export type AdmissionObject = {
  apiVersion: 'admissionregistration.k8s.io/v1';
  kind: 'ValidatingAdmissionPolicy' | 'ValidatingAdmissionPolicyBinding';
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
};

let template: string | undefined;

/** `s` as it may stand inside the policy's quoted CEL string literals: no quotes, backslashes or control characters */
function celString(what: string, s: string): string {
  if (/['"\\\u0000-\u001f]/.test(s)) throw new Error(`tenancy policy: ${what} ${JSON.stringify(s)} contains a quote, a backslash or a control character`);
  return s;
}

/**
 * The policy and its binding with the tokens filled in: [ValidatingAdmissionPolicy,
 * ValidatingAdmissionPolicyBinding]. Throws when the file is not what this module expects (a
 * packaging bug).
 */
export function tenancyPolicy(opts: TenancyPolicyOptions): [AdmissionObject, AdmissionObject] {
  template ??= readFileSync(TENANCY_POLICY_PATH, 'utf8');
  const text = template
    .replaceAll('HOIST_POLICY_NAME', opts.name ?? TENANCY_POLICY_NAME)
    .replaceAll('HOIST_CONTROLLER_USER', celString('controller user', opts.controllerUser))
    .replaceAll('HOIST_DEFAULT_SERVICE_ACCOUNT', celString('default service account', opts.defaultServiceAccount ?? ''));
  const docs = loadAll(text) as AdmissionObject[];
  const [policy, binding] = docs;
  if (docs.length !== 2 || policy?.kind !== 'ValidatingAdmissionPolicy' || binding?.kind !== 'ValidatingAdmissionPolicyBinding') {
    throw new Error(`${TENANCY_POLICY_PATH} is not a ValidatingAdmissionPolicy followed by its binding`);
  }
  return [policy, binding];
}
