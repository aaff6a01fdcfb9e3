/**
 * How the kustomize processor fails: HoistErrors of stage 'process' (reason ProcessFailed); a bad
 * kustomization is terminal, kustomize not finishing (timeout, could not start) transient.
 * kustomize's stderr becomes the message without its "Error: " prefix.
 */
import { HoistError } from '../../util/errors.ts';
import { ProcessCode } from '../errors.ts';

/** the kustomize processor's codes: a part of the processors' vocabulary */
export type KustomizeErrorCode = ProcessCode;

const TRANSIENT: ReadonlySet<KustomizeErrorCode> = new Set([ProcessCode.KustomizeUnavailable, ProcessCode.KustomizeTimeout]);

export function kustomizeError(message: string, code: KustomizeErrorCode, subject?: string, cause?: unknown): HoistError {
  return new HoistError(message, {
    stage: 'process',
    code,
    ...(subject === undefined ? {} : { subject }),
    terminal: !TRANSIENT.has(code),
    ...(cause === undefined ? {} : { cause }),
  });
}

/** kustomize's stderr as a message: its text on one line, without the "Error: " prefix */
export function kustomizeFailure(stderr: string, subject: string): HoistError {
  const text = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join(' ')
    .replace(/^Error: /, '');
  return kustomizeError(text || 'kustomize build failed without a message', ProcessCode.KustomizeFailed, subject);
}
