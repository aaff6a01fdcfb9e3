/**
 * HoistErrors raised by the image source. The reason follows the stage (ResolveFailed /
 * FetchFailed), the code says what went wrong; the subject is always the image reference, which
 * never carries credentials.
 */
import { HoistError, redactUrl, type Stage } from '../../util/errors.ts';

/** the stages an OCI operation runs in; resolve (ref → digest) or fetch (download + unpack) */
export type ImageStage = Extract<Stage, 'resolve' | 'fetch'>;

export type ImageErrorCode =
  | 'unauthorized'
  | 'forbidden'
  | 'credentials-required'
  | 'not-found'
  | 'digest-mismatch'
  | 'size-mismatch'
  | 'truncated'
  | 'unsupported-media-type'
  | 'invalid-manifest'
  | 'manifest-too-large'
  | 'platform-not-found'
  | 'http-status'
  | 'network'
  | 'too-many-redirects'
  | 'insecure-redirect'
  | 'rate-limited'
  | 'token'
  | 'invalid-secret'
  | 'too-many-tags'
  | 'invalid-tag-list'
  | 'no-matching-version';

export function imageError(
  stage: ImageStage,
  code: ImageErrorCode,
  message: string,
  subject: string,
  terminal: boolean,
  cause?: unknown,
): HoistError {
  return new HoistError(message, {
    stage,
    reason: stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed',
    code,
    subject,
    terminal,
    cause,
  });
}

/** Re-labels an error raised at another stage (e.g. a manifest parse shared by resolve and fetch). */
export function atStage(e: HoistError, stage: ImageStage): HoistError {
  if (e.stage === stage || e.stage === 'spec') return e;
  return new HoistError(e.message, {
    stage,
    reason: stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed',
    code: e.code,
    subject: e.subject,
    terminal: e.terminal,
    cause: e.cause,
  });
}

/** The text of any error for a message: lowercase, URLs redacted. */
export function errorText(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  // undici errors can quote the URL; never let userinfo or query tokens through
  return m.replace(/https?:\/\/[^\s'"]+/g, (u) => redactUrl(u)).toLowerCase();
}
