import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, hashOf, sha256Hex, sha256HexPrefix } from '../../../src/util/hash.ts';

describe('canonicalJson', () => {
  const cases: Array<[string, unknown, string]> = [
    ['scalars', [1, 'a', true, null], '[1,"a",true,null]'],
    ['keys sorted at every level', { b: 1, a: { d: [{ z: 1, y: 2 }], c: 'x' } }, '{"a":{"c":"x","d":[{"y":2,"z":1}]},"b":1}'],
    ['undefined members omitted, as JSON.stringify does', { a: undefined, b: 1, c: () => 1 }, '{"b":1}'],
    ['undefined in an array is null', [undefined, 1], '[null,1]'],
    ['empty object and array', { a: {}, b: [] }, '{"a":{},"b":[]}'],
    ['only undefined members', { a: undefined }, '{}'],
    ['keys that need escaping', { 'a"b': 1, 'a\nb': 2 }, '{"a\\nb":2,"a\\"b":1}'],
    ['top-level undefined', undefined, 'null'],
  ];
  it.each(cases)('%s', (_, value, want) => expect(canonicalJson(value)).toBe(want));
  it('sorted keys give the JSON.parse-able text of the same value', () => {
    const v = { z: [1, { b: 'x', a: null }], a: 'é' };
    expect(JSON.parse(canonicalJson(v))).toEqual(v);
  });
  it('orders keys as Array.prototype.sort does (UTF-16 code units), at and past the in-place sort bound', () => {
    // code units, not code points: U+FF5E sorts after U+1F600's surrogate pair (D83D…)
    const odd = ['b', 'B', 'a', '10', '9', '', ' ', 'é', 'e\u0301', '\uff5e', '\u{1f600}', 'a\u0000', '_', 'Z'];
    for (const n of [0, 1, 2, 5, 16, 17, 40]) {
      const keys = Array.from({ length: n }, (_, i) => odd[(i * 7) % odd.length]! + String(n - i));
      const value = Object.fromEntries(keys.map((k, i) => [k, i]));
      const want = `{${[...keys]
        .sort()
        .map((k) => `${JSON.stringify(k)}:${value[k]}`)
        .join(',')}}`;
      expect(canonicalJson(value), `${n} keys`).toBe(want);
    }
  });
});

describe('sha256Hex and hashOf', () => {
  it('are sha256 hex of the text or bytes', () => {
    expect(sha256Hex('abc')).toBe(createHash('sha256').update('abc').digest('hex'));
    expect(sha256Hex(Buffer.from([0, 255]))).toBe(
      createHash('sha256')
        .update(Buffer.from([0, 255]))
        .digest('hex'),
    );
    expect(hashOf({ b: 1, a: 2 })).toBe(sha256Hex('{"a":2,"b":1}'));
  });
});

describe('sha256HexPrefix', () => {
  it.each([
    ['', 8, 'e3b0c44298fc1c14'],
    ['core.rukpak.io/revision', 8, sha256Hex('core.rukpak.io/revision').slice(0, 16)],
    ['x'.repeat(10_000), 4, sha256Hex('x'.repeat(10_000)).slice(0, 8)],
    [Buffer.from([0, 1, 2]), 32, sha256Hex(Buffer.from([0, 1, 2]))],
  ])('%#: the first bytes of the digest, in hex', (data, bytes, want) => {
    expect(sha256HexPrefix(data, bytes)).toBe(want);
  });
});
