/**
 * Parity with OLM v1 itself: render the fixture bundles with the inputs operator-controller's
 * regression test used (no certificate provider) and compare each object OLM v1 wrote to
 * testdata/olm-v1-expected with ours. Known, documented differences are normalized first:
 * OLM's typed round-trip writes `status` and `creationTimestamp: null`, and OLM puts
 * metadata.namespace on cluster-scoped webhook configurations.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { renderRegistryV1 } from '../../../src/processors/registry-v1/render.ts';

const FIXTURES = join(import.meta.dirname, '../../../testdata/fixtures/registry-v1');
const EXPECTED = join(import.meta.dirname, '../../../testdata/olm-v1-expected');

function normalize(obj: any): any {
  const o = structuredClone(obj);
  delete o.status;
  if (o.metadata.creationTimestamp === null) delete o.metadata.creationTimestamp;
  if (o.kind.endsWith('WebhookConfiguration')) delete o.metadata.namespace;
  return o;
}

const cases = [
  { bundle: 'argocd-operator.v0.6.0', dir: 'single-namespace', installNamespace: 'argocd-system', watchNamespace: 'argocd-watch' },
  { bundle: 'webhook-operator.v0.0.5', dir: 'all-webhook-types', installNamespace: 'webhook-system', watchNamespace: '' },
];

describe('registry-v1 parity with OLM v1 (operator-controller regression manifests)', () => {
  for (const c of cases) {
    it(`${c.bundle} ${c.dir}`, async () => {
      const { objects } = await renderRegistryV1(join(FIXTURES, c.bundle), {
        installNamespace: c.installNamespace,
        watchNamespace: c.watchNamespace,
        certificateProvider: null,
      });
      const files = (await readdir(join(EXPECTED, c.bundle, c.dir))).sort();
      expect(files.length).toBeGreaterThan(0);
      for (const f of files) {
        const expected = normalize(parse(await readFile(join(EXPECTED, c.bundle, c.dir, f), 'utf8')));
        const actual = objects.find((o) => o.kind === expected.kind && o.metadata.name === expected.metadata.name);
        expect(actual, `${f}: no ${expected.kind} ${expected.metadata.name} rendered`).toBeDefined();
        expect(normalize(actual), f).toEqual(expected);
      }
    });
  }
});
