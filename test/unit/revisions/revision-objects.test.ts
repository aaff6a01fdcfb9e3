import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/kube/types.ts';
import { RevisionObjects } from '../../../src/revisions/revision-objects.ts';

const deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'ns', labels: { app: 'web' }, annotations: { team: 'a' } },
} as KubeObject;
const id = 'apps/Deployment/ns/web';
const own = { labels: ['core.rukpak.io/owner-name'], annotations: ['core.rukpak.io/revision'] };
const objects = new RevisionObjects({ load: async () => undefined });
objects.rememberRendered('bd', { inputs: 'i', contentDigest: 'sha256:x', objects: [deployment], hooks: [] });

describe('RevisionObjects.setsNoneOf: whether a metadata change of an object is one Hoist would act on', () => {
  const cases: Array<[string, string, string, { labels: string[]; annotations: string[] }, boolean]> = [
    ["a controller's own annotation (kube-controller-manager's revision)", 'bd', id, { labels: [], annotations: ['deployment.kubernetes.io/revision'] }, true],
    ['a foreign label', 'bd', id, { labels: ['env'], annotations: [] }, true],
    ['a label the bundle sets', 'bd', id, { labels: ['app'], annotations: [] }, false],
    ['an annotation the bundle sets', 'bd', id, { labels: [], annotations: ['team'] }, false],
    ["Hoist's owner label", 'bd', id, { labels: ['core.rukpak.io/owner-name'], annotations: [] }, false],
    ["Hoist's revision annotation", 'bd', id, { labels: [], annotations: ['core.rukpak.io/revision'] }, false],
    ['an object the revision does not have', 'bd', 'apps/Deployment/ns/other', { labels: ['env'], annotations: [] }, false],
    ['a BD not rendered in this process', 'other', id, { labels: ['env'], annotations: [] }, false],
  ];
  it.each(cases)('%s', (_, bd, objectId, keys, want) => expect(objects.setsNoneOf(bd, objectId, keys, own)).toBe(want));
});
