/**
 * A BundleDeployment refused before apply is worked out once (issue 23): neither the event of its
 * own status write (also when the event arrives before the write's response) nor its own lineage
 * queues its reconcile a second time, so a terminal refusal is fetched and rendered once. What can
 * change the outcome still runs the pipeline again: a new core.rukpak.io/requested-at value, a
 * change of the Secret its source references, a spec change. Counted in the controller's log (one
 * `reconciled` line with a process stage per render) and at the file server, against the real API
 * server; the waits are for outcomes, then for the controller to stay idle.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_REQUESTED_AT } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { isReconciled } from '../support/controller-log.ts';
import { BD_TYPE, cond, isDone, startTestController, type TestController } from '../support/controller.ts';
import { startFileServer, tarGz, type FileServer } from '../support/http-files.ts';
import { makePki } from '../support/registry.ts';

const USER = 'refused-once';
const PASSWORD = 'refused-once-pw-never-shown';
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;

let t: TestController;
let files: FileServer;
let work: string;

/** pipeline runs of `bd` that rendered (their one info line has a process stage) */
const renders = (bd: string): number =>
  t.log.records.filter((r) => isReconciled(r, bd) && (r.stagesMs as Record<string, number> | undefined)?.process !== undefined).length;
const fetches = (path: string): number => files.log.filter((r) => r.method === 'GET' && r.path === path).length;
/** no reconcile queued or running for 3 s: the events of the controller's own writes have arrived and were looked at */
const quiet = () => t.idle({ quietMs: 3000 });

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-refused-once-'));
  // https: credentials are sent over https only
  const pki = await makePki(join(work, 'pki'));
  t = await startTestController({ sources: { ca: pki.caCert } });
  files = await startFileServer({ auth: { username: USER, password: PASSWORD }, tls: pki });
  await t.client.create({
    ...SECRET,
    metadata: { name: 'creds', namespace: t.namespace, annotations: { 'core.rukpak.io/credential-hosts': new URL(files.url('/')).host } },
    type: 'Opaque',
    stringData: { username: USER, password: PASSWORD },
  } as unknown as KubeObject);
}, 120_000);

afterAll(async () => {
  await t?.stop();
  await files?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('a terminal refusal before apply', () => {
  const name = 'refused';
  const source = (path: string) => [{ kind: 'http' as const, http: { url: files.url(path), auth: { secretRef: { name: 'creds' } } } }];

  it('is fetched and rendered once, not again for its own status write', async () => {
    files.set('/bad.tgz', await tarGz({ 'bad.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: [unclosed\n' }));
    await t.create(name, { installNamespace: `refused-${t.runId}`, format: 'plain', sources: source('/bad.tgz') });
    const bd = await t.waitFor(name, (b) => cond(b, 'Progressing')?.reason === 'Blocked', 'blocked by the process failure');
    expect(cond(bd, 'Unpacked'), JSON.stringify(bd.status?.conditions)).toMatchObject({ status: 'False', reason: 'ProcessFailed' });
    await quiet();
    expect(renders(name)).toBe(1);
    expect(fetches('/bad.tgz')).toBe(1);
  });

  it('is worked out again, once, for a new requested-at value', async () => {
    await t.client.patch(BD_TYPE, name, undefined, { metadata: { annotations: { [ANNOTATION_REQUESTED_AT]: 'once-1' } } }, 'merge');
    await t.waitFor(name, (b) => b.status?.lastHandledRequest === 'once-1', 'the request handled');
    await quiet();
    expect(renders(name)).toBe(2);
  });

  it('is worked out again, once, when the Secret its source references changes', async () => {
    const live = await t.client.get(SECRET, 'creds', t.namespace);
    const mark = t.log.mark();
    await t.client.patch(
      SECRET,
      'creds',
      t.namespace,
      { stringData: { note: 'rotated' }, metadata: { resourceVersion: live!.metadata.resourceVersion } },
      'merge',
    );
    await t.log.waitFor(mark, (lines) => lines.some((r) => isReconciled(r, name)), `${name}: reconciled after the Secret changed`);
    await quiet();
    expect(renders(name)).toBe(3);
  });

  it('installs once the spec names a good bundle', async () => {
    files.set('/good.tgz', await tarGz({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  a: "1"\n' }));
    await t.patchSpec(name, { sources: source('/good.tgz') });
    const bd = await t.waitFor(name, isDone, 'installed');
    expect(cond(bd, 'Installed')).toMatchObject({ status: 'True', message: 'revision 1: 1 objects' });
    expect(fetches('/good.tgz')).toBeGreaterThanOrEqual(1);
  });
});
