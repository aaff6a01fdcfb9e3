/** The apply plan's pure rules (src/apply/plan.ts): revision numbering, what a new revision prunes against, whose fields an apply takes over. */
import { describe, expect, it } from 'vitest';
import type { BundleDeploymentStatus } from '../../../api/v1alpha2/types.ts';
import { DEFAULT_OVERRIDE_MANAGERS } from '../../../src/apply/field-managers.ts';
import { replacedRevisions, revisionNumberFor, takeOverScope, type Planned } from '../../../src/apply/plan.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const active = (number: number, contentDigest: string) => ({ activeRevision: { number, contentDigest } });

describe('revisionNumberFor', () => {
  it.each<[string, string, Array<{ number: number; contentDigest: string }>, BundleDeploymentStatus | undefined, number]>([
    ['the first revision', 'sha256:a', [], undefined, 1],
    ['the active content keeps its number', 'sha256:a', [{ number: 3, contentDigest: 'sha256:a' }], active(3, 'sha256:a'), 3],
    [
      'stored content keeps its number (a roll back by spec)',
      'sha256:a',
      [
        { number: 1, contentDigest: 'sha256:a' },
        { number: 2, contentDigest: 'sha256:b' },
      ],
      active(2, 'sha256:b'),
      1,
    ],
    ['new content: one above every stored number', 'sha256:c', [{ number: 4, contentDigest: 'sha256:x' }], active(2, 'sha256:b'), 5],
    [
      'new content: one above the attempted revision (rolled back, pruned from the store)',
      'sha256:c',
      [],
      { ...active(2, 'sha256:b'), attemptedRevision: { number: 7, contentDigest: 'sha256:z', generation: 1 } } as BundleDeploymentStatus,
      8,
    ],
    [
      'new content: one above the history in status',
      'sha256:c',
      [],
      { ...active(2, 'sha256:b'), revisions: [{ number: 9, contentDigest: 'sha256:y', phase: 'Superseded' }] } as BundleDeploymentStatus,
      10,
    ],
  ])('%s', (_, digest, stored, status, want) => {
    expect(revisionNumberFor(digest, stored, status)).toBe(want);
  });
});

describe('replacedRevisions', () => {
  it.each<[string, BundleDeploymentStatus | undefined, number, number[]]>([
    ['nothing installed', undefined, 1, []],
    ['the active revision', active(1, 'sha256:a'), 2, [1]],
    [
      'and a transition the spec abandoned',
      { ...active(1, 'sha256:a'), transition: { revision: 2, contentDigest: 'sha256:b' } } as BundleDeploymentStatus,
      3,
      [1, 2],
    ],
    [
      'not the revision itself (its own transition)',
      { ...active(1, 'sha256:a'), transition: { revision: 2, contentDigest: 'sha256:b' } } as BundleDeploymentStatus,
      2,
      [1],
    ],
    [
      'the active revision once (a transition of its post hooks)',
      { ...active(1, 'sha256:a'), transition: { revision: 1, contentDigest: 'sha256:a' } } as BundleDeploymentStatus,
      2,
      [1],
    ],
  ])('%s', (_, status, number, want) => {
    expect(replacedRevisions(status, number).map((r) => r.number)).toEqual(want);
  });
});

describe('takeOverScope', () => {
  const overrides = new Set(DEFAULT_OVERRIDE_MANAGERS);
  const live = (...managers: string[]): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', managedFields: managers.map((manager) => ({ manager, operation: 'Update', fieldsV1: {} })) },
  });
  const planned = (decision: Planned['decision'], liveObj?: KubeObject, ignored = false): Planned =>
    ({ decision, ...(liveObj ? { live: liveObj } : {}), ...(ignored ? { ignored: { pointers: ['/data/x'], full: liveObj } } : {}) }) as Planned;
  it.each<[string, Planned, 'all' | string[] | undefined]>([
    ['a create: nothing', planned({ action: 'create' }), undefined],
    ['an update not read (the watches vouched for it): nothing', planned({ action: 'update', handover: false }), undefined],
    [
      'an update of an object only Hoist and controllers write: nothing',
      planned({ action: 'update', handover: false }, live('hoist-x', 'kube-controller-manager')),
      undefined,
    ],
    [
      'a hand-edited update: the interactive managers',
      planned({ action: 'update', handover: false }, live('hoist-x', 'kubectl-edit')),
      [...DEFAULT_OVERRIDE_MANAGERS],
    ],
    ['an update with driftIgnore rules: none, only giving up the ignored fields', planned({ action: 'update', handover: false }, live('hoist-x'), true), []],
    ['an adoption: every manager', planned({ action: 'adopt' }, live('kubectl-client-side-apply')), 'all'],
    ['a takeover from another lineage: every manager', planned({ action: 'steal', owner: 'x' }, live('hoist-other')), 'all'],
    ['a refusal: nothing', planned({ action: 'refuse', owner: 'x', why: 'y' }, live('hoist-other')), undefined],
  ])('%s', (_, p, want) => {
    const scope = takeOverScope(p, overrides);
    expect(scope === undefined ? undefined : scope.only ? [...scope.only] : 'all').toEqual(want);
  });
});
