/**
 * One overall deadline per source operation (a resolve, a fetch): a signal that fires when the
 * caller's signal fires or when the deadline passes, whichever comes first. Unlike an idle timer,
 * a server trickling one byte a second cannot extend it. Every request, body stream, unpacker and
 * git process of the operation listens to this one signal, so the worker is free at the deadline.
 */
import { formatDuration } from '../../util/duration.ts';
import { type Stage } from '../../util/errors.ts';
import { SourceCode, sourceError } from '../errors.ts';

/** default overall deadline of one resolve or one fetch */
export const DEFAULT_FETCH_TIMEOUT_MS = 10 * 60_000;

interface Deadline {
  signal: AbortSignal;
  /** clears the timer; call when the operation ends */
  done(): void;
}

/**
 * A signal aborted with the parent's reason when `parent` aborts, or with a transient HoistError
 * (code `deadline-exceeded`, naming the deadline) after `ms`.
 */
function deadline(parent: AbortSignal | undefined, ms: number, stage: Extract<Stage, 'resolve' | 'fetch'>, subject: string): Deadline {
  const ctl = new AbortController();
  const onParent = (): void => ctl.abort(parent?.reason);
  if (parent?.aborted) onParent();
  parent?.addEventListener('abort', onParent, { once: true });
  const timer = setTimeout(() => {
    ctl.abort(
      sourceError(`${stage} exceeded its deadline of ${formatDuration(ms)}`, {
        stage,
        code: SourceCode.DeadlineExceeded,
        subject,
        terminal: false,
      }),
    );
  }, ms);
  timer.unref();
  return {
    signal: ctl.signal,
    done() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParent);
    },
  };
}

/** Runs `fn` under a deadline; whatever it throws after the signal fired becomes the signal's reason. */
export async function withDeadline<T>(
  parent: AbortSignal | undefined,
  ms: number,
  stage: Extract<Stage, 'resolve' | 'fetch'>,
  subject: string,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const d = deadline(parent, ms, stage, subject);
  try {
    return await fn(d.signal);
  } catch (e) {
    // a body or process killed by the abort surfaces as some I/O error: name the real cause
    throw d.signal.aborted ? d.signal.reason : e;
  } finally {
    d.done();
  }
}
