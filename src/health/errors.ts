/**
 * The health layer's error vocabulary: a health check the controller refuses to evaluate (bad
 * syntax, or over a cost or size limit) is a terminal spec error naming the check.
 */
import { HoistError } from '../util/errors.ts';

export const HealthCode = {
  BadHealthCheck: 'bad-health-check',
  HealthCheckLimit: 'health-check-limit',
} as const;
export type HealthCode = (typeof HealthCode)[keyof typeof HealthCode];

export function healthCheckError(check: string, what: string, code: HealthCode = HealthCode.BadHealthCheck, cause?: unknown): HoistError {
  return new HoistError(`healthChecks[${check}]: ${what}`, { stage: 'spec', code, subject: `health check ${check}`, terminal: true, cause });
}
