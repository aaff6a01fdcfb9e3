/**
 * Reading one chart's part of an index the real `helm repo index` wrote (src/sources/helm/
 * index-slice.ts): for every chart name (names go-yaml v2 must quote, names it resolves, many
 * versions with every kind of metadata), in YAML and with `--json`, parseIndex gives exactly what
 * parsing the whole index gives, from the chart's part only. Names Helm writes in a form the cut
 * does not read make it parse the whole index, with the same outcome. On a large index, what is
 * parsed in one synchronous go is the chart's part only. Times, event-loop stalls and memory:
 * bench/helm-index.ts (a benchmark, not a test: they depend on the machine's load).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIndex, parseWholeIndex, type ParsedIndex } from '../../../src/sources/helm/repo-index.ts';
import { makeChartRepo, type ChartMetadata, type ChartRepo } from '../../support/helm-repo.ts';

const opts = { subject: 'https://charts.example.com/index.yaml', maxNodes: 2_000_000 };

/** names that need quotes in YAML, or that go-yaml v2 would read as something else, or only look odd */
const NAMES = [
  'greeter',
  '1.0',
  '0755',
  '123',
  '1e3',
  '0x1F',
  'yes',
  'on',
  'true',
  'null',
  '~',
  '*star',
  '&amp',
  '!bang',
  '%percent',
  '@at',
  'weird: name',
  "it's",
  '"dq"',
  '#hash',
  'x #y',
  '-dash',
  '[bracket]',
  '{brace}',
  'with space',
  'x@y,z',
  'ünïcode',
  'emoji-🚀',
  '__proto__',
  ' leading space',
  'trailing space ',
  'a'.repeat(100),
];

/** a small deterministic generator, so each run indexes the same charts */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

const DESCRIPTIONS = [
  'A small chart',
  '',
  'a very long description with: colons and # hashes and \'quotes\' and "double quotes" that goes well beyond eighty columns, so go-yaml folds it',
  'two\nlines',
  'trailing newline\n',
  'leading spaces and a tab:\t end',
  '*starts with a star, & has an ampersand',
  '- looks like an item',
  'ünïcode and emoji 🚀 and a line separator\u2028inside',
  '|\n  looks like a block scalar',
  '{not: flow}',
];

/** chart metadata of many kinds, for `version` of `name` */
function metadata(name: string, version: string, r: () => number): ChartMetadata {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const m: ChartMetadata = { name, version, description: pick(DESCRIPTIONS), type: pick(['application', 'library']) };
  if (r() < 0.7) m.appVersion = pick(['1.0', '2', 'v3.1.4', '1.16.0']);
  if (r() < 0.5) m.keywords = ['a', 'yes', '1.0', 'with space'];
  if (r() < 0.5) m.maintainers = [{ name: 'Someone', email: 'someone@example.com', url: 'https://example.com/~someone' }];
  if (r() < 0.5) m.home = 'https://example.com/charts?x=1&y=2#top';
  if (r() < 0.3) m.sources = ['https://github.com/example/charts'];
  if (r() < 0.3) m.kubeVersion = '>=1.19.0-0';
  if (r() < 0.2) m.deprecated = true;
  if (r() < 0.4) m.annotations = { 'artifacthub.io/changes': '- kind: added\n  description: something', 'weird: key': 'yes', category: 'Infrastructure' };
  if (r() < 0.3) m.dependencies = [{ name: 'common', version: '2.x.x', repository: 'oci://registry.example.com/charts', condition: 'common.enabled' }];
  return m;
}

let work: string;

/** a repository of `names`, `versionsOf(name)` versions each, indexed by helm; the index as YAML and as JSON */
async function indexed(
  dir: string,
  names: readonly string[],
  versionsOf: (name: string, i: number) => string[],
): Promise<{ repo: ChartRepo; yaml: Buffer; json: Buffer }> {
  const repo = makeChartRepo(join(work, dir));
  const r = random(7);
  for (const [i, name] of names.entries()) for (const v of versionsOf(name, i)) await repo.writeChart(metadata(name, v, r));
  repo.index();
  const yaml = await readFile(join(repo.dir, 'index.yaml'));
  repo.index(undefined, { json: true });
  const json = await readFile(join(repo.dir, 'index.yaml'));
  return { repo, yaml, json };
}

/** the chart part and the names (not how the index was read) */
const result = ({ chart, names }: ParsedIndex): Omit<ParsedIndex, 'read'> => ({ chart, names });

let main: { yaml: Buffer; json: Buffer };

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-helm-index-'));
  // greeter: 40 versions with pre-releases and build metadata; the others one to three
  main = await indexed('main', NAMES, (name, i) =>
    name === 'greeter'
      ? Array.from({ length: 40 }, (_, k) => (k % 7 === 3 ? `1.${k}.0-rc.${k}` : k % 11 === 5 ? `1.${k}.0+build.${k}` : `1.${k}.${k % 3}`))
      : Array.from({ length: 1 + (i % 3) }, (_, k) => `0.${k}.0`),
  );
}, 120_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('an index written by helm repo index', () => {
  it('holds the charts as expected: quoted names, and the JSON form is JSON', () => {
    const text = main.yaml.toString();
    expect(text).toMatch(/^apiVersion: v1\nentries:\n/);
    expect(text).toContain('\n  "1.0":\n  - ');
    expect(text).toContain("\n  'weird: name':\n");
    expect(text).toContain('\n  "yes":\n');
    expect(text).toContain('\n  with space:\n');
    expect(text).toMatch(/\ngenerated: "[^"]+"\n/);
    expect(main.json.toString()).toMatch(/^\{\n {2}"apiVersion": "v1",\n/);
  });

  it.each(['yaml', 'json'] as const)('%s: every chart, and names it does not list, from the chart part only, as the whole parse has them', async (layout) => {
    const index = main[layout];
    const whole = await parseWholeIndex(index, 'greeter', opts, 'the reference');
    expect(whole.names).toEqual([...NAMES].sort());
    for (const chart of [...NAMES, 'absent', '1', '31', '1000', 'True', 'weird']) {
      const read = await parseIndex(index, chart, opts);
      expect({ chart, layout: read.read.layout }).toEqual({ chart, layout });
      expect({ name: chart, ...result(read) }).toEqual({ name: chart, ...result(await parseWholeIndex(index, chart, opts, 'the reference')) });
      if (NAMES.includes(chart)) expect(read.chart?.versions.length).toBeGreaterThan(0);
    }
    const greeter = await parseIndex(index, 'greeter', opts);
    expect(greeter.chart?.versions).toHaveLength(40);
    expect(greeter.chart?.versions.every((v) => /^[0-9a-f]{64}$/.test(v.digest ?? ''))).toBe(true);
    // the chart part only: a small share of the index
    expect((await parseIndex(index, 'yes', opts)).read.parsedChars).toBeLessThan(index.length / 10);
  });

  it('a name helm writes as an explicit key (over 128 characters) makes the whole index parsed, with the same outcome', async () => {
    const odd = await indexed('odd', ['greeter', 'b'.repeat(200)], () => ['1.0.0']);
    expect(odd.yaml.toString()).toContain(`\n  ? ${'b'.repeat(200)}\n`);
    for (const chart of ['greeter', 'b'.repeat(200), 'absent']) {
      const read = await parseIndex(odd.yaml, chart, opts);
      expect(read.read).toMatchObject({ layout: 'whole', why: expect.stringMatching(/is not a chart name as Helm writes it/) });
      expect(result(read)).toEqual(result(await parseWholeIndex(odd.yaml, chart, opts, 'the reference')));
      // JSON has no such forms: the cut reads it
      const json = await parseIndex(odd.json, chart, opts);
      expect(json.read.layout).toBe('json');
      expect(result(json)).toEqual(result(read));
    }
  });
});

describe('a large index', () => {
  it("a resolve parses only the chart's part of a large index, and finds what the whole parse finds (its event-loop stalls are measured by bench/helm-index.ts)", async () => {
    // 1 000 charts indexed by helm, their entries repeated under other names: about 8 MiB in Helm's layout
    const repo = makeChartRepo(join(work, 'large'));
    const r = random(11);
    for (let i = 0; i < 1000; i++) await repo.writeChart(metadata(`chart-${i}`, '1.0.0', r));
    repo.index();
    const text = repo.indexText();
    const body = text.slice(text.indexOf('entries:\n') + 'entries:\n'.length, text.indexOf('\ngenerated:') + 1);
    const copies = Math.ceil((8 * 1024 * 1024) / body.length);
    const large = Buffer.from(
      `apiVersion: v1\nentries:\n${Array.from({ length: copies }, (_, k) => body.replace(/^ {2}(chart-\d+):$/gm, `  $1-r${k}:`)).join('')}generated: "2026-01-01T00:00:00Z"\n`,
    );
    const chart = `chart-500-r${Math.floor(copies / 2)}`;
    // the parsers compiled once (a process does that once, not per index)
    await parseIndex(main.yaml, 'greeter', opts);
    await parseWholeIndex(main.yaml, 'greeter', opts, 'warm-up');
    const sliced = await parseIndex(large, chart, opts);
    const whole = await parseWholeIndex(large, chart, opts, 'the reference');
    expect(result(sliced)).toEqual(result(whole));
    expect(sliced.chart?.versions).toHaveLength(1);
    expect(sliced.names).toHaveLength(1000 * copies);
    expect(sliced.read.layout).toBe('yaml');
    // what is parsed in one synchronous go is the chart's part, not the index (timing is the benchmark's, not a test's)
    expect(whole.read.parsedChars).toBe(large.toString().length);
    expect(sliced.read.parsedChars * 1000).toBeLessThan(whole.read.parsedChars);
  }, 300_000);
});
