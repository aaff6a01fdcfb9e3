/**
 * The one way processors fail: a HoistError of stage 'process'. A bad bundle cannot be fixed by
 * retrying, so a processor error is terminal, except when the renderer (helm, kustomize) could not
 * run to completion; the subject names the file (relative to the content tree, with ":line" when
 * the parser knows it) or the object.
 */
import { HoistError } from '../util/errors.ts';

/** Codes processors use, so callers and tests can tell failures apart without parsing messages. */
export const ProcessCode = {
  ChartAmbiguous: 'chart-ambiguous',
  ChartNotFound: 'chart-not-found',
  /** a SOPS-encrypted file sops would refuse: a value that does not decrypt, an unsupported key setup */
  DecryptFailed: 'decrypt-failed',
  /** a SOPS-encrypted file without spec.decryption, or none of its age identities opens the data key */
  DecryptionKeyMissing: 'decryption-key-missing',
  DuplicateObject: 'duplicate-object',
  HelmFailed: 'helm-failed',
  HelmTimeout: 'helm-timeout',
  HelmUnavailable: 'helm-unavailable',
  InvalidBundle: 'invalid-bundle',
  InvalidChart: 'invalid-chart',
  InvalidConfig: 'invalid-config',
  InvalidKustomization: 'invalid-kustomization',
  InvalidObject: 'invalid-object',
  /** spec.postBuild: a variable whose name Flux refuses */
  InvalidVariableName: 'invalid-variable-name',
  KustomizationNotFound: 'kustomization-not-found',
  KustomizeFailed: 'kustomize-failed',
  KustomizeTimeout: 'kustomize-timeout',
  KustomizeUnavailable: 'kustomize-unavailable',
  /** a SOPS-encrypted file whose MAC does not match its values: changed after it was encrypted */
  MacMismatch: 'mac-mismatch',
  MissingDependency: 'missing-dependency',
  NotARegularFile: 'not-a-regular-file',
  NotFound: 'not-found',
  OutputTooLarge: 'output-too-large',
  ParseError: 'parse-error',
  ReadError: 'read-error',
  RemoteBase: 'remote-base',
  RevisionTooLarge: 'revision-too-large',
  SpecialFile: 'special-file',
  /** spec.postBuild: a `${…}` that does not parse, or an object that is no longer one after substitution */
  SubstitutionFailed: 'substitution-failed',
  /** spec.postBuild: over the size or work limit of a substitution */
  SubstitutionBudget: 'substitution-budget',
  SymlinkEscape: 'symlink-escape',
  TemplateError: 'template-error',
  TooLarge: 'too-large',
  UnsupportedApi: 'unsupported-api',
  UnsupportedFormat: 'unsupported-format',
  UnsupportedInstallMode: 'unsupported-install-mode',
  UnsupportedKustomization: 'unsupported-kustomization',
  ValuesSchema: 'values-schema',
  /** spec.postBuild: `${var}` (or `${var:?message}`) with no such variable */
  VariableNotSet: 'variable-not-set',
  YamlAliasBudget: 'yaml-alias-budget',
} as const;
export type ProcessCode = (typeof ProcessCode)[keyof typeof ProcessCode];
/** a renderer that could not run to completion (killed by its timeout, could not start): worth a retry */
const TRANSIENT: ReadonlySet<ProcessCode> = new Set([
  ProcessCode.HelmUnavailable,
  ProcessCode.HelmTimeout,
  ProcessCode.KustomizeUnavailable,
  ProcessCode.KustomizeTimeout,
]);

/** A processor failure: terminal (a bad bundle stays bad) unless the renderer itself did not finish. */
export function processError(message: string, code: ProcessCode, subject?: string, cause?: unknown): HoistError {
  return new HoistError(message, {
    stage: 'process',
    code,
    ...(subject === undefined ? {} : { subject }),
    terminal: !TRANSIENT.has(code),
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Collected problems become one error: the first problem's code and subject, every message in
 * order. Processors report all problems of a bundle at once rather than stopping at the first,
 * so a user fixes them in one round.
 */
export function combineProcessErrors(errors: HoistError[]): HoistError | undefined {
  const first = errors[0];
  if (first === undefined) return undefined;
  if (errors.length === 1) return first;
  const shown = errors.slice(0, 20).map((e) => (e.subject ? `${e.subject}: ${e.message}` : e.message));
  const more = errors.length > shown.length ? `; and ${errors.length - shown.length} more` : '';
  return processError(`${errors.length} problems: ${shown.join('; ')}${more}`, first.code as ProcessCode, first.subject, errors);
}
