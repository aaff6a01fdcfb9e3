import { describe, expect, it } from 'vitest';
import type { BundleDeployment } from '../../../../api/v1alpha2/types.ts';
import { requeuedOnAdd, requeuedOnDelete, requeuedOnUpdate, type BundleDeploymentIndexes } from '../../../../src/reconciler/routing/bundle-deployments.ts';
import { waitsForCrd } from '../../../../src/reconciler/routing/crd-waiters.ts';
import { changedByOthers, routeObjectEvent, type ObjectEventView } from '../../../../src/reconciler/routing/object-events.ts';
import { referencedObjectsOf } from '../../../../src/reconciler/routing/referenced-objects.ts';

function bd(name: string, opts: { lineage?: string; dependsOn?: string[]; rv?: string; paused?: boolean; deleting?: boolean } = {}): BundleDeployment {
  return {
    apiVersion: 'core.rukpak.io/v1alpha2',
    kind: 'BundleDeployment',
    metadata: {
      name,
      resourceVersion: opts.rv ?? '1',
      ...(opts.lineage ? { labels: { 'core.rukpak.io/lineage': opts.lineage } } : {}),
      ...(opts.deleting ? { deletionTimestamp: '2026-12-03T00:00:00Z' } : {}),
    },
    spec: {
      sources: [{ kind: 'image', image: { ref: 'registry.example/app:1' } }],
      ...(opts.dependsOn ? { dependsOn: opts.dependsOn.map((n) => ({ name: n })) } : {}),
      ...(opts.paused ? { paused: true } : {}),
    },
  } as BundleDeployment;
}

// lineages by label: "app" holds a, a2, a3; web's dependents are api and worker
const indexes: BundleDeploymentIndexes = {
  lineageMembers: (l) => ({ app: ['a', 'a2', 'a3'], web: ['web'] })[l] ?? [],
  dependentsOf: (n) => ({ web: ['api', 'worker'], a: ['api'] })[n] ?? [],
};

describe('routing: which BDs an event on a BundleDeployment re-queues', () => {
  const rows: { name: string; got: () => string[]; want: string[] }[] = [
    {
      name: 'add: the lineage other members and the dependents, not itself',
      got: () => requeuedOnAdd(bd('a', { lineage: 'app' }), indexes),
      want: ['a2', 'a3', 'api'],
    },
    { name: 'add: a BD no one depends on and alone in its lineage: nothing', got: () => requeuedOnAdd(bd('solo'), indexes), want: [] },
    {
      name: 'update: a new resourceVersion re-queues its dependents (readyExpr reads any of it)',
      got: () => requeuedOnUpdate(bd('web', { lineage: 'web' }), bd('web', { lineage: 'web', rv: '2' }), indexes),
      want: ['api', 'worker'],
    },
    {
      name: 'update: the same resourceVersion (a resync) re-queues nobody',
      got: () => requeuedOnUpdate(bd('web', { lineage: 'web' }), bd('web', { lineage: 'web' }), indexes),
      want: [],
    },
    {
      name: 'update: paused toggled re-arbitrates the lineage',
      got: () => requeuedOnUpdate(bd('a', { lineage: 'app' }), bd('a', { lineage: 'app', paused: true }), indexes),
      want: ['a2', 'a3'],
    },
    {
      name: 'update: deletion started re-arbitrates the lineage and tells dependents',
      got: () => requeuedOnUpdate(bd('a', { lineage: 'app' }), bd('a', { lineage: 'app', deleting: true, rv: '2' }), indexes),
      want: ['a2', 'a3', 'api'],
    },
    {
      name: 'update: moved to another lineage: both lineages',
      got: () => requeuedOnUpdate(bd('a', { lineage: 'app' }), bd('a', { lineage: 'web' }), indexes),
      want: ['a2', 'a3', 'web'],
    },
    {
      name: 'update: a dependency no longer named is told (it may wait, being deleted)',
      got: () => requeuedOnUpdate(bd('x', { dependsOn: ['db', 'cache'] }), bd('x', { dependsOn: ['cache'] }), indexes),
      want: ['db'],
    },
    {
      name: 'delete: lineage, its dependencies and its dependents, each once',
      got: () => requeuedOnDelete(bd('a', { lineage: 'app', dependsOn: ['api', 'db'] }), indexes),
      want: ['a2', 'a3', 'api', 'db'],
    },
  ];
  for (const r of rows) it(r.name, () => expect(r.got()).toEqual(r.want));
});

describe('routing: what a managed-object event does to its BD', () => {
  const view = (over: Partial<ObjectEventView> = {}): ObjectEventView => ({
    targetOf: () => 'local',
    known: () => true,
    ignoresMetadata: () => true,
    processing: () => false,
    overrideManagers: new Set(['kubectl-edit']),
    ...over,
  });
  const meta = (newManagers: string[]) => ({ id: 'v1/ConfigMap ns/c', labels: ['team'], annotations: [], newManagers });
  const rows: { name: string; target?: string; event: Parameters<typeof routeObjectEvent>[1]; view: ObjectEventView; want: string }[] = [
    { name: 'a plain change re-queues', event: { owner: 'a', version: 'v@2' }, view: view(), want: 'requeue' },
    { name: "another target's watch: ignored", target: 'https://remote', event: { owner: 'a' }, view: view(), want: 'other-target' },
    {
      name: "the BD's own target's watch re-queues",
      target: 'https://remote',
      event: { owner: 'a' },
      view: view({ targetOf: () => 'https://remote' }),
      want: 'requeue',
    },
    { name: 'not in this shard: ignored', event: { owner: 'a' }, view: view({ known: () => false }), want: 'not-ours' },
    {
      name: 'metadata a controller set that Hoist does not: ignored',
      event: { owner: 'a', metadata: meta(['other-controller']) },
      view: view(),
      want: 'foreign-metadata',
    },
    {
      name: 'the same metadata by hand (an override manager): re-queues',
      event: { owner: 'a', metadata: meta(['kubectl-edit']) },
      view: view(),
      want: 'requeue',
    },
    {
      name: 'metadata the apply would change: re-queues',
      event: { owner: 'a', metadata: meta(['other-controller']) },
      view: view({ ignoresMetadata: () => false }),
      want: 'requeue',
    },
    {
      name: 'during its reconcile: decided when it ends',
      event: { owner: 'a', version: 'v@3' },
      view: view({ processing: () => true }),
      want: 'during-reconcile',
    },
    { name: 'during its reconcile without a version (a deletion): re-queues', event: { owner: 'a' }, view: view({ processing: () => true }), want: 'requeue' },
  ];
  for (const r of rows) it(r.name, () => expect(routeObjectEvent(r.target, r.event, r.view)).toBe(r.want));

  it('after a reconcile: only versions it did not write itself re-queue', () => {
    expect(changedByOthers(['a@2', 'b@5'], new Set(['a@2', 'b@5']))).toBe(false);
    expect(changedByOthers(['a@2', 'b@6'], new Set(['a@2', 'b@5']))).toBe(true);
    expect(changedByOthers(['a@2'], undefined)).toBe(true);
    expect(changedByOthers(undefined, new Set(['a@2']))).toBe(false);
  });
});

describe('routing: CRD waiters and referenced objects', () => {
  const withStatus = (status: BundleDeployment['status']): BundleDeployment => ({ ...bd('a'), status });
  it.each([
    ['skipped optional objects', withStatus({ skippedOptional: ['monitoring.coreos.com/v1 ServiceMonitor ns/m'] } as BundleDeployment['status']), true],
    [
      'retrying',
      withStatus({
        conditions: [{ type: 'Progressing', status: 'True', reason: 'Retrying', message: '', lastTransitionTime: '' }],
      } as BundleDeployment['status']),
      true,
    ],
    [
      'blocked',
      withStatus({
        conditions: [{ type: 'Progressing', status: 'False', reason: 'Blocked', message: '', lastTransitionTime: '' }],
      } as BundleDeployment['status']),
      true,
    ],
    [
      'succeeded',
      withStatus({
        conditions: [{ type: 'Progressing', status: 'True', reason: 'Succeeded', message: '', lastTransitionTime: '' }],
      } as BundleDeployment['status']),
      false,
    ],
    ['no status', bd('a'), false],
  ])('a CRD established wakes a BD that is %s: %s', (_, b, want) => expect(waitsForCrd(b)).toBe(want));

  it('a BD reading a kubeconfig, a decryption Secret and a values ConfigMap is re-queued by each', () => {
    const b = bd('a');
    b.spec = {
      ...b.spec,
      format: 'helm',
      installNamespace: 'team',
      // with a ServiceAccount, references are read in the install namespace
      serviceAccount: { name: 'deployer' },
      kubeConfig: { secretRef: { name: 'cluster-1', namespace: 'fleet', key: 'value' } },
      decryption: { provider: 'sops', secretRef: { name: 'age' } },
      config: { helm: { valuesFrom: [{ kind: 'ConfigMap', name: 'vals' }] } },
    } as BundleDeployment['spec'];
    const refs = referencedObjectsOf(b, 'hoist-system');
    expect(refs.secrets).toEqual(expect.arrayContaining(['fleet/cluster-1', 'team/age']));
    expect(refs.configMaps).toEqual(expect.arrayContaining(['team/vals']));
  });
});
