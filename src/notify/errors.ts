/**
 * The notification layer's error vocabulary: a provider or route that cannot be used (a missing or
 * unreadable Secret, an address bound to no host) and deliveries that failed. These never reach a
 * BundleDeployment's status: they go to the route's status, the log and the metrics.
 */
import { HoistError } from '../util/errors.ts';

export const NotifyCode = {
  BadAddress: 'bad-address',
  CaInvalid: 'ca-invalid',
  CredentialHosts: 'credential-hosts',
  DeliveryFailed: 'delivery-failed',
  HttpStatus: 'http-status',
  InsecureCredentials: 'insecure-credentials',
  ProviderNotFound: 'provider-not-found',
  SecretForbidden: 'secret-forbidden',
  SecretKeyMissing: 'secret-key-missing',
  SecretNotFound: 'secret-not-found',
  Timeout: 'timeout',
  Unreachable: 'unreachable',
} as const;
export type NotifyCode = (typeof NotifyCode)[keyof typeof NotifyCode];

/** a notification failure; `terminal`: retrying the same delivery cannot help (a 4xx, a bad provider) */
export function notifyError(message: string, code: NotifyCode, subject: string, terminal: boolean): HoistError {
  return new HoistError(message, { stage: 'observe', code, subject, terminal });
}
