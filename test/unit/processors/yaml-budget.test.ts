// The YAML node budget (src/processors/yaml/budget.ts): fixed per document and per bundle,
// checked before any value is built, and never walked a second time after a refusal (issue 23).
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { renderPlain } from '../../../src/processors/plain.ts';
import { YAML_MAX_NODES_PER_BUNDLE, YAML_MAX_NODES_PER_DOCUMENT, yamlBudget } from '../../../src/processors/yaml/budget.ts';
import { eventTree } from '../../../src/processors/yaml/event-reader.ts';
import { yamlPackageTree } from '../../../src/processors/yaml/document-reader.ts';
import type { YNode } from '../../../src/processors/yaml/node-tree.ts';
import { countNodesAtLeast, countNodesAtLeastYielding, PRESCAN_MIN_CHARS } from '../../../src/processors/yaml/prescan.ts';
import { readManifest } from '../../../src/processors/manifest.ts';
import { parseManifestStream, REFERENCE_READER_MAX_NODES } from '../../../src/processors/yaml/stream.ts';
import { HoistError } from '../../../src/util/errors.ts';

// counts the readers' runs: a refusal must not be parsed and walked again by the reference
// reader, and a stream certainly over the budget is parsed by neither
const referenceRuns = vi.hoisted(() => ({ count: 0 }));
const fastRuns = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../../src/processors/yaml/event-reader.ts', async (importOriginal) => {
  const mod = await importOriginal<typeof import('../../../src/processors/yaml/event-reader.ts')>();
  return {
    ...mod,
    eventTree: (...args: Parameters<typeof mod.eventTree>) => {
      fastRuns.count++;
      return mod.eventTree(...args);
    },
  };
});
vi.mock('../../../src/processors/yaml/document-reader.ts', async (importOriginal) => {
  const mod = await importOriginal<typeof import('../../../src/processors/yaml/document-reader.ts')>();
  return {
    ...mod,
    yamlPackageTree: (...args: Parameters<typeof mod.yamlPackageTree>) => {
      referenceRuns.count++;
      return mod.yamlPackageTree(...args);
    },
  };
});

const MiB = 1024 * 1024;

/** a `levels`-level alias bomb: 10 scalars, then each level ten aliases of the one before */
function bomb(levels: number): string {
  let text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  l0: &l0 ["x","x","x","x","x","x","x","x","x","x"]\n';
  for (let i = 1; i <= levels; i++) text += `  l${i}: &l${i} [${Array.from({ length: 10 }, () => `*l${i - 1}`).join(',')}]\n`;
  return text;
}

const SMALL = 'l: &l [x,x,x,x,x]\nm: [*l,*l,*l]\n';

function refusal(f: () => unknown): HoistError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(HoistError);
    return e as HoistError;
  }
  throw new Error('not refused');
}

describe('YAML node budget', () => {
  // first in the file, so the process's peak RSS so far is this worker's start-up
  it('a 2.5 MB manifest holding a 9-level alias bomb padded with a comment is refused with bounded memory', () => {
    const body = bomb(9);
    const text = `# ${'padding '.repeat(Math.ceil((2.5 * 1e6) / 8))}\n${body}`;
    expect(text.length).toBeGreaterThan(2.5e6);
    global.gc?.();
    const before = process.memoryUsage();
    const peakBefore = process.resourceUsage().maxRSS * 1024;
    const runsBefore = referenceRuns.count;
    const e = refusal(() => parseManifestStream(text, 'bomb.yaml'));
    const after = process.memoryUsage();
    const peakAfter = process.resourceUsage().maxRSS * 1024;
    expect(e.code).toBe('yaml-alias-budget');
    expect(e.stage).toBe('process');
    expect(e.terminal).toBe(true);
    expect(e.subject).toBe('bomb.yaml');
    expect(e.message).toBe(
      `a YAML document expands to more than ${YAML_MAX_NODES_PER_DOCUMENT} nodes (the limit per document; aliases are counted as expanded)`,
    );
    // not walked again by the reference reader
    expect(referenceRuns.count).toBe(runsBefore);
    // the old budget (2 M + 50 × bytes = 127 M nodes here) built values until 2.8 GiB of RSS
    expect(after.heapUsed - before.heapUsed).toBeLessThan(200 * MiB);
    expect(Math.max(peakAfter, peakBefore) - before.rss).toBeLessThan(200 * MiB);
  });

  it('a 15 MiB document without aliases (7.5 M one-digit numbers) is refused before either reader parses it', () => {
    // it used to be parsed whole first: 1.8 GiB of RSS and 30 s, an OOM kill under the chart's 1 GiB
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge}\ndata:\n  list: [${'1,'.repeat(7_500_000)}1]\n`;
    const before = process.memoryUsage();
    const peakBefore = process.resourceUsage().maxRSS * 1024;
    const runs = { fast: fastRuns.count, reference: referenceRuns.count };
    const e = refusal(() => parseManifestStream(text, 'huge.yaml'));
    expect(e.code).toBe('yaml-alias-budget');
    expect(e.subject).toBe('huge.yaml');
    expect(e.message).toBe(
      `a YAML document expands to more than ${YAML_MAX_NODES_PER_DOCUMENT} nodes (the limit per document; aliases are counted as expanded)`,
    );
    expect({ fast: fastRuns.count, reference: referenceRuns.count }).toEqual(runs);
    expect(Math.max(process.resourceUsage().maxRSS * 1024, peakBefore) - before.rss).toBeLessThan(200 * MiB);
  });

  it.each([
    ['one document over the per-document limit', `a: [${'1,'.repeat(600)}1]\n`, 500, 10_000, /more than 500 nodes \(the limit per document/],
    ['null items (no scalar at all)', `${'-\n'.repeat(600)}`, 500, 10_000, /more than 500 nodes \(the limit per document/],
    [
      'documents each within, together over the per-bundle limit',
      `${'---\n- 1\n- 2\n'.repeat(600)}`,
      500,
      1000,
      /the bundle's YAML expands to more than 1000 nodes/,
    ],
  ])('a stream of PRESCAN_MIN_CHARS or more is checked before it is parsed: %s', (_name, body, perDocument, perBundle, refused) => {
    const text = `# ${'p'.repeat(PRESCAN_MIN_CHARS)}\n${body}`;
    const runs = fastRuns.count;
    expect(refusal(() => parseManifestStream(text, 'big.yaml', yamlBudget(perDocument, perBundle))).message).toMatch(refused);
    expect(fastRuns.count).toBe(runs);
  });

  it("the reference reader reads at most REFERENCE_READER_MAX_NODES nodes: past them the fast reader's own error", () => {
    const runs = referenceRuns.count;
    // a %TAG directive is left to the reference reader
    const tagged = refusal(() => parseManifestStream(`%TAG !e! tag:example.com,2000:\n---\n[${'1,'.repeat(REFERENCE_READER_MAX_NODES)}1]\n`, 'tagged.yaml'));
    expect(tagged.code).toBe('yaml-alias-budget');
    expect(tagged.message).toBe(
      `%TAG directive: this YAML needs the reference reader, which reads at most ${REFERENCE_READER_MAX_NODES} nodes per stream (the limit; the stream has more)`,
    );
    // a walk error (null keys) is reported by the walk, with its line
    const nullKeys = refusal(() => parseManifestStream(`x: 1\ny: [${':,'.repeat(REFERENCE_READER_MAX_NODES)}:]\n`, 'keys.yaml'));
    expect(nullKeys.code).toBe('parse-error');
    expect(nullKeys.subject).toBe('keys.yaml:2');
    // a syntax error is js-yaml's, with its line
    const syntax = refusal(() => parseManifestStream(`x: 1\ny: [${'1,'.repeat(REFERENCE_READER_MAX_NODES)}1\n`, 'unclosed.yaml'));
    expect(syntax.message).toMatch(/^invalid YAML: /);
    expect(syntax.subject).toMatch(/^unclosed\.yaml:\d+$/);
    expect(referenceRuns.count).toBe(runs);
    // below the limit the reference reader still decides
    expect(() => parseManifestStream(`%TAG !e! tag:example.com,2000:\n---\n[1, 2]\n`, 'small.yaml')).not.toThrow();
    expect(referenceRuns.count).toBe(runs + 1);
  });

  it('the reference reader (used when js-yaml declines the text) is refused the same way', () => {
    // a %TAG directive sends the stream to the reference reader
    const e = refusal(() => parseManifestStream(`%TAG !e! tag:example.com,2000:\n---\n${bomb(7)}`, 'tagged.yaml'));
    expect(e.code).toBe('yaml-alias-budget');
    expect(e.subject).toBe('tagged.yaml');
  });

  it.each([
    // [case, files parsed with one budget, per document, per bundle, refused with]
    ['one document within both limits', ['a'], 100, 1000, undefined],
    ['one document over the per-document limit', [bomb(2)], 100, 1000, /more than 100 nodes \(the limit per document/],
    // 31 nodes each
    [
      'documents each within, together over the per-bundle limit',
      [SMALL, SMALL, SMALL],
      100,
      80,
      /the bundle's YAML expands to more than 80 nodes \(the limit per bundle/,
    ],
    ['documents each within, together within the per-bundle limit', [SMALL, SMALL, SMALL], 100, 93, undefined],
  ] as const)('%s', (_name, docs, perDocument, perBundle, refused) => {
    const budget = yamlBudget(perDocument, perBundle);
    const run = () => docs.forEach((d, i) => parseManifestStream(d, `f${i}.yaml`, budget));
    if (refused === undefined) expect(run).not.toThrow();
    else expect(refusal(run).message).toMatch(refused);
  });

  it('a stream that fails for another reason is not charged to the bundle', () => {
    const budget = yamlBudget(1000, 1000);
    expect(() => parseManifestStream('a: [unclosed\n', 'bad.yaml', budget)).toThrow(/invalid YAML/);
    expect(budget.remaining).toBe(1000);
    parseManifestStream('a: 1\n', 'ok.yaml', budget);
    expect(budget.remaining).toBe(997);
  });

  it.each([
    // map, key, seq, two items
    ['without aliases (counted without a memo)', 'a: [x, y]\n', 5],
    // a null value counts one, as the walk builds one value for it
    ['with a null value', 'a:\nb: [~]\n', 6],
    // map, a, the anchored seq (3, counted once), b, the alias (1 + the 3 it expands to)
    ['with an alias (each anchored node counted once, each alias as what it expands to)', 'a: &q [x, y]\nb: *q\n', 10],
  ])('a document is charged its expanded nodes: %s', (_why, text, nodes) => {
    const budget = yamlBudget(1000, 1000);
    parseManifestStream(text, 'n.yaml', budget);
    expect(1000 - budget.remaining).toBe(nodes);
  });

  it("nesting beyond the depth limit and recursive aliases keep the walk's own error", () => {
    expect(() => parseManifestStream(`${'['.repeat(600)}${']'.repeat(600)}\n`, 'deep.yaml')).toThrow(/nesting deeper than 512 levels/);
  });

  describe('per bundle, in a plain render', () => {
    let dir: string | undefined;
    afterAll(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });
    it('files each within the per-document limit but together over the per-bundle one are refused', async () => {
      dir = await mkdtemp(join(tmpdir(), 'hoist-yaml-budget-'));
      // each file expands to just under the per-document limit with a few hundred bytes of text
      const file = (i: number) =>
        `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c${i}}\ndata:\n  a: &a [${Array(100).fill('x').join(',')}]\n  b: &b [${Array(100).fill('*a').join(',')}]\n  c: [${Array(96).fill('*b').join(',')}]\n`;
      const per = Math.floor(YAML_MAX_NODES_PER_BUNDLE / YAML_MAX_NODES_PER_DOCUMENT) + 1;
      for (let i = 0; i < per; i++) await writeFile(join(dir, `f${i}.yaml`), file(i));
      await expect(renderPlain(dir, {})).rejects.toThrow(/the bundle's YAML expands to more than 4000000 nodes/);
      // without the last file it renders
      await rm(join(dir, `f${per - 1}.yaml`));
      await expect(renderPlain(dir, {})).resolves.toMatchObject({ objects: expect.any(Array) });
    });
  });

  it('every YAML and JSON file in testdata/fixtures reads exactly as before the budget (digests recorded from main f7abc2a)', async () => {
    const root = join(import.meta.dirname, '../../..');
    const want = JSON.parse(await readFile(join(root, 'test/golden/yaml-fixture-digests.json'), 'utf8')) as Record<string, string>;
    const got: Record<string, string> = {};
    const walk = async (d: string): Promise<void> => {
      for (const e of (await readdir(d)).sort()) {
        const p = join(d, e);
        if ((await stat(p)).isDirectory()) await walk(p);
        else if (/\.(ya?ml|json)$/.test(e)) {
          const rel = relative(root, p);
          try {
            const r = parseManifestStream(await readFile(p, 'utf8'), rel);
            got[rel] = createHash('sha256')
              .update(JSON.stringify([r.documents, r.warnings]))
              .digest('hex');
          } catch (err) {
            got[rel] = `error: ${(err as Error).message}`;
          }
        }
      }
    };
    await walk(join(root, 'testdata/fixtures'));
    expect(got).toEqual(want);
  });
});

/** nodes of a tree as built, aliases counted once (not expanded): what the prescan bounds from below */
function rawNodes(root: YNode | null): number {
  if (root === null) return 1;
  switch (root.kind) {
    case 'seq':
      return 1 + root.items.reduce((n, i) => n + rawNodes(i), 0);
    case 'map':
      return 1 + root.pairs.reduce((n, [k, v]) => n + rawNodes(k) + rawNodes(v), 0);
    default:
      return 1;
  }
}

describe('the prescan (a lower bound of the nodes, on lexer tokens)', () => {
  const cases = [
    'a: 1\nb: [1, 2, {c: d}]\n',
    '- \n-\n- x\n- - y\n  - z\n',
    '? a\n: b\n? [c]\n:\n',
    '{:, : , a, b: }\n',
    'k: &x [1, 2]\nl: *x\nm: !!str 3\n',
    'text: |\n  line\n  - not an item\nfolded: >-\n  a: b\n',
    '"q": \'r\'\n# - comment: x\n',
    '---\na: 1\n---\n- 2\n...\n---\nb:\n  c:\n    - d\n',
    '[a: 1, b, {c}]\n',
  ];
  it.each(cases)('never exceeds the nodes of the tree: %j', (text) => {
    const roots = eventTree(text);
    const n = countNodesAtLeast(text);
    expect(n.total).toBeLessThanOrEqual(roots.reduce((s, r) => s + rawNodes(r), 0));
    expect(n.document).toBeLessThanOrEqual(Math.max(0, ...roots.map(rawNodes)));
    expect(n.total).toBeGreaterThan(0);
  });

  it('never exceeds the nodes of any YAML fixture, and comes within a factor of 3 of them', async () => {
    const root = join(import.meta.dirname, '../../..');
    const files: string[] = [];
    const walk = async (d: string): Promise<void> => {
      for (const e of await readdir(d)) {
        const p = join(d, e);
        if ((await stat(p)).isDirectory()) await walk(p);
        else if (/\.ya?ml$/.test(e)) files.push(p);
      }
    };
    await walk(join(root, 'testdata/fixtures'));
    expect(files.length).toBeGreaterThan(20);
    for (const f of files) {
      const text = await readFile(f, 'utf8');
      let roots: YNode[];
      try {
        roots = eventTree(text);
      } catch {
        try {
          roots = yamlPackageTree(text, f);
        } catch {
          continue; // a fixture of invalid YAML: no tree to compare with
        }
      }
      const nodes = roots.reduce((s, r) => s + rawNodes(r), 0);
      const n = countNodesAtLeast(text);
      expect(n.total, relative(root, f)).toBeLessThanOrEqual(nodes);
      expect(n.total * 3, relative(root, f)).toBeGreaterThanOrEqual(nodes);
    }
  });

  it.each(cases)('the yielding count counts the same: %j', async (text) => {
    expect(await countNodesAtLeastYielding(text)).toEqual(countNodesAtLeast(text));
    expect(await countNodesAtLeastYielding(text, { document: 2, total: 3 })).toEqual(countNodesAtLeast(text, { document: 2, total: 3 }));
  });

  it('a hostile 15 MiB stream is refused by a count that lets the event loop run meanwhile', async () => {
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge}\ndata:\n  list: [${'1,'.repeat(7_500_000)}1]\n`;
    let turns = 0;
    let stop = false;
    const tick = (): void => {
      turns++;
      if (!stop) setImmediate(tick);
    };
    setImmediate(tick);
    const read = readManifest(text, 'huge.yaml', yamlBudget());
    await expect(read).rejects.toMatchObject({ code: 'yaml-alias-budget', subject: 'huge.yaml' });
    stop = true;
    // lexing up to the budget (a million nodes) is far longer than one slice, on any machine
    expect(turns).toBeGreaterThan(1);
  });
});
