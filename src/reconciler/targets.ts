/**
 * The clusters BundleDeployments install into (docs/design.md "Remote clusters"). A BD without
 * `spec.kubeConfig` installs into the management cluster (the local target: the controller's
 * client, applier and managed-object watches). One with it installs into the cluster of the
 * kubeconfig its Secret holds: a remote target with its own client (the kubeconfig's identity,
 * TLS verified, bounded connect and request timeouts, restricted addresses refused), its own
 * applier and its own managed-object watches, shared by every BD whose kubeconfig has the same
 * server and identity (the key), closed when the last of them leaves. A rotated Secret (noticed
 * by the Secret watch, after 401s, or at the latest after REREAD_MS) is read again; new content
 * is a new key and so a new client, without a restart.
 *
 * Reachability: every request of a remote target's client (the informers' included) says whether
 * the API server answered. The first failure marks the target down and re-queues its BDs; their
 * reconciles then report TargetUnreachable without a request, and one probe per backoff step
 * (1 s doubling to 60 s) asks again; the first answer marks it up and re-queues them. At most
 * `concurrency` reconciles of one target run at once, so a cluster that hangs holds that many
 * workers, never all of them.
 */
import type { Logger } from 'pino';
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import { Applier } from '../apply/applier.ts';
import { ApiError } from '../kube/api-error.ts';
import { Backoff } from '../kube/backoff.ts';
import type { RestKubeClient } from '../kube/client.ts';
import type { ClusterConfig } from '../kube/kube-config.ts';
import { checkRemoteServer, createRemoteClient } from '../kube/remote-client.ts';
import { RestrictedTargetError, type ManagementServer } from '../kube/target-guard.ts';
import type { KubeClient } from '../kube/types.ts';
import { systemClock, type Clock } from '../util/clock.ts';
import { canonicalJson, sha256HexPrefix } from '../util/hash.ts';
import { HoistError } from '../util/errors.ts';
import { ReconcileCode, reconcileError } from './errors.ts';
import { Identities } from './identity.ts';
import { kubeConfigSecretOf, readKubeconfig } from './inputs/kubeconfig.ts';
import { CrdWatch } from './routing/crd-watch.ts';
import { ManagedObjects, type OwnerEvent } from './routing/managed-objects.ts';
import type { HealthRules } from '../health/rules/rule-set.ts';

/** where one BD's objects go and who acts there */
export interface Target {
  /** 'local', or 'remote:' and a hash of server and identity */
  readonly key: string;
  /** a remote cluster's API server host (and port), for status, logs and metrics; undefined locally */
  readonly cluster: string | undefined;
  /** the cluster's own client: the controller locally, the kubeconfig's identity remotely */
  readonly client: KubeClient;
  readonly identities: Identities;
  readonly applier: Applier;
  readonly managed: ManagedObjects;
}

export const LOCAL_TARGET_KEY = 'local';
/** a kubeconfig read this long ago is read again even without a rotation notice */
const REREAD_MS = 5 * 60_000;
/** the probe of a target that is down */
const PROBE_TIMEOUT_MS = 10_000;

export interface TargetsOptions {
  local: Target;
  /** the controller's client on the management cluster (Secrets are read through its identities) */
  management: Identities;
  log: Logger;
  /** the managed-object event handler of every remote target's watches (manager.ts); `target` is the key */
  onObjectEvent: (target: string) => OwnerEvent;
  /**
   * a CRD became Established (and served) on a remote target: `users` are its BDs, the manager
   * re-queues those waiting for a CRD. Given, every remote target watches its cluster's CRDs.
   */
  onCrdEstablished?: (users: readonly string[], crd: string, cluster: string) => void;
  /** re-queue these BDs (a target went down or came back) */
  requeue: (bds: readonly string[]) => void;
  /** the management API server, which a remote server may not be (unless allowRestricted) */
  managementServer: () => Promise<ManagementServer | undefined>;
  /** hoist run --allow-restricted-targets */
  allowRestricted?: boolean;
  /** concurrent reconciles per remote target (default 4) */
  concurrency?: number;
  applyConcurrency?: number;
  overrideManagers?: readonly string[];
  defaultServiceAccount?: string;
  userAgent?: string;
  clock?: Clock;
  /** the health rules in force (hoist run --health-rules, then the shipped library) */
  healthRules?: HealthRules;
  /** a remote target was opened or closed (metrics) */
  onChange?: (cluster: string, event: 'opened' | 'closed' | 'down' | 'up') => void;
}

/** the state of a target that did not answer */
export interface Down {
  since: number;
  /** the transport error, without credentials (host and port at most) */
  error: string;
  nextProbeAt: number;
}

/** one remote cluster as one identity: client, applier, watches */
export class RemoteTarget implements Target {
  readonly client: RestKubeClient;
  readonly identities: Identities;
  readonly applier: Applier;
  readonly managed: ManagedObjects;
  /** its cluster's CRDs (with onCrdEstablished): a BD waiting for a CRD there is woken when it is served */
  private readonly crds: CrdWatch | undefined;
  /** BDs using it */
  readonly users = new Set<string>();
  down: Down | undefined;
  /** fires when the target goes down; replaced when it comes back */
  private downSignal = new AbortController();
  private readonly backoff = new Backoff(1_000, 60_000);
  private probing: Promise<boolean> | undefined;
  private running = 0;
  /** a 401: the credentials may have been rotated */
  unauthorized = false;

  constructor(
    readonly key: string,
    readonly cluster: string,
    cfg: ClusterConfig,
    private readonly o: TargetsOptions,
    mgmt: ManagementServer | undefined,
  ) {
    this.client = createRemoteClient(cfg, {
      management: mgmt,
      ...(o.allowRestricted ? { allowRestricted: true } : {}),
      ...(o.userAgent ? { userAgent: o.userAgent } : {}),
    });
    this.client.onRequest((e) => {
      if (e.statusCode !== undefined) {
        this.unauthorized = e.statusCode === 401;
        this.markUp();
      } else if (!e.aborted) this.markDown(`${e.verb} ${e.path}: no response`);
    });
    const log = o.log.child({ target: cluster });
    this.managed = new ManagedObjects(this.client, o.onObjectEvent(key), log, o.clock, o.healthRules);
    this.applier = new Applier(this.client, {
      log,
      live: this.managed,
      concurrency: o.applyConcurrency ?? 8,
      ...(o.overrideManagers ? { overrideManagers: [...o.overrideManagers] } : {}),
    });
    this.identities = new Identities(this.client, o.defaultServiceAccount);
    const onCrd = o.onCrdEstablished;
    this.crds = onCrd ? new CrdWatch(this.client, (crd) => onCrd([...this.users], crd, cluster), log) : undefined;
    this.crds?.start();
  }

  private get now(): number {
    return (this.o.clock ?? systemClock).now();
  }

  /** an abort signal that fires when this target goes down (reconciles waiting on its watches stop) */
  get whenDown(): AbortSignal {
    return this.downSignal.signal;
  }

  /** a reconcile slot of this target, or false when `concurrency` reconciles of it run */
  tryEnter(): boolean {
    if (this.running >= (this.o.concurrency ?? 4)) return false;
    this.running++;
    return true;
  }

  leave(): void {
    this.running = Math.max(0, this.running - 1);
  }

  markDown(error: string): void {
    const now = this.now;
    if (this.down) {
      this.down.error = error;
      return;
    }
    this.down = { since: now, error, nextProbeAt: now + this.backoff.next() };
    this.o.log.warn({ target: this.cluster, err: error, bundleDeployments: this.users.size }, 'target cluster unreachable');
    this.downSignal.abort(unreachable(this.cluster, error));
    this.o.onChange?.(this.cluster, 'down');
    this.o.requeue([...this.users]);
  }

  private markUp(): void {
    if (!this.down) return;
    this.o.log.info({ target: this.cluster, downMs: this.now - this.down.since }, 'target cluster reachable again');
    this.down = undefined;
    this.backoff.reset();
    this.downSignal = new AbortController();
    this.o.onChange?.(this.cluster, 'up');
    this.o.requeue([...this.users]);
  }

  /**
   * Whether the target answers: true when it is up; when down, false until the next probe is due,
   * then one probe (shared by concurrent callers) decides. Bounded by PROBE_TIMEOUT_MS.
   */
  async reachable(): Promise<boolean> {
    if (!this.down) return true;
    if (this.now < this.down.nextProbeAt) return false;
    this.probing ??= this.probe().finally(() => (this.probing = undefined));
    return this.probing;
  }

  private async probe(): Promise<boolean> {
    try {
      // any answer (a 403 too) is an answer; discovery is cached, so this is one GET
      await this.client.get({ apiVersion: 'v1', kind: 'Namespace' }, 'default', undefined, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      return true;
    } catch (e) {
      if (e instanceof ApiError) return true;
      if (this.down) {
        this.down.error = e instanceof Error ? e.message : String(e);
        this.down.nextProbeAt = this.now + this.backoff.next();
      }
      return !this.down;
    }
  }

  /** ms until the next probe of a down target */
  retryInMs(): number {
    return this.down ? Math.max(this.down.nextProbeAt - this.now, 100) : 0;
  }

  async close(): Promise<void> {
    await this.crds?.stop();
    await this.managed.stop();
    await this.client.close();
  }
}

/** the transient error of an unreachable target: names the cluster and the transport error, never credentials */
export function unreachable(cluster: string, error: string): HoistError {
  return reconcileError(`target cluster ${cluster} unreachable: ${error}`, ReconcileCode.TargetUnreachable, {
    stage: 'apply',
    subject: `cluster ${cluster}`,
    terminal: false,
  });
}

/** a RestrictedTargetError as the terminal TargetRestricted of the kubeconfig Secret; other errors as they are */
export function restricted(e: unknown, read: { secret: string; key: string }): unknown {
  if (!(e instanceof RestrictedTargetError)) return e;
  return reconcileError(e.message, ReconcileCode.TargetRestricted, {
    stage: 'resolve',
    subject: `kubeconfig secret ${read.secret} key ${read.key}`,
    terminal: true,
  });
}

interface Membership {
  /** "namespace/name key" it was read from */
  ref: string;
  key: string;
  readAt: number;
  stale: boolean;
}

export class Targets {
  private readonly remotes = new Map<string, RemoteTarget>();
  private readonly members = new Map<string, Membership>();

  constructor(private readonly o: TargetsOptions) {}

  get local(): Target {
    return this.o.local;
  }

  /** the target a BD used last (no request); the local one for a BD not seen */
  current(name: string): Target {
    const m = this.members.get(name);
    return (m && this.remotes.get(m.key)) ?? this.o.local;
  }

  /** the remote targets, for metrics and tests */
  remoteTargets(): readonly RemoteTarget[] {
    return [...this.remotes.values()];
  }

  /**
   * The target of `bd`: local, or the remote one of its kubeconfig, read (as the BD's identity on
   * the management cluster) when not read before, rotated, older than REREAD_MS or after a 401.
   * Throws the kubeconfig's HoistErrors (resolve stage) and TargetRestricted (terminal).
   */
  async for(bd: BundleDeployment, signal?: AbortSignal): Promise<Target> {
    const name = bd.metadata.name;
    const secret = kubeConfigSecretOf(bd);
    if (!secret) {
      this.release(name);
      return this.o.local;
    }
    const ref = `${secret} ${bd.spec.kubeConfig?.secretRef.key ?? ''}`;
    const now = (this.o.clock ?? systemClock).now();
    const m = this.members.get(name);
    const cached = m && this.remotes.get(m.key);
    if (m && cached && m.ref === ref && !m.stale && now - m.readAt < REREAD_MS && !cached.unauthorized) return cached;
    const actor = this.o.management.for(bd);
    const read = await readKubeconfig(actor.client, actor.user ? `service account ${actor.user.split(':').slice(2).join('/')}` : 'the controller', bd, signal);
    const key = `remote:${sha256HexPrefix(canonicalJson({ ...read.config, source: '' }), 16)}`;
    let target = this.remotes.get(key);
    if (!target) {
      const mgmt = await this.o.managementServer();
      await checkRemoteServer(read.config, { management: mgmt, ...(this.o.allowRestricted ? { allowRestricted: true } : {}) }).catch((e: unknown) => {
        throw restricted(e, read);
      });
      // raced by another BD of the same kubeconfig: use the one it made
      target = this.remotes.get(key) ?? new RemoteTarget(key, new URL(read.config.server).host, read.config, this.o, mgmt);
      if (!this.remotes.has(key)) {
        this.remotes.set(key, target);
        this.o.log.info({ target: target.cluster, secret: read.secret }, 'remote target opened');
        this.o.onChange?.(target.cluster, 'opened');
      }
    }
    if (m && m.key !== key) this.leaveTarget(name, m.key);
    target.users.add(name);
    this.members.set(name, { ref, key, readAt: now, stale: false });
    return target;
  }

  /** a referenced Secret changed (the Secret watch): the BD's kubeconfig is read again at its next reconcile */
  rotated(name: string, secret: string): void {
    const m = this.members.get(name);
    if (m && m.ref.startsWith(`${secret} `)) m.stale = true;
  }

  /** the BD is gone (or uninstalled): it leaves its target, closed when it was the last */
  release(name: string): void {
    const m = this.members.get(name);
    if (!m) return;
    this.members.delete(name);
    this.leaveTarget(name, m.key);
  }

  private leaveTarget(name: string, key: string): void {
    const t = this.remotes.get(key);
    if (!t) return;
    t.users.delete(name);
    t.managed.forgetProbes(name);
    t.applier.forget(name);
    if (t.users.size > 0) return;
    this.remotes.delete(key);
    this.o.log.info({ target: t.cluster }, 'remote target closed: no BundleDeployment uses it');
    this.o.onChange?.(t.cluster, 'closed');
    void t.close();
  }

  async stop(): Promise<void> {
    const all = [...this.remotes.values()];
    this.remotes.clear();
    this.members.clear();
    await Promise.all(all.map((t) => t.close()));
  }
}
