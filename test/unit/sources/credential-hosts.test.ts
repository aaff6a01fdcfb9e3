import { describe, expect, it } from 'vitest';
import { credentialsForUrl, hostPort, parseHostEntry } from '../../../src/sources/credential-hosts.ts';
import type { Credentials } from '../../../src/sources/source.ts';
import { thrown as refusal } from '../../support/failure.ts';

const creds = (hosts?: string[]): Credentials => ({ data: { username: 'u', password: 'p4ss' }, secret: 'ns/creds', ...(hosts ? { hosts } : {}) });

describe('credential hosts', () => {
  it('spells out default ports and lowercases hosts', () => {
    expect(hostPort(new URL('https://Git.Example.com/x'))).toBe('git.example.com:443');
    expect(hostPort(new URL('https://git.example.com:8443/x'))).toBe('git.example.com:8443');
    expect(parseHostEntry(' Git.Example.com ')).toBe('git.example.com:443');
    expect(parseHostEntry('downloads.example.com:8443')).toBe('downloads.example.com:8443');
    expect(parseHostEntry('[::1]:8443')).toBe('[::1]:8443');
    for (const bad of ['', 'https://x.example', 'x.example/path', 'user@x.example', 'a b']) expect(parseHostEntry(bad)).toBeUndefined();
  });

  it('hands out credentials only for a listed host, on its port, over https', () => {
    const c = creds(['git.example.com', 'downloads.example.com:8443']);
    expect(credentialsForUrl(c, new URL('https://git.example.com/repo.git'), 'resolve')).toBe(c);
    expect(credentialsForUrl(c, new URL('https://downloads.example.com:8443/a.tgz'), 'fetch')).toBe(c);
    expect(credentialsForUrl(undefined, new URL('http://anything/'), 'fetch')).toBeUndefined();
    const table: Array<[string, string]> = [
      ['https://git.example.com:8443/repo.git', 'credential-host-mismatch'], // listed without port = 443 only
      ['https://downloads.example.com/a.tgz', 'credential-host-mismatch'],
      ['https://evil.example/a.tgz', 'credential-host-mismatch'],
      ['https://git.example.com.evil.example/a', 'credential-host-mismatch'],
      ['http://git.example.com/repo.git', 'insecure-credentials'],
    ];
    for (const [url, code] of table) {
      const e = refusal(() => credentialsForUrl(c, new URL(url), 'resolve'));
      expect([url, e.code, e.terminal, e.reason]).toEqual([url, code, true, 'ResolveFailed']);
      expect(e.message).toContain('ns/creds');
      expect(e.message).not.toContain('p4ss');
    }
  });

  it('refuses a secret that names no hosts', () => {
    for (const hosts of [undefined, [], ['not a host']]) {
      expect(refusal(() => credentialsForUrl(creds(hosts), new URL('https://git.example.com/'), 'fetch'))).toMatchObject({
        code: 'credential-hosts-missing',
        stage: 'fetch',
      });
    }
  });
});
