/**
 * What an HTTP response status means to Hoist, decided in one place: every source (image, git,
 * http) and the dev cluster's bootstrap requests branch on these classes instead of comparing
 * numbers, so "retry", "ask for credentials" and "give up" mean the same everywhere. (Responses
 * of the API server proper carry a metav1.Status: src/kube/api-error.ts has typed predicates.)
 */

export type StatusClass = 'ok' | 'not-modified' | 'unauthorized' | 'forbidden' | 'not-found' | 'conflict' | 'throttled' | 'retryable' | 'failed';

/** besides 429 (throttled): statuses where the same request may succeed later: timeouts, overload, gateways */
const RETRYABLE = new Set([408, 425, 500, 502, 503, 504]);

/** Pure: the class of an HTTP status code. */
export function classifyStatus(code: number): StatusClass {
  if (code >= 200 && code < 300) return 'ok';
  if (RETRYABLE.has(code)) return 'retryable';
  switch (code) {
    case 304:
      return 'not-modified';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not-found';
    case 409:
      return 'conflict';
    case 429:
      return 'throttled';
    default:
      return 'failed';
  }
}

/**
 * Pure: whether repeating the request unchanged cannot help — a 4xx the client caused (other than
 * the retryable ones). 5xx and odd codes are the server's trouble and worth another try later.
 */
export function retryCannotHelp(code: number): boolean {
  return code >= 400 && code < 500 && !isRetryable(code);
}

/** Pure: whether the same request is worth repeating after a backoff (throttled or retryable). */
export function isRetryable(code: number): boolean {
  const c = classifyStatus(code);
  return c === 'throttled' || c === 'retryable';
}
