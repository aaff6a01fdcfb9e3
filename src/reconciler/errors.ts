/**
 * The reconciler's error vocabulary: failures of the pipeline's own steps (revision bookkeeping,
 * progress deadline, rollback, uninstall, references a BundleDeployment makes to Secrets and
 * ConfigMaps). Failures of sources, processors and the applier carry their own layer's codes.
 */
import { HoistError, type FailureReason, type Stage } from '../util/errors.ts';

export const ReconcileCode = {
  ApplyFailed: 'apply-failed',
  BadReadyExpr: 'bad-ready-expr',
  BadSpec: 'bad-spec',
  CaInvalid: 'ca-invalid',
  CaKeyMissing: 'ca-key-missing',
  CaNotFound: 'ca-not-found',
  ConfigMapForbidden: 'configmap-forbidden',
  ConfigMapNotFound: 'configmap-not-found',
  /** spec.decryption's Secret holds no age identity, or an entry that is not one */
  DecryptionKeysInvalid: 'decryption-keys-invalid',
  DeleteFailed: 'delete-failed',
  HookFailed: 'hook-failed',
  Internal: 'internal',
  /** spec.kubeConfig: the Secret's kubeconfig is refused (exec plugin, file path, insecure TLS, ...) */
  KubeconfigRefused: 'kubeconfig-refused',
  KubeconfigKeyMissing: 'kubeconfig-key-missing',
  NoServiceAccountNamespace: 'no-service-account-namespace',
  /** an object of a new revision failed (kstatus Failed: Stalled, crash loop, unschedulable, Job failed, …) before it was ever healthy */
  ObjectFailed: 'object-failed',
  ProgressDeadline: 'progress-deadline',
  ReadyExprLimit: 'ready-expr-limit',
  ReconcileTimeout: 'reconcile-timeout',
  RevisionMissing: 'revision-missing',
  RevisionStore: 'revision-store',
  RollbackFailed: 'rollback-failed',
  SecretForbidden: 'secret-forbidden',
  SecretNotFound: 'secret-not-found',
  /** spec.kubeConfig: the server is the management API server or a link-local/metadata address (--allow-restricted-targets) */
  TargetRestricted: 'target-restricted',
  /** spec.kubeConfig: the remote cluster's API server did not answer */
  TargetUnreachable: 'target-unreachable',
  /** spec.kubeConfig changed after something was installed: it would be orphaned in the old cluster */
  TargetChanged: 'target-changed',
  UninstallFailed: 'uninstall-failed',
  Unknown: 'unknown',
  ValuesKeyMissing: 'values-key-missing',
} as const;
export type ReconcileCode = (typeof ReconcileCode)[keyof typeof ReconcileCode];

/** The code for a referenced Secret or ConfigMap the acting identity may not read, or that is missing. */
export function referenceCode(kind: 'Secret' | 'ConfigMap', problem: 'forbidden' | 'missing'): ReconcileCode {
  if (kind === 'Secret') return problem === 'forbidden' ? ReconcileCode.SecretForbidden : ReconcileCode.SecretNotFound;
  return problem === 'forbidden' ? ReconcileCode.ConfigMapForbidden : ReconcileCode.ConfigMapNotFound;
}

export function reconcileError(
  message: string,
  code: ReconcileCode,
  init: { stage: Stage; subject?: string | undefined; terminal: boolean; reason?: FailureReason; cause?: unknown },
): HoistError {
  return new HoistError(message, {
    stage: init.stage,
    code,
    subject: init.subject,
    terminal: init.terminal,
    ...(init.reason ? { reason: init.reason } : {}),
    cause: init.cause,
  });
}
