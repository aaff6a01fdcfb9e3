/**
 * spec.postBuild on the real API server (issue 36): a kustomize overlay holding Flux's documented
 * example (testdata/post-build/flux-docs/namespace-inline, Apache-2.0, origin in its README) with
 * the documented Kustomization's variables — `substitute`, an optional ConfigMap and a Secret
 * (substituteFrom; and an optional ConfigMap that does not exist) — installs with the documented
 * result (substitute over the ConfigMap), the ConfigMap's and Secret's values in place (the later
 * entry winning) and an object labelled `kustomize.toolkit.fluxcd.io/substitute: disabled` untouched;
 * `hoist render`'s preview gets the same content digest. Changing the ConfigMap renders a new
 * revision with the new value (watched, no spec change). Taking away a variable used as
 * `${var:?message}` fails the render naming the object, the variable and the message, and the
 * installed revision stays. A missing non-optional substituteFrom Secret fails the resolve naming
 * it, and nothing is applied. The Secret's value is nowhere in status, Events or the log.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND, type BundleDeployment, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { previewBundle } from '../../src/cli/render.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../support/http-files.ts';

const DOCS = join(import.meta.dirname, '../../testdata/post-build/flux-docs/namespace-inline');
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
type WithData = KubeObject & { data?: Record<string, string> };

let t: TestController;
let files: FileServer;
let overlay: BundleDeploymentSpec['sources'][number];

beforeAll(async () => {
  t = await startTestController();
  files = await startFileServer();
  // Flux's documented Namespace, and objects that use the ConfigMap's and the Secret's variables
  const body = await tarGz({
    'kustomization.yaml': 'resources: [namespace.yaml, settings.yaml, token.yaml, script.yaml]\n',
    'namespace.yaml': readFileSync(join(DOCS, 'input.yaml'), 'utf8'),
    'settings.yaml': [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: settings',
      'data:',
      '  color: ${color:?set color in the cluster-vars ConfigMap}',
      '  greeting: ${greeting:=hello}',
      '  kept: $${color} and $color',
      '',
    ].join('\n'),
    'token.yaml': ['apiVersion: v1', 'kind: Secret', 'metadata:', '  name: token', 'type: Opaque', 'stringData:', '  token: ${token}', ''].join('\n'),
    'script.yaml': [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: script',
      '  labels:',
      '    kustomize.toolkit.fluxcd.io/substitute: disabled',
      'data:',
      '  run.sh: echo ${HOME} ${color} ${not_a_variable_here}',
      '',
    ].join('\n'),
  });
  files.set('/overlay.tgz', body);
  overlay = { kind: 'http', http: { url: files.url('/overlay.tgz'), sha256: sha256(body) } };
});
afterAll(async () => {
  await t?.stop();
  await files?.close();
});

async function write(type: typeof CM | typeof SECRET, name: string, data: Record<string, string>): Promise<void> {
  const field = type.kind === 'Secret' ? 'stringData' : 'data';
  const body = { ...type, metadata: { name, namespace: t.namespace }, [field]: data };
  const live = await t.client.get(type, name, t.namespace);
  if (live)
    await t.client.update({
      ...body,
      ...(type.kind === 'Secret' ? { data: {} } : {}),
      metadata: { ...body.metadata, resourceVersion: live.metadata.resourceVersion },
    } as KubeObject);
  else await t.client.create(body as KubeObject);
}

async function dataOf(type: typeof CM | typeof SECRET, name: string, ns: string): Promise<Record<string, string> | undefined> {
  const o = (await t.client.get(type, name, ns)) as WithData | undefined;
  if (!o?.data) return undefined;
  return type.kind === 'Secret' ? Object.fromEntries(Object.entries(o.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])) : o.data;
}

async function eventsOf(name: string): Promise<string> {
  const list = await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return JSON.stringify(list.items);
}

describe('spec.postBuild', () => {
  it("installs Flux's documented example with substitute and substituteFrom, re-renders on a ConfigMap change, and keeps the revision when a required variable goes", async () => {
    const name = `pb-${t.runId}`;
    const token = `tok-${t.runId}-never-shown`;
    // the documented Kustomization's postBuild: substitute, an optional ConfigMap, a Secret
    const documented = parse(readFileSync(join(DOCS, 'post-build.yaml'), 'utf8')) as { substitute: Record<string, string> };
    // cluster_env is overridden by substitute, greeting by the Secret (a later entry)
    await write(CM, 'cluster-vars', { color: 'blue', cluster_env: 'from-configmap', greeting: 'from-configmap' });
    await write(SECRET, 'cluster-secret-vars', { token, greeting: 'from-secret' });
    const spec: BundleDeploymentSpec = {
      installNamespace: name,
      format: 'kustomize',
      sources: [overlay],
      // the documented Namespace is cluster-scoped (and kustomize does not prefix Namespaces): a
      // patch names it for this test
      config: {
        kustomize: {
          namePrefix: `${name}-`,
          patches: [{ patch: `- op: replace\n  path: /metadata/name\n  value: ${name}-apps\n`, target: { kind: 'Namespace', name: 'apps' } }],
        },
      },
      postBuild: {
        substitute: documented.substitute,
        substituteFrom: [
          { kind: 'ConfigMap', name: 'cluster-vars', optional: true },
          { kind: 'ConfigMap', name: 'not-there', optional: true },
          { kind: 'Secret', name: 'cluster-secret-vars' },
        ],
      },
    };
    await t.create(name, spec);
    const done = await t.waitFor(name, isDone, 'installed with the variables', 90_000);
    expect(cond(done, 'Installed')?.status, describeStatus(done)).toBe('True');

    // the documented result, on the server
    const expected = parse(readFileSync(join(DOCS, 'expected.yaml'), 'utf8')) as KubeObject;
    const ns = await t.client.get({ apiVersion: 'v1', kind: 'Namespace' }, `${name}-apps`);
    expect(ns?.metadata.labels).toMatchObject(expected.metadata.labels!);
    // the ConfigMap's and the Secret's variables, the later entry winning; $$ and bare $var left alone
    expect(await dataOf(CM, `${name}-settings`, name)).toEqual({ color: 'blue', greeting: 'from-secret', kept: '${color} and $color' });
    expect(await dataOf(SECRET, `${name}-token`, name)).toEqual({ token });
    // opted out: exactly as written
    expect(await dataOf(CM, `${name}-script`, name)).toEqual({ 'run.sh': 'echo ${HOME} ${color} ${not_a_variable_here}' });

    // hoist render reads the same variables (with the user's credentials) and gets the controller's digest
    const bd: BundleDeployment = { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec };
    const preview = await previewBundle(bd, { kubeconfig: kubeconfigPath(), controllerNamespace: t.namespace });
    expect(preview.contentDigest).toBe(done.status?.contentDigest);

    // a changed ConfigMap is a new input: a new revision with the new value, no spec change
    await write(CM, 'cluster-vars', { color: 'green', cluster_env: 'from-configmap', greeting: 'from-configmap' });
    await until(async () => (await dataOf(CM, `${name}-settings`, name))?.color === 'green', 'the new color installed', 30_000);
    const after = await t.waitFor(
      name,
      (b) => isDone(b) && (b.status?.activeRevision?.number ?? 0) > (done.status?.activeRevision?.number ?? 0),
      'a new revision',
      30_000,
    );
    expect(after.metadata.generation).toBe(done.metadata.generation);

    // the variable a `${color:?…}` needs is gone: the render fails, naming object, variable and message
    await write(CM, 'cluster-vars', { other: 'x' });
    const failed = await t.waitFor(name, (b) => cond(b, 'Unpacked')?.status === 'False', 'the render refused', 30_000);
    const unpacked = cond(failed, 'Unpacked')!;
    expect(unpacked.reason, describeStatus(failed)).toBe('ProcessFailed');
    expect(unpacked.message).toContain(
      `post-build substitution: v1 ConfigMap ${name}-settings: data.color: variable "color" is not set: set color in the cluster-vars ConfigMap`,
    );
    // the installed revision stays, and so do its objects
    expect(cond(failed, 'Installed')?.status).toBe('True');
    expect(failed.status?.activeRevision?.number).toBe(after.status?.activeRevision?.number);
    expect((await dataOf(CM, `${name}-settings`, name))?.color).toBe('green');

    // the variable back: the next render installs again, without a spec change
    await write(CM, 'cluster-vars', { color: 'yellow' });
    const recovered = await t.waitFor(name, (b) => isDone(b) && cond(b, 'Unpacked')?.status === 'True', 'installed again', 30_000);
    expect(recovered.status?.activeRevision?.number).toBeGreaterThan(after.status!.activeRevision!.number);
    expect((await dataOf(CM, `${name}-settings`, name))?.color).toBe('yellow');

    for (const where of [JSON.stringify(recovered.status), JSON.stringify(failed.status), await eventsOf(name), JSON.stringify(t.log.records)])
      expect(where).not.toContain(token);
  }, 180_000);

  it('format: plain takes the same postBuild, Always substituting the defaults without any variable', async () => {
    const name = `pb-plain-${t.runId}`;
    const body = await tarGz({
      'app.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  replicas: x${replicas:=1}\n  env: ${env:-dev}\n',
    });
    files.set('/plain.tgz', body);
    await t.create(name, {
      installNamespace: name,
      format: 'plain',
      sources: [{ kind: 'http', http: { url: files.url('/plain.tgz'), sha256: sha256(body) } }],
      postBuild: { substituteStrategy: 'Always' },
    });
    const done = await t.waitFor(name, isDone, 'installed', 90_000);
    expect(cond(done, 'Installed')?.status, describeStatus(done)).toBe('True');
    expect(await dataOf(CM, 'app', name)).toEqual({ replicas: 'x1', env: 'dev' });
  }, 120_000);

  it('a missing substituteFrom Secret that is not optional fails the resolve naming it; nothing is applied', async () => {
    const name = `pb-missing-${t.runId}`;
    await t.create(name, {
      installNamespace: name,
      format: 'kustomize',
      sources: [overlay],
      config: { kustomize: { namePrefix: `${name}-` } },
      postBuild: { substitute: { color: 'red' }, substituteFrom: [{ kind: 'Secret', name: 'not-there' }] },
    });
    const failed = await t.waitFor(name, (b) => cond(b, 'Resolved')?.status === 'False', 'the resolve refused', 60_000);
    const resolved = cond(failed, 'Resolved')!;
    expect(resolved.reason, describeStatus(failed)).toBe('ResolveFailed');
    expect(resolved.message).toContain(`postBuild.substituteFrom[0] secret ${t.namespace}/not-there`);
    expect(resolved.message).toContain('not found');
    expect(cond(failed, 'Installed')?.status).toBe('False');
    expect(await t.client.get(CM, `${name}-settings`, name)).toBeUndefined();
  }, 120_000);
});
