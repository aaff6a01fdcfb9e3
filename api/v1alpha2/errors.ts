/** The API package's error vocabulary: spec values its defaulting refuses (defaults.ts). */
import { codeNames } from '../../src/util/codes.ts';

export const SPEC_CODES = [
  /** a duration field (progressDeadline, healthChecks' periods, …) that is malformed or not positive */
  'invalid-duration',
] as const;
export type SpecCode = (typeof SPEC_CODES)[number];
export const SpecCode = codeNames(SPEC_CODES);

declare module '../../src/util/errors.ts' {
  interface HoistCodes {
    spec: SpecCode;
  }
}
