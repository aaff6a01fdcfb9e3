/**
 * format: kustomize end to end (issue 28): an overlay repository (base, two overlays, a component,
 * a patch, configMapGenerators, images, namePrefix) served by a real git http-backend installs
 * each overlay's objects; what the controller stored and applied equals `kustomize build` of the
 * same directory, object for object, and `hoist render`'s preview has the same content digest. A
 * remote base and an exec plugin are refused with a condition naming them, and nothing is applied.
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND, type BundleDeployment, type BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { RevisionStore } from '../../src/revisions/revision-store.ts';
import { previewBundle } from '../../src/cli/render.ts';
import { toolPath } from '../../src/devcluster/tools.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { kubeconfigPath } from '../support/env.ts';
import { git, startGitServer, type GitServer } from '../support/git-server.ts';

const SHOP = join(import.meta.dirname, '../integration/processors/kustomize/testdata/shop');

let t: TestController;
let server: GitServer;
let work: string;
let checkout: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-kustomize-'));
  const repos = join(work, 'repos');
  await mkdir(repos);
  checkout = join(work, 'shop');
  await cp(SHOP, checkout, { recursive: true });
  // two overlays that must be refused: a remote base, an exec plugin
  await mkdir(join(checkout, 'overlays/remote'));
  await writeFile(join(checkout, 'overlays/remote/kustomization.yaml'), 'resources:\n  - ../../base\n  - https://github.com/example/shop//base?ref=v1\n');
  await mkdir(join(checkout, 'overlays/plugin'));
  await writeFile(join(checkout, 'overlays/plugin/kustomization.yaml'), 'resources: [../../base]\ntransformers: [plugin.yaml]\n');
  await writeFile(
    join(checkout, 'overlays/plugin/plugin.yaml'),
    'apiVersion: example.com/v1\nkind: Pwn\nmetadata:\n  name: pwn\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/true\n',
  );
  git('/', ['init', '-q', '--bare', '-b', 'main', join(repos, 'shop.git')]);
  git(checkout, ['init', '-q', '-b', 'main']);
  git(checkout, ['add', '-A']);
  git(checkout, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'shop']);
  git(checkout, ['push', '-q', join(repos, 'shop.git'), 'main']);
  server = await startGitServer({ projectRoot: repos });
  t = await startTestController();
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await server?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

const spec = (ns: string, path: string): BundleDeploymentSpec => ({
  installNamespace: ns,
  format: 'kustomize',
  sources: [{ kind: 'git', git: { repository: `${server.url}/shop.git`, ref: { branch: 'main' } } }],
  config: { kustomize: { path } },
});

/** `kustomize build` of the checkout's directory, read with the yaml package, in the install namespace */
function kustomizeBuild(path: string, ns: string): KubeObject[] {
  const r = spawnSync(toolPath('kustomize'), ['build', join(checkout, path)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as KubeObject)
    .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: ns } }));
}

describe('format: kustomize from git', () => {
  it.each(['overlays/prod', 'overlays/staging'])(
    '%s installs exactly what kustomize build renders',
    async (path) => {
      const name = `kz-${path.split('/')[1]}-${t.runId}`;
      const ns = name;
      await t.create(name, spec(ns, path));
      const done = await t.waitFor(name, isDone, 'installed', 90_000);

      const expected = kustomizeBuild(path, ns);
      const stored = await new RevisionStore(t.client, t.namespace).load(name, done.status!.revisions!.at(-1)!);
      const key = (o: KubeObject): string => `${o.kind}/${o.metadata.name}`;
      expect(new Map(stored!.map((o) => [key(o), o]))).toEqual(new Map(expected.map((o) => [key(o), o])));

      // on the server as rendered: every object, the generated ConfigMap's data, the image
      for (const o of expected) {
        const live = (await t.client.get({ apiVersion: o.apiVersion, kind: o.kind }, o.metadata.name, ns)) as
          (KubeObject & Record<string, unknown>) | undefined;
        expect(live, key(o)).toBeDefined();
        if (o.kind === 'ConfigMap') expect(live!.data).toEqual((o as KubeObject & { data: unknown }).data);
        if (o.kind === 'Deployment')
          expect(JSON.stringify(live!.spec)).toContain(path === 'overlays/prod' ? 'registry.example/shop-prod:1.0.3' : 'registry.example/shop:1.1-rc.2');
      }

      // hoist render's preview of the same BundleDeployment: the controller's digest
      const bd: BundleDeployment = { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: spec(ns, path) };
      expect((await previewBundle(bd, { kubeconfig: kubeconfigPath() })).contentDigest).toBe(done.status?.contentDigest);
    },
    150_000,
  );

  it.each([
    ['overlays/remote', 'remote base "https://github.com/example/shop//base?ref=v1" (resources) is refused'],
    ['overlays/plugin', "external plugins disabled; unable to load external plugin 'Pwn'"],
  ])(
    '%s is refused with a clear condition, nothing applied',
    async (path, message) => {
      const name = `kz-${path.split('/')[1]}-${t.runId}`;
      await t.create(name, spec(name, path));
      const failed = await t.waitFor(name, (b) => cond(b, 'Unpacked')?.status === 'False', 'refused', 90_000);
      const unpacked = cond(failed, 'Unpacked')!;
      expect(unpacked.reason, describeStatus(failed)).toBe('ProcessFailed');
      expect(unpacked.message).toContain(message);
      expect(unpacked.message).toContain('kustomize processor');
      expect(cond(failed, 'Progressing')?.reason).toBe('Blocked');
      expect(cond(failed, 'Installed')?.status).toBe('False');
      const cms = await t.client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: name });
      expect(cms.items.filter((c) => c.metadata.name !== 'kube-root-ca.crt')).toEqual([]);
    },
    120_000,
  );
});
