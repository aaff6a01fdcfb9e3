/**
 * Typed failures of calls to the API server. An ApiError is a response the API server sent (a
 * metav1.Status); a TransportError is a request that never got one (connection refused, reset,
 * timeout). Callers branch on these to decide between retrying, treating an object as gone, or
 * reporting the server's message verbatim.
 */

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** The metav1.Status body the API server returns on failure. */
export interface Status {
  kind?: 'Status';
  apiVersion?: string;
  status?: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code?: number;
}

export interface ApiErrorInit {
  statusCode: number;
  /** e.g. "get", "apply": what was attempted */
  verb: string;
  /** the object or collection the request named, e.g. "apps/v1 Deployment ns/name" */
  subject: string;
  status: Status | undefined;
  /** the raw body, when the server did not send a Status */
  body?: string;
}

export class ApiError extends Error {
  readonly statusCode: number;
  /** metav1.StatusReason, e.g. NotFound, Conflict, AlreadyExists, Invalid, Expired, Forbidden */
  readonly reason: string;
  /** the API server's own message, unmodified */
  readonly apiMessage: string;
  readonly details: StatusDetails | undefined;
  readonly verb: string;
  readonly subject: string;

  constructor(init: ApiErrorInit) {
    // a Status may carry an empty message: say at least its reason and code, never "create …: " alone
    const apiMessage =
      init.status?.message ||
      (init.status
        ? `${init.status.reason ?? 'no message'} (http status ${init.statusCode})`
        : init.body?.trim().slice(0, 500) || `http status ${init.statusCode}`);
    super(`${init.verb} ${init.subject}: ${apiMessage}`);
    this.name = 'ApiError';
    this.statusCode = init.statusCode;
    this.reason = init.status?.reason ?? reasonForStatusCode(init.statusCode);
    this.apiMessage = apiMessage;
    this.details = init.status?.details;
    this.verb = init.verb;
    this.subject = init.subject;
  }

  get causes(): StatusCause[] {
    return this.details?.causes ?? [];
  }

  /** seconds the server asked us to wait (429, some 5xx), if it said */
  get retryAfterSeconds(): number | undefined {
    return this.details?.retryAfterSeconds;
  }
}

/** A request that got no HTTP response: the connection failed, was reset, or timed out. */
export class TransportError extends Error {
  readonly verb: string;
  readonly subject: string;
  /** the underlying code when there is one, e.g. ECONNREFUSED, ECONNRESET, UND_ERR_SOCKET */
  readonly code: string | undefined;

  constructor(verb: string, subject: string, cause: unknown) {
    super(`${verb} ${subject}: ${transportMessage(cause)}`, { cause });
    this.name = 'TransportError';
    this.verb = verb;
    this.subject = subject;
    this.code = errorCode(cause);
  }
}

/** The kind named by an object or request is not served by the API server (per discovery). */
export class KindNotServedError extends Error {
  readonly apiVersion: string;
  readonly kind: string;

  constructor(apiVersion: string, kind: string) {
    super(`${apiVersion} ${kind} is not served by the api server`);
    this.name = 'KindNotServedError';
    this.apiVersion = apiVersion;
    this.kind = kind;
  }
}

/**
 * The cause's message; when it has none (an AggregateError of several connect attempts, an error
 * thrown without text), its inner errors' messages, its code or its name: something to act on.
 */
function transportMessage(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  if (cause.message) return cause.message;
  const inner = cause instanceof AggregateError ? cause.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).filter(Boolean) : [];
  if (inner.length) return inner.join('; ');
  return errorCode(cause) ?? `${cause.name} without a message`;
}

function errorCode(e: unknown): string | undefined {
  // undici wraps socket errors; the errno code can be on the error or its cause
  for (let cur: unknown = e, depth = 0; cur && depth < 4; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

function reasonForStatusCode(code: number): string {
  switch (code) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 405:
      return 'MethodNotAllowed';
    case 406:
      return 'NotAcceptable';
    case 409:
      return 'Conflict';
    case 410:
      return 'Expired';
    case 415:
      return 'UnsupportedMediaType';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 500:
      return 'InternalError';
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'Timeout';
    default:
      return 'Unknown';
  }
}

/**
 * 422 Invalid because a field may not change: "field is immutable" (Job template, selectors) or
 * "may not change once set" (Service clusterIP). The Status has no structured marker for this, so
 * the causes' messages and the message are read here, in the one module that interprets API
 * server responses — as fluxcd/pkg/ssa's IsImmutableError does.
 */
export function isImmutableField(e: unknown): boolean {
  if (!isInvalid(e)) return false;
  const err = e as ApiError;
  const texts = [...(err.details?.causes ?? []).map((c) => c.message ?? ''), err.apiMessage];
  return texts.some((t) => /immutable|may not change once set/i.test(t));
}

export function isKindNotServed(e: unknown): e is KindNotServedError {
  return e instanceof KindNotServedError;
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
export function isNotFound(e: unknown): boolean {
  return isApiError(e) && e.statusCode === 404;
}
/** optimistic-concurrency conflicts and SSA field conflicts */
export function isConflict(e: unknown): boolean {
  return isApiError(e) && e.statusCode === 409 && e.reason !== 'AlreadyExists';
}
/** a write into a namespace that does not exist: 404 whose details name the namespace, not the object */
export function isNamespaceMissing(e: unknown, namespace: string): boolean {
  return isNotFound(e) && (e as ApiError).details?.kind === 'namespaces' && (e as ApiError).details?.name === namespace;
}
export function isAlreadyExists(e: unknown): boolean {
  return isApiError(e) && e.reason === 'AlreadyExists';
}
/** 410: the resourceVersion is too old (compacted); a watch must relist */
export function isGone(e: unknown): boolean {
  return isApiError(e) && (e.statusCode === 410 || e.reason === 'Expired' || e.reason === 'Gone');
}
export function isInvalid(e: unknown): boolean {
  return isApiError(e) && e.statusCode === 422;
}
export function isForbidden(e: unknown): boolean {
  return isApiError(e) && e.statusCode === 403;
}
/** 500 InternalError: a server-side failure, or (server-side apply) content it could not type */
export function isInternalError(e: unknown): boolean {
  return isApiError(e) && e.statusCode === 500;
}
/** the content itself was refused: it cannot be decoded (400) or is invalid (422) */
export function isMalformed(e: unknown): boolean {
  return isApiError(e) && (e.statusCode === 400 || e.statusCode === 422);
}
/** worth retrying as is: throttling, server-side timeouts, unavailability, or no response at all */
export function isTransient(e: unknown): boolean {
  if (e instanceof TransportError) return true;
  return isApiError(e) && (e.statusCode === 429 || e.statusCode >= 500);
}
