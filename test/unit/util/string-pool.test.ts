import { describe, expect, it } from 'vitest';
import { StringPool } from '../../../src/util/string-pool.ts';

// Which copy of a string a value holds is not observable from JavaScript (the heap it saves is
// measured in docs/benchmarks.md); these check what is: values unchanged, the pool bounded, no
// prototype change, bounded recursion
describe('StringPool', () => {
  it('interns the short strings of a parsed value in place and leaves everything else as it was', () => {
    const pool = new StringPool(100, 16);
    const long = 'x'.repeat(17);
    const a = JSON.parse('{"s":"same","n":1,"b":true,"z":null,"arr":["same",{"deep":"same"}],"long":"' + long + '"}') as Record<string, unknown>;
    const b = JSON.parse('{"s":"same","__proto__":"same","arr":[["same"]]}') as Record<string, unknown>;
    const before = JSON.stringify(a);
    expect(pool.internAll(a)).toBe(a);
    pool.internAll(b);
    expect(JSON.stringify(a)).toBe(before);
    expect(b).toEqual(JSON.parse('{"s":"same","__proto__":"same","arr":[["same"]]}'));
    expect(Object.getPrototypeOf(b)).toBe(Object.prototype);
  });

  it('empties itself at its entry limit rather than growing', () => {
    const pool = new StringPool(3, 64);
    for (let i = 0; i < 10; i++) pool.string(`s${i}`);
    expect((pool as unknown as { pool: Map<string, string> }).pool.size).toBeLessThanOrEqual(3);
  });

  it('stops at the depth limit (a value nested deeper keeps its own strings, and nothing recurses without bound)', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(() => new StringPool().internAll(deep)).not.toThrow();
  });
});
