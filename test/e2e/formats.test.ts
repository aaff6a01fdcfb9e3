/**
 * Issue 4 end to end: registry-v1 fixture bundles × every install mode their CSV supports (and
 * MultiNamespace with a MultiNamespace-only copy, with a deploymentConfig),
 * installed through a BundleDeployment by the real controller (webhook bundles: a clear error
 * without cert-manager, and a server-side dry-run apply of everything else); argo-rollouts plain
 * manifests read exactly as kubectl reads them (object identities and YAML 1.1 scalars, kubectl
 * run against the test API server); `hoist render` run as a process prints the content digest
 * the controller records.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolPath } from '../../src/devcluster/tools.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { renderPlain } from '../../src/processors/plain.ts';
import { loadRegistryV1Bundle } from '../../src/processors/registry-v1/bundle.ts';
import { supportedInstallModes } from '../../src/processors/registry-v1/csv.ts';
import { renderRegistryV1Bundle } from '../../src/processors/registry-v1/render.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { kubeconfigPath } from '../support/env.ts';
import { sha256, tarGz } from '../support/http-files.ts';

const run = promisify(execFile);
const FIXTURES = join(import.meta.dirname, '../../testdata/fixtures');
const REPO = join(import.meta.dirname, '../..');

let work: string;

async function treeFiles(dir: string): Promise<Record<string, Buffer>> {
  const out: Record<string, Buffer> = {};
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) {
      const p = join(e.parentPath, e.name);
      out[relative(dir, p)] = await readFile(p);
    }
  }
  return out;
}

/** serves the directory as a pinned tar.gz; returns the http source */
async function serveDir(path: string, dir: string): Promise<{ kind: 'http'; http: { url: string; sha256: string } }> {
  const body = await tarGz(await treeFiles(dir));
  files.set(path, body);
  return { kind: 'http', http: { url: files.url(path), sha256: sha256(body) } };
}

async function kubectl(args: string[]): Promise<string> {
  const { stdout } = await run(toolPath('kubectl'), [...args, '--kubeconfig', kubeconfigPath()], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** what `kubectl -o name` prints for an object: <kind>.<group>/<name> (no group for the core API) */
function kubectlName(o: KubeObject): string {
  const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
  return `${o.kind.toLowerCase()}${group ? `.${group}` : ''}/${o.metadata.name}`;
}

async function ensureNamespace(name: string): Promise<void> {
  if (!(await t.client.get({ apiVersion: 'v1', kind: 'Namespace' }, name))) await t.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

const { t, files } = controllerWithFiles();
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-formats-'));
});
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('registry-v1 fixture bundles through a BundleDeployment', () => {
  it('argocd-operator v0.6.0: every supported install mode installs on the real API server', async () => {
    const dir = join(FIXTURES, 'registry-v1', 'argocd-operator.v0.6.0');
    const modes = supportedInstallModes((await loadRegistryV1Bundle(dir)).csv);
    expect([...modes].sort()).toEqual(['AllNamespaces', 'OwnNamespace', 'SingleNamespace']);
    const ns = `argocd-op-${t.runId}`;
    const watched = `argocd-watched-${t.runId}`;
    await ensureNamespace(watched);
    const source = await serveDir('/argocd-operator.tgz', dir);
    const watchFor = { AllNamespaces: '', OwnNamespace: ns, SingleNamespace: watched } as const;
    for (const [i, mode] of (['AllNamespaces', 'OwnNamespace', 'SingleNamespace'] as const).entries()) {
      const spec = { installNamespace: ns, format: 'registry-v1' as const, sources: [source], config: { registryV1: { watchNamespace: watchFor[mode] } } };
      if (i === 0) await t.create('argocd-operator', spec);
      else await t.patchSpec('argocd-operator', { config: spec.config });
      const bd = await t.waitFor(
        'argocd-operator',
        (b) => cond(b, 'Installed')?.status === 'True' && b.status?.activeRevision?.number === i + 1,
        `${mode} installed`,
        120_000,
      );
      expect(cond(bd, 'Installed')?.reason, mode).toBe('Installed');
      // every rendered object exists on the server, as the processor rendered it (same identities)
      const expected = renderRegistryV1Bundle(await loadRegistryV1Bundle(dir), { installNamespace: ns, watchNamespace: watchFor[mode] }).objects;
      expect(bd.status?.activeRevision?.objects).toBe(expected.length);
      for (const o of expected) {
        const live = await t.client.get(
          o,
          o.metadata.name,
          o.metadata.namespace ?? (o.kind.startsWith('Cluster') || o.kind === 'CustomResourceDefinition' ? undefined : ns),
        );
        expect(live, `${mode}: ${o.kind} ${o.metadata.name}`).toBeDefined();
      }
      if (mode === 'SingleNamespace') {
        const roles = await t.client.list(
          { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
          { namespace: watched, labelSelector: 'core.rukpak.io/owner-name=argocd-operator' },
        );
        expect(roles.items.length).toBeGreaterThan(0);
      }
    }

    // the same operator as a MultiNamespace-only bundle (testdata/registry-v1): one namespace is
    // refused by the processor, two install with a Role and RoleBinding in each
    const multiDir = join(REPO, 'testdata', 'registry-v1', 'argocd-operator.v0.6.0-multinamespace');
    const watched2 = `argocd-watched2-${t.runId}`;
    await ensureNamespace(watched2);
    await t.patchSpec('argocd-operator', {
      sources: [await serveDir('/argocd-operator-multi.tgz', multiDir)],
      config: { registryV1: { watchNamespace: watched } },
    });
    const refused = await t.waitFor('argocd-operator', (b) => cond(b, 'Unpacked')?.status === 'False', 'one namespace refused');
    expect(cond(refused, 'Unpacked')?.reason).toBe('ProcessFailed');
    expect(cond(refused, 'Unpacked')?.message).toMatch(/argocd-operator\.v0\.6\.0 does not support install mode SingleNamespace; it supports MultiNamespace/);
    expect(refused.status?.activeRevision?.number).toBe(3);
    // with a deploymentConfig, as OLM v1 users configure operators
    const deploymentConfig = {
      env: [{ name: 'HTTPS_PROXY', value: 'http://proxy:3128' }],
      tolerations: [{ key: 'infra', operator: 'Exists', effect: 'NoSchedule' }],
      resources: { requests: { cpu: '50m', memory: '64Mi' } },
      annotations: { 'example.com/team': 'platform' },
    };
    await t.patchSpec('argocd-operator', { config: { registryV1: { watchNamespace: null, watchNamespaces: [watched, watched2], deploymentConfig } } });
    const bd = await t.waitFor(
      'argocd-operator',
      (b) => cond(b, 'Installed')?.status === 'True' && b.status?.activeRevision?.number === 4,
      'MultiNamespace installed',
      120_000,
    );
    const expected = renderRegistryV1Bundle(await loadRegistryV1Bundle(multiDir), {
      installNamespace: ns,
      watchNamespaces: [watched, watched2],
      deploymentConfig,
    }).objects;
    expect(bd.status?.activeRevision?.objects).toBe(expected.length);
    for (const target of [watched, watched2]) {
      for (const kind of ['Role', 'RoleBinding']) {
        const list = await t.client.list(
          { apiVersion: 'rbac.authorization.k8s.io/v1', kind },
          { namespace: target, labelSelector: 'core.rukpak.io/owner-name=argocd-operator' },
        );
        expect(
          list.items.map((o) => o.metadata.name),
          `${kind} in ${target}`,
        ).toEqual(['argocd-operator.v0-22gmilmgp91wu25is5i2ec598hni8owq3l71bbkl7iz3']);
      }
    }
    const deployment = (await t.client.get({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'argocd-operator-controller-manager', ns)) as any;
    expect(deployment.spec.template.metadata.annotations).toMatchObject({
      'olm.targetNamespaces': `${watched},${watched2}`,
      'olm.operatorNamespace': ns,
      'example.com/team': 'platform',
    });
    expect(deployment.metadata.annotations['example.com/team']).toBe('platform');
    const pod = deployment.spec.template.spec;
    expect(pod.tolerations).toEqual([{ key: 'infra', operator: 'Exists', effect: 'NoSchedule' }]);
    for (const c of pod.containers) {
      expect(c.env).toContainEqual({ name: 'HTTPS_PROXY', value: 'http://proxy:3128' });
      expect(c.resources).toEqual({ requests: { cpu: '50m', memory: '64Mi' } });
    }
  }, 180_000); // five installs and uninstalls of 9 CRDs: over a minute when the machine is busy

  for (const name of ['webhook-operator.v0.0.1', 'webhook-operator.v0.0.5']) {
    it(`${name}: without cert-manager a clear process error; everything else applies cleanly (server-side dry run)`, async () => {
      const dir = join(FIXTURES, 'registry-v1', name);
      const bundle = await loadRegistryV1Bundle(dir);
      const modes = [...supportedInstallModes(bundle.csv)];
      const ns = `${name.replace(/\./g, '-')}-${t.runId}`;
      await ensureNamespace(ns);
      const bdName = name.replace(/\./g, '-');
      await t.create(bdName, {
        installNamespace: ns,
        format: 'registry-v1',
        sources: [await serveDir(`/${name}.tgz`, dir)],
        config: { registryV1: { watchNamespace: '' } },
      });
      const bd = await t.waitFor(bdName, (b) => cond(b, 'Unpacked')?.status === 'False', 'process failure');
      expect(cond(bd, 'Unpacked')?.reason).toBe('ProcessFailed');
      expect(cond(bd, 'Unpacked')?.message).toMatch(/registry-v1 processor: /);
      expect(cond(bd, 'Unpacked')?.message).toMatch(/cert-manager\.io\/v1/);
      expect(cond(bd, 'Installed')).toMatchObject({ status: 'False' });

      for (const mode of modes) {
        const watchNamespace = mode === 'AllNamespaces' ? '' : mode === 'OwnNamespace' ? ns : 'default';
        const objects = renderRegistryV1Bundle(bundle, { installNamespace: ns, watchNamespace }).objects;
        const certManager = objects.filter((o) => o.apiVersion.startsWith('cert-manager.io/'));
        expect(certManager.map((o) => o.kind).sort(), mode).toEqual(['Certificate', 'Issuer']);
        // CRDs first (really applied: a dry-run CRD does not make its kind served), then the rest as a dry run
        const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
        for (const o of crds) await t.client.apply(o, { fieldManager: `hoist-test-${t.runId}`, dryRun: true });
        for (const o of objects.filter((x) => !x.apiVersion.startsWith('cert-manager.io/') && x.kind !== 'CustomResourceDefinition')) {
          const obj = structuredClone(o);
          if (!obj.metadata.namespace && !/^(Cluster|MutatingWebhook|ValidatingWebhook)/.test(obj.kind)) obj.metadata.namespace = ns;
          await expect(
            t.client.apply(obj, { fieldManager: `hoist-test-${t.runId}`, dryRun: true }),
            `${mode}: ${obj.kind} ${obj.metadata.name}`,
          ).resolves.toBeDefined();
        }
      }
      await t.client.delete({ apiVersion: bd.apiVersion, kind: bd.kind }, bdName, undefined);
    });
  }
});

describe('plain manifests read as kubectl reads them', () => {
  for (const version of ['argo-rollouts-v1.8.4', 'argo-rollouts-v1.9.1']) {
    it(`${version}: the same objects, in the same order, as kubectl create --dry-run=client -o name`, async () => {
      const dir = join(FIXTURES, 'plain', version);
      const ours = (await renderPlain(dir, { installNamespace: 'argo-rollouts' })).objects.map(kubectlName);
      const theirs = (await kubectl(['create', '--dry-run=client', '-o', 'name', '-f', join(dir, 'install.yaml')])).trim().split('\n');
      expect(ours.length).toBeGreaterThan(10);
      expect(ours).toEqual(theirs);
    });
  }

  it('YAML 1.1 scalars (yes, on, 0755) parse to what kubectl prints', async () => {
    const dir = await mkdtemp(join(work, 'yaml11-'));
    const file = join(dir, 'pod.yaml');
    await writeFile(
      file,
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata:',
        '  name: yaml11',
        '  labels: {quoted: "yes"}',
        'spec:',
        '  automountServiceAccountToken: yes',
        '  hostNetwork: on',
        '  enableServiceLinks: off',
        '  containers: [{name: c, image: busybox, stdin: no}]',
        '  volumes: [{name: v, configMap: {name: x, defaultMode: 0755}}]',
        '',
      ].join('\n'),
    );
    const ours = (await renderPlain(dir, { installNamespace: 'default' })).objects[0] as KubeObject & { spec: Record<string, unknown> };
    const theirs = JSON.parse(await kubectl(['create', '--dry-run=client', '-o', 'json', '-f', file])) as {
      spec: Record<string, unknown>;
      metadata: { labels: Record<string, string> };
    };
    const pick = (spec: Record<string, unknown>) => ({
      automountServiceAccountToken: spec.automountServiceAccountToken,
      hostNetwork: spec.hostNetwork,
      enableServiceLinks: spec.enableServiceLinks,
      stdin: (spec.containers as Array<{ stdin?: unknown }>)[0]?.stdin,
      defaultMode: (spec.volumes as Array<{ configMap: { defaultMode: unknown } }>)[0]?.configMap.defaultMode,
    });
    expect(pick(theirs.spec)).toEqual({ automountServiceAccountToken: true, hostNetwork: true, enableServiceLinks: false, stdin: false, defaultMode: 0o755 });
    expect(pick(ours.spec)).toEqual(pick(theirs.spec));
    expect(ours.metadata.labels).toEqual(theirs.metadata.labels);
  });
});

describe('hoist render', () => {
  it('prints the objects and the same content digest the controller records', async () => {
    // namespaced objects only: the cluster-scoped argo-rollouts objects belong to other test files
    const dir = await mkdtemp(join(work, 'render-bundle-'));
    const rollouts = await readFile(join(FIXTURES, 'plain', 'argo-rollouts-v1.9.1', 'install.yaml'), 'utf8');
    const namespaced = rollouts.split(/^---$/m).filter((d) => /^kind: (ServiceAccount|Role|RoleBinding|ConfigMap|Secret|Service|Deployment)$/m.test(d));
    await writeFile(join(dir, 'app.yaml'), namespaced.join('---'));
    await writeFile(join(dir, 'yaml11.yml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yaml11}\ndata: {mode: "0755", enabled: "yes"}\n');
    const source = await serveDir('/render-bundle.tgz', dir);
    const ns = `render-${t.runId}`;
    const spec = { installNamespace: ns, format: 'plain' as const, sources: [source] };
    const bdFile = join(work, 'bd.yaml');
    await writeFile(bdFile, JSON.stringify({ apiVersion: 'core.rukpak.io/v1alpha2', kind: 'BundleDeployment', metadata: { name: 'rendered' }, spec }));
    const cache = await mkdtemp(join(work, 'render-cache-'));
    const { stdout, stderr } = await run('npx', ['tsx', 'src/cli/main.ts', 'render', '-f', bdFile, '-o', 'json'], {
      cwd: REPO,
      env: { ...process.env, HOIST_CACHE: cache },
      maxBuffer: 64 * 1024 * 1024,
    });
    const printed = JSON.parse(stdout) as { items: KubeObject[] };
    const digest = /content digest (sha256:[0-9a-f]{64})/.exec(stderr)?.[1];
    expect(digest, stderr).toBeDefined();

    await t.create('rendered', spec);
    const bd = await t.waitFor('rendered', isDone, 'installed', 90_000);
    expect(bd.status?.contentDigest).toBe(digest);
    expect(bd.status?.activeRevision?.contentDigest).toBe(digest);
    expect(printed.items.length).toBe(bd.status?.activeRevision?.objects);
    expect(stderr).toContain(`${printed.items.length} objects, content digest ${digest}`);
  });
});
