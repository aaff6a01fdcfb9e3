/**
 * The sources layer's error vocabulary: every code a source (http, git, image, helm, composition,
 * signature verification) can fail with, and the one constructor the layer uses. The reason
 * follows the stage (ResolveFailed / FetchFailed / InvalidSpec) unless a narrower one is given;
 * the subject is a URL without credentials, a repository, or an image reference.
 */
import { HoistError, type FailureReason, type Stage } from '../util/errors.ts';

/** Codes of source failures; tests and callers tell failures apart by these, never by message. */
export const SourceCode = {
  Aborted: 'aborted',
  AuthFailed: 'auth-failed',
  BadArchive: 'bad-archive',
  BadPublicKey: 'bad-public-key',
  BadRedirect: 'bad-redirect',
  BadResolution: 'bad-resolution',
  BadUrl: 'bad-url',
  CacheRace: 'cache-race',
  ComposeFailed: 'compose-failed',
  CredentialHostMismatch: 'credential-host-mismatch',
  CredentialHostsMissing: 'credential-hosts-missing',
  CredentialsInUrl: 'credentials-in-url',
  CredentialsRequired: 'credentials-required',
  DeadlineExceeded: 'deadline-exceeded',
  DigestMismatch: 'digest-mismatch',
  DirectoryMissing: 'directory-missing',
  Forbidden: 'forbidden',
  HostKeyMismatch: 'host-key-mismatch',
  HostKeyUnknown: 'host-key-unknown',
  HttpStatus: 'http-status',
  InsecureCredentials: 'insecure-credentials',
  InsecureRedirect: 'insecure-redirect',
  InvalidCaDir: 'invalid-ca-dir',
  InvalidCredentials: 'invalid-credentials',
  InvalidDigest: 'invalid-digest',
  InvalidDirectory: 'invalid-directory',
  InvalidIndex: 'invalid-index',
  InvalidManifest: 'invalid-manifest',
  InvalidRef: 'invalid-ref',
  InvalidReference: 'invalid-reference',
  InvalidRegistriesConf: 'invalid-registries-conf',
  InvalidSecret: 'invalid-secret',
  InvalidSource: 'invalid-source',
  InvalidSpec: 'invalid-spec',
  InvalidTagList: 'invalid-tag-list',
  InvalidUrl: 'invalid-url',
  KnownHostsMissing: 'known-hosts-missing',
  LayerNotFound: 'layer-not-found',
  ManifestTooLarge: 'manifest-too-large',
  Network: 'network',
  NoMatchingVersion: 'no-matching-version',
  NotACommit: 'not-a-commit',
  NotFound: 'not-found',
  NotResolved: 'not-resolved',
  NotSmartHttp: 'not-smart-http',
  OutputTooLarge: 'output-too-large',
  PackTooLarge: 'pack-too-large',
  PathTraversal: 'path-traversal',
  PlatformNotFound: 'platform-not-found',
  ProtocolError: 'protocol-error',
  RateLimited: 'rate-limited',
  Redirect: 'redirect',
  RegistryBlocked: 'registry-blocked',
  SignatureDigestMismatch: 'signature-digest-mismatch',
  SignatureNotFound: 'signature-not-found',
  SignaturePayloadInvalid: 'signature-payload-invalid',
  SignatureUntrusted: 'signature-untrusted',
  SizeMismatch: 'size-mismatch',
  SshUnavailable: 'ssh-unavailable',
  SymlinkEscape: 'symlink-escape',
  SymlinkTargetTooLarge: 'symlink-target-too-large',
  Timeout: 'timeout',
  TlsVerifyFailed: 'tls-verify-failed',
  Token: 'token',
  TooLarge: 'too-large',
  TooManyFiles: 'too-many-files',
  TooManyLinks: 'too-many-links',
  TooManyRedirects: 'too-many-redirects',
  TooManyTags: 'too-many-tags',
  Truncated: 'truncated',
  Unauthorized: 'unauthorized',
  UnknownChart: 'unknown-chart',
  UnknownRef: 'unknown-ref',
  UnsafePath: 'unsafe-path',
  UnsupportedMediaType: 'unsupported-media-type',
  UnsupportedSource: 'unsupported-source',
  UnsupportedUrl: 'unsupported-url',
} as const;
export type SourceCode = (typeof SourceCode)[keyof typeof SourceCode];

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
