/**
 * The target registry (src/reconciler/targets.ts) on an injectable clock: BDs whose kubeconfigs
 * have the same server and identity share one remote target (also from different Secrets),
 * another identity is another target, a target closes when its last BD leaves, a rotated Secret
 * with new content moves its BDs to a new target and closes the old one, and a target that went
 * down is probed only when its backoff step is due (1 s doubling, 20 % jitter), the answer of a
 * real HTTPS server bringing it back up. Kubeconfig Secrets live in the fake management client
 * (test/support/fakes/kube.ts); the remote API servers are real TLS listeners on 127.0.0.1 (one
 * that answers 404 to everything, and a port where nothing listens).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BundleDeployment } from '../../../api/v1alpha2/types.ts';
import { generatePki } from '../../../src/devcluster/certs.ts';
import { Identities } from '../../../src/reconciler/identity.ts';
import { RemoteTarget, Targets, type Target } from '../../../src/reconciler/targets.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { FakeClock, settle } from '../../support/fake-clock.ts';
import { FakeKube } from '../../support/fakes/kube.ts';

const NS = 'tenants';
let dir: string;
/** PEM text of the CA and of the server's certificate and key */
let ca: string;
let server: Server;
/** https://127.0.0.1:<port> of the server that answers */
let up: string;
/** https://127.0.0.1:<port> where nothing listens */
let dead: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hoist-targets-'));
  const pki = await generatePki(dir);
  const [cert, key] = await Promise.all([readFile(pki.servingCert, 'utf8'), readFile(pki.servingKey, 'utf8')]);
  ca = await readFile(pki.caCert, 'utf8');
  server = createServer({ cert, key }, (_req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  up = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // a port that was free a moment ago: connections to it are refused
  const probe = createTcpServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  dead = `https://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise((r) => probe.close(r));
}, 60_000);

afterAll(async () => {
  if (server) await new Promise((r) => server.close(r));
  if (dir) await rm(dir, { recursive: true, force: true });
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
function kubeconfig(serverUrl: string, token: string): string {
  return `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: { server: "${serverUrl}", certificate-authority-data: ${b64(ca)} }\nusers:\n- name: u\n  user: { token: "${token}" }\ncontexts:\n- name: c\n  context: { cluster: c, user: u }\ncurrent-context: c\n`;
}
function bd(name: string, secret: string): BundleDeployment {
  return {
    apiVersion: 'core.rukpak.io/v1alpha2',
    kind: 'BundleDeployment',
    metadata: { name },
    spec: { kubeConfig: { secretRef: { name: secret, namespace: NS } } },
  } as unknown as BundleDeployment;
}

interface World {
  targets: Targets;
  kube: FakeKube;
  clock: FakeClock;
  requeued: string[][];
  changes: string[];
  put(secret: string, text: string): void;
}

let world: World | undefined;
afterEach(async () => {
  await world?.targets.stop();
  world = undefined;
});

function makeWorld(): World {
  const kube = new FakeKube();
  const clock = new FakeClock();
  const requeued: string[][] = [];
  const changes: string[] = [];
  const local = { key: 'local' } as Target;
  const targets = new Targets({
    local,
    management: new Identities(kube),
    log: pino({ level: 'silent' }),
    onObjectEvent: () => () => {},
    requeue: (bds) => void requeued.push([...bds].sort()),
    managementServer: async () => undefined,
    clock,
    onChange: (cluster, event) => void changes.push(`${event} ${cluster}`),
  });
  const put = (secret: string, text: string) =>
    void kube.put({ apiVersion: 'v1', kind: 'Secret', metadata: { name: secret, namespace: NS }, data: { value: b64(text) } } as KubeObject);
  world = { targets, kube, clock, requeued, changes, put };
  return world;
}

describe('the target registry', () => {
  it('shares one target among BDs of the same server and identity, even from different Secrets; another identity is another target', async () => {
    const w = makeWorld();
    w.put('a', kubeconfig(up, 'one'));
    w.put('a-copy', kubeconfig(up, 'one'));
    w.put('b', kubeconfig(up, 'two'));
    const ta = await w.targets.for(bd('bd-1', 'a'));
    const ta2 = await w.targets.for(bd('bd-2', 'a-copy'));
    const tb = await w.targets.for(bd('bd-3', 'b'));
    expect(ta).toBeInstanceOf(RemoteTarget);
    expect(ta2).toBe(ta);
    expect(tb).not.toBe(ta);
    expect(tb.key).not.toBe(ta.key);
    expect(ta.cluster).toBe(new URL(up).host);
    expect(w.targets.remoteTargets()).toHaveLength(2);
    expect([...(ta as RemoteTarget).users].sort()).toEqual(['bd-1', 'bd-2']);
    expect(w.changes.filter((c) => c.startsWith('opened'))).toHaveLength(2);
    // a BD without spec.kubeConfig is local and joins no remote target
    expect(await w.targets.for({ ...bd('bd-4', 'a'), spec: {} } as BundleDeployment)).toBe(w.targets.local);
  });

  it('closes a target when its last BD leaves, not before', async () => {
    const w = makeWorld();
    w.put('a', kubeconfig(up, 'one'));
    const t = await w.targets.for(bd('bd-1', 'a'));
    await w.targets.for(bd('bd-2', 'a'));
    w.targets.release('bd-1');
    expect(w.targets.remoteTargets()).toEqual([t]);
    expect(w.changes).not.toContain(`closed ${t.cluster}`);
    w.targets.release('bd-2');
    expect(w.targets.remoteTargets()).toEqual([]);
    expect(w.changes).toContain(`closed ${t.cluster}`);
    // a BD that drops spec.kubeConfig leaves its target too
    const again = await w.targets.for(bd('bd-3', 'a'));
    expect(again).not.toBe(t);
    await w.targets.for({ ...bd('bd-3', 'a'), spec: {} } as BundleDeployment);
    expect(w.targets.remoteTargets()).toEqual([]);
  });

  it('reuses the cached read until the Secret is rotated; new content is a new target and the old one closes', async () => {
    const w = makeWorld();
    w.put('a', kubeconfig(up, 'one'));
    const t1 = await w.targets.for(bd('bd-1', 'a'));
    w.put('a', kubeconfig(up, 'two'));
    // not told of the rotation, within the re-read interval: the cached target
    expect(await w.targets.for(bd('bd-1', 'a'))).toBe(t1);
    w.targets.rotated('bd-1', `${NS}/a`);
    const t2 = await w.targets.for(bd('bd-1', 'a'));
    expect(t2).not.toBe(t1);
    expect(w.targets.remoteTargets()).toEqual([t2]);
    expect(w.changes).toContain(`closed ${t1.cluster}`);
  });

  it('reads the Secret again after five minutes without a rotation notice', async () => {
    const w = makeWorld();
    w.put('a', kubeconfig(up, 'one'));
    const t1 = await w.targets.for(bd('bd-1', 'a'));
    w.put('a', kubeconfig(up, 'two'));
    await w.clock.advance(5 * 60_000 - 1);
    expect(await w.targets.for(bd('bd-1', 'a'))).toBe(t1);
    await w.clock.advance(1);
    expect(await w.targets.for(bd('bd-1', 'a'))).not.toBe(t1);
  });
});

describe('reachability', () => {
  it('a target that went down is probed only when its backoff step is due; each failed probe doubles the step', async () => {
    const w = makeWorld();
    w.put('dead', kubeconfig(dead, 'one'));
    const t = (await w.targets.for(bd('bd-1', 'dead'))) as RemoteTarget;
    await w.targets.for(bd('bd-2', 'dead'));
    expect(await t.reachable()).toBe(true);
    t.markDown('GET /api: no response');
    expect(w.requeued).toEqual([['bd-1', 'bd-2']]);
    expect(w.changes).toContain(`down ${t.cluster}`);
    expect(t.whenDown.aborted).toBe(true);
    const step1 = t.down!.nextProbeAt - w.clock.now();
    expect(step1).toBeGreaterThanOrEqual(1_000);
    expect(step1).toBeLessThanOrEqual(1_200);
    expect(t.retryInMs()).toBe(step1);
    // not due: no probe, no request
    let requests = 0;
    t.client.onRequest(() => void requests++);
    await w.clock.advance(step1 - 1);
    expect(await t.reachable()).toBe(false);
    expect(requests).toBe(0);
    // due: one probe, refused (nothing listens): still down, the next step doubled
    await w.clock.advance(1);
    expect(await t.reachable()).toBe(false);
    const step2 = t.down!.nextProbeAt - w.clock.now();
    expect(step2).toBeGreaterThanOrEqual(2_000);
    expect(step2).toBeLessThanOrEqual(2_400);
    await w.clock.advance(step2);
    expect(await t.reachable()).toBe(false);
    const step3 = t.down!.nextProbeAt - w.clock.now();
    expect(step3).toBeGreaterThanOrEqual(4_000);
    expect(step3).toBeLessThanOrEqual(4_800);
    expect(requests).toBeGreaterThan(0);
    expect(t.down!.error).not.toBe('GET /api: no response');
    // one requeue: going down once (the probes' failures do not requeue again)
    expect(w.requeued).toHaveLength(1);
  });

  it('the first answer when a probe is due brings the target up and requeues its BDs', async () => {
    const w = makeWorld();
    w.put('a', kubeconfig(up, 'one'));
    const t = (await w.targets.for(bd('bd-1', 'a'))) as RemoteTarget;
    t.markDown('GET /api: no response');
    const signal = t.whenDown;
    await w.clock.advance(1_200);
    expect(await t.reachable()).toBe(true);
    await settle();
    expect(t.down).toBeUndefined();
    expect(w.changes).toContain(`up ${t.cluster}`);
    expect(w.requeued).toEqual([['bd-1'], ['bd-1']]);
    expect(signal.aborted).toBe(true);
    expect(t.whenDown.aborted).toBe(false);
    // the backoff starts over: down again, the first step is 1 s again
    t.markDown('again');
    expect(t.down!.nextProbeAt - w.clock.now()).toBeLessThanOrEqual(1_200);
  });

  it('bounds the concurrent reconciles of one target', async () => {
    const w = makeWorld();
    w.put('a', kubeconfig(up, 'one'));
    const t = (await w.targets.for(bd('bd-1', 'a'))) as RemoteTarget;
    expect([1, 2, 3, 4, 5].map(() => t.tryEnter())).toEqual([true, true, true, true, false]);
    t.leave();
    expect(t.tryEnter()).toBe(true);
  });
});
