/**
 * The one way processors fail: a HoistError of stage 'process'. A bad bundle cannot be fixed by
 * retrying, so a processor error is terminal, except when the renderer (helm, kustomize) could not
 * run to completion; the subject names the file (relative to the content tree, with ":line" when
 * the parser knows it) or the object.
 */
import { borrow, codeNames } from '../util/codes.ts';
import { ContentCode, HoistError } from '../util/errors.ts';

/** Codes processors use, so callers and tests can tell failures apart without parsing messages. */
export const PROCESS_CODES = [
  'chart-ambiguous',
  'chart-not-found',
  /** a SOPS-encrypted file sops would refuse: a value that does not decrypt, an unsupported key setup */
  'decrypt-failed',
  /** a SOPS-encrypted file without spec.decryption, or none of its age identities opens the data key */
  'decryption-key-missing',
  'duplicate-object',
  'helm-failed',
  'helm-timeout',
  'helm-unavailable',
  'invalid-bundle',
  'invalid-chart',
  'invalid-config',
  'invalid-kustomization',
  'invalid-object',
  /** spec.postBuild: a variable whose name Flux refuses */
  'invalid-variable-name',
  'kustomization-not-found',
  'kustomize-failed',
  'kustomize-timeout',
  'kustomize-unavailable',
  /** a SOPS-encrypted file whose MAC does not match its values: changed after it was encrypted */
  'mac-mismatch',
  'missing-dependency',
  'output-too-large',
  'parse-error',
  'remote-base',
  /** a render thread (hoist run --render-threads) stopped before it answered: the render is retried */
  'render-thread-failed',
  'revision-too-large',
  /** spec.postBuild: a `${…}` that does not parse, or an object that is no longer one after substitution */
  'substitution-failed',
  /** spec.postBuild: over the size or work limit of a substitution */
  'substitution-budget',
  'template-error',
  'unsupported-api',
  'unsupported-format',
  'unsupported-install-mode',
  'unsupported-kustomization',
  'values-schema',
  /** spec.postBuild: `${var}` (or `${var:?message}`) with no such variable */
  'variable-not-set',
  'yaml-alias-budget',
] as const;
export const ProcessCode = Object.freeze({
  ...codeNames(PROCESS_CODES),
  ...borrow(ContentCode, 'NotARegularFile', 'NotFound', 'ReadError', 'SpecialFile', 'SymlinkEscape', 'TooLarge'),
});
export type ProcessCode = (typeof ProcessCode)[keyof typeof ProcessCode];

declare module '../util/errors.ts' {
  interface HoistCodes {
    process: (typeof PROCESS_CODES)[number];
  }
}

/** a renderer that could not run to completion (killed by its timeout, could not start): worth a retry */
const TRANSIENT: ReadonlySet<ProcessCode> = new Set([
  ProcessCode.HelmUnavailable,
  ProcessCode.HelmTimeout,
  ProcessCode.KustomizeUnavailable,
  ProcessCode.KustomizeTimeout,
  ProcessCode.RenderThreadFailed,
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
