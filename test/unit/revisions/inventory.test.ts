/**
 * status.activeRevision.inventory: Flux's ids, sorted, and bounded by entries and bytes, saying
 * so (with the total and the revision Secrets) when it is.
 */
import { describe, expect, it } from 'vitest';
import { inventoryEntry, inventoryOf, MAX_INVENTORY_BYTES, MAX_INVENTORY_ENTRIES, revisionSecretsOf } from '../../../src/revisions/inventory.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const obj = (apiVersion: string, kind: string, name: string, namespace?: string): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}) },
});
const where = revisionSecretsOf('hoist-system', 'web', 3);

describe('inventoryEntry (Flux ids)', () => {
  it.each([
    [obj('apps/v1', 'Deployment', 'web', 'prod'), { id: 'prod_web_apps_Deployment', v: 'apps/v1' }],
    [obj('v1', 'ConfigMap', 'cfg', 'prod'), { id: 'prod_cfg__ConfigMap', v: 'v1' }],
    [
      obj('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'rollouts.argoproj.io'),
      { id: '_rollouts.argoproj.io_apiextensions.k8s.io_CustomResourceDefinition', v: 'apiextensions.k8s.io/v1' },
    ],
  ])('%o', (o, want) => {
    expect(inventoryEntry(o)).toEqual(want);
  });
});

describe('inventoryOf', () => {
  it('lists every object, sorted by id, when they fit', () => {
    const inv = inventoryOf([obj('v1', 'Service', 'web', 'b'), obj('apps/v1', 'Deployment', 'web', 'a'), obj('v1', 'Namespace', 'a')], where);
    expect(inv).toEqual({
      entries: [
        { id: '_a__Namespace', v: 'v1' },
        { id: 'a_web_apps_Deployment', v: 'apps/v1' },
        { id: 'b_web__Service', v: 'v1' },
      ],
    });
  });

  it('an empty revision: no entries', () => {
    expect(inventoryOf([], where)).toEqual({ entries: [] });
  });

  const many = (n: number, nameLength = 8) =>
    Array.from({ length: n }, (_, i) => obj('v1', 'ConfigMap', `${String(i).padStart(5, '0')}${'x'.repeat(nameLength)}`, 'ns'));
  const cases: Array<[string, number, number, number]> = [
    // [what, objects, name length, entries listed]
    ['exactly the entry limit', MAX_INVENTORY_ENTRIES, 8, MAX_INVENTORY_ENTRIES],
    ['one over the entry limit', MAX_INVENTORY_ENTRIES + 1, 8, MAX_INVENTORY_ENTRIES],
    ['thousands of objects', 5000, 8, MAX_INVENTORY_ENTRIES],
    // long names: the byte limit binds before the entry limit (each entry ~ 270 bytes)
    ['long names', 800, 240, Math.floor((MAX_INVENTORY_BYTES - 2) / (JSON.stringify(inventoryEntry(many(1, 240)[0]!)).length + 1))],
  ];
  it.each(cases)('%s', (_what, n, nameLength, listed) => {
    const objects = many(n, nameLength);
    const inv = inventoryOf(objects.slice().reverse(), where);
    expect(inv.entries).toHaveLength(listed);
    // the first ids in order, whatever order the objects came in
    expect(inv.entries.map((e) => e.id)).toEqual(objects.slice(0, listed).map((o) => inventoryEntry(o).id));
    expect(JSON.stringify(inv.entries).length).toBeLessThanOrEqual(MAX_INVENTORY_BYTES);
    if (listed < n)
      expect(inv).toMatchObject({
        truncated: true,
        total: n,
        revisionSecrets: { namespace: 'hoist-system', labelSelector: 'core.rukpak.io/revision-of=web,core.rukpak.io/revision=3' },
      });
    else expect(inv).toEqual({ entries: inv.entries });
  });
});
