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
/** orders an object within its apply phase (an integer, default 0; lower first), like Argo CD's sync-wave */
export const ANNOTATION_APPLY_WAVE = 'core.rukpak.io/apply-wave';
/**
 * Set by the helm processor on a chart's hook objects: the hook events (helm.sh/hook) Hoist runs
 * it for, comma-separated. Such objects are run as hooks, not applied as managed objects.
 */
export const ANNOTATION_HOOK = 'core.rukpak.io/hook';
/** on Helm hook objects Hoist created: the BundleDeployment whose hook it is (not an owner label: hooks are not managed objects) */
export const LABEL_HOOK_OF = 'core.rukpak.io/hook-of';
export const FINALIZER = 'core.rukpak.io/cleanup';
/**
 * On a Secret used by http and git sources: the hosts (`host` for port 443, or `host:port`),
 * comma-separated, that may receive its credentials. A source on any other host never gets them.
 */
export const ANNOTATION_CREDENTIAL_HOSTS = 'core.rukpak.io/credential-hosts';
/**
 * Any new value asks for a reconcile now (after Flux's reconcile.fluxcd.io/requestedAt): floating
 * refs are re-resolved at once and a RolledBack or Blocked revision of the current spec is tried
 * once more; status.lastHandledRequest echoes the value once the controller has acted on it.
 */
export const ANNOTATION_REQUESTED_AT = 'core.rukpak.io/requested-at';
/**
 * "true" on a BundleDeployment with spec.kubeConfig: when it is deleted, its objects in the remote
 * cluster are left there (a cluster gone for good), its revisions dropped and the finalizer removed
 */
export const ANNOTATION_ABANDON_TARGET = 'core.rukpak.io/abandon-target';
/** the longest requested-at value the controller echoes (status.lastHandledRequest's maxLength) */
export const MAX_REQUEST_TOKEN_LENGTH = 256;
/**
 * On any managed object, `disabled`: never deleted, neither when it leaves the bundle nor at
 * uninstall (after Flux's kustomize.toolkit.fluxcd.io/prune); left in place, no longer managed,
 * as Helm's `helm.sh/resource-policy: keep` (src/apply/retention.ts).
 */
export const ANNOTATION_PRUNE = 'core.rukpak.io/prune';

export interface SecretRef {
  name: string;
}
export interface SourceAuth {
  secretRef: SecretRef;
}
/** A key of a Secret or ConfigMap holding a PEM CA bundle (git, http and helm sources). */
export interface CARef {
  name: string;
  /** default `ca.crt` (the CRD's default) */
  key?: string;
}
export const DEFAULT_CA_KEY = 'ca.crt';

export interface ImageSource {
  /** registry/repository[:tag][@digest]; with semver the repository only */
  ref: string;
  /** a semver range over the repository's tags: the highest match is resolved (src/sources/semver-select.ts) */
  semver?: string;
  auth?: SourceAuth;
  /**
   * Flux's OCIRepository layerSelector: only the first layer of this media type, extracted as a
   * tarball (default) or copied as one file; without it every layer of an image is unpacked (and
   * the first layer of a Flux artifact)
   */
  layerSelector?: { mediaType: string; operation?: 'extract' | 'copy' };
  /** signature verification before anything is unpacked (src/sources/image/verify/) */
  verify?: ImageVerification;
}
/** Enforce: unverified content is refused; Warn: the failure is recorded and the content installed */
export type VerificationPolicy = 'Enforce' | 'Warn';
export interface ImageVerification {
  /** only keyed cosign signatures are supported (default cosign) */
  provider?: 'cosign';
  /** PEM public keys: every `*.pub` entry of the Secret or ConfigMap; any one of them may match */
  publicKeys: { secretRef?: { name: string }; configMapRef?: { name: string } };
  /** default Enforce */
  policy?: VerificationPolicy;
}
export interface GitRef {
  commit?: string;
  tag?: string;
  branch?: string;
  /** a semver range over the repository's tags (src/sources/semver-select.ts) */
  semver?: string;
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

/**
 * A chart from a Helm HTTP repository (an `index.yaml` and chart tarballs: ChartMuseum, GitHub
 * Pages, Artifactory, Harbor's chartrepo), as Argo CD's repoURL + chart + targetRevision and
 * Flux's HelmRepository + HelmChart name it (src/sources/helm/).
 */
export interface HelmSource {
  /** the repository: index.yaml is read at `<repoURL>/index.yaml` */
  repoURL: string;
  /** the chart's name in the index */
  chart: string;
  /** an exact version or a semver range (src/sources/semver-select.ts); absent: the newest release (`*`) */
  version?: string;
  /** pins the chart tarball by the sha256 of its bytes: resolved without reading the index */
  sha256?: string;
  auth?: SourceAuth;
  caSecretRef?: CARef;
  caConfigMapRef?: CARef;
}

export type SourceKind = 'image' | 'git' | 'http' | 'helm';

export interface SourceSpec {
  kind: SourceKind;
  image?: ImageSource;
  git?: GitSource;
  http?: HttpSource;
  helm?: HelmSource;
  destination?: string;
}

/** whether the spec itself names immutable content (image digest, git commit, http or helm sha256) */
export function pinnedBySpec(src: SourceSpec): boolean {
  if (src.image) return src.image.ref.includes('@sha256:');
  if (src.git) return !!src.git.ref.commit;
  if (src.http) return !!src.http.sha256;
  if (src.helm) return !!src.helm.sha256;
  return false;
}

export type BundleFormat = 'plain' | 'helm' | 'registry-v1' | 'kustomize';
export type OnFailure = 'Rollback' | 'Hold';
export type CollisionProtection = 'Prevent' | 'IfNotOwned' | 'None';
/** Enforce: refuse CRD changes that would break existing custom resources (src/apply/crd-safety.ts) */
export type CRDSafety = 'Enforce' | 'None';
/** what deleting the BundleDeployment does to its objects: Delete (uninstall), or Orphan (left in place, no longer managed) */
export type DeletionPolicy = 'Delete' | 'Orphan';

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

/** a Kubernetes label selector (metav1.LabelSelector): every matchLabels entry and every expression must hold */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>;
}

/**
 * Fields of matching objects Hoist neither applies over nor treats as drift (after Flux's drift
 * ignore rules): an HPA's /spec/replicas, an injected caBundle. Set by the bundle on create only.
 */
export interface DriftIgnoreRule {
  /** which objects of the bundle; every member set must match */
  target: { group?: string; version?: string; kind?: string; name?: string; namespace?: string; labelSelector?: LabelSelector };
  /** RFC 6901 JSON pointers, e.g. /spec/replicas */
  jsonPointers: string[];
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

/**
 * Values read from a Secret or ConfigMap key (Flux HelmRelease's valuesFrom): merged in order
 * after valuesFiles, `values` last. Read like source credentials (DESIGN §7), watched, and never
 * written to status, events or logs.
 */
export interface HelmValuesReference {
  kind: 'Secret' | 'ConfigMap';
  name: string;
  /** default `values.yaml` (the CRD's default) */
  valuesKey?: string;
  /** dot path the key's whole text is set at as one value; unset: the key holds a values.yaml merged at the root */
  targetPath?: string;
  /** a missing object or key is skipped (default false) */
  optional?: boolean;
}
export const DEFAULT_VALUES_KEY = 'values.yaml';

export interface HelmConfig {
  releaseName?: string;
  /** merged last */
  values?: Record<string, unknown>;
  /** values files of the chart's tree, relative to the chart's directory, merged first (after the chart's values.yaml) */
  valuesFiles?: string[];
  valuesFrom?: HelmValuesReference[];
}

/** an `images` entry of a kustomization (kustomize's types.Image) */
export interface KustomizeImage {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

/** a `patches` entry of a kustomization with the patch inline (kustomize's types.Patch without path) */
export interface KustomizePatch {
  /** a strategic merge patch or a JSON 6902 patch, as YAML or JSON text */
  patch: string;
  target?: {
    group?: string;
    version?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    labelSelector?: string;
    annotationSelector?: string;
  };
}

/**
 * How a `kustomize` bundle is built: `kustomize build` of `path`; the other members are the
 * fields of a kustomization whose only resource is that directory, so they apply to its output.
 */
export interface KustomizeConfig {
  /** the kustomization's directory, relative to the tree; default the root */
  path?: string;
  namePrefix?: string;
  images?: KustomizeImage[];
  patches?: KustomizePatch[];
}

/** a ConfigMap or Secret whose data keys are post-build variables (Flux's SubstituteReference) */
export interface SubstituteReference {
  kind: 'ConfigMap' | 'Secret';
  name: string;
  /** a missing object counts as one without variables (default false) */
  optional?: boolean;
}

/**
 * Flux kustomize-controller's post-build variable substitution, for plain and kustomize bundles:
 * `${var}` expressions in the rendered objects are replaced (src/processors/post-build). The
 * variables are `substituteFrom` in order, each overriding the ones before, then `substitute`
 * over them all. Read as the BD's identity, watched; a change renders a new revision.
 */
export interface PostBuild {
  /** WithVariables (default): only substitute when there is at least one variable; Always: also without */
  substituteStrategy?: 'WithVariables' | 'Always';
  substitute?: Record<string, string>;
  substituteFrom?: SubstituteReference[];
}

/**
 * Another BundleDeployment that must be ready before this one applies a new revision (after
 * Flux's dependsOn): done and Succeeded at its current generation, or, with readyExpr, a CEL
 * expression over `dep` (that BundleDeployment) and `self` (this one) that holds.
 */
export interface DependencyRef {
  name: string;
  /** replaces the built-in readiness check, as in Flux */
  readyExpr?: string;
}

/** the suffix of the Secret entries spec.decryption reads age identities from (Flux's) */
export const AGE_KEY_SUFFIX = '.agekey';

/**
 * SOPS decryption of the bundle's encrypted files before they are rendered (Flux's
 * spec.decryption, age keys only): the identities are every `*.agekey` entry of the Secret.
 */
export interface Decryption {
  provider: 'sops';
  secretRef: SecretRef;
}

export interface BundleDeploymentSpec {
  paused?: boolean;
  /** BundleDeployments that must be ready before a new revision of this one is applied */
  dependsOn?: DependencyRef[];
  installNamespace?: string;
  format: BundleFormat;
  sources: SourceSpec[];
  config?: {
    helm?: HelmConfig;
    registryV1?: {
      /** "" AllNamespaces, installNamespace OwnNamespace, another SingleNamespace; shorthand for watchNamespaces: [x] */
      watchNamespace?: string;
      /** two or more: MultiNamespace; exclusive with watchNamespace */
      watchNamespaces?: string[];
      deploymentConfig?: RegistryV1DeploymentConfig;
    };
    kustomize?: KustomizeConfig;
  };
  /** plain and kustomize only: Flux's post-build variable substitution */
  postBuild?: PostBuild;
  pollInterval?: string;
  upgrade?: { onFailure?: OnFailure; progressDeadline?: string; crdSafety?: CRDSafety };
  healthChecks?: HealthCheck[];
  /** fields other controllers own: not applied after create, not corrected (src/apply/drift-ignore.ts) */
  driftIgnore?: DriftIgnoreRule[];
  revisionHistoryLimit?: number;
  collisionProtection?: CollisionProtection;
  serviceAccount?: { name: string };
  /** SOPS-encrypted files decrypted with the age keys of a Secret (src/processors/sops) */
  decryption?: Decryption;
  /**
   * install into another cluster (docs/design.md "Remote clusters"): the kubeconfig in this Secret
   * of the management cluster, read as the BundleDeployment's identity; key default `value`
   * (Cluster API's), then `value.yaml`
   */
  kubeConfig?: KubeConfigRef;
  /** delete CRDs on uninstall; default false: CRDs outlive the BundleDeployment */
  deleteCRDsOnUninstall?: boolean;
  /** default Delete; Orphan: deleting the BundleDeployment leaves every object in place, no longer managed */
  deletionPolicy?: DeletionPolicy;
}

export interface KubeConfigRef {
  secretRef: { name: string; namespace: string; key?: string };
}

export interface TargetStatus {
  /** host (and port) of the remote cluster's API server */
  cluster: string;
  /** "namespace/name" of the kubeconfig Secret it was installed with */
  kubeConfigSecret: string;
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
  /** http validators kept for cheap conditional polls (helm: of the repository's index.yaml) */
  etag?: string;
  lastModified?: string;
  resolvedAt?: string;
  /** helm sources: the chart version the index gave for spec.helm.version */
  version?: string;
  /** helm sources: the chart tarball's URL as the index gave it (kept only when it has no query) */
  chartURL?: string;
  /** image sources with `verify`: how the signature check came out */
  verification?: SourceVerification;
}

export interface SourceVerification {
  provider: 'cosign';
  policy: VerificationPolicy;
  /** Verified, or Failed (only ever recorded under policy Warn: Enforce refuses instead) */
  result: 'Verified' | 'Failed';
  /** the digest the signature covers (status.digest) */
  digest?: string;
  /** which configured key matched: `Secret ns/name key cosign.pub` */
  key?: string;
  /** SHA-256 of the matching key's SubjectPublicKeyInfo (DER), `sha256:<hex>` */
  keyFingerprint?: string;
  /** digest of the signature manifest that held the matching signature */
  signature?: string;
  /** how the signature manifest was found: cosign's `sha256-<hex>.sig` tag or the OCI 1.1 referrers */
  via?: 'tag' | 'referrers';
  /** Failed: the error code and message */
  reason?: string;
  message?: string;
}

export interface RevisionRef {
  number: number;
  contentDigest: string;
  objects?: number;
  /** activeRevision only: what was applied and how the objects looked right after (see the CRD) */
  appliedDigest?: string;
}

/** one object of a revision, as Flux's inventory names it: id `<namespace>_<name>_<group>_<kind>`, v the API version */
export interface InventoryEntry {
  id: string;
  v: string;
}

/**
 * The objects of the active revision (Flux's `.status.inventory`), bounded: a revision with more
 * objects than fit lists the first ones (by id), says `truncated`, and names where all of them are.
 */
export interface Inventory {
  entries: InventoryEntry[];
  /** set when entries does not list every object */
  truncated?: boolean;
  /** with truncated: how many objects the revision has */
  total?: number;
  /** with truncated: the revision Secrets holding every object */
  revisionSecrets?: { namespace: string; labelSelector: string };
}

/**
 * An object that left the bundle (upgrade, rollback) and was kept, not deleted, because of its
 * retention policy (`helm.sh/resource-policy: keep`, `core.rukpak.io/prune: disabled`): it stays
 * in place without Hoist's owner label; the lineage takes it back when a revision has it again.
 */
export interface KeptObject extends InventoryEntry {
  /** the annotation that kept it, as `name: value` */
  policy: string;
  /** the revision whose objects no longer included it */
  revision: number;
}

export interface ActiveRevision extends RevisionRef {
  /** RFC 3339: when its objects were applied as a new revision (upgrade or rollback); progressDeadline counts from here */
  appliedAt?: string;
  /** RFC 3339: when it first became healthy after appliedAt; a revision healthy once is never rolled back by progressDeadline */
  healthyAt?: string;
  /** the revision's objects (src/revisions/inventory.ts) */
  inventory?: Inventory;
}

export interface AttemptedRevision extends RevisionRef {
  /** the condition reason of its failure (ApplyFailed, ConflictingOwner, UnsafeCRDUpgrade) */
  reason: string;
  /** the spec generation it failed under: it is not tried again until the generation changes */
  generation?: number;
  /** set when the failure rolled back to this revision number */
  rolledBackTo?: number;
  /**
   * RFC 3339: when this revision's apply first failed transiently (no response, 5xx, throttling);
   * it is retried with backoff until progressDeadline after this, then onFailure decides
   */
  failingSince?: string;
}

export interface RevisionStatus extends RevisionRef {
  phase: 'Active' | 'Superseded' | 'Failed';
  /** the Helm hooks that ran when this revision was installed, upgraded to or rolled back to */
  hooks?: HookRun[];
}

/** Helm's hook events (helm.sh/hook), the ones Hoist runs */
export type HookEvent = 'pre-install' | 'post-install' | 'pre-upgrade' | 'post-upgrade' | 'pre-rollback' | 'post-rollback' | 'pre-delete' | 'post-delete';

/** one run of one Helm hook object for one event */
export interface HookRun {
  event: HookEvent;
  kind: string;
  name: string;
  namespace?: string;
  result: 'Running' | 'Succeeded' | 'Failed';
  /** why it failed (the Job's condition reason and message), or what it waited for */
  message?: string;
  startedAt: string;
  completedAt?: string;
  /** removed after the run by its helm.sh/hook-delete-policy */
  deleted?: boolean;
}

/**
 * A new revision on its way in: its hooks that ran so far and the phase it waits to apply. Kept
 * in status so that a later reconcile (a watch event, a restart) neither runs a hook again nor
 * restarts the progressDeadline clock.
 */
export interface Transition {
  revision: number;
  contentDigest: string;
  /** which hooks it runs: install (the BD's first revision), upgrade, or rollback */
  action?: 'install' | 'upgrade' | 'rollback';
  /** RFC 3339: when the transition began; progressDeadline counts from here */
  startedAt: string;
  /** the apply phase waiting for the phases before it to become ready */
  phase?: string;
  /** what the phase waits for (the objects not ready yet) */
  waiting?: string;
  hooks?: HookRun[];
}

export interface BundleDeploymentStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  resolvedSources?: ResolvedSourceStatus[];
  contentDigest?: string;
  activeRevision?: ActiveRevision;
  attemptedRevision?: AttemptedRevision;
  /** a new revision being installed, phase by phase, with its hooks */
  transition?: Transition;
  revisions?: RevisionStatus[];
  skippedOptional?: string[];
  /** objects that left the bundle and were kept by their retention policy: left in place, no longer managed */
  keptObjects?: KeptObject[];
  /** the last core.rukpak.io/requested-at value the controller acted on */
  lastHandledRequest?: string;
  /** spec.kubeConfig: the remote cluster installed into (never credentials) */
  target?: TargetStatus;
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
