/**
 * status.keptObjects and the Kept/Orphaned Event words (src/reconciler/kept-objects.ts): what a
 * prune kept is added, an object a revision holds again is dropped, the list is bounded.
 */
import { describe, expect, it } from 'vitest';
import type { KeptObject } from '../../../api/v1alpha2/types.ts';
import { objectId } from '../../../src/apply/object-id.ts';
import type { ObjectResult } from '../../../src/apply/result.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { describeKept, keptObjectsAfter, MAX_KEPT_OBJECTS } from '../../../src/reconciler/kept-objects.ts';

const KEEP = 'helm.sh/resource-policy: keep';
const pvc = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'ns' } });
const cm = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns' } });
const result = (o: KubeObject, action: ObjectResult['action'], policy?: string): ObjectResult => ({
  id: objectId(o),
  subject: `${o.apiVersion} ${o.kind} ns/${o.metadata.name}`,
  action,
  ...(policy ? { policy } : {}),
});
const entry = (o: KubeObject, revision: number, policy = KEEP): KeptObject => ({
  id: `ns_${o.metadata.name}__${o.kind}`,
  v: o.apiVersion,
  policy,
  revision,
});

describe('keptObjectsAfter', () => {
  it.each<[string, KeptObject[] | undefined, ObjectResult[], KubeObject[], KubeObject[], KeptObject[] | undefined]>([
    ['nothing kept, nothing before', undefined, [result(cm('a'), 'deleted')], [cm('a')], [cm('b')], undefined],
    [
      'a kept object is listed with its policy and the revision that dropped it',
      undefined,
      [result(pvc('data'), 'kept', KEEP), result(cm('a'), 'deleted')],
      [pvc('data'), cm('a')],
      [],
      [entry(pvc('data'), 2)],
    ],
    [
      'earlier entries stay; the new one goes last',
      [entry(pvc('old'), 1)],
      [result(pvc('data'), 'kept', KEEP)],
      [pvc('data')],
      [],
      [entry(pvc('old'), 1), entry(pvc('data'), 2)],
    ],
    ['an object the revision holds again is taken back: its entry goes', [entry(pvc('data'), 1)], [], [], [pvc('data')], undefined],
    [
      'kept again later: one entry, the newest',
      [entry(pvc('data'), 1)],
      [result(pvc('data'), 'kept', 'core.rukpak.io/prune: disabled')],
      [pvc('data')],
      [],
      [entry(pvc('data'), 2, 'core.rukpak.io/prune: disabled')],
    ],
    [
      'skipped, orphaned (CRD, namespace) and failed objects are not kept by a policy',
      undefined,
      [result(pvc('a'), 'skipped'), result(pvc('b'), 'orphaned'), result(pvc('c'), 'failed')],
      [pvc('a'), pvc('b'), pvc('c')],
      [],
      undefined,
    ],
  ])('%s', (_what, previous, results, stale, current, expected) => {
    expect(keptObjectsAfter(previous, results, stale, current, 2)).toEqual(expected);
  });

  it(`keeps the newest ${MAX_KEPT_OBJECTS}`, () => {
    const previous = Array.from({ length: MAX_KEPT_OBJECTS }, (_, i) => entry(pvc(`p${i}`), 1));
    const list = keptObjectsAfter(previous, [result(pvc('data'), 'kept', KEEP)], [pvc('data')], [], 2)!;
    expect(list).toHaveLength(MAX_KEPT_OBJECTS);
    expect(list[0]!.id).toBe('ns_p1__PersistentVolumeClaim');
    expect(list.at(-1)).toEqual(entry(pvc('data'), 2));
  });
});

describe('describeKept', () => {
  it('names each kept object with its policy; none kept: undefined', () => {
    expect(describeKept([result(cm('a'), 'deleted')])).toBeUndefined();
    expect(describeKept([result(pvc('data'), 'kept', KEEP), result(cm('a'), 'deleted')])).toEqual({
      count: 1,
      names: `v1 PersistentVolumeClaim ns/data (${KEEP})`,
    });
  });

  it('names ten, then says how many more', () => {
    const d = describeKept(Array.from({ length: 12 }, (_, i) => result(cm(`c${i}`), 'kept', 'deletionPolicy: Orphan')))!;
    expect(d.count).toBe(12);
    expect(d.names.split(', ')).toHaveLength(10);
    expect(d.names).toMatch(/v1 ConfigMap ns\/c9 \(deletionPolicy: Orphan\) \(\+2 more\)$/);
  });
});
