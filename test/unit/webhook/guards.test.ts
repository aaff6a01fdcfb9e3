import { describe, expect, it } from 'vitest';
import { parsePush } from '../../../src/webhook/push-event.ts';
import { ReplayGuard } from '../../../src/webhook/replay-guard.ts';
import { KeyedBuckets, TokenBucket } from '../../../src/webhook/token-bucket.ts';
import { normalizeRepoUrl } from '../../../src/util/repo-url.ts';

describe('normalizeRepoUrl', () => {
  it('one spelling for scheme/host case, userinfo, default port, trailing .git and slashes', () => {
    const want = 'https://github.com/Org/Repo';
    for (const u of [
      'https://github.com/Org/Repo',
      'HTTPS://GitHub.COM/Org/Repo.git',
      'https://github.com/Org/Repo/',
      'https://github.com/Org/Repo.git/',
      'https://user:tok@github.com:443/Org/Repo.GIT',
    ]) {
      expect(normalizeRepoUrl(u), u).toBe(want);
    }
  });
  it('keeps what names another repository: path case, port, scheme', () => {
    expect(normalizeRepoUrl('https://github.com/org/repo')).not.toBe(normalizeRepoUrl('https://github.com/Org/Repo'));
    expect(normalizeRepoUrl('http://127.0.0.1:8080/a.git')).toBe('http://127.0.0.1:8080/a');
    expect(normalizeRepoUrl('http://127.0.0.1:8081/a.git')).not.toBe(normalizeRepoUrl('http://127.0.0.1:8080/a.git'));
    expect(normalizeRepoUrl('http://h/a')).not.toBe(normalizeRepoUrl('https://h/a'));
  });
  it('leaves non-URLs recognisable without throwing', () => {
    expect(normalizeRepoUrl('git@github.com:org/repo.git')).toBe('git@github.com:org/repo');
  });
});

describe('ReplayGuard', () => {
  it('refuses a repeat within the window and accepts it after', () => {
    const g = new ReplayGuard(1000);
    expect(g.firstSeen('a', 0)).toBe(true);
    expect(g.firstSeen('a', 999)).toBe(false);
    expect(g.firstSeen('b', 999)).toBe(true);
    expect(g.firstSeen('a', 1000)).toBe(true);
    // 'b' (seen at 999) is still remembered at 1998
    expect(g.firstSeen('b', 1998)).toBe(false);
  });
  it('is bounded: the oldest ids go first', () => {
    const g = new ReplayGuard(60_000, 3);
    for (const id of ['a', 'b', 'c', 'd']) expect(g.firstSeen(id, 0)).toBe(true);
    expect(g.size).toBe(3);
    expect(g.firstSeen('d', 1)).toBe(false);
    expect(g.firstSeen('a', 1)).toBe(true);
  });
});

describe('token buckets', () => {
  it('allows the burst, then the rate', () => {
    const b = new TokenBucket(2, 3, 0);
    expect([b.take(0), b.take(0), b.take(0), b.take(0)]).toEqual([true, true, true, false]);
    expect(b.take(499)).toBe(false);
    expect(b.take(500)).toBe(true);
    expect(b.take(500)).toBe(false);
    expect(b.take(10_000)).toBe(true);
  });
  it('per key: one sender exhausting its bucket does not limit another', () => {
    const k = new KeyedBuckets(1, 2);
    expect([k.take('1.1.1.1', 0), k.take('1.1.1.1', 0), k.take('1.1.1.1', 0)]).toEqual([true, true, false]);
    expect(k.take('2.2.2.2', 0)).toBe(true);
  });
  it('per key: bounded; full buckets are swept before a newcomer is refused', () => {
    const k = new KeyedBuckets(1, 1, 2);
    expect(k.take('a', 0)).toBe(true);
    expect(k.take('b', 0)).toBe(true);
    expect(k.take('c', 0)).toBe(false);
    expect(k.take('c', 1000)).toBe(true);
    expect(k.size).toBeLessThanOrEqual(2);
  });
});

describe('parsePush', () => {
  const j = (o: unknown): Buffer => Buffer.from(JSON.stringify(o));
  it('GitHub push: clone_url/html_url and the branch; ping, tags and branch deletions yield nothing', () => {
    const push = { ref: 'refs/heads/main', repository: { clone_url: 'https://github.com/o/r.git', html_url: 'https://github.com/o/r' } };
    expect(parsePush('github', 'push', j(push))).toEqual({ repositories: ['https://github.com/o/r.git', 'https://github.com/o/r'], branch: 'main' });
    expect(parsePush('github', 'ping', j(push))).toBeUndefined();
    expect(parsePush('github', 'push', j({ ...push, ref: 'refs/tags/v1' }))).toBeUndefined();
    expect(parsePush('github', 'push', j({ ...push, deleted: true }))).toBeUndefined();
  });
  it('GitLab Push Hook: project.git_http_url and the branch', () => {
    const push = { ref: 'refs/heads/release/1.x', project: { git_http_url: 'https://gitlab.com/g/p.git', web_url: 'https://gitlab.com/g/p' } };
    expect(parsePush('gitlab', 'Push Hook', j(push))).toEqual({
      repositories: ['https://gitlab.com/g/p.git', 'https://gitlab.com/g/p'],
      branch: 'release/1.x',
    });
    expect(parsePush('gitlab', 'Tag Push Hook', j(push))).toBeUndefined();
  });
  it('generic: {url, branch}', () => {
    expect(parsePush('generic', undefined, j({ url: 'https://h/r.git', branch: 'main' }))).toEqual({ repositories: ['https://h/r.git'], branch: 'main' });
    expect(parsePush('generic', undefined, j({ url: 'https://h/r.git' }))).toBeUndefined();
    expect(() => parsePush('generic', undefined, Buffer.from('{'))).toThrow(SyntaxError);
  });
});
