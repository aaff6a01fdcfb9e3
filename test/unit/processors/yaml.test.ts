import { describe, expect, it } from 'vitest';
import { formatGoFloat32, resolveYamlScalar } from '../../../src/processors/yaml/scalars.ts';
import { parseManifestStream } from '../../../src/processors/yaml/stream.ts';
import { isHoistError } from '../../../src/util/errors.ts';

function one(text: string): unknown {
  const { documents } = parseManifestStream(text, 'f.yaml');
  expect(documents).toHaveLength(1);
  return documents[0]!.value;
}

describe('go-yaml v2 scalar resolution (what kubectl reads)', () => {
  it.each([
    ['yes', true],
    ['Yes', true],
    ['YES', true],
    ['y', true],
    ['Y', true],
    ['on', true],
    ['ON', true],
    ['true', true],
    ['no', false],
    ['n', false],
    ['off', false],
    ['Off', false],
    ['FALSE', false],
    ['~', null],
    ['null', null],
    ['', null],
    ['0755', 493],
    ['0o17', 15],
    ['0x1F', 31],
    ['0b101', 5],
    ['-0b11', -3],
    ['+12', 12],
    ['1_000', 1000],
    ['08', 8],
    ['1e3', 1000],
    ['1.5', 1.5],
    ['.5', 0.5],
    ['-.5e1', -5],
    ['1:20', '1:20'],
    ['190:20:30', '190:20:30'],
    ['2001-12-14', '2001-12-14'],
    ['2001-12-14t21:59:43.10-05:00', '2001-12-14t21:59:43.10-05:00'],
    ['1e400', '1e400'],
    ['0x', '0x'],
    ['yess', 'yess'],
    ['True', true],
    ['tRUE', 'tRUE'],
    ['1.2.3', '1.2.3'],
    ['-x', '-x'],
  ])('plain %j → %j', (text, expected) => {
    const v = one(`v: ${text}\n`) as { v: unknown };
    expect(v.v).toEqual(expected);
  });

  it('quoted and block scalars stay strings', () => {
    expect(one(`a: "yes"\nb: '0755'\nc: |\n  on\n`)).toEqual({ a: 'yes', b: '0755', c: 'on\n' });
  });

  it('explicit tags', () => {
    expect(one(`a: !!str yes\nb: !!int "12"\nc: !!float 1\nd: !custom 12\ne: ! 12\nf: !!binary aGk=\ng: !!timestamp 2001-01-01\n`)).toEqual({
      a: 'yes',
      b: 12,
      c: 1,
      d: '12',
      e: '12',
      f: 'hi',
      g: '2001-01-01',
    });
    expect(() => resolveYamlScalar('abc', '!!int')).toThrow(/cannot decode !!str `abc` as a !!int/);
  });

  it('non-string map keys become strings as sigs.k8s.io/yaml makes them', () => {
    expect(one(`yes: a\n0755: b\n1.5: c\nnull_: d\n`)).toEqual({ true: 'a', '493': 'b', '1.5': 'c', null_: 'd' });
    expect(() => one(`~: a\n`)).toThrow(/unsupported map key/);
  });

  it('formats float keys like strconv.FormatFloat(f, g, -1, 32)', () => {
    expect(formatGoFloat32(1.5)).toBe('1.5');
    expect(formatGoFloat32(0.1)).toBe('0.1');
    expect(formatGoFloat32(1e6)).toBe('1e+06');
    expect(formatGoFloat32(123456)).toBe('123456');
    expect(formatGoFloat32(0.0001)).toBe('0.0001');
    expect(formatGoFloat32(0.00001)).toBe('1e-05');
    expect(formatGoFloat32(-2.5)).toBe('-2.5');
  });

  it('infinity and NaN cannot become JSON, as json.Marshal refuses them', () => {
    expect(() => one('v: .inf\n')).toThrow(/cannot be represented in JSON/);
  });

  it('integers beyond 2^53 are refused rather than silently rounded', () => {
    expect(() => one('v: 9007199254740993\n')).toThrow(/cannot be represented exactly/);
  });

  it('anchors, aliases and merge keys (explicit keys win)', () => {
    expect(one(`base: &b {x: 1, w: 2}\nd:\n  <<: *b\n  w: 3\nl:\n  <<: [*b, {z: 4}]\n`)).toEqual({
      base: { x: 1, w: 2 },
      d: { x: 1, w: 3 },
      l: { x: 1, w: 2, z: 4 },
    });
  });

  it('alias bombs are refused', () => {
    let text = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n';
    let prev = 'a';
    for (const n of 'bcdefghij') {
      text += `${n}: &${n} [${Array(10).fill(`*${prev}`).join(',')}]\n`;
      prev = n;
    }
    expect(() => parseManifestStream(text, 'bomb.yaml')).toThrow(/expands to more than 1000000 nodes \(the limit per document/);
  });

  it('duplicate keys: last wins, with a warning', () => {
    const r = parseManifestStream('a: 1\na: 2\n', 'd.yaml');
    expect(r.documents[0]!.value).toEqual({ a: 2 });
    expect(r.warnings[0]).toMatch(/d.yaml:2: duplicate key "a"/);
  });

  it('a duplicate key keeps its first place and takes the last value, with or without merge keys in the map', () => {
    const plain = parseManifestStream('b: 1\na: 2\nb: 3\n', 'd.yaml');
    expect(Object.entries(plain.documents[0]!.value as object)).toEqual([
      ['b', 3],
      ['a', 2],
    ]);
    expect(plain.warnings).toEqual(['d.yaml:3: duplicate key "b", the last value is used (as kubectl does)']);
    const merged = parseManifestStream('base: &m {z: 0}\nm:\n  b: 1\n  <<: *m\n  a: 2\n  b: 3\n', 'd.yaml');
    expect(Object.entries((merged.documents[0]!.value as Record<string, object>)['m']!)).toEqual([
      ['z', 0],
      ['b', 3],
      ['a', 2],
    ]);
    expect(merged.warnings).toEqual(['d.yaml:6: duplicate key "b", the last value is used (as kubectl does)']);
  });

  it('plain scalars that start like no number, boolean or null are their text; the others are resolved', () => {
    expect(one('name: app\nyes: on\nn: 010\nnum: 010\nx: .5\ne: ~\nt: "true"\n')).toEqual({
      name: 'app',
      true: true,
      false: 8,
      num: 8,
      x: 0.5,
      e: null,
      t: 'true',
    });
  });

  it('__proto__ is an ordinary key', () => {
    const v = one('__proto__: {polluted: true}\n') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__']);
  });

  it('multi-document: empty and comment-only documents are skipped; lines are reported', () => {
    const r = parseManifestStream('---\n# nothing\n---\na: 1\n---\n---\nb: 2\n...\n', 'm.yaml');
    expect(r.documents.map((d) => [d.value, d.line])).toEqual([
      [{ a: 1 }, 4],
      [{ b: 2 }, 7],
    ]);
  });

  it('syntax errors name file and line', () => {
    try {
      parseManifestStream('a: 1\nb: [unclosed\nc: 2\n', 'bad.yaml');
      expect.unreachable();
    } catch (e) {
      expect(isHoistError(e)).toBe(true);
      if (!isHoistError(e)) return;
      expect(e.stage).toBe('process');
      expect(e.reason).toBe('ProcessFailed');
      expect(e.terminal).toBe(true);
      expect(e.subject).toMatch(/^bad\.yaml:\d+$/);
    }
  });

  it('JSON streams, including concatenated objects', () => {
    const r = parseManifestStream('{"a": 1}\n{"b": "yes", "c": [1, {"d": null}]}', 'x.json');
    expect(r.documents.map((d) => [d.value, d.line])).toEqual([
      [{ a: 1 }, 1],
      [{ b: 'yes', c: [1, { d: null }] }, 2],
    ]);
    expect(() => parseManifestStream('{"a": }', 'x.json')).toThrow(/invalid JSON/);
    expect(() => parseManifestStream('{"a": 12345678901234567890}', 'x.json')).toThrow(/cannot be represented exactly/);
  });
});
