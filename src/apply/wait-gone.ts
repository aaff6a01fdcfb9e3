/**
 * Waiting until a deleted object is gone: GET every `pollMs` until it is not found, or an object
 * of another uid holds its name (someone else's, not the one deleted). Bounded by a deadline on
 * the caller's clock, and by its signal: a fired signal ends the wait at once with a
 * CancelledError. Used wherever Hoist deletes and then creates by the same name (recreate on an
 * immutable field, a hook's before-hook-creation).
 */
import type { KubeClient, KubeObject } from '../kube/types.ts';
import { throwIfCancelled } from '../util/errors.ts';
import { sleep } from '../util/sleep.ts';

export interface WaitGoneOptions {
  /** the uid of the object deleted; without it, any object by that name counts as not gone */
  uid?: string;
  /** epoch ms on `now`'s clock: past it, `expired()` is thrown */
  deadline: number;
  now: () => Date;
  signal?: AbortSignal | undefined;
  /** between reads (default 200 ms) */
  pollMs?: number;
  /** "group/version Kind ns/name", for the cancellation error */
  subject: string;
  /** the error for a wait past the deadline (each caller's own code) */
  expired: () => Error;
}

export async function waitGone(client: KubeClient, obj: KubeObject, opts: WaitGoneOptions): Promise<void> {
  const cancelled = () => throwIfCancelled(opts.signal, `waiting until ${opts.subject} is gone`, { stage: 'apply', reason: 'ApplyFailed', subject: opts.subject });
  for (;;) {
    cancelled();
    const live = await client.get(obj, obj.metadata.name, obj.metadata.namespace, { signal: opts.signal }).catch((e: unknown) => {
      cancelled();
      throw e;
    });
    if (!live || (opts.uid !== undefined && live.metadata.uid !== opts.uid)) return;
    if (opts.now().getTime() > opts.deadline) throw opts.expired();
    await sleep(opts.pollMs ?? 200, opts.signal);
  }
}
