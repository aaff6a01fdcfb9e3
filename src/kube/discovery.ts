/**
 * Discovery with a cache: which kinds the API server serves, their plural resource names and
 * scope. Uses aggregated discovery (two requests, /api and /apis, for everything) and falls
 * back to one request per group-version on servers that do not offer it. A miss refreshes once,
 * so a kind that just appeared is found without callers managing the cache.
 */
import type { Discovery, ResourceInfo, TypeRef } from './types.ts';
import type { RawRequest } from './rest-transport.ts';

/** The one transport call discovery needs: GET a path, undefined on 404. */
export type DiscoveryGet = (req: Pick<RawRequest, 'path' | 'accept' | 'subject'>) => Promise<unknown>;

export interface DiscoveryOptions {
  /**
   * A miss within this long after the last refresh is trusted instead of refreshing again, so a
   * reconcile asking about several unserved kinds (optional objects) costs one refresh, not one
   * per object. invalidate() always forces the next lookup to refresh. Default 250ms.
   */
  missRefreshIntervalMs?: number;
}

const AGGREGATED_ACCEPT = [
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
  'application/json',
].join(',');

interface Snapshot {
  /** when its requests were sent: what it says is at least as new as this */
  at: number;
  /** apiVersion ("v1", "apps/v1") → kind → info; undefined = not loaded yet (legacy mode) */
  groupVersions: Map<string, Map<string, ResourceInfo> | undefined>;
  aggregated: boolean;
}

interface AggregatedList {
  kind?: string;
  items?: {
    metadata?: { name?: string };
    versions?: {
      version: string;
      resources?: { resource: string; scope?: string; responseKind?: { kind?: string }; verbs?: string[] }[];
    }[];
  }[];
}
interface LegacyVersions {
  kind?: string;
  versions?: string[];
}
interface LegacyGroups {
  kind?: string;
  groups?: { name: string; versions: { groupVersion: string }[] }[];
}
interface ResourceList {
  resources?: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[];
}

export class CachedDiscovery implements Discovery {
  private snapshot: Snapshot | undefined;
  private inflight: { gen: number; snap: Promise<Snapshot> } | undefined;
  /** bumped by invalidate(): a load begun before it cannot answer a lookup made after it */
  private gen = 0;
  private version: Promise<string> | undefined;
  private readonly missRefreshIntervalMs: number;

  constructor(
    private readonly get: DiscoveryGet,
    opts: DiscoveryOptions = {},
  ) {
    this.missRefreshIntervalMs = opts.missRefreshIntervalMs ?? 250;
  }

  resourceFor(type: TypeRef, opts: { refreshOnMiss?: boolean } = {}): Promise<ResourceInfo | undefined> {
    // a kind already loaded answers without the async chain below (every object of every apply asks)
    const hit = this.snapshot?.groupVersions.get(type.apiVersion)?.get(type.kind);
    return hit ? Promise.resolve(hit) : this.resolve(type, opts);
  }

  private async resolve(type: TypeRef, opts: { refreshOnMiss?: boolean }): Promise<ResourceInfo | undefined> {
    const snap = await this.current();
    const hit = await this.lookup(snap, type);
    if (hit) return hit;
    if (opts.refreshOnMiss === false || Date.now() - snap.at < this.missRefreshIntervalMs) return undefined;
    return this.lookup(await this.refresh(), type);
  }

  invalidate(): void {
    this.snapshot = undefined;
    this.gen++;
  }

  /** every listable resource, once per group in the group's preferred (first served) version */
  async listable(): Promise<ResourceInfo[]> {
    const snap = await this.current();
    const groups = new Map<string, string>();
    for (const gv of snap.groupVersions.keys()) {
      const group = gv.includes('/') ? gv.split('/')[0]! : '';
      if (!groups.has(group)) groups.set(group, gv);
    }
    const out: ResourceInfo[] = [];
    for (const gv of groups.values()) {
      let kinds = snap.groupVersions.get(gv);
      if (!kinds) snap.groupVersions.set(gv, (kinds = await this.loadGroupVersion(gv)));
      for (const info of kinds.values()) if (info.verbs?.includes('list')) out.push(info);
    }
    return out;
  }

  async apiVersions(): Promise<string[]> {
    return [...(await this.current()).groupVersions.keys()].sort();
  }

  /** one GET /version per process (an API server upgrade restarts the watches, not the version) */
  serverVersion(): Promise<string> {
    this.version ??= this.get({ path: '/version', subject: 'version' }).then(
      (body) => {
        const v = (body as { gitVersion?: unknown } | undefined)?.gitVersion;
        if (typeof v !== 'string' || !/^v\d+\.\d+/.test(v)) throw new Error(`GET /version: no gitVersion in ${JSON.stringify(body)?.slice(0, 200)}`);
        // helm wants a semver; distributions append build metadata ("v1.34.4+k3s1") that it accepts
        return v;
      },
      (e: unknown) => {
        this.version = undefined;
        throw e;
      },
    );
    return this.version;
  }

  private current(): Promise<Snapshot> {
    return this.snapshot ? Promise.resolve(this.snapshot) : this.refresh();
  }

  /**
   * Concurrent refreshes share one round of requests, unless it began before the last
   * invalidate(): a kind whose CRD just became Established may be missing from it.
   */
  private refresh(): Promise<Snapshot> {
    if (this.inflight?.gen === this.gen) return this.inflight.snap;
    const gen = this.gen;
    const snap = this.load().then(
      (loaded) => {
        // invalidated since it began: the lookups after the invalidate load again
        if (gen === this.gen) this.snapshot = loaded;
        if (this.inflight?.gen === gen) this.inflight = undefined;
        return loaded;
      },
      (e: unknown) => {
        if (this.inflight?.gen === gen) this.inflight = undefined;
        throw e;
      },
    );
    this.inflight = { gen, snap };
    return snap;
  }

  private async load(): Promise<Snapshot> {
    const at = Date.now();
    const [core, groups] = await Promise.all([
      this.get({ path: '/api', accept: AGGREGATED_ACCEPT, subject: 'discovery /api' }),
      this.get({ path: '/apis', accept: AGGREGATED_ACCEPT, subject: 'discovery /apis' }),
    ]);
    const groupVersions = new Map<string, Map<string, ResourceInfo> | undefined>();
    if (isAggregated(core) && isAggregated(groups)) {
      for (const list of [core, groups]) {
        for (const g of list.items ?? []) {
          const group = g.metadata?.name ?? '';
          for (const v of g.versions ?? []) {
            const kinds = new Map<string, ResourceInfo>();
            for (const r of v.resources ?? []) {
              const kind = r.responseKind?.kind;
              if (!kind) continue;
              kinds.set(kind, {
                group,
                version: v.version,
                resource: r.resource,
                kind,
                namespaced: r.scope === 'Namespaced',
                ...(r.verbs ? { verbs: r.verbs } : {}),
              });
            }
            groupVersions.set(group ? `${group}/${v.version}` : v.version, kinds);
          }
        }
      }
      return { at, groupVersions, aggregated: true };
    }
    // legacy: list group-versions now, load each one's resources on first use
    for (const v of (core as LegacyVersions | undefined)?.versions ?? []) groupVersions.set(v, undefined);
    for (const g of (groups as LegacyGroups | undefined)?.groups ?? []) {
      for (const v of g.versions) groupVersions.set(v.groupVersion, undefined);
    }
    return { at, groupVersions, aggregated: false };
  }

  private async lookup(snap: Snapshot, type: TypeRef): Promise<ResourceInfo | undefined> {
    if (!snap.groupVersions.has(type.apiVersion)) return undefined;
    let kinds = snap.groupVersions.get(type.apiVersion);
    if (!kinds) {
      kinds = await this.loadGroupVersion(type.apiVersion);
      snap.groupVersions.set(type.apiVersion, kinds);
    }
    return kinds.get(type.kind);
  }

  private async loadGroupVersion(apiVersion: string): Promise<Map<string, ResourceInfo>> {
    const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const list = (await this.get({ path, subject: `discovery ${path}` })) as ResourceList | undefined;
    const [group, version] = apiVersion.includes('/') ? (apiVersion.split('/') as [string, string]) : ['', apiVersion];
    const kinds = new Map<string, ResourceInfo>();
    for (const r of list?.resources ?? []) {
      if (r.name.includes('/')) continue; // subresources such as deployments/status
      kinds.set(r.kind, { group, version, resource: r.name, kind: r.kind, namespaced: r.namespaced, ...(r.verbs ? { verbs: r.verbs } : {}) });
    }
    return kinds;
  }
}

function isAggregated(body: unknown): body is AggregatedList {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'APIGroupDiscoveryList';
}
