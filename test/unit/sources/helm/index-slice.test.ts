/**
 * Reading one chart's part of an index (src/sources/helm/index-slice.ts): for every layout the
 * cut reads, parseIndex gives what parsing the whole index gives (the same chart entry, the same
 * chart names, the same error); every layout it does not read is parsed whole, for a reason it
 * names. The same comparison over indexes the real `helm repo index` writes is in
 * test/integration/sources/helm-index.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseIndex, parseWholeIndex, type ParsedIndex } from '../../../../src/sources/helm/repo-index.ts';
import { sliceIndex } from '../../../../src/sources/helm/index-slice.ts';
import { isHoistError } from '../../../../src/util/errors.ts';
import { failure } from '../../../support/failure.ts';
import { aliasBombEntries } from '../../../support/hostile-bundles.ts';

const HEX = 'ab'.repeat(32);
const opts = { subject: 'https://charts.example.com/index.yaml', maxNodes: 1_000_000 };

/** what `helm repo index` writes (go-yaml v2 through sigs.k8s.io/yaml), three charts */
const HELM_YAML = `apiVersion: v1
entries:
  "1.0":
  - apiVersion: v2
    created: "2026-01-02T10:00:00.000000000Z"
    description: 'a very long description with: colons and # hashes and ''quotes''
      and "double quotes" that goes well beyond eighty columns for sure'
    digest: ${HEX}
    name: "1.0"
    urls:
    - 1.0-0.2.0.tgz
    version: 0.2.0
  greeter:
  - apiVersion: v2
    appVersion: 1.16.0
    created: "2026-01-02T10:00:00.000000000Z"
    description: |-
      A small chart

      # not a comment: a line of the description
    digest: ${HEX}
    keywords:
    - a
    name: greeter
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
  'weird: name':
  - name: 'weird: name'
    urls:
    - 'weird: name-0.1.0.tgz'
    version: 0.1.0
generated: "2026-01-02T10:00:00.000000000Z"
`;

/** what `helm repo index --json` writes (json.MarshalIndent) */
const HELM_JSON = `{
  "apiVersion": "v1",
  "generated": "2026-12-03T12:47:47.817940579Z",
  "entries": {
    "*star": [
      {
        "name": "*star",
        "version": "0.1.0",
        "description": "x \\"quoted\\" {not} [structure], \\\\",
        "urls": [
          "*star-0.1.0.tgz"
        ],
        "digest": "${HEX}"
      }
    ],
    "greeter": [
      {
        "name": "greeter",
        "version": "1.1.0",
        "urls": [
          "greeter-1.1.0.tgz"
        ]
      },
      {
        "name": "greeter",
        "version": "1.0.0",
        "urls": [
          "greeter-1.0.0.tgz"
        ]
      }
    ]
  },
  "publicKeys": []
}
`;

type Outcome = Omit<ParsedIndex, 'read'> | { error: { code: string; message: string; subject: string | undefined } };

async function outcome(p: Promise<ParsedIndex>): Promise<Outcome> {
  try {
    const { chart, names } = await p;
    return { chart, names };
  } catch (e) {
    if (!isHoistError(e)) throw e;
    return { error: { code: e.code, message: e.message, subject: e.subject } };
  }
}

/** parseIndex's outcome and how it read the index, after checking the outcome is the whole parse's */
async function sameAsWhole(text: string, chart: string): Promise<{ out: Outcome; layout: string; why: string | undefined }> {
  const whole = await outcome(parseWholeIndex(Buffer.from(text), chart, opts, 'the reference'));
  const out = await outcome(parseIndex(text, chart, opts));
  expect(out).toEqual(whole);
  const slice = await sliceIndex(Buffer.from(text), chart);
  return { out, layout: slice.layout, why: slice.layout === 'whole' ? slice.why : undefined };
}

describe('the cut of an index in the layout Helm writes', () => {
  it.each(['greeter', '1.0', 'weird: name', 'missing', '1', '__proto__'])(
    'YAML from helm repo index, chart %j: the whole parse, from the chart part only',
    async (chart) => {
      const { out, layout } = await sameAsWhole(HELM_YAML, chart);
      expect(layout).toBe('yaml');
      expect(out).toMatchObject({ names: ['1.0', 'greeter', 'weird: name'] });
    },
  );

  it('parses only the chart part of a YAML index: the apiVersion line and the chart lines', async () => {
    const slice = await sliceIndex(Buffer.from(HELM_YAML), 'weird: name');
    expect(slice).toEqual({
      layout: 'yaml',
      text: `apiVersion: v1\nentries:\n  'weird: name':\n  - name: 'weird: name'\n    urls:\n    - 'weird: name-0.1.0.tgz'\n    version: 0.1.0\n`,
      names: ['1.0', 'greeter', 'weird: name'],
    });
    expect((await parseIndex(HELM_YAML, 'weird: name', opts)).read).toEqual({ layout: 'yaml', parsedChars: slice.layout === 'yaml' ? slice.text.length : -1 });
  });

  it.each(['greeter', '*star', 'missing'])('JSON from helm repo index --json, chart %j', async (chart) => {
    const { out, layout } = await sameAsWhole(HELM_JSON, chart);
    expect(layout).toBe('json');
    expect(out).toMatchObject({ names: ['*star', 'greeter'] });
  });

  it('JSON in any whitespace: minified, a key written with escapes, a repeated key (the last wins)', async () => {
    const minified = JSON.stringify(JSON.parse(HELM_JSON));
    expect((await sameAsWhole(minified, 'greeter')).layout).toBe('json');
    const escaped = minified.replace('"greeter":', '"gr\\u0065eter":');
    expect(await sameAsWhole(escaped, 'greeter')).toMatchObject({ layout: 'json', out: { chart: { versions: [{ version: '1.1.0' }, { version: '1.0.0' }] } } });
    const repeated = `{"apiVersion":"v1","entries":{"greeter":[{"version":"1.0.0","urls":["a.tgz"]}],"x":[],"greeter":[{"version":"2.0.0","urls":["b.tgz"]}]},"apiVersion":"v2"}`;
    expect(await sameAsWhole(repeated, 'greeter')).toMatchObject({ layout: 'json', out: { chart: { versions: [{ version: '2.0.0' }] } } });
    const twice = `{"apiVersion":"v1","entries":{"greeter":[{"version":"1.0.0","urls":["a.tgz"]}]},"entries":{"other":[]}}`;
    expect(await sameAsWhole(twice, 'greeter')).toMatchObject({ layout: 'json', out: { chart: undefined, names: ['other'] } });
  });

  it.each([
    ['entries null', '{"apiVersion":"v1","entries":null}'],
    ['entries a list', '{"apiVersion":"v1","entries":[{"greeter":[]}]}'],
    ['entries a string', '{"apiVersion":"v1","entries":"greeter"}'],
    ['no entries', '{"apiVersion":"v1","generated":"x"}'],
    ['apiVersion a number', '{"apiVersion":1,"entries":{"greeter":[]}}'],
    ['apiVersion a list', '{"apiVersion":["v1"],"entries":{"greeter":[]}}'],
    ['no apiVersion', '{"entries":{"greeter":[]}}'],
    ['an empty object', '{}'],
    ['the chart an object', '{"apiVersion":"v1","entries":{"greeter":{"version":"1.0.0"}}}'],
    ['the chart null', '{"apiVersion":"v1","entries":{"greeter":null}}'],
    ['a version with an integer beyond 2^53', '{"apiVersion":"v1","entries":{"greeter":[{"version":"1.0.0","urls":["a"],"size":12345678901234567890}]}}'],
  ])('JSON with %s: the same outcome', async (_what, text) => {
    await sameAsWhole(text, 'greeter');
  });

  it.each([
    ['a second JSON value', '{"apiVersion":"v1","entries":{}}\n{"apiVersion":"v2"}\n', 'more than one JSON value'],
    ['an unclosed object', '{"apiVersion":"v1","entries":{"greeter":[]}', 'the JSON object is not closed'],
    ['mismatched brackets', '{"apiVersion":"v1","entries":{"greeter":[}]}', 'JSON brackets do not match'],
    ['an unclosed string', '{"apiVersion":"v1","entries":{"greeter', 'a JSON string is not closed'],
    ['a trailing comma', '{"apiVersion":"v1","entries":{"greeter":[]},}', 'the JSON is not well formed'],
    ['a trailing comma in a list', '{"apiVersion":"v1","entries":{"greeter":[1,]}}', 'the JSON is not well formed'],
    ['YAML flow style', '{apiVersion: v1, entries: {greeter: [{version: 1.0.0, urls: [a.tgz]}]}}', 'the JSON is not well formed'],
    ['a key without a colon', '{"apiVersion" "v1","entries":{}}', 'the JSON is not well formed'],
    ['two values in a row', '{"apiVersion":"v1" "v2","entries":{}}', 'the JSON is not well formed'],
    ['two numbers in a row', '{"apiVersion":"v1","n":1 2,"entries":{}}', 'the JSON is not well formed'],
    ['a literal that is none', '{"apiVersion":tru,"entries":{"greeter":[]}}', 'the JSON is not well formed'],
    ['a comma first', '{,"apiVersion":"v1"}', 'the JSON is not well formed'],
    ['a key that is not a string', '{"apiVersion":"v1","entries":{1:[]}}', 'the JSON is not well formed'],
  ])('JSON with %s is parsed whole', async (_what, text, why) => {
    expect(await sameAsWhole(text, 'greeter')).toMatchObject({ layout: 'whole', why });
  });

  it.each([
    [
      'four-space indentation and indented sequences',
      `apiVersion: v1\nentries:\n    greeter:\n        -   version: 1.0.0\n            urls: [a.tgz]\n    other:\n        - version: 2.0.0\n          urls: [b.tgz]\n`,
    ],
    ['one-space indentation', `apiVersion: v1\nentries:\n greeter:\n - version: 1.0.0\n   urls: [a.tgz]\n other: []\n`],
    [
      'comments and blank lines everywhere',
      `# an index\n\napiVersion: v1 # the version\n\n# charts\nentries: # all of them\n  # the greeter\n  greeter:\n\n# between\n  - version: 1.0.0 # one\n    urls:\n      # a comment at the items' indentation\n    - a.tgz\n  # next\n\n  other:\n  - version: 2.0.0\n    urls: [b.tgz]\n`,
    ],
    ['a document start marker first', `---\napiVersion: v1\nentries:\n  greeter:\n  - version: 1.0.0\n    urls: [a.tgz]\n`],
    ['CRLF line ends', `apiVersion: v1\r\nentries:\r\n  greeter:\r\n  - version: 1.0.0\r\n    urls:\r\n    - a.tgz\r\n  other: []\r\n`],
    ['apiVersion last, quoted', `entries:\n  greeter:\n  - version: 1.0.0\n    urls: [a.tgz]\napiVersion: "v1"\n`],
    ['apiVersion twice (the last wins)', `apiVersion: v1\nentries:\n  greeter:\n  - {version: 1.0.0, urls: [a.tgz]}\napiVersion: ''\n`],
    ['apiVersion a boolean', `apiVersion: yes\nentries:\n  greeter: []\n`],
    ['no apiVersion', `entries:\n  greeter: []\n`],
    ['neither apiVersion nor entries', `generated: "2026-01-01"\nserverInfo:\n  contextPath: /x\n`],
    ['only comments', `# nothing\n`],
    ['the chart without versions', `apiVersion: v1\nentries:\n  greeter:\n  other: []\n`],
    [
      'the chart twice (the last wins)',
      `apiVersion: v1\nentries:\n  greeter:\n  - {version: 1.0.0, urls: [a.tgz]}\n  other: []\n  "greeter":\n  - {version: 2.0.0, urls: [b.tgz]}\n`,
    ],
    ['entries twice (the last wins)', `apiVersion: v1\nentries:\n  greeter:\n  - {version: 1.0.0, urls: [a.tgz]}\nentries:\n  other: []\n`],
    [
      'an alias within the chart, no anchor elsewhere',
      `apiVersion: v1\nentries:\n  greeter:\n  - &one {version: 1.0.0, urls: [a.tgz]}\n  - *one\n  other:\n  - {version: 2.0.0, urls: [b.tgz], description: "stars"}\n`,
    ],
    [
      'a star in a description and ampersands elsewhere',
      `apiVersion: v1\nentries:\n  greeter:\n  - description: '*starts* with a star, a *b'\n    urls: [a.tgz]\n    version: 1.0.0\n  other:\n  - home: https://example.com/?a=1&b=2\n    version: 2.0.0\n    urls: ['&x']\n`,
    ],
    [
      'a multi-line description and other top-level keys',
      `apiVersion: v1\nannotations:\n  a: b\nentries:\n  greeter:\n  - description: >\n      folded\n      text\n\n    urls: [a.tgz]\n    version: 1.0.0\npublicKeys:\n- |\n  -----BEGIN KEY-----\n- other\nserverInfo: {}\n`,
    ],
    ['the chart a mapping', `apiVersion: v1\nentries:\n  greeter:\n    version: 1.0.0\n`],
    [
      'names go-yaml v2 resolves',
      `apiVersion: v1\nentries:\n  yes:\n  - {version: 1.0.0, urls: [a.tgz]}\n  1.0:\n  - {version: 1.0.0, urls: [b.tgz]}\n  0x1F: []\n  1_000: []\n  on: []\n  ünïcode: []\n  'it''s': []\n  "true": []\n  with  two spaces: []\n  a@b[c],d'e"f: []\n  -dash: []\n  -1: []\n  .5: []\n  .inf: []\n  +plus: []\n  /slash: []\n`,
    ],
    [
      'names with escapes',
      `apiVersion: v1\nentries:\n  "gr\\u0065eter":\n  - {version: 1.0.0, urls: [a.tgz]}\n  "emoji-\\U0001F680": []\n  "\\x41\\u00e9\\t\\\"\\\\\\/\\ \\N\\_\\L\\P\\0\\a\\b\\v\\f\\r\\e\\ud83d\\ude80": []\n`,
    ],
  ])('YAML with %s: the chart part only, the same outcome', async (_what, text) => {
    for (const chart of [
      'greeter',
      'other',
      'true',
      '1',
      '31',
      '1000',
      'ünïcode',
      "it's",
      'with  two spaces',
      `a@b[c],d'e"f`,
      '-1',
      '0.5',
      'emoji-🚀',
      'missing',
    ]) {
      expect((await sameAsWhole(text, chart)).layout).toBe('yaml');
    }
  });

  it('a syntax error in another chart part is not read, so not reported (Helm would refuse the index)', async () => {
    const text = `apiVersion: v1\nentries:\n  broken:\n  - version: [1.0.0\n  greeter:\n  - {version: 1.0.0, urls: [a.tgz]}\n`;
    expect((await parseIndex(text, 'greeter', opts)).chart?.versions).toEqual([{ version: '1.0.0', urls: ['a.tgz'] }]);
    expect((await failure(parseWholeIndex(Buffer.from(text), 'greeter', opts, 'the reference'))).code).toBe('invalid-index');
  });
});

describe('what the cut leaves to the whole parse', () => {
  it.each([
    ['flow style entries', `apiVersion: v1\nentries: {greeter: [{version: 1.0.0, urls: [a.tgz]}]}\n`, 'entries (line 2) is not a block mapping'],
    ['an empty entries mapping', `apiVersion: v1\nentries: {}\n`, 'entries (line 2) is not a block mapping'],
    ['a chart in flow style', `apiVersion: v1\nentries:\n  greeter: [{version: 1.0.0, urls: [a.tgz]}]\n`, 'line 3 is not a chart name as Helm writes it'],
    ['a tab in indentation', `apiVersion: v1\nentries:\n  greeter:\n\t- version: 1.0.0\n`, 'line 4 is indented with a tab'],
    ['a carriage return alone', `apiVersion: v1\rentries:\n  greeter: []\n`, 'the index holds a carriage return that does not end a line'],
    ['a byte order mark', `\ufeffapiVersion: v1\nentries:\n  greeter: []\n`, 'the index holds a byte order mark'],
    [
      'a line separator',
      `apiVersion: v1\nentries:\n  greeter:\n  - {version: 1.0.0, urls: [a.tgz], description: "a\u2028b"}\n`,
      'the index holds a line separator character',
    ],
    ['a second document', `apiVersion: v1\nentries:\n  greeter: []\n---\napiVersion: v2\n`, 'line 4 is not a plain key at column 0'],
    ['a directive', `%YAML 1.1\n---\napiVersion: v1\nentries:\n  greeter: []\n`, 'line 1 is not a plain key at column 0'],
    ['a quoted top-level key', `apiVersion: v1\n"entries":\n  greeter: []\n`, 'line 2 is not a plain key at column 0'],
    ['a merge key at the top', `base: &b {apiVersion: v1}\n<<: *b\nentries:\n  greeter: []\n`, 'line 2 is not a plain key at column 0'],
    ['an explicit key', `apiVersion: v1\nentries:\n  ? greeter\n  : - {version: 1.0.0, urls: [a.tgz]}\n`, 'line 3 is not a chart name as Helm writes it'],
    [
      'a name with an escape YAML does not have',
      `apiVersion: v1\nentries:\n  "gr\\qeter":\n  - {version: 1.0.0, urls: [a.tgz]}\n  greeter: []\n`,
      'line 3 is not a chart name as Helm writes it',
    ],
    [
      'a name with a short escape',
      `apiVersion: v1\nentries:\n  "gr\\u06":\n  - {version: 1.0.0, urls: [a.tgz]}\n  greeter: []\n`,
      'line 3 is not a chart name as Helm writes it',
    ],
    ['a null name', `apiVersion: v1\nentries:\n  ~:\n  - {version: 1.0.0, urls: [a.tgz]}\n  greeter: []\n`, 'line 3 is not a chart name as Helm writes it'],
    ['an anchor on a chart', `apiVersion: v1\nentries:\n  greeter: &g\n  - {version: 1.0.0, urls: [a.tgz]}\n`, 'line 3 is not a chart name as Helm writes it'],
    [
      'less indentation than the names',
      `apiVersion: v1\nentries:\n    greeter:\n    - {version: 1.0.0, urls: [a.tgz]}\n  other: []\n`,
      'line 5 is indented less than the chart names above it',
    ],
    ['entries a sequence', `apiVersion: v1\nentries:\n- greeter\n`, 'line 3 is a sequence item where a key is expected'],
    ['entries a sequence, indented', `apiVersion: v1\nentries:\n  - greeter\n`, 'line 3 is not under a chart name'],
    ['the index indented', `  apiVersion: v1\n  entries:\n    greeter: []\n`, 'line 1 is indented before any top-level key'],
    ['apiVersion continued', `apiVersion: v1\n\n  more\nentries:\n  greeter: []\n`, 'apiVersion (line 1) continues on line 3'],
    ['apiVersion a block scalar', `apiVersion: |\n  # v1\nentries:\n  greeter: []\n`, 'apiVersion (line 1) is not a one-line scalar'],
    [
      'apiVersion with an anchor',
      `apiVersion: &v v1\nentries:\n  greeter:\n  - {version: *v, urls: [a.tgz]}\n`,
      'apiVersion (line 1) is not a one-line scalar',
    ],
    [
      'an alias to an anchor in another chart',
      `apiVersion: v1\nentries:\n  other:\n  - &one {version: 1.0.0, urls: [a.tgz]}\n  greeter:\n  - *one\n`,
      'the chart has an alias and the rest of the index may define anchors',
    ],
    // the cut would keep the first anchor; the whole parse takes the one redefined in between
    [
      'an alias whose anchor is redefined elsewhere',
      `apiVersion: v1\nentries:\n  greeter:\n  - &x {version: 1.0.0, urls: [a.tgz]}\n  other:\n  - &x {version: 9.9.9, urls: [b.tgz]}\n  greeter:\n  - *x\n`,
      'the chart has an alias and the rest of the index may define anchors',
    ],
  ])('%s', async (_what, text, why) => {
    expect(await sameAsWhole(text, 'greeter')).toMatchObject({ layout: 'whole', why });
  });

  it('the alias whose anchor is redefined elsewhere means the later anchor, as the whole parse has it', async () => {
    const text = `apiVersion: v1\nentries:\n  greeter:\n  - &x {version: 1.0.0, urls: [a.tgz]}\n  other:\n  - &x {version: 9.9.9, urls: [b.tgz]}\n  greeter:\n  - *x\n`;
    const parsed = await parseIndex(text, 'greeter', opts);
    expect(parsed.chart?.versions).toEqual([{ version: '9.9.9', urls: ['b.tgz'] }]);
    expect(parsed.read).toMatchObject({ layout: 'whole', why: 'the chart has an alias and the rest of the index may define anchors' });
  });

  it('a chart part that does not parse alone is parsed whole, and the whole parse gives the error with its line', async () => {
    const text = `apiVersion: v1\nentries:\n  other: []\n  greeter:\n  - version: [1.0.0\n`;
    const e = await failure(parseIndex(text, 'greeter', opts));
    expect(e).toMatchObject({ code: 'invalid-index', terminal: true, subject: opts.subject });
    expect(e.message).toMatch(/^index\.yaml is not readable \(index\.yaml:\d+\)/);
  });
});

describe('bounds', () => {
  it.each([
    ['in the chart part', `apiVersion: v1\nentries:\n  other: []\n  greeter:\n  - x: 1\n${aliasBombEntries(8, '    ')}`],
    ['outside the chart part', `apiVersion: v1\n${aliasBombEntries(8)}entries:\n  other: []\n  greeter:\n  - *l8\n`],
  ])('an alias bomb %s in the layout Helm writes is refused by the node budget', async (_where, text) => {
    const e = await failure(parseIndex(text, 'greeter', { ...opts, maxNodes: 2_000_000 }));
    expect(e).toMatchObject({ code: 'invalid-index', terminal: true, subject: opts.subject });
    expect(e.message).toContain('expands to more than 2000000 nodes (the limit per document; aliases are counted as expanded)');
  });

  const many = (n: number): string =>
    `apiVersion: v1\nentries:\n${Array.from({ length: n }, (_, i) => `  chart-${i}:\n  - apiVersion: v2\n    digest: ${HEX}\n    name: chart-${i}\n    urls:\n    - chart-${i}-1.0.0.tgz\n    version: 1.0.0\n`).join('')}generated: "2026-01-01T00:00:00Z"\n`;

  it('more chart names than half the node budget leave the index to the whole parse, which refuses it', async () => {
    const text = `apiVersion: v1\nentries:\n${Array.from({ length: 30 }, (_, i) => `  c${i}: []\n`).join('')}`;
    expect(await sliceIndex(Buffer.from(text), 'c1', { maxNames: 29 })).toEqual({ layout: 'whole', why: 'the index names more than 29 charts' });
    const json = JSON.stringify({ apiVersion: 'v1', entries: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`c${i}`, []])) });
    expect(await sliceIndex(Buffer.from(json), 'c1', { maxNames: 29 })).toEqual({ layout: 'whole', why: 'the index names more than 29 charts' });
    expect(await sliceIndex(Buffer.from(json), 'c1', { maxNames: 30 })).toMatchObject({ layout: 'json' });
    const e = await failure(parseIndex(text, 'c1', { ...opts, maxNodes: 58 }));
    expect(e).toMatchObject({ code: 'invalid-index', terminal: true });
    expect(e.message).toContain('expands to more than 58 nodes');
  });

  it('a chart part over maxParsedBytes is refused as too-large, naming the chart and the limit', async () => {
    const e = await failure(parseIndex(many(3), 'chart-1', { ...opts, maxParsedBytes: 64 }));
    expect(e).toMatchObject({ stage: 'resolve', code: 'too-large', terminal: true, subject: opts.subject });
    expect(e.message).toMatch(/^chart "chart-1" takes \d+ bytes of index\.yaml; Hoist parses at most 64 bytes of an index$/);
  });

  it('an index parsed whole over maxParsedBytes is refused as too-large, saying why it is parsed whole', async () => {
    const flow = `apiVersion: v1\nentries: {greeter: [{version: 1.0.0, urls: [a.tgz]}]}\n`;
    const e = await failure(parseIndex(flow, 'greeter', { ...opts, maxParsedBytes: 32 }));
    expect(e).toMatchObject({ code: 'too-large', terminal: true });
    expect(e.message).toBe(
      `index.yaml is ${flow.length} bytes and is parsed whole (entries (line 2) is not a block mapping); Hoist parses at most 32 bytes of an index`,
    );
  });

  it('the scan of a large index gives the event loop back, and stops when the signal aborts', async () => {
    const text = Buffer.from(many(20_000));
    let turns = 0;
    let running = true;
    const spin = (): void => {
      turns++;
      if (running) setImmediate(spin);
    };
    setImmediate(spin);
    const slice = await sliceIndex(text, 'chart-19999');
    running = false;
    expect(slice).toMatchObject({ layout: 'yaml' });
    expect(slice.layout === 'yaml' && slice.names.length).toBe(20_000);
    expect(turns).toBeGreaterThan(1);
    const entries = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`c${i}`, [{ version: '1.0.0', urls: ['x'] }]]));
    const json = Buffer.from(JSON.stringify({ apiVersion: 'v1', entries }));
    for (const [index, chart] of [
      [text, 'chart-1'],
      [json, 'c1'],
    ] as const) {
      // aborted while the scan waits for its turn
      const controller = new AbortController();
      setImmediate(() => controller.abort(new Error('stopped')));
      await expect(sliceIndex(index, chart, { signal: controller.signal })).rejects.toThrow('stopped');
    }
  });
});
