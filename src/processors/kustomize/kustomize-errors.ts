/**
 * How the kustomize processor fails: HoistErrors of stage 'process' (reason ProcessFailed); a bad
 * kustomization is terminal, kustomize not finishing (timeout, could not start) transient.
 * kustomize's stderr becomes the message without its "Error: " prefix.
 */
import { HoistError } from '../../util/errors.ts';
import { ProcessCode, processError } from '../errors.ts';

/** kustomize's stderr as a message: its text on one line, without the "Error: " prefix */
export function kustomizeFailure(stderr: string, subject: string): HoistError {
  const text = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join(' ')
    .replace(/^Error: /, '');
  return processError(text || 'kustomize build failed without a message', ProcessCode.KustomizeFailed, subject);
}
