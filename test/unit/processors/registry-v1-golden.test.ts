/**
 * Golden-file regression tests for the registry-v1 processor, operator-controller style: every
 * fixture bundle (and the MultiNamespace-only copy in testdata/registry-v1) × every install mode
 * its CSV supports is rendered and compared with the expected manifests in
 * test/golden/registry-v1/<bundle>/<mode>.yaml. Regenerate after an
 * intentional change with UPDATE_GOLDEN=1, then review the diff by hand against OLM v1's rules.
 */
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadRegistryV1Bundle } from '../../../src/processors/registry-v1/bundle.ts';
import { supportedInstallModes } from '../../../src/processors/registry-v1/csv.ts';
import { renderRegistryV1Bundle } from '../../../src/processors/registry-v1/render.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const FIXTURES = join(import.meta.dirname, '../../../testdata/fixtures/registry-v1');
const TESTDATA = join(import.meta.dirname, '../../../testdata/registry-v1');
const GOLDEN = join(import.meta.dirname, '../../golden/registry-v1');
const INSTALL_NAMESPACE = 'operators';
const WATCH_NAMESPACE = 'watched';
const MODES = ['AllNamespaces', 'OwnNamespace', 'SingleNamespace', 'MultiNamespace'] as const;
const watchFor = {
  AllNamespaces: { watchNamespace: '' },
  OwnNamespace: { watchNamespace: INSTALL_NAMESPACE },
  SingleNamespace: { watchNamespace: WATCH_NAMESPACE },
  MultiNamespace: { watchNamespaces: [WATCH_NAMESPACE, 'watched-2'] },
} as const;

export function toGoldenYaml(objects: KubeObject[]): string {
  return objects.map((o) => stringify(o, { sortMapEntries: true, lineWidth: 0 })).join('---\n');
}

const dirsIn = async (dir: string): Promise<string[]> =>
  (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => join(dir, e.name))
    .sort();
const bundles = [...(await dirsIn(FIXTURES)), join(TESTDATA, 'argocd-operator.v0.6.0-multinamespace')];

describe('registry-v1 golden files', () => {
  it('has fixture bundles', () => {
    expect(bundles.length).toBeGreaterThanOrEqual(3);
  });

  for (const dir of bundles) {
    const name = basename(dir);
    describe(name, async () => {
      const bundle = await loadRegistryV1Bundle(dir);
      const supported = supportedInstallModes(bundle.csv);
      for (const mode of MODES.filter((m) => supported.has(m))) {
        it(`${mode} matches test/golden/registry-v1/${name}/${mode}.yaml`, async () => {
          const result = renderRegistryV1Bundle(bundle, { installNamespace: INSTALL_NAMESPACE, ...watchFor[mode] });
          expect(result.mode).toBe(mode);
          const actual = toGoldenYaml(result.objects);
          const file = join(GOLDEN, name, `${mode}.yaml`);
          if (process.env.UPDATE_GOLDEN === '1') {
            await mkdir(join(GOLDEN, name), { recursive: true });
            await writeFile(file, actual);
          }
          const expected = await readFile(file, 'utf8').catch(() => '(missing: run with UPDATE_GOLDEN=1)');
          expect(actual).toBe(expected);
        });
      }
    });
  }
});
