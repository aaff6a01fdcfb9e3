import { describe, expect, it } from 'vitest';
import { CachedDiscovery, type DiscoveryGet } from '../../../src/kube/discovery.ts';

/** aggregated discovery bodies for /api and /apis, serving the kinds in `served` ("group/version/Kind") */
function server(served: Set<string>) {
  const pending: Array<() => void> = [];
  let hold = false;
  let requests = 0;
  const body = (core: boolean) => ({
    kind: 'APIGroupDiscoveryList',
    items: [...served]
      .map((k) => k.split('/'))
      .filter(([g]) => (g === '') === core)
      .map(([group, version, kind]) => ({
        metadata: { name: group },
        versions: [{ version, resources: [{ resource: `${kind!.toLowerCase()}s`, scope: 'Namespaced', responseKind: { kind } }] }],
      })),
  });
  const get: DiscoveryGet = async (req) => {
    requests++;
    // what the server serves when the request is sent, answered when released
    const answer = body(req.path === '/api');
    if (hold) await new Promise<void>((r) => pending.push(r));
    return answer;
  };
  return {
    get,
    hold: (on: boolean) => (hold = on),
    release: () => pending.splice(0).forEach((r) => r()),
    requests: () => requests,
  };
}

const WIDGET = { apiVersion: 'example.com/v1', kind: 'Widget' };
const flush = () => new Promise((r) => setTimeout(r, 0));

describe('CachedDiscovery', () => {
  it('a load begun before invalidate() does not answer lookups made after it', async () => {
    const served = new Set(['/v1/ConfigMap']);
    const s = server(served);
    const d = new CachedDiscovery(s.get, { missRefreshIntervalMs: 60_000 });
    s.hold(true);
    const early = d.resourceFor({ apiVersion: 'v1', kind: 'ConfigMap' });
    await flush();
    // the CRD becomes Established while that load is in flight; its watch invalidates
    served.add('example.com/v1/Widget');
    d.invalidate();
    s.hold(false);
    const late = d.resourceFor(WIDGET);
    s.release();
    expect(await early).toMatchObject({ kind: 'ConfigMap' });
    expect(await late).toMatchObject({ group: 'example.com', kind: 'Widget', resource: 'widgets' });
    // and the stale load, finishing last, did not become the cache
    expect(await d.resourceFor(WIDGET, { refreshOnMiss: false })).toMatchObject({ kind: 'Widget' });
  });

  it('concurrent lookups share one load', async () => {
    const s = server(new Set(['/v1/ConfigMap']));
    const d = new CachedDiscovery(s.get);
    await Promise.all([1, 2, 3].map(() => d.resourceFor({ apiVersion: 'v1', kind: 'ConfigMap' })));
    expect(s.requests()).toBe(2);
  });

  it('a miss soon after a load is trusted; the window counts from when the load was sent', async () => {
    let now = 1_000;
    const served = new Set(['/v1/ConfigMap']);
    const s = server(served);
    const realNow = Date.now;
    Date.now = () => now;
    try {
      const d = new CachedDiscovery(s.get, { missRefreshIntervalMs: 250 });
      s.hold(true);
      const first = d.resourceFor({ apiVersion: 'v1', kind: 'ConfigMap' });
      await flush();
      now += 200; // the answer arrives 200 ms after it was asked for
      s.release();
      await first;
      served.add('example.com/v1/Widget');
      s.hold(false);
      now += 100; // 300 ms after the load was sent, 100 ms after it arrived: not trusted
      expect(await d.resourceFor(WIDGET)).toMatchObject({ kind: 'Widget' });
      expect(s.requests()).toBe(4);
    } finally {
      Date.now = realNow;
    }
  });
});
