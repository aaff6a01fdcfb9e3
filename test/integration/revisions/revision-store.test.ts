/**
 * The revision store against the real API server, with and without its index (a metadata-only
 * watch of the revision Secrets): the same answers, and with a synced index no LIST per question;
 * a reconcile reads its own writes before the watch delivers them.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RevisionIndex } from '../../../src/revisions/revision-index.ts';
import { LABEL_REVISION_OF, REVISION_COMPONENT_SELECTOR, RevisionStore } from '../../../src/revisions/revision-store.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../../../src/kube/client.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { kubeconfigPath } from '../../support/env.ts';
import { sleep } from '../../support/wait.ts';

const run = randomBytes(3).toString('hex');
const ns = `revisions-${run}`;
let client: RestKubeClient;
let index: RevisionIndex;

const objects = (v: string): KubeObject[] => [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { v } } as KubeObject];

beforeAll(async () => {
  client = createKubeClient(loadKubeConfig(kubeconfigPath()));
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  index = new RevisionIndex(client, ns, LABEL_REVISION_OF, REVISION_COMPONENT_SELECTOR);
});
afterAll(async () => {
  await index?.stop();
  await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined).catch(() => undefined);
  await client.close();
});

describe('RevisionStore with a RevisionIndex', () => {
  it('answers list, findByInputs and prune from the index once synced, reading its own writes, as the API server would', async () => {
    const plain = new RevisionStore(client, ns);
    const indexed = new RevisionStore(client, ns, index);
    // before the index has synced it asks the API server
    expect(index.secretsOf('app')).toBeUndefined();
    await plain.save('app', { number: 1, contentDigest: 'sha256:one', inputs: 'in-one' }, objects('1'));
    index.start();
    for (let i = 0; i < 500 && !index.secretsOf('app')?.length; i++) await sleep(20);

    client.requests.reset();
    // written by this store: visible at once, whether or not the watch delivered it yet
    await indexed.save('app', { number: 2, contentDigest: 'sha256:two', inputs: 'in-two' }, objects('2'));
    expect(await indexed.list('app')).toEqual([
      { number: 1, contentDigest: 'sha256:one' },
      { number: 2, contentDigest: 'sha256:two' },
    ]);
    expect(await indexed.findByInputs('app', 'in-two')).toEqual({ number: 2, contentDigest: 'sha256:two', inputs: 'in-two' });
    expect(await indexed.findByInputs('app', 'in-three')).toBeUndefined();
    expect(await indexed.findByInputs('other', 'in-one')).toBeUndefined();
    // stored (every chunk) under that number and content, from the index; never without one
    expect(indexed.isStored('app', { number: 2, contentDigest: 'sha256:two' })).toBe(true);
    expect(indexed.isStored('app', { number: 1, contentDigest: 'sha256:one' })).toBe(true);
    expect(indexed.isStored('app', { number: 2, contentDigest: 'sha256:one' })).toBe(false);
    expect(indexed.isStored('app', { number: 3, contentDigest: 'sha256:two' })).toBe(false);
    expect(indexed.isStored('other', { number: 2, contentDigest: 'sha256:two' })).toBe(false);
    expect(plain.isStored('app', { number: 2, contentDigest: 'sha256:two' })).toBe(false);
    expect(await indexed.prune('app', new Set([2]))).toBe(1);
    expect(indexed.isStored('app', { number: 1, contentDigest: 'sha256:one' })).toBe(false);
    expect(await indexed.list('app')).toEqual([{ number: 2, contentDigest: 'sha256:two' }]);
    // one create, one delete: no LIST
    expect(client.requests.snapshot()).toEqual({ create: 1, delete: 1 });

    // the API server agrees
    // (read whole, a Secret also says when it was stored)
    expect(await plain.list('app')).toEqual([{ number: 2, contentDigest: 'sha256:two', storedAt: expect.any(String) }]);
    expect(await plain.findByInputs('app', 'in-two')).toEqual({ number: 2, contentDigest: 'sha256:two', inputs: 'in-two' });
    expect(await indexed.load('app', { number: 2, contentDigest: 'sha256:two' })).toEqual(objects('2'));

    // a Secret deleted by someone else leaves the index through the watch
    await plain.prune('app');
    for (let i = 0; i < 500 && index.secretsOf('app')?.length; i++) await sleep(20);
    expect(await indexed.list('app')).toEqual([]);
  });
});
