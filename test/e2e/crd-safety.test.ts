/**
 * CRD upgrade safety end to end (issue 13): a BundleDeployment installs a CRD and a custom
 * resource; the next bundle's CRD makes a field required. With the default upgrade.crdSafety
 * (Enforce) the revision is refused before anything is written — Installed=False
 * UnsafeCRDUpgrade naming CRD, version, field and rule — the old CRD keeps serving and the
 * existing resource still validates. With crdSafety: None the same content applies, and the
 * stricter CRD then refuses a new resource shaped like the existing one (the change really was
 * breaking).
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { KubeObject } from '../../src/kube/types.ts';
import { cond } from '../support/controller.ts';
import { controllerWithFiles } from '../support/controller-fixture.ts';
import { crdOf, untilServed } from '../support/crds.ts';
import { servePinned } from '../support/upgrade-fixtures.ts';

const { t, files } = controllerWithFiles();

function widgetCRD(group: string, required: string[]): KubeObject {
  return crdOf(group, 'Widget', {
    schema: { type: 'object', properties: { spec: { type: 'object', required, properties: { size: { type: 'integer' }, color: { type: 'string' } } } } },
  });
}

const widget = (group: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: `${group}/v1`,
  kind: 'Widget',
  metadata: { name },
  spec,
});

describe('upgrade.crdSafety', () => {
  it('refuses a CRD that makes a field required, keeps the old CRD serving; None applies it', async () => {
    const group = `w${t.runId}.hoist.test`;
    const ns = `crd-safety-${t.runId}`;
    const crdName = `widgets.${group}`;
    const v1 = { 'crd.yaml': stringify(widgetCRD(group, ['size'])), 'cr.yaml': stringify(widget(group, 'small', { size: 1 })) };
    // the new CRD requires color; the bundle's own resource sets it, resources made before do not
    const v2 = { 'crd.yaml': stringify(widgetCRD(group, ['size', 'color'])), 'cr.yaml': stringify(widget(group, 'small', { size: 1, color: 'red' })) };

    await t.create('crd-safety', { installNamespace: ns, format: 'plain', sources: await servePinned(files, '/crd-v1.tgz', v1) });
    await t.waitFor('crd-safety', (b) => cond(b, 'Installed')?.status === 'True' && b.status?.activeRevision?.number === 1, 'revision 1 installed', 90_000);
    // a resource made by someone else under the v1 schema (once discovery serves the new kind: it
    // follows the CRD's Established condition, which Installed waits for, by a moment)
    await untilServed(crdName, { apiVersion: `${group}/v1`, kind: 'Widget' }, [t.client]);
    await t.client.create({ ...widget(group, 'user-made', { size: 3 }), metadata: { name: 'user-made', namespace: ns } });

    await t.patchSpec('crd-safety', { sources: await servePinned(files, '/crd-v2.tgz', v2) });
    const refused = await t.waitFor('crd-safety', (b) => cond(b, 'Installed')?.reason === 'UnsafeCRDUpgrade', 'refused as unsafe');
    const message = cond(refused, 'Installed')!.message;
    expect(cond(refused, 'Installed')?.status).toBe('False');
    expect(message).toContain(`CRD ${crdName}, version v1, ^.spec: required: new required fields "color"`);
    expect(message).toContain('revision 1 stays installed');
    expect(cond(refused, 'Progressing')).toMatchObject({ status: 'False', reason: 'RolledBack' });
    expect(refused.status?.activeRevision?.number).toBe(1);
    expect(refused.status?.attemptedRevision).toMatchObject({ number: 2, reason: 'UnsafeCRDUpgrade' });

    // the old CRD still serves, unchanged; both resources still validate against it
    const live = (await t.client.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, crdName)) as any;
    expect(live.spec.versions[0].schema.openAPIV3Schema.properties.spec.required).toEqual(['size']);
    expect(live.metadata.annotations['core.rukpak.io/revision']).toBe('1');
    for (const name of ['small', 'user-made']) {
      const cr = (await t.client.get(widget(group, name, {}), name, ns))!;
      const check = { apiVersion: cr.apiVersion, kind: cr.kind, metadata: { name, namespace: ns }, spec: cr['spec'] };
      await expect(t.client.apply(check, { fieldManager: `hoist-test-${t.runId}`, dryRun: true, force: true }), name).resolves.toBeDefined();
    }

    await t.patchSpec('crd-safety', { upgrade: { crdSafety: 'None' } });
    const applied = await t.waitFor(
      'crd-safety',
      (b) => cond(b, 'Installed')?.status === 'True' && b.status?.activeRevision?.number === 2,
      'revision 2 applied with crdSafety None',
      90_000,
    );
    expect(cond(applied, 'Installed')?.reason).toBe('Installed');
    const after = (await t.client.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, crdName)) as any;
    expect(after.spec.versions[0].schema.openAPIV3Schema.properties.spec.required).toEqual(['size', 'color']);
    // what Enforce protected against: a resource like the user's is no longer valid (the live one
    // stays readable; the API server's validation ratcheting lets unchanged fields through)
    const like = { ...widget(group, 'like-user-made', { size: 3 }), metadata: { name: 'like-user-made', namespace: ns } };
    await expect(t.client.apply(like, { fieldManager: `hoist-test-${t.runId}`, dryRun: true, force: true })).rejects.toThrow(/color: Required value/);

    await t.client.delete({ apiVersion: 'core.rukpak.io/v1alpha2', kind: 'BundleDeployment' }, 'crd-safety', undefined);
  });
});
