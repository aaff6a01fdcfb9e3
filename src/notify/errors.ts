/**
 * The notification layer's error vocabulary: a provider or route that cannot be used (a missing or
 * unreadable Secret, an address bound to no host) and deliveries that failed. These never reach a
 * BundleDeployment's status: they go to the route's status, the log and the metrics.
 */
import { SourceCode } from '../sources/errors.ts';
import { borrow, codeNames } from '../util/codes.ts';
import { HoistError } from '../util/errors.ts';

export const NOTIFY_CODES = [
  'bad-address',
  'ca-invalid',
  'credential-hosts',
  'delivery-failed',
  'provider-not-found',
  /** a 2xx answer saying the request failed (Slack Web API `ok: false`) */
  'provider-refused',
  'secret-forbidden',
  'secret-key-missing',
  'secret-not-found',
  'unreachable',
] as const;
export const NotifyCode = Object.freeze({ ...codeNames(NOTIFY_CODES), ...borrow(SourceCode, 'HttpStatus', 'InsecureCredentials', 'Timeout') });
export type NotifyCode = (typeof NotifyCode)[keyof typeof NotifyCode];

declare module '../util/errors.ts' {
  interface HoistCodes {
    notify: (typeof NOTIFY_CODES)[number];
  }
}

/** a notification failure; `terminal`: retrying the same delivery cannot help (a 4xx, a bad provider) */
export function notifyError(message: string, code: NotifyCode, subject: string, terminal: boolean): HoistError {
  return new HoistError(message, { stage: 'observe', code, subject, terminal });
}
