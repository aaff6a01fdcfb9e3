import { isHoistError, type HoistError } from '../../src/util/errors.ts';
import { expectNoControllerPaths } from './controller-paths.ts';

/**
 * the HoistError `p` rejects with; any other outcome fails the test. Its condition message
 * (`describe()`) must not name the controller's directories (issue 16).
 */
export async function failure(p: Promise<unknown>): Promise<HoistError> {
  try {
    await p;
  } catch (e) {
    if (isHoistError(e)) {
      expectNoControllerPaths(e.describe());
      return e;
    }
    throw e;
  }
  throw new Error('expected a failure');
}

/** the HoistError `f` throws synchronously; any other outcome fails the test */
export function thrown(f: () => unknown): HoistError {
  try {
    f();
  } catch (e) {
    if (isHoistError(e)) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}
