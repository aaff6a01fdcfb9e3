/**
 * The health layer's error vocabulary: a health check the controller refuses to evaluate (bad
 * syntax, or over a cost or size limit) is a terminal spec error naming the check; a cluster-wide
 * health rule likewise names its file and rule (rules/config.ts), and stops start-up.
 */
import { codeNames } from '../util/codes.ts';
import { HoistError } from '../util/errors.ts';

export const HEALTH_CODES = [
  'bad-health-check',
  /** a cluster-wide health rule (hoist run --health-rules) the controller refuses to start with */
  'bad-health-rule',
  'health-check-limit',
] as const;
export type HealthCode = (typeof HEALTH_CODES)[number];
export const HealthCode = codeNames(HEALTH_CODES);

declare module '../util/errors.ts' {
  interface HoistCodes {
    health: HealthCode;
  }
}

export function healthCheckError(check: string, what: string, code: HealthCode = HealthCode.BadHealthCheck, cause?: unknown): HoistError {
  return new HoistError(`healthChecks[${check}]: ${what}`, { stage: 'spec', code, subject: `health check ${check}`, terminal: true, cause });
}

/**
 * CEL evaluation error codes of `matches()` on RE2 (cel-regex.ts): the CEL library's own form
 * (snake case), kept in a failing check's message in place of the library's text.
 */
export const CelRegexCode = {
  InvalidRegularExpression: 'invalid_regular_expression',
  RegularExpressionTooLarge: 'regular_expression_too_large',
} as const;
export type CelRegexCode = (typeof CelRegexCode)[keyof typeof CelRegexCode];
