import { isHoistError, type HoistError } from '../../src/util/errors.ts';

/** the HoistError `p` rejects with; any other outcome fails the test */
export async function failure(p: Promise<unknown>): Promise<HoistError> {
  try {
    await p;
  } catch (e) {
    if (isHoistError(e)) return e;
    throw e;
  }
  throw new Error('expected a failure');
}
