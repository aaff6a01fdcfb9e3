import { describe, expect, it } from 'vitest';
import { credentialIdentity, keyringFromSecretData } from '../../../../src/sources/image/docker-config.ts';
import { parseReference } from '../../../../src/sources/image/reference.ts';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const secret = (auths: Record<string, unknown>): Record<string, string> => ({ '.dockerconfigjson': JSON.stringify({ auths }) });

describe('dockerconfigjson keyring', () => {
  const ring = keyringFromSecretData(
    secret({
      'quay.io': { auth: b64('plain:p1') },
      'quay.io/acme': { username: 'acme', password: 'p:with:colons' },
      '*.example.com': { auth: b64('wild:p3') },
      'registry.example.com:5000': { auth: b64('port:p4') },
      'https://index.docker.io/v1/': { auth: b64('hub:p5') },
      'http://ghcr.io/org/team': { auth: b64('team:p6') },
    }),
  );
  const who = (ref: string): string | undefined => ring.lookup(parseReference(ref))?.username;

  it('matches exact hosts and prefers the longest path', () => {
    expect(who('quay.io/other/x')).toBe('plain');
    expect(who('quay.io/acme/x:1')).toBe('acme');
    expect(ring.lookup(parseReference('quay.io/acme/x'))?.password).toBe('p:with:colons');
    // whole path components: acme does not match acme-evil
    expect(who('quay.io/acme-evil/x')).toBe('plain');
  });

  it('matches wildcard labels one level only, and ports exactly', () => {
    expect(who('a.example.com/x')).toBe('wild');
    expect(who('a.b.example.com/x')).toBeUndefined();
    expect(who('example.com/x')).toBeUndefined();
    expect(who('registry.example.com:5000/x')).toBe('port');
    expect(who('registry.example.com/x')).toBe('wild');
    expect(who('a.example.com:5000/x')).toBeUndefined();
  });

  it('maps the Docker Hub legacy key and strips schemes', () => {
    expect(who('nginx')).toBe('hub');
    expect(who('docker.io/acme/app')).toBe('hub');
    expect(who('ghcr.io/org/team/app')).toBe('team');
    expect(who('ghcr.io/org/other')).toBeUndefined();
  });

  it('refuses malformed secrets without echoing them', () => {
    expect(() => keyringFromSecretData({ '.dockerconfigjson': '{not json p4ssw0rd' })).toThrow(/not valid JSON$/);
    expect(() => keyringFromSecretData({ username: 'x', password: 'y' })).toThrow(/dockerconfigjson/);
    expect(keyringFromSecretData(undefined).lookup(parseReference('nginx'))).toBeUndefined();
    expect(keyringFromSecretData({ '.dockercfg': JSON.stringify({ 'quay.io': { auth: b64('old:x') } }) }).lookup(parseReference('quay.io/a'))?.username).toBe(
      'old',
    );
  });

  it('derives stable identities that hide the secret', () => {
    const a = credentialIdentity({ username: 'u', password: 'secret' });
    expect(a).toBe(credentialIdentity({ username: 'u', password: 'secret' }));
    expect(a).not.toBe(credentialIdentity({ username: 'u', password: 'other' }));
    expect(a).not.toContain('secret');
    expect(credentialIdentity(undefined)).toBe('anonymous');
  });
});
