import { describe, expect, it } from 'vitest';
import { parseChallenges, pickChallenge } from '../../../../src/sources/image/challenge.ts';

describe('WWW-Authenticate parsing', () => {
  it('parses a registry bearer challenge', () => {
    const c = parseChallenges('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"');
    expect(c).toEqual([
      { scheme: 'bearer', params: { realm: 'https://auth.docker.io/token', service: 'registry.docker.io', scope: 'repository:library/nginx:pull' } },
    ]);
  });

  it('parses several challenges, quoted commas, escapes and tokens', () => {
    const c = parseChallenges('Basic realm="a, \\"b\\"", Bearer realm="https://x/t",error=insufficient_scope, scope="repository:a:pull,push"');
    expect(c).toEqual([
      { scheme: 'basic', params: { realm: 'a, "b"' } },
      { scheme: 'bearer', params: { realm: 'https://x/t', error: 'insufficient_scope', scope: 'repository:a:pull,push' } },
    ]);
    expect(pickChallenge(c)?.scheme).toBe('bearer');
  });

  it('accepts header arrays and garbage without throwing', () => {
    expect(parseChallenges(['Basic realm="r"', 'Bearer realm="https://t"']).map((c) => c.scheme)).toEqual(['basic', 'bearer']);
    expect(pickChallenge(parseChallenges('"unterminated'))).toBeUndefined();
    expect(parseChallenges(undefined)).toEqual([]);
    expect(pickChallenge(parseChallenges('Bearer service="x"'))).toBeUndefined();
  });
});
