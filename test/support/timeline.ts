/**
 * Watches objects of several kinds from now on and keeps every change with its resourceVersion,
 * to say in which order things happened across kinds: a Job became Complete before a ConfigMap was
 * created, a Deployment became Available before a webhook configuration was. The audit log orders
 * requests but, at Metadata level, does not say what a status write changed.
 *
 * On the test control plane (one etcd, no other storage) every resourceVersion is an etcd revision,
 * one counter for all kinds, so comparing them as numbers orders writes. Kubernetes calls them
 * opaque; this holds for the local control plane only (tests use it when `isLocalControlPlane()`).
 */
import type { KubeClient, KubeObject, TypeRef } from '../../src/kube/types.ts';

export interface TimelineEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  kind: string;
  name: string;
  namespace?: string;
  rv: bigint;
  object: KubeObject;
}

export class Timeline {
  readonly events: TimelineEvent[] = [];
  private readonly abort = new AbortController();
  private readonly loops: Array<Promise<void>> = [];
  private failure: unknown;

  private constructor(private readonly client: KubeClient) {}

  /** starts watching `types` (in `namespace`, or cluster-wide) from the current state on; resolves once every watch is open */
  static async start(client: KubeClient, types: readonly TypeRef[], opts: { namespace?: string } = {}): Promise<Timeline> {
    const t = new Timeline(client);
    for (const type of types) {
      const { resourceVersion } = await client.list(type, { namespace: opts.namespace, limit: 1 });
      t.loops.push(t.follow(type, opts.namespace, resourceVersion));
    }
    return t;
  }

  private async follow(type: TypeRef, namespace: string | undefined, from: string): Promise<void> {
    let rv = from;
    while (!this.abort.signal.aborted) {
      try {
        for await (const e of this.client.watch(type, {
          namespace,
          resourceVersion: rv,
          allowWatchBookmarks: true,
          timeoutSeconds: 300,
          signal: this.abort.signal,
        })) {
          if (e.type === 'ERROR') throw new Error(`watch of ${type.kind}: ${JSON.stringify(e.object)}`);
          rv = e.object.metadata.resourceVersion ?? rv;
          if (e.type === 'BOOKMARK') continue;
          const o = e.object;
          this.events.push({ type: e.type, kind: type.kind, name: o.metadata.name, namespace: o.metadata.namespace, rv: BigInt(rv), object: o });
        }
      } catch (e) {
        if (this.abort.signal.aborted) return;
        this.failure ??= e;
        return;
      }
    }
  }

  /** the first event of `kind` `name` for which `pred` holds of the object */
  first(kind: string, name: string, pred: (o: KubeObject, e: TimelineEvent) => boolean = () => true): TimelineEvent | undefined {
    this.check();
    return this.events.find((e) => e.kind === kind && e.name === name && pred(e.object, e));
  }

  /** when `kind` `name` was created (its first ADDED event) */
  created(kind: string, name: string): TimelineEvent | undefined {
    return this.first(kind, name, (_o, e) => e.type === 'ADDED');
  }

  /** every event of `kind` (optionally `name`) */
  of(kind: string, name?: string): TimelineEvent[] {
    this.check();
    return this.events.filter((e) => e.kind === kind && (name === undefined || e.name === name));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private check(): void {
    if (this.failure) throw new Error(`timeline watch failed: ${String(this.failure)}`);
  }
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
}

/** the object's status condition `type` is True */
export function hasCondition(o: KubeObject, type: string): boolean {
  const conditions = (o.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
  return conditions.some((c) => c.type === type && c.status === 'True');
}
