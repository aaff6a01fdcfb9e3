/**
 * Every failure in Hoist is a HoistError: it names the pipeline stage, the subject (a source URL
 * without credentials, a file, or an object as "group/version Kind ns/name"), the condition
 * reason it maps to, and whether retrying can help. Messages are lowercase and never carry
 * credentials.
 */
import { codeNames } from './codes.ts';

export type Stage = 'resolve' | 'fetch' | 'process' | 'apply' | 'observe' | 'spec';

/**
 * The condition reason each stage's failures report, written once: every HoistError's reason is
 * this unless it names one of the narrower reasons below.
 */
const STAGE_REASON = {
  resolve: 'ResolveFailed',
  fetch: 'FetchFailed',
  process: 'ProcessFailed',
  apply: 'ApplyFailed',
  // a revision that did not become ready in time failed its apply
  observe: 'ApplyFailed',
  spec: 'InvalidSpec',
} as const satisfies Record<Stage, string>;

/** Narrower reasons a failure may carry instead of its stage's. */
export const FailureReason = {
  Aborted: 'Aborted',
  ConflictingOwner: 'ConflictingOwner',
  InvalidConfig: 'InvalidConfig',
  PruneFailed: 'PruneFailed',
  UnpackFailed: 'UnpackFailed',
  UnsafeCRDUpgrade: 'UnsafeCRDUpgrade',
  VerificationFailed: 'VerificationFailed',
} as const;

export type FailureReason = (typeof STAGE_REASON)[Stage] | (typeof FailureReason)[keyof typeof FailureReason];

export function reasonFor(stage: Stage): FailureReason {
  return STAGE_REASON[stage];
}

/**
 * Codes shared by every layer that reads content trees and archives (util/content-tree.ts,
 * util/tar-tree-writer.ts, util/unpack-tar.ts) and by generic failures. Each layer declares its
 * own codes next to its code (api/v1alpha2/errors.ts, cache/, sources/, processors/, health/,
 * apply/, notify/, reconciler/ errors.ts) and borrows these names rather than declaring a string
 * again (util/codes.ts).
 */
export const CONTENT_CODES = [
  'aborted',
  'bad-archive',
  'cancelled',
  /** refused by the server: an HTTP 403, a Kubernetes RBAC denial */
  'forbidden',
  'hardlink-escape',
  'link-refused',
  'not-a-regular-file',
  'not-found',
  'path-traversal',
  'read-error',
  'special-file',
  'symlink-escape',
  'too-large',
  'too-many-files',
  'too-many-links',
  'unknown',
] as const;
export type ContentCode = (typeof CONTENT_CODES)[number];
export const ContentCode = codeNames(CONTENT_CODES);

/**
 * Every layer's codes, by layer. util sits below every layer, so it cannot import their code
 * types: each layer's errors.ts adds its union here by declaration merging
 * (`declare module '../util/errors.ts' { interface HoistCodes { apply: ApplyCode } }`), and
 * HoistCode is the union of them all. A code no layer declares does not compile.
 */
export interface HoistCodes {
  content: ContentCode;
}
export type HoistCode = HoistCodes[keyof HoistCodes];

export interface HoistErrorInit<C extends HoistCode = HoistCode> {
  stage: Stage;
  /** the condition reason when narrower than the stage's (reasonFor) */
  reason?: FailureReason;
  /** machine-readable code from a layer's vocabulary, e.g. http-status, digest-mismatch */
  code: C;
  subject?: string | undefined;
  /** true: a bad bundle or spec, retrying cannot help until something changes */
  terminal: boolean;
  cause?: unknown;
}

export class HoistError extends Error {
  readonly stage: Stage;
  readonly reason: FailureReason;
  readonly code: HoistCode;
  readonly subject: string | undefined;
  readonly terminal: boolean;

  constructor(message: string, init: HoistErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'HoistError';
    this.stage = init.stage;
    this.reason = init.reason ?? reasonFor(init.stage);
    this.code = init.code;
    this.subject = init.subject;
    this.terminal = init.terminal;
  }

  /** "stage: subject: message", the form shown in condition messages. */
  describe(): string {
    return this.subject ? `${this.stage} ${this.subject}: ${this.message}` : `${this.stage}: ${this.message}`;
  }

  /** True when this failure has the code `code` (typed: only declared codes). */
  is(code: HoistCode): boolean {
    return this.code === code;
  }

  /** The same failure reported at another stage (and that stage's reason). */
  atStage(stage: Stage): HoistError {
    if (stage === this.stage) return this;
    return new HoistError(this.message, { stage, code: this.code, subject: this.subject, terminal: this.terminal, cause: this.cause });
  }
}

/**
 * Work stopped because its signal fired (the controller stopping, leadership lost), not because
 * what it worked on failed: never terminal, never a reason to mark a revision failed. Whoever
 * runs next does the work again; each step leaves nothing it cannot finish.
 */
export class CancelledError extends HoistError {
  constructor(what: string, init: { stage: Stage; reason?: FailureReason; subject?: string | undefined; cause?: unknown }) {
    super(`${what}: cancelled`, { ...init, code: ContentCode.Cancelled, terminal: false });
    this.name = 'CancelledError';
  }
}

/** throws a CancelledError for `what` when the signal has fired */
export function throwIfCancelled(signal: AbortSignal | undefined, what: string, init: { stage: Stage; reason?: FailureReason; subject?: string }): void {
  if (signal?.aborted) throw new CancelledError(what, { ...init, cause: signal.reason });
}

export function isHoistError(e: unknown): e is HoistError {
  return e instanceof HoistError;
}

/** Wraps anything thrown into a HoistError of the given stage; transient unless told otherwise. */
export function asHoistError(e: unknown, fallback: Omit<HoistErrorInit, 'cause'>): HoistError {
  if (e instanceof HoistError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new HoistError(message, { ...fallback, cause: e });
}

/** Removes userinfo (user:password@) and query strings that may hold tokens from a URL for display. */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    u.username = '';
    u.password = '';
    u.search = '';
    return u.toString();
  } catch {
    return raw.replace(/\/\/[^/@]*@/, '//');
  }
}
