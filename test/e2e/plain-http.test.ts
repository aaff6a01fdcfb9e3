/**
 * The first slice end to end: a BundleDeployment with one http source (tar.gz of plain
 * manifests) is fetched, parsed and server-side applied by a real controller against the real
 * API server; bad input names its stage and subject and leaves the installed revision intact.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { LABEL_LINEAGE, LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import { cond, isDone } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { sha256, tarGz } from '../support/http-files.ts';
import { isolatePlain } from '../support/upgrade-fixtures.ts';

const UPSTREAM = readFileSync(new URL('../../testdata/fixtures/plain/argo-rollouts-v1.8.4/install.yaml', import.meta.url), 'utf8');

const cm = (name: string, data: Record<string, string>) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${Object.entries(data)
    .map(([k, v]) => `  ${k}: "${v}"`)
    .join('\n')}\n`;

const { t, files } = controllerWithFiles();

describe('plain bundle over http', () => {
  it('installs argo-rollouts v1.8.4: every object exists with ownership labels, status per contract', async () => {
    // the upstream manifests with their CRD group and cluster role names made this file's own (other files install them too)
    const rollouts = isolatePlain(UPSTREAM, `ph${t.runId}`);
    const body = await tarGz({ 'install.yaml': rollouts });
    files.set('/rollouts.tgz', body);
    const ns = `rollouts-${t.runId}`;
    await t.create('rollouts', {
      installNamespace: ns,
      format: 'plain',
      sources: [{ kind: 'http', http: { url: files.url('/rollouts.tgz'), sha256: sha256(body) } }],
    });
    const bd = await t.waitFor('rollouts', (b) => cond(b, 'Installed')?.status === 'True', 'installed', 90_000);
    expect(cond(bd, 'Resolved')).toMatchObject({ status: 'True', reason: 'Resolved', observedGeneration: 1 });
    expect(cond(bd, 'Unpacked')).toMatchObject({ status: 'True', reason: 'Unpacked', observedGeneration: 1 });
    expect(cond(bd, 'Installed')).toMatchObject({ status: 'True', reason: 'Installed', message: 'revision 1: 15 objects', observedGeneration: 1 });
    expect(cond(bd, 'Progressing')?.observedGeneration).toBe(1);
    expect(bd.status?.resolvedSources?.[0]).toMatchObject({ kind: 'http', sha256: sha256(body) });
    expect(bd.status?.activeRevision).toMatchObject({ number: 1, objects: 15 });
    expect(bd.status?.contentDigest).toMatch(/^sha256:[0-9a-f]{64}$/);

    const docs = rollouts.split(/^---$/m).filter((d) => /^kind:/m.test(d));
    expect(docs).toHaveLength(15);
    for (const doc of docs) {
      const kind = /^kind: (\S+)/m.exec(doc)![1]!;
      const apiVersion = /^apiVersion: (\S+)/m.exec(doc)![1]!;
      const name = /^metadata:\n(?:  .*\n)*?  name: (\S+)/m.exec(doc)![1]!;
      const namespaced = !['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'].includes(kind);
      const live = await t.client.get({ apiVersion, kind }, name, namespaced ? ns : undefined);
      expect(live, `${kind} ${name}`).toBeDefined();
      expect(live!.metadata.labels).toMatchObject({ [LABEL_OWNER_NAME]: 'rollouts', [LABEL_LINEAGE]: 'rollouts' });
      expect(live!.metadata.annotations?.['core.rukpak.io/revision']).toBe('1');
      expect(live!.metadata.ownerReferences ?? []).toHaveLength(0);
    }
  }, 120_000); // the wait above allows 90 s

  describe('bad input names the stage and subject and leaves the installed revision untouched', () => {
    const ns = () => `bad-${t.runId}`;
    let uid = '';

    beforeAll(async () => {
      const body = await tarGz({ 'app.yaml': cm('app-config', { color: 'blue' }) });
      files.set('/good.tgz', body);
      await t.create('bad-input', { installNamespace: ns(), format: 'plain', sources: [{ kind: 'http', http: { url: files.url('/good.tgz') } }] });
      await t.waitFor('bad-input', isDone, 'first revision installed');
      uid = (await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app-config', ns()))!.metadata.uid!;
    });

    async function expectUntouched(): Promise<void> {
      const live = await t.client.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app-config', ns());
      expect(live?.metadata.uid).toBe(uid);
      expect((live as { data?: Record<string, string> }).data).toEqual({ color: 'blue' });
      const bd = await t.get('bad-input');
      expect(bd?.status?.activeRevision?.number).toBe(1);
      expect(cond(bd, 'Installed')?.status).toBe('True');
    }

    it('a 404 URL: Unpacked=False FetchFailed naming the URL', async () => {
      await t.patchSpec('bad-input', { sources: [{ kind: 'http', http: { url: files.url('/missing.tgz') } }] });
      const bd = await t.waitFor('bad-input', (b) => cond(b, 'Resolved')?.status === 'False' || cond(b, 'Unpacked')?.status === 'False', 'fetch failure');
      const failed = cond(bd, 'Resolved')?.status === 'False' ? cond(bd, 'Resolved')! : cond(bd, 'Unpacked')!;
      expect(failed.message).toContain(files.url('/missing.tgz'));
      expect(failed.message).toMatch(/404/);
      expect(cond(bd, 'Progressing')).toMatchObject({ status: 'False', reason: 'Blocked' });
      await expectUntouched();
    });

    it('a body that is not gzip or tar: FetchFailed naming the archive problem', async () => {
      files.set('/not-gzip.tgz', Buffer.from('<html>this is not an archive</html>'.repeat(20)));
      await t.patchSpec('bad-input', { sources: [{ kind: 'http', http: { url: files.url('/not-gzip.tgz') } }] });
      const bd = await t.waitFor('bad-input', (b) => cond(b, 'Unpacked')?.status === 'False' || cond(b, 'Resolved')?.status === 'False', 'unpack failure');
      const failed = cond(bd, 'Unpacked')?.status === 'False' ? cond(bd, 'Unpacked')! : cond(bd, 'Resolved')!;
      expect(failed.message).toMatch(/archive|tar|gzip/i);
      expect(failed.message).toContain('/not-gzip.tgz');
      await expectUntouched();
    });

    it('malformed YAML: Unpacked=False ProcessFailed naming the file and line', async () => {
      const body = await tarGz({ 'manifests/broken.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: [unclosed\n' });
      files.set('/broken.tgz', body);
      await t.patchSpec('bad-input', { sources: [{ kind: 'http', http: { url: files.url('/broken.tgz'), sha256: sha256(body) } }] });
      const bd = await t.waitFor('bad-input', (b) => cond(b, 'Unpacked')?.reason === 'ProcessFailed', 'process failure');
      expect(cond(bd, 'Unpacked')!.message).toContain('manifests/broken.yaml');
      expect(cond(bd, 'Unpacked')!.message).toMatch(/line \d+|:\d+/);
      await expectUntouched();
    });

    it('an object the API server refuses: rolled back, naming the object and the server message', async () => {
      const bad = `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: no-containers\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      containers: []\n`;
      const body = await tarGz({ 'app.yaml': cm('app-config', { color: 'green' }), 'deploy.yaml': bad });
      files.set('/refused.tgz', body);
      await t.patchSpec('bad-input', { sources: [{ kind: 'http', http: { url: files.url('/refused.tgz'), sha256: sha256(body) } }] });
      const bd = await t.waitFor('bad-input', (b) => cond(b, 'Progressing')?.reason === 'RolledBack', 'rollback');
      expect(cond(bd, 'Progressing')!.message).toContain(`apps/v1 Deployment ${ns()}/no-containers`);
      expect(cond(bd, 'Progressing')!.message).toMatch(/spec.template.spec.containers: Required value/);
      expect(bd.status?.attemptedRevision).toMatchObject({ reason: 'ApplyFailed' });
      // the ConfigMap changed by the failed revision is back as it was
      await expectUntouched();
    });
  });
});
