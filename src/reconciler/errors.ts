/**
 * The reconciler's error vocabulary: failures of the pipeline's own steps (revision bookkeeping,
 * progress deadline, rollback, uninstall, references a BundleDeployment makes to Secrets and
 * ConfigMaps). Failures of sources, processors and the applier carry their own layer's codes.
 */
import { ApplyCode } from '../apply/errors.ts';
import { NotifyCode } from '../notify/errors.ts';
import { borrow, codeNames } from '../util/codes.ts';
import { ContentCode, HoistError, type FailureReason, type Stage } from '../util/errors.ts';

export const RECONCILE_CODES = [
  'bad-ready-expr',
  'bad-spec',
  'ca-key-missing',
  'ca-not-found',
  'configmap-forbidden',
  'configmap-not-found',
  /** spec.decryption's Secret holds no age identity, or an entry that is not one */
  'decryption-keys-invalid',
  'internal',
  /** spec.kubeConfig: the Secret's kubeconfig is refused (exec plugin, file path, insecure TLS, ...) */
  'kubeconfig-refused',
  'kubeconfig-key-missing',
  'no-service-account-namespace',
  /** an object of a new revision failed (kstatus Failed: Stalled, crash loop, unschedulable, Job failed, …) before it was ever healthy */
  'object-failed',
  'progress-deadline',
  'ready-expr-limit',
  'reconcile-timeout',
  'revision-store',
  'rollback-failed',
  /** spec.kubeConfig: the server is the management API server or a link-local/metadata address (--allow-restricted-targets) */
  'target-restricted',
  /** spec.kubeConfig: the remote cluster's API server did not answer */
  'target-unreachable',
  /** spec.kubeConfig changed after something was installed: it would be orphaned in the old cluster */
  'target-changed',
  'uninstall-failed',
  'values-key-missing',
] as const;
export const ReconcileCode = Object.freeze({
  ...codeNames(RECONCILE_CODES),
  ...borrow(ApplyCode, 'ApplyFailed', 'DeleteFailed', 'HookFailed', 'RevisionMissing'),
  ...borrow(NotifyCode, 'CaInvalid', 'SecretForbidden', 'SecretNotFound'),
  ...borrow(ContentCode, 'Unknown'),
});
export type ReconcileCode = (typeof ReconcileCode)[keyof typeof ReconcileCode];

declare module '../util/errors.ts' {
  interface HoistCodes {
    reconcile: (typeof RECONCILE_CODES)[number];
  }
}

/** The code for a referenced Secret or ConfigMap the acting identity may not read, or that is missing. */
export function referenceCode(kind: 'Secret' | 'ConfigMap', problem: 'forbidden' | 'missing'): ReconcileCode {
  if (kind === 'Secret') return problem === 'forbidden' ? ReconcileCode.SecretForbidden : ReconcileCode.SecretNotFound;
  return problem === 'forbidden' ? ReconcileCode.ConfigmapForbidden : ReconcileCode.ConfigmapNotFound;
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
