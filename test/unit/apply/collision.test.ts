/**
 * The whole collision grid (DESIGN §4): collisionProtection × who owns the live object × whether
 * it is a CRD, every cell through decideTakeOver. Ownership is read from Hoist's labels alone: an
 * object another tool manages (Helm's labels, an ownerReference) counts as unowned, as the design
 * says IfNotOwned adopts what kubectl, Helm or a person created.
 */
import { describe, expect, it } from 'vitest';
import { LABEL_LINEAGE, LABEL_OWNER_NAME, type CollisionProtection } from '../../../api/v1alpha2/types.ts';
import { decideTakeOver, type TakeOver } from '../../../src/apply/collision.ts';

const me = { name: 'mine', lineage: 'my-lineage' };

/** the live object as each owner leaves it (undefined: it does not exist) */
const owners: Record<string, { labels?: Record<string, string> } | undefined> = {
  absent: undefined,
  'this BD': { labels: { [LABEL_OWNER_NAME]: 'mine', [LABEL_LINEAGE]: 'my-lineage' } },
  'another BD of this lineage': { labels: { [LABEL_OWNER_NAME]: 'older', [LABEL_LINEAGE]: 'my-lineage' } },
  'a BD of another lineage': { labels: { [LABEL_OWNER_NAME]: 'theirs', [LABEL_LINEAGE]: 'their-lineage' } },
  'a BD label without a lineage label': { labels: { [LABEL_OWNER_NAME]: 'theirs' } },
  'this lineage’s label without an owner': { labels: { [LABEL_LINEAGE]: 'my-lineage' } },
  'another lineage’s label without an owner': { labels: { [LABEL_LINEAGE]: 'their-lineage' } },
  'another controller (Helm)': { labels: { 'app.kubernetes.io/managed-by': 'Helm', 'helm.sh/chart': 'app-1.0.0' } },
  'nobody (no labels)': {},
};

type Cell = 'create' | 'update' | 'handover' | 'reclaim' | 'adopt' | 'steal' | 'refuse';
const PROTECTIONS = ['Prevent', 'IfNotOwned', 'None'] as const;

/** per owner: [Prevent, IfNotOwned, None] for an ordinary object, then the same for a CRD */
// prettier-ignore
const grid: Record<keyof typeof owners, [object: [Cell, Cell, Cell], crd: [Cell, Cell, Cell]]> = {
  absent: [['create', 'create', 'create'], ['create', 'create', 'create']],
  'this BD': [['update', 'update', 'update'], ['update', 'update', 'update']],
  'another BD of this lineage': [['handover', 'handover', 'handover'], ['handover', 'handover', 'handover']],
  'a BD of another lineage': [['refuse', 'refuse', 'steal'], ['refuse', 'refuse', 'refuse']],
  'a BD label without a lineage label': [['refuse', 'refuse', 'steal'], ['refuse', 'refuse', 'refuse']],
  // kept by this lineage (helm.sh/resource-policy keep, prune disabled, deletionPolicy Orphan): taken back in place
  'this lineage’s label without an owner': [['reclaim', 'reclaim', 'reclaim'], ['reclaim', 'reclaim', 'reclaim']],
  // kept by another lineage: unowned, as anything created outside Hoist
  'another lineage’s label without an owner': [['refuse', 'adopt', 'adopt'], ['refuse', 'adopt', 'adopt']],
  'another controller (Helm)': [['refuse', 'adopt', 'adopt'], ['refuse', 'adopt', 'adopt']],
  'nobody (no labels)': [['refuse', 'adopt', 'adopt'], ['refuse', 'adopt', 'adopt']],
};

/** the owner a refusal or a steal names */
function ownerNamed(owner: keyof typeof owners): string {
  const labels = owners[owner]?.labels ?? {};
  const name = labels[LABEL_OWNER_NAME];
  return name === undefined ? 'none (created outside Hoist)' : `BundleDeployment ${name} (lineage ${labels[LABEL_LINEAGE] ?? 'unknown'})`;
}

/** what a cell means, in full: the action and what it carries */
function expected(cell: Cell, owner: keyof typeof owners, protection: CollisionProtection, crd: boolean): TakeOver {
  switch (cell) {
    case 'create':
    case 'adopt':
      return { action: cell };
    case 'update':
      return { action: 'update', handover: false };
    case 'handover':
      return { action: 'update', handover: true };
    case 'reclaim':
      return { action: 'update', handover: true, reclaim: true };
    case 'steal':
      return { action: 'steal', owner: ownerNamed(owner) };
    case 'refuse': {
      // why: Prevent's rule for unowned objects, the CRD rule under None, or another lineage's object
      const why = ownerNamed(owner).startsWith('none')
        ? 'collisionProtection Prevent takes over only objects of the same lineage; use IfNotOwned to adopt it'
        : protection === 'None' && crd
          ? 'a CustomResourceDefinition of another lineage is never taken over, not even under collisionProtection None (its custom resources belong to that lineage)'
          : `owned by another lineage; collisionProtection ${protection} refuses it`;
      return { action: 'refuse', owner: ownerNamed(owner), why };
    }
  }
}

const cells = Object.entries(grid).flatMap(([owner, [object, crd]]) =>
  PROTECTIONS.flatMap((protection, i) => [[owner, protection, false, object[i]!] as const, [owner, protection, true, crd[i]!] as const]),
);

describe('decideTakeOver: collisionProtection × owner × CRD', () => {
  it('the grid has every cell: 9 owners × 3 protections × object/CRD', () => {
    expect(cells).toHaveLength(Object.keys(owners).length * PROTECTIONS.length * 2);
  });

  it.each(cells)('owner %s, %s, CRD %s: %s', (owner, protection, crd, cell) => {
    expect(decideTakeOver(owners[owner], { ...me, protection }, { crd })).toEqual(expected(cell, owner, protection, crd));
  });

  it('without opts an object is not a CRD', () => {
    expect(decideTakeOver(owners['a BD of another lineage'], { ...me, protection: 'None' })).toEqual({
      action: 'steal',
      owner: 'BundleDeployment theirs (lineage their-lineage)',
    });
  });
});
