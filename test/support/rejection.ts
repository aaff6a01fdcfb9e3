/** The HoistError a promise rejects with; any other outcome fails the test. */
import { HoistError } from '../../src/util/errors.ts';

export async function hoistRejection(p: Promise<unknown>): Promise<HoistError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof HoistError) return e;
    throw e;
  }
  throw new Error('expected a HoistError');
}
