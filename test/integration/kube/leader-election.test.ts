import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient, loadKubeConfig, type ClusterConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import { LeaderElector, type Lease } from '../../../src/kube/leader-election.ts';
import { kubeconfigPath } from '../../support/env.ts';
import { startTcpProxy } from './tcp-proxy.ts';
import { sleep, waitUntil } from '../../support/wait.ts';

const NS = { apiVersion: 'v1', kind: 'Namespace' };
const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' };
const FAST = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 };

describe('leader election on a Lease', () => {
  let cfg: ClusterConfig;
  let client: RestKubeClient;
  const ns = `le-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    cfg = loadKubeConfig(kubeconfigPath());
    client = createKubeClient(cfg);
    await client.create({ ...NS, metadata: { name: ns } });
  });
  afterAll(async () => {
    await client.delete(NS, ns, undefined);
    await client.close();
  });

  function elector(identity: string, name: string, events: string[], c: RestKubeClient = client) {
    return new LeaderElector({
      client: c,
      name,
      namespace: ns,
      identity,
      ...FAST,
      onStartedLeading: (signal) => {
        events.push(`${identity} started`);
        signal.addEventListener('abort', () => events.push(`${identity} signal`));
      },
      onStoppedLeading: () => events.push(`${identity} stopped`),
    });
  }

  it('lets exactly one of two electors lead; the other takes over at once after a release', async () => {
    const events: string[] = [];
    const a = elector('a', 'one', events);
    const b = elector('b', 'one', events);
    const stopA = new AbortController();
    const stopB = new AbortController();
    const runA = a.run(stopA.signal);
    await waitUntil('a to lead', () => a.isLeader());
    const runB = b.run(stopB.signal);
    // b keeps standing by for well over a lease duration while a renews
    await sleep(3000);
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    expect(b.state).toBe('candidate');
    expect(b.leader).toBe('a');
    const lease = await client.get<Lease>(LEASE, 'one', ns);
    expect(lease?.spec?.holderIdentity).toBe('a');

    // every holder the Lease records from here on, in order
    const holders: string[] = [];
    const watching = new AbortController();
    const history = (async () => {
      for await (const ev of client.watch<Lease>(LEASE, {
        namespace: ns,
        fieldSelector: 'metadata.name=one',
        resourceVersion: lease!.metadata.resourceVersion!,
        signal: watching.signal,
      })) {
        if (ev.type !== 'BOOKMARK') holders.push(ev.object.spec?.holderIdentity ?? '');
      }
    })().catch(() => undefined);
    stopA.abort();
    await runA;
    expect(events).toEqual(['a started', 'a signal', 'a stopped']);
    await waitUntil('b to take over', () => b.isLeader());
    await waitUntil('the watch to see b hold the Lease', () => holders.includes('b'));
    watching.abort();
    await history;
    // released, not expired: a's last write gave the Lease up (no holder), and b took the free Lease
    expect(holders.slice(0, holders.indexOf('b')).at(-1)).toBe('');
    expect((await client.get<Lease>(LEASE, 'one', ns))?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    stopB.abort();
    await runB;
    expect(events).toEqual(['a started', 'a signal', 'a stopped', 'b started', 'b signal', 'b stopped']);
  });

  it('a leader that cannot renew loses leadership (signal fires) before the standby takes over', async () => {
    const server = new URL(cfg.server);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port) });
    const cut = createKubeClient({ ...cfg, server: proxy.url }, { requestTimeoutMs: 500 });
    const events: string[] = [];
    const a = elector('a', 'two', events, cut);
    const b = elector('b', 'two', events);
    const stop = new AbortController();
    try {
      const runA = a.run(stop.signal);
      await waitUntil('a to lead', () => a.isLeader());
      const runB = b.run(stop.signal);
      await sleep(500);
      await proxy.down(); // a's API server connection is gone: it cannot renew
      await runA; // run resolves once leadership is lost
      const lostAt = events.length;
      expect(events).toEqual(['a started', 'a signal', 'a stopped']);
      await waitUntil('b to take over after expiry', () => b.isLeader());
      // b only took over after a had already stopped leading
      expect(events.slice(lostAt)).toEqual(['b started']);
      stop.abort();
      await runB;
    } finally {
      stop.abort();
      await cut.close();
      await proxy.close();
    }
  });
});
