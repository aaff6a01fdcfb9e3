/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm and timings:
 * - a candidate takes the lease when it is free (no holder, e.g. released on shutdown) or when
 *   the holder has not renewed it for leaseDuration, measured on the local clock from when this
 *   candidate last saw the record change (so clock skew between nodes does not matter);
 * - the leader renews every retryPeriod; if no renewal succeeds within renewDeadline it stops
 *   leading (the signal given to onStartedLeading fires) before another candidate can take over;
 * - on shutdown the leader releases the lease, so a successor takes over at once.
 * Optimistic concurrency (resourceVersion) makes every take-over a compare-and-swap.
 */
import type { Logger } from 'pino';
import { isAlreadyExists, isConflict } from './api-error.ts';
import { sleep } from '../util/sleep.ts';
import type { KubeObject, Reader, Writer } from './types.ts';

const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' } as const;

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

export type ElectorState = 'idle' | 'candidate' | 'leading' | 'stopped';

export interface LeaderElectionOptions {
  client: Reader & Writer;
  /** the Lease's name and namespace */
  name: string;
  namespace: string;
  /** unique per process, e.g. pod name + random suffix */
  identity: string;
  /** how long a lease is valid without renewal (default 15s) */
  leaseDurationMs?: number;
  /** how long the leader keeps retrying a renewal before giving up (default 10s) */
  renewDeadlineMs?: number;
  /** wait between attempts (default 2s) */
  retryPeriodMs?: number;
  /** the signal fires when leadership is lost or the elector stops */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  onStoppedLeading?: () => void;
  /** called when the observed leader changes (including to this identity) */
  onNewLeader?: (identity: string) => void;
  logger?: Logger;
}

export class LeaderElector {
  private observed: { record: string; at: number } = { record: '', at: 0 };
  private stateValue: ElectorState = 'idle';
  private lastLeader = '';
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (this.leaseDurationMs <= this.renewDeadlineMs) throw new Error('leaseDuration must be greater than renewDeadline');
    if (this.renewDeadlineMs <= this.retryPeriodMs) throw new Error('renewDeadline must be greater than retryPeriod');
  }

  get state(): ElectorState {
    return this.stateValue;
  }

  isLeader(): boolean {
    return this.stateValue === 'leading';
  }

  /** the holder last observed on the lease ("" when free or unknown) */
  get leader(): string {
    return this.lastLeader;
  }

  /**
   * Campaigns until leading, then leads until leadership is lost or the signal fires (then the
   * lease is released). Resolves when it no longer leads; it does not campaign again.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.stateValue = 'candidate';
    try {
      while (!signal.aborted && !(await this.attempt())) await sleep(this.retryPeriodMs, signal);
      if (signal.aborted) return;
      await this.lead(signal);
    } finally {
      this.stateValue = 'stopped';
    }
  }

  private async lead(signal: AbortSignal): Promise<void> {
    this.stateValue = 'leading';
    const leading = new AbortController();
    this.opts.logger?.info({ lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.opts.identity }, 'became leader');
    void Promise.resolve()
      .then(() => this.opts.onStartedLeading(leading.signal))
      .catch((e: unknown) => this.opts.logger?.error({ err: e }, 'onStartedLeading failed'));
    let lastRenew = performance.now();
    try {
      while (!signal.aborted) {
        await sleep(this.retryPeriodMs, signal);
        if (signal.aborted) break;
        if (await this.attempt()) {
          lastRenew = performance.now();
          continue;
        }
        if (performance.now() - lastRenew >= this.renewDeadlineMs) {
          this.opts.logger?.warn({ lease: `${this.opts.namespace}/${this.opts.name}` }, 'failed to renew the lease in time, leadership lost');
          return;
        }
      }
      await this.release();
    } finally {
      leading.abort(new Error('leadership lost'));
      this.stateValue = 'stopped';
      this.opts.onStoppedLeading?.();
    }
  }

  /** one acquire-or-renew attempt; true when this identity holds the lease afterwards */
  private async attempt(): Promise<boolean> {
    try {
      return await this.tryAcquireOrRenew();
    } catch (e) {
      // conflicts are lost races; anything else (network, API server down) is retried the same way
      if (!isConflict(e) && !isAlreadyExists(e)) this.opts.logger?.debug({ err: e }, 'lease attempt failed');
      return false;
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, name, namespace, identity } = this.opts;
    const now = microTime();
    const desired: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: now,
      renewTime: now,
    };
    const current = await client.get<Lease>(LEASE, name, namespace);
    if (!current) {
      await client.create({ ...LEASE, metadata: { name, namespace }, spec: { ...desired, leaseTransitions: 0 } });
      this.observe({ ...LEASE, metadata: { name, namespace }, spec: desired });
      return true;
    }
    const spec = current.spec ?? {};
    this.observe(current);
    const holder = spec.holderIdentity ?? '';
    const leaseMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    const expired = performance.now() - this.observed.at > leaseMs;
    if (holder && holder !== identity && !expired) return false;
    // renewing keeps acquireTime and the transition count; taking over bumps the count
    if (holder === identity) {
      desired.acquireTime = spec.acquireTime ?? now;
      desired.leaseTransitions = spec.leaseTransitions ?? 0;
    } else {
      desired.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
    }
    const updated = await client.update<Lease>({ ...current, spec: { ...spec, ...desired } });
    this.observe(updated);
    return true;
  }

  /** gives the lease up so a successor need not wait for it to expire */
  private async release(): Promise<void> {
    const { client, name, namespace, identity } = this.opts;
    try {
      const current = await client.get<Lease>(LEASE, name, namespace);
      if (!current || current.spec?.holderIdentity !== identity) return;
      const now = microTime();
      await client.update({
        ...current,
        spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
      });
      this.opts.logger?.info({ lease: `${namespace}/${name}` }, 'released the lease');
    } catch (e) {
      this.opts.logger?.warn({ err: e }, 'failed to release the lease; successors wait for it to expire');
    }
  }

  private observe(lease: Lease): void {
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds]);
    if (record !== this.observed.record) this.observed = { record, at: performance.now() };
    const holder = spec.holderIdentity ?? '';
    if (holder !== this.lastLeader) {
      this.lastLeader = holder;
      if (holder) this.opts.onNewLeader?.(holder);
    }
  }
}

/** metav1.MicroTime wants exactly six fractional digits */
function microTime(): string {
  return new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
