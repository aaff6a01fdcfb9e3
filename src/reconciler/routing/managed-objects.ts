/**
 * The observe stage's eyes: one informer per kind Hoist manages, selecting objects by Hoist's
 * owner label, each cached as a small summary (metadata fingerprint, health verdict and the
 * results of the owner's `spec.healthChecks` — never the object). The verdict is
 * health/verdict.ts's: the owner's checks when any selects the object (their timed verdicts are
 * read beside it, checkVerdicts), else the cluster-wide rules, the library, kstatus. It answers the applier's "is
 * this object still as I left it?" without a GET, computes health, and tells the reconciler which
 * BundleDeployment to re-queue when an object drifts, changes health or is deleted.
 *
 * Health checks are evaluated on watch events, so probes cost no requests of their own. When a
 * BundleDeployment's checks change, the kinds holding its objects are listed once again (one LIST
 * per kind, coalesced) so every cached result is of the current checks.
 */
import type { StringPool } from '../../util/string-pool.ts';
import type { Logger } from 'pino';
import { LABEL_OWNER_NAME, type HealthCheck } from '../../../api/v1alpha2/types.ts';
import { liveMetaOf, metadataChange, sameLiveState, type LiveIndex, type LiveMeta } from '../../apply/live-index.ts';
import { groupOf, objectId } from '../../apply/object-id.ts';
import type { WrittenObject } from '../../apply/result.ts';
import { track, verdictOf as checkVerdictOf, type ProbeTrack, type ProbeVerdict } from '../../health/probe-state.ts';
import { compileHealthChecks, runChecks, type CompiledCheck, type ProbeResult } from '../../health/probes.ts';
import { verdictAt } from '../../health/readiness.ts';
import { BUILTIN_RULES, type HealthRules } from '../../health/rules/rule-set.ts';
import { checkedVerdict, verdictOf, type Verdict } from '../../health/verdict.ts';
import { Informer } from '../../kube/informer.ts';
import type { KubeClient, KubeObject, TypeRef } from '../../kube/types.ts';
import { systemClock, type Clock } from '../../util/clock.ts';
import { canonicalJson } from '../../util/hash.ts';
import { sleep } from '../../util/sleep.ts';

/** what the cache keeps per object */
interface Summary extends KubeObject {
  live: LiveMeta;
  /** the object's verdict and the rule that gave it (health/verdict.ts) */
  health: Verdict;
  /** results of the owner's health checks that select this object */
  probes?: Record<string, ProbeResult>;
}

interface OwnerProbes {
  signature: string;
  checks: CompiledCheck[];
  /** the spec's checks do not compile: Healthy says so */
  error?: Error;
}

/** a health check's verdict on one object */
export interface CheckVerdict extends ProbeVerdict {
  check: string;
}

const REFRESH_COALESCE_MS = 50;

/**
 * Told the owner of an object that was created, changed or deleted, why, and (created or changed)
 * which version of which object the event carries: one the owner's reconcile wrote and saw
 * (takeSeenWrites) needs no reconcile of its own. `metadata`: the change was only to labels and
 * annotations (same generation, same health): which keys, and which field managers are new.
 */
export type OwnerEvent = (ownerName: string, why: string, version?: string, metadata?: MetadataChange) => void;

export interface MetadataChange {
  /** the object's id (objectId) */
  id: string;
  labels: string[];
  annotations: string[];
  newManagers: string[];
}

/** "<object id>@<resourceVersion>": one version of one object */
export const versionOf = (id: string, resourceVersion: string): string => `${id}@${resourceVersion}`;

export class ManagedObjects implements LiveIndex {
  /** group/kind → informer */
  private readonly informers = new Map<string, Informer<Summary>>();
  /** owner BD name → its compiled health checks */
  private readonly probes = new Map<string, OwnerProbes>();
  /** object id → check name → timing of its results */
  private readonly tracks = new Map<string, Map<string, ProbeTrack>>();
  /** kinds to list again because an owner's checks changed */
  private readonly stale = new Set<string>();
  /** reconciles waiting for the watches to deliver their writes; each checks on every event */
  private readonly writeWaiters = new Set<() => void>();
  /** per owner: versions its reconciles wrote and waited to see delivered (versionOf), until taken */
  private readonly seenWrites = new Map<string, Set<string>>();
  private refreshTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: KubeClient,
    private readonly onChange: OwnerEvent,
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
    /** the health rules in force: the cluster-wide ones (hoist run --health-rules) and the library */
    private readonly rules: HealthRules = BUILTIN_RULES,
    /** shares the summaries' equal strings (namespaces, kinds, owner labels) with the other caches */
    private readonly strings?: StringPool,
  ) {}

  /** starts watching the kinds not watched yet and waits until their caches are synced */
  async watch(types: readonly TypeRef[], signal?: AbortSignal): Promise<void> {
    const started: Informer<Summary>[] = [];
    for (const t of types) {
      const gk = `${groupOf(t.apiVersion)}/${t.kind}`;
      if (this.informers.has(gk)) continue;
      const inf = this.informerFor(t);
      this.informers.set(gk, inf);
      inf.start();
      started.push(inf);
    }
    await Promise.all(started.map((i) => i.waitForSync(signal)));
    await this.refreshing;
  }

  /**
   * Registers a BundleDeployment's health checks (called from its watch event, before it is
   * reconciled). Unchanged checks cost nothing; changed ones re-list the kinds holding its objects.
   */
  setProbes(owner: string, checks: readonly HealthCheck[] | undefined): void {
    const signature = canonicalJson(checks ?? []);
    if (this.probes.get(owner)?.signature === signature) return;
    let entry: OwnerProbes;
    try {
      entry = { signature, checks: compileHealthChecks(checks) };
    } catch (e) {
      entry = { signature, checks: [], error: e instanceof Error ? e : new Error(String(e)) };
    }
    const had = this.probes.has(owner);
    if (entry.checks.length === 0 && !entry.error) this.probes.delete(owner);
    else this.probes.set(owner, entry);
    if (!had && entry.checks.length === 0) return;
    for (const [gk, inf] of this.informers) {
      if (!inf.list().some((o) => o.live.labels?.[LABEL_OWNER_NAME] === owner)) continue;
      for (const o of inf.list()) if (o.live.labels?.[LABEL_OWNER_NAME] === owner) this.tracks.delete(objectId(o));
      this.stale.add(gk);
    }
    if (this.stale.size && !this.refreshTimer) {
      this.refreshTimer = setTimeout(() => {
        this.refreshTimer = undefined;
        this.refreshing = this.refreshing.then(() => this.refresh());
      }, REFRESH_COALESCE_MS);
    }
  }

  forgetProbes(owner: string): void {
    this.probes.delete(owner);
    this.seenWrites.delete(owner);
  }

  /** the error that keeps an owner's health checks from compiling, if any */
  probeError(owner: string): Error | undefined {
    return this.probes.get(owner)?.error;
  }

  /** the verdict of every health check that selects the object, at `now` */
  checkVerdicts(id: string): CheckVerdict[] {
    const summary = this.summary(id);
    const owner = summary?.live.labels?.[LABEL_OWNER_NAME];
    const checks = owner ? this.probes.get(owner)?.checks : undefined;
    const tracks = this.tracks.get(id);
    if (!checks || !tracks) return [];
    const now = this.clock.now();
    const out: CheckVerdict[] = [];
    for (const c of checks) {
      const t = tracks.get(c.name);
      if (t) out.push({ check: c.name, ...checkVerdictOf(t, c, now) });
    }
    return out;
  }

  /** waits until re-lists caused by changed health checks are done */
  async settled(): Promise<void> {
    while (this.refreshTimer || this.stale.size) {
      await sleep(REFRESH_COALESCE_MS);
      await this.refreshing;
    }
    await this.refreshing;
  }

  private informerFor(t: TypeRef): Informer<Summary> {
    const inf = new Informer<Summary>({
      client: this.client,
      type: { apiVersion: t.apiVersion, kind: t.kind },
      labelSelector: LABEL_OWNER_NAME,
      transform: (obj, managedFields) => this.summarize(obj, managedFields),
      ...(this.strings ? { strings: this.strings } : {}),
      logger: this.log,
    });
    inf.addHandler({
      onAdd: (o, initial) => {
        this.wakeWriteWaiters();
        const probed = this.observeProbes(o);
        if (!initial || probed) this.notify(o, 'created', true);
      },
      onUpdate: (a, b) => {
        this.wakeWriteWaiters();
        const probed = this.observeProbes(b);
        // a verdict bound to a time (a Pod's scheduling window) must reach the owner, which looks again then
        const health = a.health.readiness !== b.health.readiness || a.health.until?.at !== b.health.until?.at;
        if (probed || !sameLiveState(a.live, b.live) || health) {
          const meta = probed || health ? undefined : metadataChange(a.live, b.live);
          this.notify(b, 'changed', true, meta);
        }
        // handed over (or taken): the previous owner must learn that it no longer owns the object
        if (a.live.labels?.[LABEL_OWNER_NAME] !== b.live.labels?.[LABEL_OWNER_NAME]) this.notify(a, 'handed over');
      },
      onDelete: (o) => {
        this.wakeWriteWaiters();
        this.tracks.delete(objectId(o));
        this.notify(o, 'deleted');
      },
    });
    return inf;
  }

  /** records the summary's check results; true when a check's pass/fail changed */
  private observeProbes(o: Summary): boolean {
    const id = objectId(o);
    if (!o.probes) return this.tracks.delete(id);
    let tracks = this.tracks.get(id);
    if (!tracks) this.tracks.set(id, (tracks = new Map()));
    let changed = false;
    const now = this.clock.now();
    for (const [name, result] of Object.entries(o.probes)) {
      const prev = tracks.get(name);
      if (prev?.ok !== result.ok) changed = true;
      tracks.set(name, track(prev, result, now));
    }
    for (const name of tracks.keys()) if (!(name in o.probes)) tracks.delete(name);
    return changed;
  }

  /** lists the stale kinds again with fresh informers, so the transform runs the current checks */
  private async refresh(): Promise<void> {
    const kinds = [...this.stale];
    this.stale.clear();
    await Promise.all(
      kinds.map(async (gk) => {
        const old = this.informers.get(gk);
        if (!old) return;
        const any = old.list()[0];
        if (!any) return;
        const fresh = this.informerFor({ apiVersion: any.apiVersion, kind: any.kind });
        fresh.start();
        try {
          await fresh.waitForSync();
        } catch (e) {
          await fresh.stop();
          throw e;
        }
        this.informers.set(gk, fresh);
        await old.stop();
        this.log.debug({ kind: gk }, 'listed again for changed health checks');
      }),
    ).catch((e: unknown) => this.log.warn({ err: e instanceof Error ? e.message : String(e) }, 're-listing for changed health checks failed'));
  }

  private summarize(obj: KubeObject, managedFields: unknown[] | undefined): Summary {
    const owner = obj.metadata.labels?.[LABEL_OWNER_NAME];
    const checks = owner ? this.probes.get(owner)?.checks : undefined;
    const probes = checks?.length ? runChecks(checks, obj) : undefined;
    return {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace, resourceVersion: obj.metadata.resourceVersion },
      // the managers' names only (who else writes it, so hand edits can be taken over), never their fields
      live: liveMetaOf({ metadata: { ...obj.metadata, managedFields } }),
      // the owner's health checks that select the object judge it instead of the rules
      health: probes ? checkedVerdict(obj, Object.keys(probes)) : verdictOf(obj, { now: this.clock.now(), rules: this.rules }),
      ...(probes ? { probes } : {}),
    };
  }

  get(id: string): LiveMeta | undefined {
    return this.summary(id)?.live;
  }

  /** health of one object (as it stands now) and the rule that judged it; undefined when not observed (not created yet, or not watched) */
  health(id: string): Verdict | undefined {
    const h = this.summary(id)?.health;
    return h && { ...verdictAt(h, this.clock.now()), rule: h.rule };
  }

  /**
   * Resolves once the watches have delivered these writes (each object with the written uid, at or
   * past the written generation), so health is never read from the state before an apply: an
   * upgraded Deployment's previous generation looks ready. False when they have not arrived within
   * timeoutMs; health then says what the cache knows, and the write's watch event reconciles again.
   */
  async observedWrites(writes: readonly (WrittenObject & { id: string })[], timeoutMs: number, owner?: string): Promise<boolean> {
    const seen = () => writes.every((w) => !this.knows(w.id) || this.hasSeen(w));
    const ok = seen()
      ? true
      : await new Promise<boolean>((resolve) => {
          const check = () => {
            if (seen()) done(true);
          };
          const timer = setTimeout(() => done(false), timeoutMs);
          const done = (ok: boolean) => {
            clearTimeout(timer);
            this.writeWaiters.delete(check);
            resolve(ok);
          };
          this.writeWaiters.add(check);
        });
    if (ok && owner !== undefined) {
      let versions = this.seenWrites.get(owner);
      if (!versions) this.seenWrites.set(owner, (versions = new Set()));
      // only what health really read: a write of a kind whose watch has not synced yet (a CRD
      // just created) counts as seen above, but its event must still reconcile again
      for (const w of writes) if (w.resourceVersion && this.hasSeen(w)) versions.add(versionOf(w.id, w.resourceVersion));
    }
    return ok;
  }

  /**
   * The versions the owner's reconciles wrote and saw delivered by the watches before they read
   * health (observedWrites with the owner), forgotten once taken: the events of these versions
   * told that reconcile nothing it did not know.
   */
  takeSeenWrites(owner: string): ReadonlySet<string> | undefined {
    const versions = this.seenWrites.get(owner);
    this.seenWrites.delete(owner);
    return versions;
  }

  private hasSeen(w: WrittenObject & { id: string }): boolean {
    const live = this.get(w.id);
    return !!live && live.uid === w.uid && (w.generation === undefined || (live.generation ?? 0) >= w.generation);
  }

  private wakeWriteWaiters(): void {
    for (const check of [...this.writeWaiters]) check();
  }

  /** true when the object's kind is watched (every object with an owner label) and synced, so a miss means "no Hoist lineage owns it" */
  knows(id: string): boolean {
    const [group, kind] = id.split('/');
    return this.informers.get(`${group}/${kind}`)?.hasSynced() ?? false;
  }

  async stop(): Promise<void> {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = undefined;
    this.stale.clear();
    await this.refreshing;
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.informers.clear();
  }

  private summary(id: string): Summary | undefined {
    const [group, kind, namespace, ...rest] = id.split('/');
    const inf = this.informers.get(`${group}/${kind}`);
    return inf?.getByName(rest.join('/'), namespace || undefined);
  }

  /** tells the owner; `version`: the event carries this version of the object (created, changed); `meta`: only labels and annotations changed */
  private notify(o: Summary, why: string, version = false, meta?: Omit<MetadataChange, 'id'>): void {
    const owner = o.live.labels?.[LABEL_OWNER_NAME];
    if (!owner) return;
    const id = objectId(o);
    this.onChange(owner, `${id} ${why}`, version ? versionOf(id, o.live.resourceVersion) : undefined, meta ? { id, ...meta } : undefined);
  }
}
