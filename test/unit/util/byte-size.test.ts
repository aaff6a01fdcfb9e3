import { describe, expect, it } from 'vitest';
import { parseByteSize } from '../../../src/util/byte-size.ts';

describe('parseByteSize', () => {
  it('reads bytes and Kubernetes-style binary and decimal suffixes', () => {
    expect(parseByteSize('1536Mi')).toBe(1536 * 2 ** 20);
    expect(parseByteSize('2Gi')).toBe(2 * 2 ** 30);
    expect(parseByteSize('500M')).toBe(500_000_000);
    expect(parseByteSize('1.5Ki')).toBe(1536);
    expect(parseByteSize('4096')).toBe(4096);
  });
  it('refuses anything else, naming the flag', () => {
    for (const bad of ['', '0', '-1Gi', '2GB', '1 Gi', 'lots']) expect(() => parseByteSize(bad, '--cache-max-size')).toThrow(/--cache-max-size/);
  });
});
