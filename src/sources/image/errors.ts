/**
 * HoistErrors raised by the image source. The reason follows the stage (ResolveFailed /
 * FetchFailed), the code says what went wrong; the subject is always the image reference, which
 * never carries credentials.
 */
import { HoistError, redactUrl, type Stage } from '../../util/errors.ts';
import { SourceCode, sourceError } from '../errors.ts';

/** the stages an OCI operation runs in; resolve (ref → digest) or fetch (download + unpack) */
export type ImageStage = Extract<Stage, 'resolve' | 'fetch'>;

export type ImageErrorCode =
  | typeof SourceCode.Unauthorized
  | typeof SourceCode.Forbidden
  | typeof SourceCode.CredentialsRequired
  | typeof SourceCode.NotFound
  | typeof SourceCode.DigestMismatch
  | typeof SourceCode.SizeMismatch
  | typeof SourceCode.Truncated
  | typeof SourceCode.UnsupportedMediaType
  | typeof SourceCode.InvalidManifest
  | typeof SourceCode.ManifestTooLarge
  | typeof SourceCode.PlatformNotFound
  | typeof SourceCode.HttpStatus
  | typeof SourceCode.Network
  | typeof SourceCode.TooManyRedirects
  | typeof SourceCode.InsecureRedirect
  | typeof SourceCode.RateLimited
  | typeof SourceCode.Token
  | typeof SourceCode.InvalidSecret
  | typeof SourceCode.TooManyTags
  | typeof SourceCode.InvalidTagList
  | typeof SourceCode.NoMatchingVersion;

export function imageError(stage: ImageStage, code: ImageErrorCode, message: string, subject: string, terminal: boolean, cause?: unknown): HoistError {
  return sourceError(message, {
    stage,
    code,
    subject,
    terminal,
    cause,
  });
}

/** Re-labels an error raised at another stage (e.g. a manifest parse shared by resolve and fetch). */
export function atStage(e: HoistError, stage: ImageStage): HoistError {
  return e.stage === 'spec' ? e : e.atStage(stage);
}

/** The text of any error for a message: lowercase, URLs redacted. */
export function errorText(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  // undici errors can quote the URL; never let userinfo or query tokens through
  return m.replace(/https?:\/\/[^\s'"]+/g, (u) => redactUrl(u)).toLowerCase();
}
