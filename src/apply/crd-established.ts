/**
 * Waiting for a bundle's CRDs: until the API server reports them Established, and until
 * discovery serves their kinds (the two are a moment apart). The applier applies the objects of
 * those kinds only then.
 */
import { HoistError, throwIfCancelled } from '../util/errors.ts';
import { sleep } from '../util/sleep.ts';
import type { KubeClient, KubeObject } from '../kube/types.ts';
import { ApplyCode } from './errors.ts';

const cancelled = (signal: AbortSignal | undefined, what: string) => throwIfCancelled(signal, what, { stage: 'apply' });

/**
 * Waits until every named CRD is Established: one GET each, then a watch per pending CRD from
 * the resourceVersion that GET returned, so the wait ends with the event (polling with backoff
 * overshot the establishing controller by up to a second). A watch that ends early falls back
 * to another GET round. A fired signal ends the wait with a CancelledError.
 */
export async function waitEstablished(client: KubeClient, names: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(names);
  const type = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;
  while (pending.size > 0) {
    cancelled(signal, `waiting until ${[...pending].join(', ')} are established`);
    const versions = new Map<string, string>();
    await Promise.all(
      [...pending].map(async (name) => {
        const crd = await client.get(type, name, undefined, { signal });
        if (crd && isEstablished(crd)) pending.delete(name);
        else if (crd?.metadata.resourceVersion) versions.set(name, crd.metadata.resourceVersion);
      }),
    );
    if (pending.size === 0) break;
    if (Date.now() > deadline) {
      throw new HoistError(`customresourcedefinitions not established after ${timeoutMs / 1000}s: ${[...pending].join(', ')}`, {
        stage: 'apply',
        code: ApplyCode.CrdNotEstablished,
        subject: [...pending].join(', '),
        terminal: false,
      });
    }
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), Math.max(0, deadline - Date.now()));
    const stop = () => abort.abort();
    signal?.addEventListener('abort', stop, { once: true });
    try {
      await Promise.all(
        [...versions].map(async ([name, resourceVersion]) => {
          try {
            const events = client.watch(type, {
              fieldSelector: `metadata.name=${name}`,
              resourceVersion,
              timeoutSeconds: Math.ceil(timeoutMs / 1000),
              signal: abort.signal,
            });
            for await (const ev of events) {
              if ((ev.type === 'ADDED' || ev.type === 'MODIFIED') && isEstablished(ev.object)) {
                pending.delete(name);
                return;
              }
            }
          } catch {
            // expired resourceVersion, connection lost, deadline: the next GET round decides
          }
        }),
      );
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
    }
    if (pending.size > 0) await sleep(100, signal);
  }
}

/**
 * Established can precede discovery serving the kind by a moment: wait (bounded by the CRD
 * timeout) until every kind of `objects` is served, so they are not reported as unserved.
 */
export async function waitServed(client: KubeClient, objects: readonly KubeObject[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const types = [...new Map(objects.map((o) => [`${o.apiVersion}/${o.kind}`, { apiVersion: o.apiVersion, kind: o.kind }])).values()];
  for (;;) {
    const missing = (await Promise.all(types.map(async (t) => ((await client.discovery.resourceFor(t)) ? undefined : t)))).filter(Boolean);
    if (missing.length === 0 || Date.now() > deadline) return;
    await sleep(100, signal);
    cancelled(signal, "waiting until the bundle's kinds are served");
    client.discovery.invalidate();
  }
}

function isEstablished(crd: KubeObject): boolean {
  const conds = (crd.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions ?? [];
  return conds.some((c) => c.type === 'Established' && c.status === 'True');
}

/** "group/version/Kind" keys of every version a CRD serves */
export function crdKinds(crd: KubeObject): string[] {
  const spec = crd.spec as { group?: string; names?: { kind?: string }; versions?: Array<{ name: string; served?: boolean }> } | undefined;
  if (!spec?.group || !spec.names?.kind) return [];
  return (spec.versions ?? []).filter((v) => v.served !== false).map((v) => `${spec.group}/${v.name}/${spec.names!.kind}`);
}
