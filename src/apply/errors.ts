/**
 * The applier's error vocabulary: its codes, and the errors that carry the objects they are about
 * (which objects were refused and what the API server said, who owns a conflicting object, which
 * CRD changes are unsafe), so callers decide on types and fields, never on message text.
 */
import { ProcessCode } from '../processors/errors.ts';
import { borrow, codeNames } from '../util/codes.ts';
import { ContentCode, FailureReason, HoistError, type Stage } from '../util/errors.ts';
import type { CrdSafetyProblem } from './crd-safety.ts';

export const APPLY_CODES = [
  'apply-failed',
  'conflicting-owner',
  'crd-not-established',
  'delete-failed',
  'hook-failed',
  'invalid-apply-wave',
  'kind-not-served',
  'recreate-pending',
  'recreate-refused',
  'revision-missing',
  'unsafe-crd-upgrade',
] as const;
export const ApplyCode = Object.freeze({ ...codeNames(APPLY_CODES), ...borrow(ContentCode, 'Forbidden'), ...borrow(ProcessCode, 'RevisionTooLarge') });
export type ApplyCode = (typeof ApplyCode)[keyof typeof ApplyCode];

declare module '../util/errors.ts' {
  interface HoistCodes {
    apply: (typeof APPLY_CODES)[number];
  }
}

/** One object an apply, read or delete was refused for, and why. */
export interface ObjectProblem {
  /** "group/version Kind ns/name" */
  subject: string;
  message: string;
  /** whether the same request may succeed later (no response, 5xx, throttling, conflicts) */
  transient?: boolean;
}

export interface ObjectsErrorInit {
  stage?: Stage;
  reason?: FailureReason;
  terminal: boolean;
  cause?: unknown;
}

/**
 * A failure about named objects: the subject is the one object, or "N objects"; the message lists
 * each object with what was said about it.
 */
export class ObjectsError extends HoistError {
  readonly objects: readonly ObjectProblem[];

  constructor(
    code: ApplyCode,
    objects: readonly ObjectProblem[],
    init: ObjectsErrorInit,
    line: (o: ObjectProblem) => string = (o) => `${o.subject}: ${o.message}`,
  ) {
    super(objects.map(line).join('; '), {
      stage: init.stage ?? 'apply',
      ...(init.reason ? { reason: init.reason } : {}),
      code,
      subject: objects.length === 1 ? objects[0]!.subject : `${objects.length} objects`,
      terminal: init.terminal,
      cause: init.cause,
    });
    this.name = 'ObjectsError';
    this.objects = objects;
  }
}

/** Objects another owner holds; refused before any write (collisionProtection). */
export class ConflictingOwnerError extends ObjectsError {
  constructor(readonly owners: ReadonlyArray<{ subject: string; owner: string; why: string }>) {
    super(
      ApplyCode.ConflictingOwner,
      owners.map((o) => ({ subject: o.subject, message: `is owned by ${o.owner}: ${o.why}` })),
      { reason: FailureReason.ConflictingOwner, terminal: true },
      (o) => `${o.subject} ${o.message}`,
    );
    this.name = 'ConflictingOwnerError';
  }
}

/** CRD changes that would break existing custom resources; refused before any write. */
export class UnsafeCrdChangeError extends HoistError {
  constructor(
    readonly problems: readonly CrdSafetyProblem[],
    message: string,
  ) {
    const crds = [...new Set(problems.map((p) => p.crd))];
    super(message, {
      stage: 'apply',
      reason: FailureReason.UnsafeCRDUpgrade,
      code: ApplyCode.UnsafeCrdUpgrade,
      subject: crds.length === 1 ? `apiextensions.k8s.io/v1 CustomResourceDefinition ${crds[0]}` : `${crds.length} CustomResourceDefinitions`,
      terminal: true,
    });
    this.name = 'UnsafeCrdChangeError';
  }
}

/** A failure of the applier about one subject (an object, a hook, the revision). */
export function applyError(
  message: string,
  code: ApplyCode,
  init: { subject?: string | undefined; terminal: boolean; stage?: Stage; reason?: FailureReason; cause?: unknown },
): HoistError {
  return new HoistError(message, {
    stage: init.stage ?? 'apply',
    code,
    subject: init.subject,
    terminal: init.terminal,
    ...(init.reason ? { reason: init.reason } : {}),
    cause: init.cause,
  });
}

/** True when the API server refused the acting identity (RBAC); nothing of the revision was written. */
export function isForbiddenApply(e: unknown): e is ObjectsError {
  return e instanceof ObjectsError && e.code === ApplyCode.Forbidden;
}
