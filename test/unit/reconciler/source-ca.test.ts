import { describe, expect, it } from 'vitest';
import type { BundleDeployment, SourceSpec } from '../../../api/v1alpha2/types.ts';
import { caRefOf, CONFIGMAP_KEY_PREFIX, referencedObjects, rotationKeysOf, verifyKeysRotated } from '../../../src/reconciler/inputs/source-ca.ts';

const bd = (sources: SourceSpec[], serviceAccount?: string): BundleDeployment =>
  ({
    apiVersion: 'core.rukpak.io/v1alpha2',
    kind: 'BundleDeployment',
    metadata: { name: 'x' },
    spec: { format: 'plain', installNamespace: 'team-a', sources, ...(serviceAccount ? { serviceAccount: { name: serviceAccount } } : {}) },
  }) as BundleDeployment;
const git = (extra: object): SourceSpec => ({ kind: 'git', git: { repository: 'https://git.corp/a.git', ref: { branch: 'main' }, ...extra } });
const http = (extra: object): SourceSpec => ({ kind: 'http', http: { url: 'https://files.corp/a.tgz', ...extra } });

describe('CA references of a source', () => {
  it('caRefOf: git and http, Secret or ConfigMap; image and unset are none', () => {
    expect(caRefOf(git({ caSecretRef: { name: 'ca' } }))).toEqual({ kind: 'Secret', ref: { name: 'ca' } });
    expect(caRefOf(http({ caConfigMapRef: { name: 'ca', key: 'b.pem' } }))).toEqual({ kind: 'ConfigMap', ref: { name: 'ca', key: 'b.pem' } });
    expect(caRefOf(http({}))).toBeUndefined();
    expect(caRefOf({ kind: 'image', image: { ref: 'quay.io/a/b:v1' } })).toBeUndefined();
  });

  it('live where the credentials live: the controller namespace, or installNamespace with a service account', () => {
    const src = git({ auth: { secretRef: { name: 'creds' } }, caSecretRef: { name: 'ca' } });
    expect(referencedObjects(bd([src]), src, 'hoist-system')).toEqual({ secrets: ['hoist-system/creds', 'hoist-system/ca'], configMaps: [] });
    expect(referencedObjects(bd([src], 'installer'), src, 'hoist-system')).toEqual({ secrets: ['team-a/creds', 'team-a/ca'], configMaps: [] });
    const cm = http({ caConfigMapRef: { name: 'ca' } });
    expect(referencedObjects(bd([cm]), cm, 'hoist-system', 'default-sa')).toEqual({ secrets: [], configMaps: ['team-a/ca'] });
  });

  it('rotation keys keep a ConfigMap apart from a Secret of the same name', () => {
    const cm = http({ caConfigMapRef: { name: 'ca' }, auth: { secretRef: { name: 'ca' } } });
    expect(rotationKeysOf(bd([cm]), cm, 'hoist-system')).toEqual(['hoist-system/ca', `${CONFIGMAP_KEY_PREFIX}hoist-system/ca`]);
  });

  it("image.verify keys are referenced too, and their rotation is told apart from the auth Secret's", () => {
    const img = (publicKeys: object): SourceSpec =>
      ({ kind: 'image', image: { ref: 'quay.io/a/b:v1', auth: { secretRef: { name: 'pull' } }, verify: { publicKeys } } }) as SourceSpec;
    const bySecret = img({ secretRef: { name: 'keys' } });
    const byConfigMap = img({ configMapRef: { name: 'keys' } });
    expect(referencedObjects(bd([bySecret]), bySecret, 'hoist-system')).toEqual({ secrets: ['hoist-system/pull', 'hoist-system/keys'], configMaps: [] });
    expect(referencedObjects(bd([byConfigMap], 'installer'), byConfigMap, 'hoist-system')).toEqual({ secrets: ['team-a/pull'], configMaps: ['team-a/keys'] });
    expect(verifyKeysRotated(bd([bySecret]), bySecret, new Set(['hoist-system/keys']), 'hoist-system')).toBe(true);
    expect(verifyKeysRotated(bd([bySecret]), bySecret, new Set(['hoist-system/pull']), 'hoist-system')).toBe(false);
    // a ConfigMap and a Secret of the same name are different keys
    expect(verifyKeysRotated(bd([byConfigMap]), byConfigMap, new Set(['hoist-system/keys']), 'hoist-system')).toBe(false);
    expect(verifyKeysRotated(bd([byConfigMap]), byConfigMap, new Set([`${CONFIGMAP_KEY_PREFIX}hoist-system/keys`]), 'hoist-system')).toBe(true);
    expect(verifyKeysRotated(bd([http({})]), http({}), new Set(['hoist-system/keys']), 'hoist-system')).toBe(false);
  });
});
