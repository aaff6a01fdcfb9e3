/**
 * How the kustomize processor fails: HoistErrors of stage 'process', reason ProcessFailed; a bad
 * kustomization is terminal, kustomize not finishing (timeout, could not start) transient.
 * kustomize's stderr becomes the message without its "Error: " prefix.
 */
import { HoistError } from '../../util/errors.ts';
import { PROCESS_FAILED } from '../errors.ts';

export type KustomizeErrorCode =
  | 'kustomization-not-found'
  | 'invalid-kustomization'
  | 'unsupported-kustomization'
  | 'remote-base'
  | 'invalid-config'
  | 'kustomize-failed'
  | 'kustomize-unavailable'
  | 'kustomize-timeout'
  | 'output-too-large';

const TRANSIENT: ReadonlySet<KustomizeErrorCode> = new Set(['kustomize-unavailable', 'kustomize-timeout']);

export function kustomizeError(message: string, code: KustomizeErrorCode, subject?: string, cause?: unknown): HoistError {
  return new HoistError(message, { stage: 'process', reason: PROCESS_FAILED, code, ...(subject === undefined ? {} : { subject }), terminal: !TRANSIENT.has(code), ...(cause === undefined ? {} : { cause }) });
}

/** kustomize's stderr as a message: its text on one line, without the "Error: " prefix */
export function kustomizeFailure(stderr: string, subject: string): HoistError {
  const text = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join(' ')
    .replace(/^Error: /, '');
  return kustomizeError(text || 'kustomize build failed without a message', 'kustomize-failed', subject);
}
