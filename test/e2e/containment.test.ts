/**
 * Issues 8 and 16 through the real controller: bundles that try to reach outside their content
 * tree fail with the bundle-relative path named, and no condition message or event of any failed
 * BundleDeployment names the controller's own directories (its cache, temp trees, helm homes).
 */
import { describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../api/v1alpha2/types.ts';
import type { BundleDeployment, BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import { cond, describeStatus } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { expectNoControllerPaths } from '../support/controller-paths.ts';
import { sha256, tarGz } from '../support/http-files.ts';
import { buildTarGz, type TarItem } from '../unit/util/tar-fixtures.ts';

const { t, files } = controllerWithFiles();

function serve(path: string, body: Buffer): SourceSpec {
  files.set(path, body);
  return { kind: 'http', http: { url: files.url(path), sha256: sha256(body) } };
}

const CHART = 'apiVersion: v2\nname: probe\nversion: 0.1.0\n';
const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;

interface Case {
  name: string;
  spec: () => Promise<BundleDeploymentSpec>;
  reason: 'FetchFailed' | 'ProcessFailed';
  /** the bundle-relative path the message must name */
  names: string;
}

const CASES: Case[] = [
  {
    name: 'link-out',
    reason: 'FetchFailed',
    names: 'manifests/cm.yaml',
    spec: async () => ({
      format: 'plain',
      sources: [
        serve('/link-out.tgz', await buildTarGz([{ header: { name: 'manifests/cm.yaml', type: 'symlink', linkname: '../../../etc/hostname' } }] as TarItem[])),
      ],
    }),
  },
  {
    // the unpacker leaves a dangling link to the composed tree (another part may add its target);
    // the composed tree refuses it, naming it where it ended up
    name: 'dangling',
    reason: 'FetchFailed',
    names: 'app/x.yaml',
    spec: async () => ({
      format: 'plain',
      installNamespace: 'default',
      sources: [
        serve('/base.tgz', await tarGz({ 'base.yaml': cm('base') })),
        {
          ...serve('/dangling.tgz', await buildTarGz([{ header: { name: 'x.yaml', type: 'symlink', linkname: 'missing.yaml' } }] as TarItem[])),
          destination: 'app',
        },
      ],
    }),
  },
  {
    name: 'bad-yaml',
    reason: 'ProcessFailed',
    names: 'manifests/broken.yaml',
    spec: async () => ({ format: 'plain', sources: [serve('/broken.tgz', await tarGz({ 'manifests/broken.yaml': 'kind: [unclosed\n' }))] }),
  },
  {
    name: 'helm-template-error',
    reason: 'ProcessFailed',
    names: 'probe/templates/bad.yaml',
    spec: async () => ({
      format: 'helm',
      installNamespace: 'default',
      sources: [serve('/helm-bad.tgz', await tarGz({ 'chart/Chart.yaml': CHART, 'chart/templates/bad.yaml': '{{ .Files.Get }}\n{{ include "nope" . }}\n' }))],
    }),
  },
  {
    name: 'helm-schema-ref',
    reason: 'ProcessFailed',
    names: 'chart/values.schema.json',
    spec: async () => ({
      format: 'helm',
      installNamespace: 'default',
      sources: [
        serve(
          '/helm-schema.tgz',
          await tarGz({
            'chart/Chart.yaml': CHART,
            'chart/values.schema.json': JSON.stringify({ $ref: 'file:///var/run/secrets/kubernetes.io/serviceaccount/token' }),
            'chart/templates/cm.yaml': cm('x'),
          }),
        ),
      ],
    }),
  },
  {
    // before issue 16 this message carried the store path of the missing directory (scandir '/…/manifests')
    name: 'rv1-no-manifests',
    reason: 'ProcessFailed',
    names: 'manifests/',
    spec: async () => ({
      format: 'registry-v1',
      installNamespace: 'default',
      sources: [serve('/rv1-empty.tgz', await tarGz({ 'metadata/annotations.yaml': 'annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n' }))],
    }),
  },
  {
    name: 'rv1-no-annotations',
    reason: 'ProcessFailed',
    names: 'metadata/annotations.yaml',
    spec: async () => ({ format: 'registry-v1', installNamespace: 'default', sources: [serve('/rv1.tgz', await tarGz({ 'manifests/cm.yaml': cm('x') }))] }),
  },
];

describe("failed BundleDeployments name bundle paths, never the controller's", () => {
  it('every condition message and event of every failure', async () => {
    for (const c of CASES) await t.create(`contain-${c.name}`, await c.spec());
    const failed: BundleDeployment[] = [];
    for (const c of CASES) {
      const bd = await t.waitFor(`contain-${c.name}`, (b) => cond(b, 'Unpacked')?.status === 'False', `${c.name} fails`);
      expect(cond(bd, 'Unpacked')?.reason, describeStatus(bd)).toBe(c.reason);
      expect(cond(bd, 'Unpacked')?.message, describeStatus(bd)).toContain(c.names);
      failed.push(bd);
    }
    const events = (await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items as unknown as Array<{
      involvedObject?: { name?: string };
      message?: string;
    }>;
    let checked = 0;
    for (const bd of failed) {
      for (const c of bd.status?.conditions ?? []) {
        expectNoControllerPaths(c.message ?? '', [t.cacheDir]);
        checked++;
      }
      for (const e of events.filter((e) => e.involvedObject?.name === bd.metadata.name)) {
        expectNoControllerPaths(e.message ?? '', [t.cacheDir]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(CASES.length * 3);
  });
});
