/**
 * The pure parts of SOPS decryption (src/processors/sops), in tables: Go's number and time
 * printing that the MAC depends on (strconv.FormatFloat 'f', time.Time.MarshalText, yaml.v3's
 * timestamp layouts), go-yaml v3's typing of scalars as sops's YAML store reads them, the JSON
 * store's numbers and key order, the marker that says a file is encrypted, and age key files.
 * Whole files against the real sops are in test/integration/processors/sops/sops-parity.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ProcessCode } from '../../../src/processors/errors.ts';
import { parseAgeKeyFile } from '../../../src/processors/sops/age-keys.ts';
import { decryptIfEncrypted, looksSopsEncrypted } from '../../../src/processors/sops/decryptor.ts';
import { formatGoFloatF, formatRFC3339, formatRFC3339Nano, parseRFC3339, parseYamlV3Timestamp } from '../../../src/processors/sops/go-format.ts';
import { readSopsJson, readSopsYaml, type SopsValue } from '../../../src/processors/sops/sops-tree.ts';
import { yamlBudget } from '../../../src/processors/yaml/budget.ts';
import { isHoistError } from '../../../src/util/errors.ts';

describe('strconv.FormatFloat(f, f, -1, 64)', () => {
  it.each([
    [0, '0'],
    [-0, '-0'],
    [1, '1'],
    [0.75, '0.75'],
    [2.5, '2.5'],
    [1e21, '1000000000000000000000'],
    [1.5e-7, '0.00000015'],
    [123456.789, '123456.789'],
    [-3.25, '-3.25'],
    [0.1 + 0.2, '0.30000000000000004'],
    [Number.POSITIVE_INFINITY, '+Inf'],
    [Number.NEGATIVE_INFINITY, '-Inf'],
    [Number.NaN, 'NaN'],
  ])('%s → %s', (f, want) => {
    expect(formatGoFloatF(f)).toBe(want);
  });
});

describe("yaml.v3's timestamps, printed as time.Time.MarshalText", () => {
  it.each([
    ['2001-12-14', '2001-12-14T00:00:00Z'],
    ['2001-1-2', '2001-01-02T00:00:00Z'],
    ['2001-12-14 21:59:43.10', '2001-12-14T21:59:43.1Z'],
    ['2001-12-14T21:59:43.10-05:00', '2001-12-14T21:59:43.1-05:00'],
    ['2001-12-14t21:59:43Z', '2001-12-14T21:59:43Z'],
    ['2024-02-29T01:02:03.123456789123+00:00', '2024-02-29T01:02:03.123456789Z'],
    ['2001-12-14T21:59:43,5+01:30', '2001-12-14T21:59:43.5+01:30'],
  ])('%s → %s', (text, want) => {
    const t = parseYamlV3Timestamp(text);
    expect(t && formatRFC3339Nano(t)).toBe(want);
  });

  it.each(['2001-12-14T21:59:43', '2023-02-29', '2001-13-01', '2001-12-14 25:00:00', '01-12-14', '2001-12-14x', '2001-12-14T10:00:00+25:00'])(
    '%s is not a timestamp',
    (text) => {
      expect(parseYamlV3Timestamp(text)).toBeUndefined();
    },
  );

  it('lastmodified as sops authenticates the MAC with it: time.RFC3339, no fraction, Z for UTC', () => {
    expect(formatRFC3339(parseRFC3339('2024-05-01T10:20:30.999Z')!)).toBe('2024-05-01T10:20:30Z');
    expect(formatRFC3339(parseRFC3339('2024-05-01T10:20:30+00:00')!)).toBe('2024-05-01T10:20:30Z');
    expect(formatRFC3339(parseRFC3339('2024-05-01T10:20:30-07:00')!)).toBe('2024-05-01T10:20:30-07:00');
    expect(parseRFC3339('2024-05-01 10:20:30Z')).toBeUndefined();
  });
});

const first = (v: SopsValue): SopsValue => (v.t === 'map' ? v.items[0]![1] : v);

describe("sops's YAML store: go-yaml v3 types", () => {
  it.each<[string, SopsValue]>([
    ['plain', { t: 'str', v: 'plain' }],
    ['"quoted 12"', { t: 'str', v: 'quoted 12' }],
    ['yes', { t: 'str', v: 'yes' }],
    ['on', { t: 'str', v: 'on' }],
    ['True', { t: 'bool', v: true }],
    ['FALSE', { t: 'bool', v: false }],
    ['~', { t: 'null' }],
    ['', { t: 'null' }],
    ['12', { t: 'int', v: 12n }],
    ['-0x1F', { t: 'int', v: -31n }],
    ['0755', { t: 'int', v: 493n }],
    ['0o17', { t: 'int', v: 15n }],
    ['0b101', { t: 'int', v: 5n }],
    ['1_000', { t: 'int', v: 1000n }],
    ['08', { t: 'float', v: 8 }],
    ['1e3', { t: 'float', v: 1000 }],
    ['.5', { t: 'float', v: 0.5 }],
    ['.inf', { t: 'float', v: Number.POSITIVE_INFINITY }],
    ['1:20', { t: 'str', v: '1:20' }],
    ['2001-12-14', { t: 'time', v: '2001-12-14T00:00:00Z' }],
    ['"2001-12-14"', { t: 'str', v: '2001-12-14' }],
    ['!!str 12', { t: 'str', v: '12' }],
    ['!!float 1', { t: 'float', v: 1 }],
    ['!!binary aGk=', { t: 'str', v: 'hi' }],
    ['!custom 12', { t: 'str', v: '12' }],
    ['9223372036854775807', { t: 'int', v: 9223372036854775807n }],
    ['99999999999999999999', { t: 'float', v: 1e20 }],
  ])('v: %s', (text, want) => {
    expect(first(readSopsYaml(`v: ${text}\n`, 'f.yaml', yamlBudget()).branches[0]!)).toEqual(want);
  });

  it('refuses what sops refuses: non-string keys, a key given twice in the first document, uint64, sequences, bad tags', () => {
    for (const text of ['1: a\n', 'true: a\n', 'a: 1\na: 2\n', 'v: 18446744073709551615\n', '- a\n', 'v: !!int abc\n', 'just a string\n']) {
      let err: unknown;
      try {
        readSopsYaml(text, 'f.yaml', yamlBudget());
      } catch (e) {
        err = e;
      }
      expect(isHoistError(err), text).toBe(true);
    }
  });

  it('a later document may repeat a key (sops checks the first only); a document without content is left out', () => {
    const { branches } = readSopsYaml('a: 1\n---\nb: 1\nb: 2\n---\n', 'f.yaml', yamlBudget());
    expect(branches.map((b) => b.items.map(([k]) => k))).toEqual([['a'], ['b', 'b']]);
  });
});

describe("sops's JSON store", () => {
  it('keeps key order (integer-like keys too), duplicates, int64 as int and anything else as float', () => {
    const { branches } = readSopsJson('{"2": 1, "1": 1.0, "a": 1e2, "a": 9223372036854775808, "n": null, "l": [true, "x"]}', 'f.json');
    expect(branches[0]!.items).toEqual([
      ['2', { t: 'int', v: 1n }],
      ['1', { t: 'float', v: 1 }],
      ['a', { t: 'float', v: 100 }],
      ['a', { t: 'float', v: 9223372036854775808 }],
      ['n', { t: 'null' }],
      [
        'l',
        {
          t: 'list',
          items: [
            { t: 'bool', v: true },
            { t: 'str', v: 'x' },
          ],
        },
      ],
    ]);
  });

  it.each(['[1]', '{"a": 1} {"b": 2}', '{"a": }', '{"a": 1', '"s"'])('refuses %s', (text) => {
    expect(() => readSopsJson(text, 'f.json')).toThrow();
  });
});

describe('which files are SOPS-encrypted', () => {
  it.each([
    ['sops:\n    mac: ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\n', true],
    ['{"sops": {"mac": "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]"}}', true],
    ['data:\n  note: "we use ENC[AES256_GCM, for secrets"\n', false],
    ['kind: ConfigMap\n', false],
  ])('%j → %s', (text, want) => {
    expect(looksSopsEncrypted(text)).toBe(want);
  });

  it('a file with the marker but no top-level sops metadata is read as it is; metadata after the first document is refused', async () => {
    const marker = 'note: "mac: ENC[AES256_GCM,x"\n';
    expect(await decryptIfEncrypted(marker, 'a.yaml', undefined, yamlBudget())).toBeUndefined();
    const late = `a: 1\n---\nsops:\n    mac: ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\n`;
    await expect(decryptIfEncrypted(late, 'a.yaml', undefined, yamlBudget())).rejects.toMatchObject({ code: ProcessCode.DecryptFailed });
  });

  it('metadata sops would refuse: two rules, comment rules, Shamir key groups, no age key', async () => {
    const meta = (extra: string): string =>
      `a: ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\nsops:\n    lastmodified: "2024-01-01T00:00:00Z"\n    mac: ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\n${extra}`;
    const cases: Array<[string, RegExp]> = [
      ['    age:\n        - recipient: age1x\n          enc: x\n    encrypted_regex: a\n    unencrypted_suffix: b\n', /more than one of/],
      ['    age:\n        - recipient: age1x\n          enc: x\n    encrypted_comment_regex: a\n', /choose what to encrypt by comments/],
      ['    key_groups:\n        - age: [{recipient: a, enc: b}]\n        - age: [{recipient: c, enc: d}]\n', /Shamir/],
      ['    pgp:\n        - fp: ABC\n          enc: x\n', /encrypted for pgp only/],
      ['', /no keys found/],
    ];
    for (const [extra, want] of cases) {
      await expect(decryptIfEncrypted(meta(extra), 'a.yaml', { from: 'secret x/y', identities: [] }, yamlBudget()), extra).rejects.toThrow(want);
    }
  });
});

describe('age key files', () => {
  it('reads identities line by line, skipping comments and blank lines, naming keys by their recipient', async () => {
    const text = '# created: 2024-01-01T00:00:00Z\n# public key: age1...\nAGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX\r\n\n';
    const ids = await parseAgeKeyFile(text, 'secret ns/k key age.agekey');
    expect(ids).toHaveLength(1);
    expect(ids[0]!.recipient).toMatch(/^age1[a-z0-9]+$/);
    expect(ids[0]!.from).toBe('secret ns/k key age.agekey line 3');
  });

  it.each([
    ['AGE-PLUGIN-YUBIKEY-1ABC', /line 1 is an age plugin identity/],
    ['not a key', /line 1 is not an age identity/],
    ['# ok\nAGE-SECRET-KEY-1NOTBECH32', /line 2 is not a valid age identity/],
  ])('refuses %j naming the line, never its text', async (text, want) => {
    const err = await parseAgeKeyFile(text, 'secret ns/k key age.agekey').catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(want);
    expect((err as Error).message).not.toContain(text.split('\n').pop());
  });
});
