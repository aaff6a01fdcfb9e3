/**
 * The helm source's spec handling and what it decides without the network (the repository at
 * nowhere.invalid would fail any request). Requests are tested against real servers in
 * test/integration/sources/helm-source.test.ts and end to end in test/e2e/helm-repository.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { HelmSource as HelmSpec, SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { pinnedBySpec } from '../../../../api/v1alpha2/types.ts';
import { describeSource } from '../../../../src/cli/verbs/history.ts';
import { HelmSource } from '../../../../src/sources/helm/helm-source.ts';
import { pinSource } from '../../../../src/sources/pin.ts';
import { createSourceRegistry } from '../../../../src/sources/registry.ts';
import { failure } from '../../../support/failure.ts';

const REPO = 'https://nowhere.invalid/charts';
const HEX = 'ab'.repeat(32);
const helm = (h: Partial<HelmSpec>): SourceSpec => ({ kind: 'helm', helm: { repoURL: REPO, chart: 'greeter', ...h } });

describe('helm source spec', () => {
  const s = new HelmSource();

  it('is registered for kind helm', () => {
    expect(createSourceRegistry().sourceFor('helm')).toBeInstanceOf(HelmSource);
  });

  it.each([
    [{ kind: 'http', helm: { repoURL: REPO, chart: 'greeter' } } as SourceSpec, 'invalid-source'],
    [{ kind: 'helm' } as SourceSpec, 'invalid-source'],
    [helm({ repoURL: 'not a url' }), 'invalid-url'],
    [helm({ repoURL: 'ftp://files.example.com/charts' }), 'invalid-url'],
    [helm({ repoURL: 'oci://registry.example.com/charts' }), 'unsupported-url'],
    [helm({ repoURL: 'https://u:p@charts.example.com' }), 'credentials-in-url'],
    [helm({ chart: '../etc' }), 'invalid-spec'],
    [helm({ chart: 'a/b' }), 'invalid-spec'],
    [helm({ version: 'latest' }), 'invalid-ref'],
    [helm({ version: '' }), 'invalid-ref'],
    [helm({ sha256: 'abc' }), 'invalid-digest'],
  ])('refuses %j as %s, terminal, at the spec stage', async (spec, code) => {
    const e = await failure(s.resolve(spec, {}));
    expect(e).toMatchObject({ stage: 'spec', code, terminal: true });
    expect(e.describe()).not.toContain('u:p@');
  });

  it('a pin resolves without I/O: the exact version as written, lower-cased digest', async () => {
    const r = await s.resolve(helm({ version: '1.2.1', sha256: HEX.toUpperCase() }), {});
    expect(r).toEqual({ status: { kind: 'helm', sha256: HEX, version: '1.2.1' }, key: `sha256:${HEX}`, pinned: true });
    // a range says nothing about which version the digest is
    expect((await s.resolve(helm({ version: '>=1.2 <2', sha256: HEX }), {})).status).toEqual({ kind: 'helm', sha256: HEX });
  });

  it('a pin keeps what an earlier resolution of the same tarball learnt (version, chart URL), and nothing of another', async () => {
    const previous = { kind: 'helm' as const, sha256: HEX, version: '1.2.1', chartURL: `${REPO}/greeter-1.2.1.tgz`, etag: '"e"' };
    expect((await s.resolve(helm({ version: '>=1.2 <2', sha256: HEX }), { previous })).status).toEqual({
      kind: 'helm',
      sha256: HEX,
      version: '1.2.1',
      chartURL: `${REPO}/greeter-1.2.1.tgz`,
    });
    const other = { ...previous, sha256: 'cd'.repeat(32) };
    expect((await s.resolve(helm({ sha256: HEX }), { previous: other })).status).toEqual({ kind: 'helm', sha256: HEX });
  });

  it('a recorded resolution of this generation is reused without a request unless re-checked', async () => {
    const previous = { kind: 'helm' as const, sha256: HEX, version: '1.2.1', chartURL: `${REPO}/greeter-1.2.1.tgz`, etag: '"e"', generation: 2 };
    expect(await s.resolve(helm({ version: '>=1.2 <2' }), { previous })).toEqual({ status: previous, key: `sha256:${HEX}`, pinned: false });
    // re-checking asks the repository (here a closed port on loopback)
    const closed = 'https://127.0.0.1:1/charts';
    const e = await failure(s.resolve(helm({ repoURL: closed, version: '>=1.2 <2' }), { previous, recheck: true }));
    expect(e).toMatchObject({ stage: 'resolve', code: 'network', terminal: false, subject: `${closed}/index.yaml` });
  });

  it('credentials are bound to their hosts even when nothing is requested', async () => {
    const previous = { kind: 'helm' as const, sha256: HEX };
    const credentials = { data: { username: 'u', password: 'p' }, secret: 'ns/creds', hosts: ['charts.example.com'] };
    const e = await failure(s.resolve(helm({}), { previous, credentials }));
    expect(e).toMatchObject({ stage: 'resolve', code: 'credential-host-mismatch', terminal: true });
    expect(e.message).toContain('not bound to host nowhere.invalid:443');
    const http = await failure(s.resolve(helm({ repoURL: 'http://nowhere.invalid/charts' }), { previous, credentials }));
    expect(http).toMatchObject({ code: 'insecure-credentials' });
  });
});

describe('helm sources pinned, and in history', () => {
  it('pins a version or range to the chosen version and the tarball digest', () => {
    const src = helm({ version: '>=1.2 <2', auth: { secretRef: { name: 'creds' } } });
    expect(pinSource(src, { kind: 'helm', version: '1.2.1', sha256: HEX, chartURL: `${REPO}/greeter-1.2.1.tgz` })).toEqual({
      kind: 'helm',
      helm: { repoURL: REPO, chart: 'greeter', version: '1.2.1', sha256: HEX, auth: { secretRef: { name: 'creds' } } },
    });
    expect(pinnedBySpec(pinSource(src, { kind: 'helm', version: '1.2.1', sha256: HEX }))).toBe(true);
    expect(pinnedBySpec(src)).toBe(false);
    expect(pinSource(src, undefined)).toBe(src);
    expect(pinSource(src, { kind: 'http', sha256: HEX })).toBe(src);
  });

  it('history names the repository, chart, version and digest', () => {
    expect(describeSource(helm({ version: '1.2.1', sha256: HEX }))).toBe(`helm ${REPO} greeter@1.2.1 sha256:${HEX.slice(0, 12)}`);
    expect(describeSource(helm({}))).toBe(`helm ${REPO} greeter`);
  });
});
