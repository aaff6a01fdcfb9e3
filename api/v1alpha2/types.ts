/**
 * The BundleDeployment API, group core.rukpak.io version v1alpha2 (DESIGN §1). The CRD in
 * bundledeployment-crd.yaml is the schema the API server enforces; these types mirror it.
 */
export const GROUP = 'core.rukpak.io';
export const VERSION = 'v1alpha2';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'BundleDeployment';
export const PLURAL = 'bundledeployments';

export const LABEL_OWNER_NAME = 'core.rukpak.io/owner-name';
export const LABEL_LINEAGE = 'core.rukpak.io/lineage';
export const ANNOTATION_REVISION = 'core.rukpak.io/revision';
export const ANNOTATION_OPTIONAL = 'core.rukpak.io/optional';
export const FINALIZER = 'core.rukpak.io/cleanup';
/**
 * On a Secret used by http and git sources: the hosts (`host` for port 443, or `host:port`),
 * comma-separated, that may receive its credentials. A source on any other host never gets them.
 */
export const ANNOTATION_CREDENTIAL_HOSTS = 'core.rukpak.io/credential-hosts';

export interface SecretRef {
  name: string;
}
export interface SourceAuth {
  secretRef: SecretRef;
}
/** A key of a Secret or ConfigMap holding a PEM CA bundle (git and http sources). */
export interface CARef {
  name: string;
  /** default `ca.crt` (the CRD's default) */
  key?: string;
}
export const DEFAULT_CA_KEY = 'ca.crt';

export interface ImageSource {
  ref: string;
  auth?: SourceAuth;
}
export interface GitRef {
  commit?: string;
  tag?: string;
  branch?: string;
}
export interface GitSource {
  repository: string;
  ref: GitRef;
  directory?: string;
  auth?: SourceAuth;
  /** at most one of caSecretRef and caConfigMapRef: a CA trusted for this source only */
  caSecretRef?: CARef;
  caConfigMapRef?: CARef;
}
export interface HttpSource {
  url: string;
  sha256?: string;
  auth?: SourceAuth;
  caSecretRef?: CARef;
  caConfigMapRef?: CARef;
}

export type SourceKind = 'image' | 'git' | 'http';

export interface SourceSpec {
  kind: SourceKind;
  image?: ImageSource;
  git?: GitSource;
  http?: HttpSource;
  destination?: string;
}

/** whether the spec itself names immutable content (image digest, git commit, http sha256) */
export function pinnedBySpec(src: SourceSpec): boolean {
  if (src.image) return src.image.ref.includes('@sha256:');
  if (src.git) return !!src.git.ref.commit;
  if (src.http) return !!src.http.sha256;
  return false;
}

export type BundleFormat = 'plain' | 'helm' | 'registry-v1';
export type OnFailure = 'Rollback' | 'Hold';
export type CollisionProtection = 'Prevent' | 'IfNotOwned' | 'None';
/** Enforce: refuse CRD changes that would break existing custom resources (src/apply/crd-safety.ts) */
export type CRDSafety = 'Enforce' | 'None';

export interface HealthCheck {
  name: string;
  match: { group?: string; kind?: string; name?: string; namespace?: string; selector?: Record<string, string> };
  condition?: { type: string; status: string };
  jsonPath?: { path: string; value: string };
  cel?: string;
  periodSeconds?: number;
  failureThreshold?: number;
  initialDelaySeconds?: number;
}

/**
 * OLM v1's deploymentConfig (OLM v0's SubscriptionConfig without selector), applied to every
 * Deployment of a registry-v1 bundle. Members are Kubernetes core/v1 shapes (EnvVar,
 * EnvFromSource, Volume, VolumeMount, Toleration, ResourceRequirements, Affinity); the CRD
 * declares their fields and the API server validates the resulting Deployment.
 */
export interface RegistryV1DeploymentConfig {
  nodeSelector?: Record<string, string>;
  tolerations?: Array<Record<string, unknown>>;
  resources?: Record<string, unknown>;
  env?: Array<{ name: string } & Record<string, unknown>>;
  envFrom?: Array<Record<string, unknown>>;
  volumes?: Array<{ name: string } & Record<string, unknown>>;
  volumeMounts?: Array<{ name: string; mountPath: string } & Record<string, unknown>>;
  affinity?: Record<string, unknown>;
  annotations?: Record<string, string>;
}

export interface BundleDeploymentSpec {
  paused?: boolean;
  installNamespace?: string;
  format: BundleFormat;
  sources: SourceSpec[];
  config?: {
    helm?: { releaseName?: string; values?: Record<string, unknown> };
    registryV1?: {
      /** "" AllNamespaces, installNamespace OwnNamespace, another SingleNamespace; shorthand for watchNamespaces: [x] */
      watchNamespace?: string;
      /** two or more: MultiNamespace; exclusive with watchNamespace */
      watchNamespaces?: string[];
      deploymentConfig?: RegistryV1DeploymentConfig;
    };
  };
  pollInterval?: string;
  upgrade?: { onFailure?: OnFailure; progressDeadline?: string; crdSafety?: CRDSafety };
  healthChecks?: HealthCheck[];
  revisionHistoryLimit?: number;
  collisionProtection?: CollisionProtection;
  serviceAccount?: { name: string };
  /** delete CRDs on uninstall; default false: CRDs outlive the BundleDeployment */
  deleteCRDsOnUninstall?: boolean;
}

export type ConditionType = 'Resolved' | 'Unpacked' | 'Installed' | 'Healthy' | 'Progressing' | 'Paused';

export interface Condition {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export interface ResolvedSourceStatus {
  kind: SourceKind;
  digest?: string;
  ref?: string;
  commit?: string;
  sha256?: string;
  /** the spec generation this resolution belongs to */
  generation?: number;
  /** http validators kept for cheap conditional polls */
  etag?: string;
  lastModified?: string;
  resolvedAt?: string;
}

export interface RevisionRef {
  number: number;
  contentDigest: string;
  objects?: number;
  /** activeRevision only: what was applied and how the objects looked right after (see the CRD) */
  appliedDigest?: string;
}

export interface ActiveRevision extends RevisionRef {
  /** RFC 3339: when its objects were applied as a new revision (upgrade or rollback); progressDeadline counts from here */
  appliedAt?: string;
}

export interface RevisionStatus extends RevisionRef {
  phase: 'Active' | 'Superseded' | 'Failed';
}

export interface BundleDeploymentStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  resolvedSources?: ResolvedSourceStatus[];
  contentDigest?: string;
  activeRevision?: ActiveRevision;
  attemptedRevision?: RevisionRef & { reason: string };
  revisions?: RevisionStatus[];
  skippedOptional?: string[];
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  creationTimestamp?: string;
}

export interface BundleDeployment {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: ObjectMeta;
  spec: BundleDeploymentSpec;
  status?: BundleDeploymentStatus;
}

/** The lineage a BD belongs to: its label, or its own name. */
export function lineageOf(bd: { metadata: ObjectMeta }): string {
  return bd.metadata.labels?.[LABEL_LINEAGE] ?? bd.metadata.name;
}
