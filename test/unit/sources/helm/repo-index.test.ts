import { describe, expect, it } from 'vitest';
import {
  chartUrl,
  digestHex,
  indexUrl,
  newestVersions,
  parseIndex,
  selectVersion,
  versionProblem,
  type ChartVersion,
} from '../../../../src/sources/helm/repo-index.ts';
import { failure } from '../../../support/failure.ts';
import { aliasBombEntries } from '../../../support/hostile-bundles.ts';

const HEX = 'ab'.repeat(32);

/** what `helm repo index` writes (helm 3), two charts, with a digest each */
const INDEX = `apiVersion: v1
entries:
  greeter:
  - apiVersion: v2
    appVersion: 1.16.0
    created: "2026-01-02T10:00:00.000000000Z"
    description: A small chart
    digest: ${HEX}
    name: greeter
    type: application
    urls:
    - greeter-1.2.1.tgz
    version: 1.2.1
  - apiVersion: v2
    created: "2026-01-01T10:00:00.000000000Z"
    digest: ${'cd'.repeat(32)}
    name: greeter
    urls:
    - https://cdn.example.com/greeter-1.1.0.tgz
    version: 1.1.0
  other:
  - name: other
    urls: [other-0.1.0.tgz]
    version: 0.1.0
generated: "2026-01-02T10:00:00.000000000Z"
`;

const v = (version: string, extra: Partial<ChartVersion> = {}): ChartVersion => ({ version, urls: [`c-${version}.tgz`], ...extra });

describe('indexUrl', () => {
  it.each([
    ['https://charts.example.com', 'https://charts.example.com/index.yaml'],
    ['https://charts.example.com/', 'https://charts.example.com/index.yaml'],
    ['https://charts.example.com/stable', 'https://charts.example.com/stable/index.yaml'],
    ['https://charts.example.com/stable//', 'https://charts.example.com/stable/index.yaml'],
    ['https://charts.example.com/a/b?token=t#frag', 'https://charts.example.com/a/b/index.yaml?token=t'],
  ])('%s → %s', (repo, want) => {
    expect(indexUrl(new URL(repo)).toString()).toBe(want);
  });
});

describe('chartUrl (Helm ResolveReferenceURL)', () => {
  it.each([
    ['https://charts.example.com/stable', 'greeter-1.2.1.tgz', 'https://charts.example.com/stable/greeter-1.2.1.tgz'],
    ['https://charts.example.com/stable/', 'greeter-1.2.1.tgz', 'https://charts.example.com/stable/greeter-1.2.1.tgz'],
    ['https://charts.example.com/stable', 'charts/greeter-1.2.1.tgz', 'https://charts.example.com/stable/charts/greeter-1.2.1.tgz'],
    ['https://charts.example.com/stable', '../pkgs/greeter-1.2.1.tgz', 'https://charts.example.com/pkgs/greeter-1.2.1.tgz'],
    ['https://charts.example.com/stable', '/abs/greeter.tgz', 'https://charts.example.com/abs/greeter.tgz'],
    // the repository URL's query goes with a relative chart URL (Helm copies RawQuery)
    ['https://charts.example.com/stable?sig=1', 'greeter-1.2.1.tgz', 'https://charts.example.com/stable/greeter-1.2.1.tgz?sig=1'],
    ['https://charts.example.com/stable?sig=1', 'greeter-1.2.1.tgz?other=2', 'https://charts.example.com/stable/greeter-1.2.1.tgz?sig=1'],
    // absolute ones are taken as they are, on whatever host
    ['https://charts.example.com/stable', 'https://cdn.example.org/greeter-1.2.1.tgz', 'https://cdn.example.org/greeter-1.2.1.tgz'],
    ['https://charts.example.com/stable?sig=1', 'https://cdn.example.org/g.tgz?x=1', 'https://cdn.example.org/g.tgz?x=1'],
    ['https://charts.example.com/stable', 'http://charts.example.com/g.tgz', 'http://charts.example.com/g.tgz'],
    // scheme-relative: another host, as Go's ResolveReference has it
    ['https://charts.example.com/stable', '//cdn.example.org/g.tgz', 'https://cdn.example.org/g.tgz'],
  ])('%s + %s → %s', (repo, ref, want) => {
    expect(chartUrl(new URL(repo), ref, 'chart greeter 1.2.1').toString()).toBe(want);
  });

  it.each([
    ['oci://registry.example.com/charts/greeter', 'invalid-url', 'is not http or https'],
    ['ftp://files.example.com/g.tgz', 'invalid-url', 'is not http or https'],
    ['https://user:pw@cdn.example.org/g.tgz', 'credentials-in-url', 'contains credentials'],
    ['https://[::1/g.tgz', 'invalid-url', 'is not a valid URL'],
  ])('refuses %s (%s)', async (ref, code, text) => {
    const e = await failure((async () => chartUrl(new URL('https://charts.example.com/stable'), ref, 'chart greeter 1.2.1'))());
    expect(e).toMatchObject({ stage: 'resolve', code, terminal: true, subject: 'https://charts.example.com/stable' });
    expect(e.message).toContain('chart greeter 1.2.1: the index gives the chart URL');
    expect(e.message).toContain(text);
    expect(e.message).not.toContain('pw@');
  });
});

describe('parseIndex', () => {
  const opts = { subject: 'https://charts.example.com/index.yaml', maxNodes: 1_000_000 };

  it("reads helm repo index's output: the chart's versions in index order, every chart name", async () => {
    const parsed = await parseIndex(INDEX, 'greeter', opts);
    expect(parsed.names).toEqual(['greeter', 'other']);
    expect(parsed.chart).toEqual({
      versions: [
        { version: '1.2.1', urls: ['greeter-1.2.1.tgz'], digest: HEX },
        { version: '1.1.0', urls: ['https://cdn.example.com/greeter-1.1.0.tgz'], digest: 'cd'.repeat(32) },
      ],
      skipped: 0,
    });
  });

  it('reads a JSON index (Helm accepts one)', async () => {
    const json = JSON.stringify({ apiVersion: 'v1', entries: { greeter: [{ name: 'greeter', version: '2.0.0', urls: ['g.tgz'] }] } });
    expect((await parseIndex(json, 'greeter', opts)).chart?.versions).toEqual([{ version: '2.0.0', urls: ['g.tgz'] }]);
  });

  it('reads versions as strings, as helm repo index quotes them, and skips entries Helm would skip', async () => {
    const text = `apiVersion: v1
entries:
  greeter:
  - {version: "1.10", urls: [a.tgz]}
  - {version: 1.10, urls: [b.tgz]}
  - {version: "1.3.0"}
  - {version: "1.4.0", urls: []}
  - null
  - {urls: [c.tgz]}
`;
    expect((await parseIndex(text, 'greeter', opts)).chart).toEqual({ versions: [{ version: '1.10', urls: ['a.tgz'] }], skipped: 5 });
  });

  it('a chart the index does not list is undefined, with the names it does list', async () => {
    expect(await parseIndex(INDEX, 'missing', opts)).toMatchObject({ chart: undefined, names: ['greeter', 'other'] });
    expect(await parseIndex('apiVersion: v1\n', 'greeter', opts)).toMatchObject({ chart: undefined, names: [] });
    expect(await parseIndex('apiVersion: v1\nentries:\n  greeter:\n', 'greeter', opts)).toMatchObject({
      chart: { versions: [], skipped: 0 },
      names: ['greeter'],
    });
    // no prototype keys: only the index's own
    expect((await parseIndex(INDEX, '__proto__', opts)).chart).toBeUndefined();
    expect((await parseIndex(INDEX, 'constructor', opts)).chart).toBeUndefined();
  });

  it.each([
    ['', 'it holds no mapping'],
    ['- a\n- b\n', 'it holds no mapping'],
    ['entries: {}\n', 'no apiVersion'],
    ['apiVersion: v1\nentries: [a]\n', 'entries is not a mapping'],
    ['apiVersion: v1\nentries:\n  greeter: {version: 1}\n', 'entries.greeter is not a list'],
    ['apiVersion: v1\nentries:\n  greeter: [\n', 'index.yaml is not readable (index.yaml:'],
  ])('refuses %j: %s', async (text, why) => {
    const e = await failure(parseIndex(text, 'greeter', opts));
    expect(e).toMatchObject({ stage: 'resolve', code: 'invalid-index', terminal: true, subject: opts.subject });
    expect(e.message).toContain(why);
  });

  it('refuses an alias bomb by the node budget before expanding it, naming the limit', async () => {
    const bomb = `apiVersion: v1\n${aliasBombEntries(8)}entries:\n  greeter: [*l8]\n`;
    const before = process.memoryUsage().heapUsed;
    const e = await failure(parseIndex(bomb, 'greeter', { ...opts, maxNodes: 2_000_000 }));
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(200 * 1024 * 1024);
    expect(e).toMatchObject({ code: 'invalid-index', terminal: true });
    expect(e.message).toMatch(/expands to more than 2000000 nodes \(the limit per document; aliases are counted as expanded\)/);
  });

  it('refuses an index over the node budget by its prescan, and one nested too deep', async () => {
    const wide = `apiVersion: v1\nentries:\n  greeter:\n${'  - {version: "1.0.0", urls: [a.tgz]}\n'.repeat(20_000)}`;
    const e = await failure(parseIndex(wide, 'greeter', { ...opts, maxNodes: 50_000 }));
    expect(e.message).toContain('more than 50000 nodes');
    const deep = `apiVersion: v1\nentries: ${'['.repeat(600)}${']'.repeat(600)}\n`;
    const d = await failure(parseIndex(deep, 'greeter', opts));
    expect(d).toMatchObject({ code: 'invalid-index', terminal: true });
    expect(d.message).toMatch(/nesting deeper than 512 levels|depth/);
  });
});

describe('selectVersion', () => {
  const versions = [v('2.0.0'), v('1.3.0-rc.1'), v('1.2.1'), v('1.2.0'), v('v1.2.5'), v('1.1.0'), v('0.9.0'), v('nightly')];
  it.each([
    ['>=1.2 <2', '1.2.5'.replace('1.2.5', 'v1.2.5')],
    ['>=1.2.0 <1.2.5', '1.2.1'],
    ['~1.2', 'v1.2.5'],
    ['^1.0', 'v1.2.5'],
    ['1.x', 'v1.2.5'],
    ['1.2.0 - 1.2.1', '1.2.1'],
    ['>=1.3.0-0 <2', '1.3.0-rc.1'],
    ['<1 || >=2', '2.0.0'],
    ['1.1.0', '1.1.0'],
    ['=1.2.0', '1.2.0'],
    ['v1.2.5', 'v1.2.5'],
    // an exact match is taken as written first (Helm's IndexFile.Get)
    ['nightly', 'nightly'],
    ['*', '2.0.0'],
    [undefined, '2.0.0'],
  ])('%s → %s', (wanted, want) => {
    expect(selectVersion(versions, wanted)?.version).toBe(want);
  });

  it.each(['>=3', '1.2.2', '<0.1'])('%s matches nothing', (wanted) => {
    expect(selectVersion(versions, wanted)).toBeUndefined();
  });

  it('without a version skips pre-releases, and the first of equal versions wins', () => {
    expect(selectVersion([v('2.0.0-beta.1'), v('1.0.0')], undefined)?.version).toBe('1.0.0');
    expect(selectVersion([v('1.0.0', { digest: 'first' }), v('1.0.0', { digest: 'second' })], '1.x')?.digest).toBe('first');
  });
});

describe('newestVersions, versionProblem, digestHex', () => {
  it('lists semantic versions highest first, then the others', () => {
    expect(newestVersions([v('1.0.0'), v('nightly'), v('2.1.0'), v('v1.5.0'), v('2.1.0'), v('0.1.0')], 4)).toEqual(['2.1.0', 'v1.5.0', '1.0.0', '0.1.0']);
    expect(newestVersions([v('nightly'), v('1.0.0')], 5)).toEqual(['1.0.0', 'nightly']);
    expect(newestVersions([], 5)).toEqual([]);
  });

  it.each([
    [undefined, undefined],
    ['1.2.3', undefined],
    ['>=1.2 <2', undefined],
    ['>=1.2, <2', undefined],
    ['', 'is empty'],
    ['latest', 'is not a semver range'],
  ])('version %j: %s', (version, problem) => {
    const p = versionProblem(version);
    if (problem === undefined) expect(p).toBeUndefined();
    else expect(p).toContain(problem);
  });

  it.each([
    [HEX, HEX],
    [`sha256:${HEX}`, HEX],
    [HEX.toUpperCase(), HEX],
    [` ${HEX}\n`, HEX],
    ['abc', undefined],
    [`sha512:${HEX}`, undefined],
    [`${HEX}00`, undefined],
  ])('digest %j → %j', (digest, want) => {
    expect(digestHex(digest)).toBe(want);
  });
});
