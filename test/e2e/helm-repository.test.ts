/**
 * Issue 36, Helm HTTP repositories, through the real controller and API server: a chart
 * repository made by the real `helm package` and `helm repo index` (three versions of a
 * hand-made chart), served over HTTPS with Basic auth behind a private CA. A BundleDeployment at
 * `>=1.2 <2` installs 1.2.0 — exactly the objects `helm template r/greeter --version '>=1.2 <2'`
 * renders after `helm repo add` with the same credentials and CA — and after 1.3.0 is indexed,
 * a requested reconcile upgrades it to 1.3.0 without a spec change (again equal to helm's). Bad
 * repositories name the stage and why, and the installed revision stays: an index over the
 * controller's --helm-index-max-size, a range no version satisfies, a tarball whose digest is
 * not the index's. `hoist render` of the same chart gets the controller's content digest. The
 * credentials reach neither status, events nor the controller's log.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_VERSION,
  ANNOTATION_CREDENTIAL_HOSTS,
  ANNOTATION_REQUESTED_AT,
  KIND,
  type BundleDeploymentSpec,
  type HelmSource,
} from '../../api/v1alpha2/types.ts';
import { previewBundle } from '../../src/cli/render.ts';
import { RevisionStore } from '../../src/revisions/revision-store.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { BD_TYPE, cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { helmTemplateFromRepo, makeChartRepo, type ChartRepo } from '../support/helm-repo.ts';
import { sha256, startFileServer, type FileServer } from '../support/http-files.ts';
import { makePki, type TestPki } from '../support/registry.ts';

const USER = 'chart-puller';
const PASSWORD = 'chart-pw-4d1e-never-shown';
const SECRET_VALUES = [PASSWORD, Buffer.from(PASSWORD).toString('base64'), Buffer.from(`${USER}:${PASSWORD}`).toString('base64')];
/** the controller's --helm-index-max-size in this file */
const INDEX_LIMIT = 64 * 1024;
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

let t: TestController;
let work: string;
let pki: TestPki;
let files: FileServer;
/** the same repository, anonymous over plain http: what `hoist render` (no cluster Secrets) can read */
let anonymous: FileServer;
let repo: ChartRepo;

const source = (h: Partial<HelmSource> = {}): BundleDeploymentSpec['sources'][number] => ({
  kind: 'helm',
  helm: { repoURL: files.url('/charts'), chart: 'greeter', auth: { secretRef: { name: 'charts-creds' } }, caSecretRef: { name: 'charts-ca' }, ...h },
});
const spec = (ns: string, h: Partial<HelmSource> = {}): BundleDeploymentSpec => ({
  installNamespace: ns,
  format: 'helm',
  sources: [source(h)],
  config: { helm: { releaseName: 'greeter' } },
});

/** `helm template greeter r/greeter --version <version>` after `helm repo add` with this file's credentials and CA, placed in `ns` */
async function helmTemplate(version: string, ns: string): Promise<Map<string, KubeObject>> {
  const objects = await helmTemplateFromRepo(
    { url: files.url('/charts'), username: USER, password: PASSWORD, caFile: pki.caCertPath },
    'greeter',
    version,
    'greeter',
    ns,
  );
  return new Map(objects.map((o) => ({ ...o, metadata: { ...o.metadata, namespace: ns } })).map((o) => [key(o), o]));
}

const key = (o: KubeObject): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

async function storedObjects(name: string): Promise<{ objects: Map<string, KubeObject>; spec: unknown }> {
  const bd = await t.get(name);
  const revisions = new RevisionStore(t.client, t.namespace);
  const active = bd!.status!.activeRevision!;
  const record = (await revisions.list(name)).find((r) => r.number === active.number)!;
  const objects = await revisions.load(name, record);
  return { objects: new Map(objects!.map((o) => [key(o), o])), spec: record.spec };
}

async function chartVersionIn(ns: string): Promise<string | undefined> {
  const cm = (await t.client.get(CM, 'greeter-greeting', ns)) as (KubeObject & { data?: Record<string, string> }) | undefined;
  return cm?.data?.chartVersion;
}

async function expectNoSecrets(name: string): Promise<void> {
  const bd = await t.get(name);
  const events = await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  for (const secret of SECRET_VALUES) {
    expect(JSON.stringify(bd?.status), 'status').not.toContain(secret);
    expect(JSON.stringify(events.items), 'events').not.toContain(secret);
    expect(JSON.stringify(t.log.records), 'controller log').not.toContain(secret);
  }
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-helm-repo-'));
  pki = await makePki(join(work, 'pki'));
  files = await startFileServer({ tls: pki, auth: { username: USER, password: PASSWORD } });
  repo = makeChartRepo(join(work, 'charts'));
  for (const v of ['1.1.0', '1.2.0', '2.0.0']) repo.package(v);
  repo.index();
  repo.publish(files, '/charts');
  anonymous = await startFileServer();
  repo.publish(anonymous, '/charts');
  t = await startTestController({ sources: { helm: { maxIndexBytes: INDEX_LIMIT } } });
  const host = new URL(files.url('/')).host;
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  await t.client.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'charts-creds', namespace: t.namespace, annotations: { [ANNOTATION_CREDENTIAL_HOSTS]: host } },
    data: { username: b64(USER), password: b64(PASSWORD) },
  } as KubeObject);
  await t.client.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'charts-ca', namespace: t.namespace },
    data: { 'ca.crt': b64(pki.caCert) },
  } as KubeObject);
}, 180_000);

afterAll(async () => {
  await t?.stop();
  await files?.close();
  await anonymous?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('a chart from a Helm HTTP repository', () => {
  it('>=1.2 <2 installs 1.2.0 as helm template renders it; 1.3.0 indexed, a requested reconcile upgrades to it', async () => {
    const name = `helmrepo-${t.runId}`;
    const ns = name;
    await t.create(name, spec(ns, { version: '>=1.2 <2' }));
    const done = await t.waitFor(name, isDone, 'installed at 1.2.0', 90_000);
    const digest12 = sha256(await readFile(join(repo.dir, 'greeter-1.2.0.tgz')));
    expect(done.status?.resolvedSources?.[0], describeStatus(done)).toMatchObject({
      kind: 'helm',
      version: '1.2.0',
      sha256: digest12,
      chartURL: files.url('/charts/greeter-1.2.0.tgz'),
    });
    expect(cond(done, 'Resolved')?.message).toBe(`helm 1.2.0 ${digest12}`);
    expect(await chartVersionIn(ns)).toBe('1.2.0');
    const first = await storedObjects(name);
    expect(first.objects).toEqual(await helmTemplate('>=1.2 <2', ns));
    expect(first.objects.size).toBe(3);
    // the revision records the version and digest it came from: rolling back to it reads no index
    expect(first.spec).toMatchObject({ sources: [{ kind: 'helm', helm: { version: '1.2.0', sha256: digest12 } }] });
    // hoist render of the same chart from the same index (read anonymously): the controller's content digest
    const previewSpec: BundleDeploymentSpec = {
      ...spec(ns),
      sources: [{ kind: 'helm', helm: { repoURL: anonymous.url('/charts'), chart: 'greeter', version: '>=1.2 <2' } }],
    };
    const preview = await previewBundle({ apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: previewSpec }, { kubeconfig: kubeconfigPath() });
    expect(preview.contentDigest).toBe(done.status?.contentDigest);

    repo.package('1.3.0');
    repo.index();
    repo.publish(files, '/charts');
    await t.client.patch(BD_TYPE, name, undefined, { metadata: { annotations: { [ANNOTATION_REQUESTED_AT]: 'index-1.3.0' } } }, 'merge');
    await until(async () => (await chartVersionIn(ns)) === '1.3.0', 'the chart at 1.3.0', 60_000);
    const upgraded = await t.waitFor(name, (b) => isDone(b) && b.status?.lastHandledRequest === 'index-1.3.0', 'upgraded to 1.3.0', 60_000);
    const digest13 = sha256(await readFile(join(repo.dir, 'greeter-1.3.0.tgz')));
    expect(upgraded.status?.resolvedSources?.[0]).toMatchObject({ kind: 'helm', version: '1.3.0', sha256: digest13 });
    expect(upgraded.metadata.generation).toBe(done.metadata.generation);
    expect(upgraded.status?.activeRevision?.number).toBe((done.status?.activeRevision?.number ?? 0) + 1);
    const second = await storedObjects(name);
    expect(second.objects).toEqual(await helmTemplate('>=1.2 <2', ns));
    expect(second.objects).toEqual(await helmTemplate('1.3.0', ns));
    expect(second.spec).toMatchObject({ sources: [{ kind: 'helm', helm: { version: '1.3.0', sha256: digest13 } }] });
    await expectNoSecrets(name);
  }, 240_000);
});

describe('bad repositories name the stage and why; the installed revision stays', () => {
  it('an index over --helm-index-max-size, then a range no version satisfies', async () => {
    const name = `helmrepo-bad-${t.runId}`;
    const ns = name;
    await t.create(name, spec(ns, { version: '1.1.0' }));
    const installed = await t.waitFor(name, isDone, 'installed at 1.1.0', 90_000);
    expect(await chartVersionIn(ns)).toBe('1.1.0');

    // the same repository's index padded past the limit with a chart of many versions
    const padding = Array.from(
      { length: 600 },
      (_, i) => `  - name: padding\n    version: 0.0.${i}\n    urls:\n    - padding-0.0.${i}.tgz\n    digest: ${'0'.repeat(64)}\n`,
    ).join('');
    const big = repo.indexText().replace(/^entries:\n/m, `entries:\n  padding:\n${padding}`);
    expect(big.length).toBeGreaterThan(INDEX_LIMIT);
    files.set('/big/index.yaml', Buffer.from(big));
    await t.patchSpec(name, { sources: [source({ repoURL: files.url('/big'), version: '1.1.0' })] });
    const tooLarge = await t.waitFor(name, (b) => cond(b, 'Resolved')?.status === 'False', 'refused: index too large', 60_000);
    expect(cond(tooLarge, 'Resolved')).toMatchObject({
      reason: 'ResolveFailed',
      message: `resolve ${files.url('/big/index.yaml')}: index.yaml is larger than 64 KiB, the limit (hoist run --helm-index-max-size); nothing of it was read further`,
    });
    expect(cond(tooLarge, 'Installed')).toMatchObject({ status: 'True', reason: 'Installed' });
    expect(tooLarge.status?.activeRevision?.number).toBe(installed.status?.activeRevision?.number);
    expect(cond(tooLarge, 'Progressing')?.reason).toBe('Blocked');
    expect(await chartVersionIn(ns)).toBe('1.1.0');

    await t.patchSpec(name, { sources: [source({ version: '>=5' })] });
    const none = await t.waitFor(name, (b) => cond(b, 'Resolved')?.status === 'False' && cond(b, 'Resolved')!.message.includes('>=5'), 'no version', 60_000);
    const message = cond(none, 'Resolved')!.message;
    expect(message).toMatch(
      new RegExp(
        `^resolve ${files.url('/charts/index.yaml').replaceAll('.', '\\.')}: chart "greeter" has no version ">=5"; newest in the index: 2\\.0\\.0, (1\\.3\\.0, )?1\\.2\\.0, 1\\.1\\.0 \\([34] versions\\)$`,
      ),
    );
    // a version may be published yet: retried with backoff
    expect(cond(none, 'Progressing')?.reason).toBe('Retrying');
    expect(cond(none, 'Installed')).toMatchObject({ status: 'True' });
    expect(await chartVersionIn(ns)).toBe('1.1.0');
    await expectNoSecrets(name);
  }, 240_000);

  it('a chart tarball whose digest is not the index’s is refused at fetch; nothing is applied', async () => {
    const name = `helmrepo-tampered-${t.runId}`;
    const wrong = 'f'.repeat(64);
    const real = sha256(await readFile(join(repo.dir, 'greeter-1.2.0.tgz')));
    // the real index with 1.2.0's digest changed; its tarball is the real one under /charts
    files.set('/tampered/index.yaml', Buffer.from(repo.indexText().replace(real, wrong).replaceAll('- greeter-', '- ../charts/greeter-')));
    await t.create(name, spec(name, { repoURL: files.url('/tampered'), version: '1.2.0' }));
    const failed = await t.waitFor(name, (b) => cond(b, 'Unpacked')?.status === 'False', 'refused: digest mismatch', 90_000);
    expect(cond(failed, 'Unpacked'), describeStatus(failed)).toMatchObject({
      reason: 'FetchFailed',
      message: `fetch ${files.url('/charts/greeter-1.2.0.tgz')}: chart greeter 1.2.0: digest mismatch: index.yaml gives sha256 ${wrong}, the server sent sha256 ${real}`,
    });
    expect(cond(failed, 'Installed')).toMatchObject({ status: 'False' });
    expect(cond(failed, 'Progressing')?.reason).toBe('Blocked');
    expect(await t.client.get(CM, 'greeter-greeting', name)).toBeUndefined();
  }, 180_000);
});
