/**
 * The sources layer's error vocabulary: every code a source (http, git, image, helm, composition,
 * signature verification) can fail with, and the one constructor the layer uses. The reason
 * follows the stage (ResolveFailed / FetchFailed / InvalidSpec) unless a narrower one is given;
 * the subject is a URL without credentials, a repository, or an image reference.
 */
import { CacheCode } from '../cache/errors.ts';
import { ProcessCode } from '../processors/errors.ts';
import { borrow, codeNames } from '../util/codes.ts';
import { ContentCode, HoistError, type FailureReason, type Stage } from '../util/errors.ts';

/** Codes of source failures; tests and callers tell failures apart by these, never by message. */
export const SOURCE_CODES = [
  'auth-failed',
  'bad-public-key',
  'bad-redirect',
  'bad-resolution',
  'bad-url',
  'compose-failed',
  'credential-host-mismatch',
  'credential-hosts-missing',
  'credentials-in-url',
  'credentials-required',
  'deadline-exceeded',
  'digest-mismatch',
  'directory-missing',
  'host-key-mismatch',
  'host-key-unknown',
  'http-status',
  'insecure-credentials',
  'insecure-redirect',
  'invalid-ca-dir',
  'invalid-credentials',
  'invalid-digest',
  'invalid-directory',
  'invalid-index',
  'invalid-manifest',
  'invalid-ref',
  'invalid-reference',
  'invalid-registries-conf',
  'invalid-secret',
  'invalid-source',
  'invalid-spec',
  'invalid-tag-list',
  'invalid-url',
  'known-hosts-missing',
  'layer-not-found',
  'manifest-too-large',
  'network',
  'no-matching-version',
  'not-a-commit',
  'not-resolved',
  'not-smart-http',
  'pack-too-large',
  'platform-not-found',
  'protocol-error',
  'rate-limited',
  'redirect',
  'registry-blocked',
  'signature-digest-mismatch',
  'signature-not-found',
  'signature-payload-invalid',
  'signature-untrusted',
  'size-mismatch',
  'ssh-unavailable',
  'symlink-target-too-large',
  'timeout',
  'tls-verify-failed',
  'token',
  'too-many-redirects',
  'too-many-tags',
  'truncated',
  'unauthorized',
  'unknown-chart',
  'unknown-ref',
  'unsafe-path',
  'unsupported-media-type',
  'unsupported-source',
  'unsupported-url',
] as const;
export const SourceCode = Object.freeze({
  ...codeNames(SOURCE_CODES),
  ...borrow(ContentCode, 'Aborted', 'BadArchive', 'Forbidden', 'NotFound', 'PathTraversal', 'SymlinkEscape', 'TooLarge', 'TooManyFiles', 'TooManyLinks'),
  ...borrow(CacheCode, 'CacheRace'),
  ...borrow(ProcessCode, 'OutputTooLarge'),
});
export type SourceCode = (typeof SourceCode)[keyof typeof SourceCode];

declare module '../util/errors.ts' {
  interface HoistCodes {
    source: (typeof SOURCE_CODES)[number];
  }
}

export interface SourceErrorInit {
  stage: Stage;
  code: SourceCode;
  subject?: string | undefined;
  terminal: boolean;
  reason?: FailureReason;
  cause?: unknown;
}

export function sourceError(message: string, init: SourceErrorInit): HoistError {
  return new HoistError(message, init);
}
