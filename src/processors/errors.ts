/**
 * The one way processors fail: a terminal HoistError of stage 'process'. A bad bundle cannot be
 * fixed by retrying, so every processor error is terminal; the subject names the file (relative
 * to the content tree, with ":line" when the parser knows it) or the object.
 */
import { HoistError } from '../util/errors.ts';

export const PROCESS_FAILED = 'ProcessFailed';

/** Codes processors use, so callers and tests can tell failures apart without parsing messages. */
export type ProcessErrorCode =
  | 'parse-error'
  // YAML that expands beyond the node budget (yaml/budget.ts)
  | 'yaml-alias-budget'
  | 'invalid-object'
  | 'duplicate-object'
  | 'unsupported-format'
  | 'invalid-bundle'
  | 'unsupported-install-mode'
  | 'unsupported-api'
  | 'invalid-config'
  | 'read-error'
  // the containment rule and size caps (src/util/content-tree.ts, ./bundle-files.ts)
  | 'symlink-escape'
  | 'not-a-regular-file'
  | 'special-file'
  | 'not-found'
  | 'too-large';

export function processError(message: string, code: ProcessErrorCode, subject?: string, cause?: unknown): HoistError {
  return new HoistError(message, {
    stage: 'process',
    reason: PROCESS_FAILED,
    code,
    ...(subject === undefined ? {} : { subject }),
    terminal: true,
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
  return processError(`${errors.length} problems: ${shown.join('; ')}${more}`, first.code as ProcessErrorCode, first.subject, errors);
}
