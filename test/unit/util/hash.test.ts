import { describe, expect, it } from 'vitest';
import { sha256Hex, sha256HexPrefix } from '../../../src/util/hash.ts';

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
