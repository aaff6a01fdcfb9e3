import { describe, expect, it } from 'vitest';
import { insecureHostsOf, parseRegistriesConf, pullLocations } from '../../../../src/sources/image/registries-conf.ts';
import { formatReference, parseReference } from '../../../../src/sources/image/reference.ts';
import { HoistError } from '../../../../src/util/errors.ts';

const D = `sha256:${'a'.repeat(64)}`;

const CONF = `
unqualified-search-registries = ["docker.io"]

[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "mirror.corp/quay"
[[registry.mirror]]
location = "10.0.0.5:5000/quay"
insecure = true

[[registry]]
prefix = "quay.io/acme/special"
location = "special.corp/acme"

[[registry]]
location = "evil.example"
blocked = true

[[registry]]
location = "registry.cluster.local:5000"
insecure = true
`;

function locations(ref: string): string[] {
  return pullLocations(parseRegistriesConf(CONF), parseReference(ref), 'fetch').map(
    (l) => `${formatReference(l.ref)}${l.insecure ? ' (insecure)' : ''}${l.mirror ? ' [mirror]' : ''}`,
  );
}

describe('registries.conf', () => {
  it('tries mirrors in order, then the location, for a digest reference', () => {
    expect(locations(`quay.io/acme/op@${D}`)).toEqual([
      `mirror.corp/quay/acme/op@${D} [mirror]`,
      `10.0.0.5:5000/quay/acme/op@${D} (insecure) [mirror]`,
      `quay.io/acme/op@${D}`,
    ]);
  });

  it('never uses mirrors for a tag (its content could not be verified)', () => {
    expect(locations('quay.io/acme/op:v1')).toEqual(['quay.io/acme/op:v1']);
  });

  it('picks the longest prefix at whole path components and rewrites to its location', () => {
    expect(locations(`quay.io/acme/special/op@${D}`)).toEqual([`special.corp/acme/op@${D}`]);
    expect(locations(`quay.io/acme/specialx@${D}`)[0]).toBe(`mirror.corp/quay/acme/specialx@${D} [mirror]`);
  });

  it('leaves unmatched references alone and marks insecure registries', () => {
    expect(locations('ghcr.io/x/y:1')).toEqual(['ghcr.io/x/y:1']);
    expect(locations('registry.cluster.local:5000/b:1')).toEqual(['registry.cluster.local:5000/b:1 (insecure)']);
    expect(insecureHostsOf(parseRegistriesConf(CONF)).sort()).toEqual(['10.0.0.5:5000', 'registry.cluster.local:5000']);
  });

  it('refuses a blocked registry with a terminal error naming it', () => {
    let err: unknown;
    try {
      locations('evil.example/x:1');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HoistError);
    expect((err as HoistError).code).toBe('registry-blocked');
    expect((err as HoistError).message).toContain('evil.example is blocked');
    expect((err as HoistError).terminal).toBe(true);
  });

  it('rejects malformed files clearly', () => {
    expect(() => parseRegistriesConf('[[registry]\nlocation=', '/etc/hoist/registries.conf')).toThrow(/invalid registries.conf/);
    expect(() => parseRegistriesConf('[[registry]]\ninsecure = "yes"\nlocation="a.b"')).toThrow(/insecure must be true or false/);
    expect(() => parseRegistriesConf('[[registry]]\nprefix = "*.corp"\nlocation="a.b"')).toThrow(/wildcard/);
    expect(() => parseRegistriesConf('[[registry]]\nblocked = true')).toThrow(/needs a location or a prefix/);
    expect(() => parseRegistriesConf('[[registry]]\nlocation="a.b"\n[[registry]]\nlocation="a.b"')).toThrow(/twice/);
  });

  it('an empty file configures nothing', () => {
    expect(parseRegistriesConf('').registries).toEqual([]);
  });
});
