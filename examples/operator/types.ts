/**
 * The example's own API: `Operator` (examples.hoist.io/v1alpha1, cluster-scoped). One Operator
 * installs one package at one version; it does so through one BundleDeployment per version, all
 * of one lineage (the Operator's name), the way OLM's ClusterExtension works over its revisions.
 */
import type { BundleDeploymentSpec, Condition, SourceSpec } from '../../api/v1alpha2/types.ts';

export const OP_GROUP = 'examples.hoist.io';
export const OP_API_VERSION = `${OP_GROUP}/v1alpha1`;
export const OP_KIND = 'Operator';
export const OP_PLURAL = 'operators';

/** labels on the BundleDeployments an Operator creates */
export const LABEL_OPERATOR = `${OP_GROUP}/operator`;
export const LABEL_VERSION = `${OP_GROUP}/version`;
/** the creation sequence within the Operator: names sort in creation order (see names.ts) */
export const LABEL_SEQUENCE = `${OP_GROUP}/sequence`;

export interface OperatorSpec {
  /** the package; every `{version}` in its strings is replaced by spec.version */
  source: SourceSpec;
  version: string;
  /** hotfix mode: every BundleDeployment of the Operator is paused (nothing applied or reverted) */
  paused?: boolean;
  /** the rest of each BundleDeployment's spec (format, installNamespace, upgrade, …) */
  template: Omit<BundleDeploymentSpec, 'sources' | 'paused'>;
}

/** what went wrong with a version, as the BundleDeployment said it */
export interface VersionFailure {
  version: string;
  bundleDeployment: string;
  /** the BundleDeployment's condition reason (docs/status.md), e.g. ApplyFailed, UnsafeCRDUpgrade */
  reason: string;
  message: string;
}

export type OperatorConditionType = 'Installed' | 'Progressing' | 'Paused';

export interface OperatorStatus {
  observedGeneration?: number;
  /** the version whose BundleDeployment last succeeded and still applies */
  installedVersion?: string;
  /** that BundleDeployment */
  bundleDeployment?: string;
  /** the newest version that failed; not retried until spec.version changes */
  lastFailure?: VersionFailure;
  conditions?: Array<Omit<Condition, 'type'> & { type: OperatorConditionType }>;
}

export interface Operator {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; uid?: string; generation?: number; resourceVersion?: string; deletionTimestamp?: string };
  spec: OperatorSpec;
  status?: OperatorStatus;
}
