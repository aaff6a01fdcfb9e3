/**
 * Counts requests by verb so tests can assert request budgets ("a warm reconcile makes 0
 * writes") and operators can see what the controller costs the API server. Counts are exact:
 * every request that is sent is counted once, whatever its outcome.
 */

export type RequestVerb = 'discovery' | 'get' | 'list' | 'watch' | 'create' | 'update' | 'updateStatus' | 'patch' | 'apply' | 'delete';

export const WRITE_VERBS: readonly RequestVerb[] = ['create', 'update', 'updateStatus', 'patch', 'apply', 'delete'];

/** One finished request, as reported to an onRequest hook. */
export interface RequestEvent {
  verb: RequestVerb;
  method: string;
  /** path without query */
  path: string;
  /** undefined when no response arrived */
  statusCode: number | undefined;
  durationMs: number;
  /** the impersonated user, if any */
  impersonate: string | undefined;
  /** no response because the caller aborted the request (not a transport failure) */
  aborted?: true;
}

export type RequestHook = (event: RequestEvent) => void;

export class RequestCounter {
  private counts = new Map<RequestVerb, number>();
  private readonly hooks = new Set<RequestHook>();

  /** number of requests sent with this verb since the last reset */
  count(verb: RequestVerb): number {
    return this.counts.get(verb) ?? 0;
  }

  get total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }

  /** create, update, updateStatus, patch, apply and delete requests */
  get writes(): number {
    return WRITE_VERBS.reduce((n, v) => n + this.count(v), 0);
  }

  /** a copy of the counts, e.g. to diff before and after a reconcile */
  snapshot(): Partial<Record<RequestVerb, number>> {
    return Object.fromEntries(this.counts) as Partial<Record<RequestVerb, number>>;
  }

  reset(): void {
    this.counts = new Map();
  }

  /** subscribe to finished requests; returns the unsubscribe function */
  onRequest(hook: RequestHook): () => void {
    this.hooks.add(hook);
    return () => this.hooks.delete(hook);
  }

  /** called once per request when it is sent */
  started(verb: RequestVerb): void {
    this.counts.set(verb, this.count(verb) + 1);
  }

  /** called once per request when it finished (or failed without a response) */
  finished(event: RequestEvent): void {
    for (const hook of this.hooks) {
      try {
        hook(event);
      } catch {
        // a broken observer must not fail the request it observes
      }
    }
  }
}
