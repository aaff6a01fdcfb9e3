/**
 * Every failure in Hoist is a HoistError: it names the pipeline stage, the subject (a source URL
 * without credentials, a file, or an object as "group/version Kind ns/name"), the condition
 * reason it maps to, and whether retrying can help. Messages are lowercase and never carry
 * credentials.
 */
export type Stage = 'resolve' | 'fetch' | 'process' | 'apply' | 'observe' | 'spec';

export interface HoistErrorInit {
  stage: Stage;
  /** condition reason, e.g. FetchFailed, ProcessFailed, ApplyFailed, ConflictingOwner */
  reason: string;
  /** machine-readable code, e.g. http-status, digest-mismatch, path-traversal */
  code: string;
  subject?: string;
  /** true: a bad bundle or spec, retrying cannot help until something changes */
  terminal: boolean;
  cause?: unknown;
}

export class HoistError extends Error {
  readonly stage: Stage;
  readonly reason: string;
  readonly code: string;
  readonly subject: string | undefined;
  readonly terminal: boolean;

  constructor(message: string, init: HoistErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'HoistError';
    this.stage = init.stage;
    this.reason = init.reason;
    this.code = init.code;
    this.subject = init.subject;
    this.terminal = init.terminal;
  }

  /** "stage: subject: message", the form shown in condition messages. */
  describe(): string {
    return this.subject ? `${this.stage} ${this.subject}: ${this.message}` : `${this.stage}: ${this.message}`;
  }
}

/**
 * Work stopped because its signal fired (the controller stopping, leadership lost), not because
 * what it worked on failed: never terminal, never a reason to mark a revision failed. Whoever
 * runs next does the work again; each step leaves nothing it cannot finish.
 */
export class CancelledError extends HoistError {
  constructor(what: string, init: { stage: Stage; reason: string; subject?: string; cause?: unknown }) {
    super(`${what}: cancelled`, { ...init, code: 'cancelled', terminal: false });
    this.name = 'CancelledError';
  }
}

/** throws a CancelledError for `what` when the signal has fired */
export function throwIfCancelled(signal: AbortSignal | undefined, what: string, init: { stage: Stage; reason: string; subject?: string }): void {
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
