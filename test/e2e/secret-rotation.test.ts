/**
 * Referenced Secrets are watched (issue 12, DESIGN §1): rotating the pull Secret of a floating
 * image source re-resolves it within seconds (no pollInterval), and a pinned source using the same
 * Secret makes zero registry requests. The registry is the real one, behind a counting proxy.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/kube/types.ts';
import { RegistryClient } from '../../src/sources/image/client.ts';
import { pushImage, writeLayer } from '../../src/sources/image/push.ts';
import { parseReference } from '../../src/sources/image/reference.ts';
import { isReconciled, type LogRecord } from '../support/controller-log.ts';
import { isDone, startTestController, type TestController } from '../support/controller.ts';
import { startCountingProxy, startRegistry, type CountingProxy, type TestRegistry } from '../support/registry.ts';
import { waitUntil } from '../support/wait.ts';

const USERS = { alice: 'alice-pw-3c1d-never-shown', bob: 'bob-pw-9e2f-never-shown' };
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const cm = (value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-image\ndata:\n  value: "${value}"\n`;

let t: TestController;
let reg: TestRegistry;
let proxy: CountingProxy;
let work: string;
let seq = 0;

async function push(repo: string, tag: string, value: string): Promise<string> {
  const client = new RegistryClient({ ca: reg.pki!.caCert });
  try {
    const layer = await writeLayer([{ name: 'cm.yaml', data: cm(value) }], join(work, `layer-${seq++}.tgz`));
    return (
      await pushImage(client, parseReference(`${reg.host}/${repo}:${tag}`), [layer], {
        stage: 'fetch',
        credential: { username: 'alice', password: USERS.alice },
      })
    ).digest;
  } finally {
    await client.close();
  }
}

async function writePullSecret(user: keyof typeof USERS): Promise<void> {
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'pull', namespace: t.namespace },
    type: 'kubernetes.io/dockerconfigjson',
    stringData: reg.dockerConfig(user, USERS[user], proxy.host),
  };
  const live = await t.client.get({ apiVersion: 'v1', kind: 'Secret' }, 'pull', t.namespace);
  if (live) await t.client.update({ ...body, metadata: { ...body.metadata, resourceVersion: live.metadata.resourceVersion } } as unknown as KubeObject);
  else await t.client.create(body as unknown as KubeObject);
}

async function valueIn(ns: string): Promise<string | undefined> {
  return ((await t.client.get(CM, 'from-image', ns)) as (KubeObject & { data?: { value?: string } }) | undefined)?.data?.value;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-rotation-'));
  reg = await startRegistry({ auth: 'htpasswd', users: USERS });
  proxy = await startCountingProxy(reg.url, reg.pki!.caCert);
  t = await startTestController({ sources: { image: { insecureHosts: [proxy.host], retry: { attempts: 2, baseDelayMs: 5 } } } });
  await writePullSecret('alice');
}, 120_000);

afterAll(async () => {
  await t?.stop();
  await proxy?.stop();
  await reg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('a rotated pull Secret', () => {
  it('re-resolves a floating image within seconds; a pinned one makes no registry request', async () => {
    await push('bundles/floating', 'stable', 'one');
    const pinnedDigest = await push('bundles/pinned', 'v1', 'pinned');
    const floating = `floating-${t.runId}`;
    const pinned = `pinned-${t.runId}`;
    const auth = { secretRef: { name: 'pull' } };
    await t.create(floating, {
      installNamespace: floating,
      format: 'plain',
      sources: [{ kind: 'image', image: { ref: `${proxy.host}/bundles/floating:stable`, auth } }],
    });
    await t.create(pinned, {
      installNamespace: pinned,
      format: 'plain',
      sources: [{ kind: 'image', image: { ref: `${proxy.host}/bundles/pinned@${pinnedDigest}`, auth } }],
    });
    await t.waitFor(floating, isDone, 'floating installed', 60_000);
    await t.waitFor(pinned, isDone, 'pinned installed', 60_000);
    expect(await valueIn(floating)).toBe('one');

    // the tag moves; without pollInterval nothing looks at it
    await push('bundles/floating', 'stable', 'two');
    await t.idle();
    expect(t.log.records.filter((r) => isReconciled(r, floating)).at(-1)?.requeueAfterMs, 'no poll scheduled').toBeUndefined();
    expect(await valueIn(floating)).toBe('one');
    proxy.reset();

    // the credential is rotated (another user of the same registry)
    const mark = t.log.mark();
    await writePullSecret('bob');
    await waitUntil('the floating BD re-resolved after the rotation', async () => (await valueIn(floating)) === 'two');
    await t.waitFor(floating, isDone, 'floating done at the new digest', 30_000);
    // the re-resolution used the new credential (requests carried Authorization)
    expect(proxy.requests.some((r) => r.path.startsWith('/v2/bundles/floating/manifests/stable') && r.authorized)).toBe(true);
    // both BDs heard of the rotation together: the pinned one's reconcile since then is over
    const isHeard = (r: LogRecord): boolean => r.msg === 'referenced Secret changed' && r.bd === pinned;
    const heard = (await t.log.waitFor(mark, (l) => l.some(isHeard), 'the pinned BD heard of the rotation')).find(isHeard)!;
    await t.reconciled(pinned, heard.time, 'pinned BD reconciled after the rotation');
    expect(proxy.count(/^\/v2\/bundles\/pinned\//), 'registry requests for the pinned source').toBe(0);
    expect(await valueIn(pinned)).toBe('pinned');
  }, 180_000); // its waits are bounded on their own (60 + 60 + 15 + 30 s), with messages saying which
});
