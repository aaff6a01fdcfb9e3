/**
 * config.helm.valuesFrom on the real API server (issue 28): a chart whose password comes from a
 * Secret installs with it in the rendered Secret and nowhere in the BundleDeployment's status, its
 * Events or the controller's log; `hoist render`'s preview reads the same values and gets the same
 * content digest; changing the Secret renders a new revision within seconds (the Secret is
 * watched); a Secret the BundleDeployment's ServiceAccount may not read fails the resolve naming
 * the reference, and nothing is applied.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND, type BundleDeployment, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { previewBundle } from '../../src/cli/render.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { until } from '../support/e2e-bundles.ts';
import { kubeconfigPath } from '../support/env.ts';
import { sha256, startFileServer, tarGz, type FileServer } from '../support/http-files.ts';

const CHART = join(import.meta.dirname, '../integration/processors/helm/testdata/values-layers');
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const NS = { apiVersion: 'v1', kind: 'Namespace' } as const;

let t: TestController;
let files: FileServer;
let source: BundleDeploymentSpec['sources'][number];
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  t = await startTestController();
  files = await startFileServer();
  const out: Record<string, string> = {};
  for (const e of await readdir(CHART, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out[relative(CHART, join(e.parentPath, e.name))] = await readFile(join(e.parentPath, e.name), 'utf8');
  }
  const body = await tarGz(out);
  files.set('/values-layers.tgz', body);
  source = { kind: 'http', http: { url: files.url('/values-layers.tgz'), sha256: sha256(body) } };
});
afterAll(async () => {
  await t?.stop();
  await files?.close();
  for (const f of cleanup.reverse()) await f().catch(() => undefined);
});

async function writeSecret(name: string, namespace: string, values: string): Promise<void> {
  const body = { ...SECRET, metadata: { name, namespace }, stringData: { 'values.yaml': values } };
  const live = await t.client.get(SECRET, name, namespace);
  if (live) await t.client.update({ ...body, metadata: { ...body.metadata, resourceVersion: live.metadata.resourceVersion } } as unknown as KubeObject);
  else await t.client.create(body as unknown as KubeObject);
}

async function renderedPassword(ns: string): Promise<string | undefined> {
  const s = (await t.client.get(SECRET, 'rel-db', ns)) as (KubeObject & { data?: Record<string, string> }) | undefined;
  return s?.data?.password === undefined ? undefined : Buffer.from(s.data.password, 'base64').toString('utf8');
}

async function eventsOf(name: string): Promise<string> {
  const list = await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return JSON.stringify(list.items);
}

describe('helm valuesFrom a Secret', () => {
  it('installs with the value, shows it nowhere else, previews alike, and re-renders when the Secret changes', async () => {
    const name = `vf-${t.runId}`;
    const first = `pw-${t.runId}-first-never-shown`;
    const second = `pw-${t.runId}-second-never-shown`;
    await writeSecret('db-values', t.namespace, `db:\n  password: ${first}\n`);
    const spec: BundleDeploymentSpec = {
      installNamespace: name,
      format: 'helm',
      sources: [source],
      config: {
        helm: {
          releaseName: 'rel',
          valuesFiles: ['values-prod.yaml'],
          valuesFrom: [
            { kind: 'Secret', name: 'db-values' },
            // missing and optional: skipped
            { kind: 'ConfigMap', name: 'not-there', optional: true },
          ],
          values: { image: { tag: '9.9' } },
        },
      },
    };
    await t.create(name, spec);
    const done = await t.waitFor(name, isDone, 'installed with the Secret values', 90_000);
    expect(await renderedPassword(name)).toBe(first);

    // the same values through the preview (the user's credentials, the controller's namespace)
    const bd: BundleDeployment = { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec };
    const preview = await previewBundle(bd, { kubeconfig: kubeconfigPath(), controllerNamespace: t.namespace });
    expect(preview.contentDigest).toBe(done.status?.contentDigest);

    // changed: watched, so a new revision without any spec change
    await writeSecret('db-values', t.namespace, `db:\n  password: ${second}\n`);
    await until(async () => (await renderedPassword(name)) === second, 'the new password installed', 20_000);
    const after = await t.waitFor(
      name,
      (b) => isDone(b) && (b.status?.activeRevision?.number ?? 0) > (done.status?.activeRevision?.number ?? 0),
      'a new revision',
      30_000,
    );
    expect(after.metadata.generation).toBe(done.metadata.generation);

    for (const secret of [first, second]) {
      expect(JSON.stringify(after.status), 'status').not.toContain(secret);
      expect(await eventsOf(name), 'events').not.toContain(secret);
      expect(JSON.stringify(t.log.records), 'controller log').not.toContain(secret);
    }
  }, 180_000);

  it('a Secret the ServiceAccount may not read fails the resolve naming the reference; nothing is applied', async () => {
    const tenant = `vf-tenant-${t.runId}`;
    await t.client.create({ ...NS, metadata: { name: tenant } } as KubeObject);
    cleanup.push(() => t.client.delete(NS, tenant, undefined));
    await t.client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'installer', namespace: tenant } } as KubeObject);
    // ConfigMaps only: no right to read Secrets
    await t.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'installer', namespace: tenant },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
    } as KubeObject);
    await t.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'installer', namespace: tenant },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'installer' },
      subjects: [{ kind: 'ServiceAccount', name: 'installer', namespace: tenant }],
    } as KubeObject);
    const hidden = `pw-${t.runId}-hidden-never-shown`;
    await writeSecret('db-values', tenant, `db:\n  password: ${hidden}\n`);

    const name = `vf-forbidden-${t.runId}`;
    await t.create(name, {
      installNamespace: tenant,
      serviceAccount: { name: 'installer' },
      format: 'helm',
      sources: [source],
      config: { helm: { releaseName: 'rel', valuesFrom: [{ kind: 'Secret', name: 'db-values' }] } },
    });
    const failed = await t.waitFor(name, (b) => cond(b, 'Resolved')?.status === 'False', 'the resolve refused', 60_000);
    const resolved = cond(failed, 'Resolved')!;
    expect(resolved.reason, describeStatus(failed)).toBe('ResolveFailed');
    expect(resolved.message).toContain(`config.helm.valuesFrom[0] secret ${tenant}/db-values`);
    expect(resolved.message).toContain(`may not read secret ${tenant}/db-values`);
    expect(cond(failed, 'Installed')?.status).toBe('False');
    expect(await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'rel-values', tenant)).toBeUndefined();
    expect(JSON.stringify(failed.status)).not.toContain(hidden);
  }, 120_000);
});
