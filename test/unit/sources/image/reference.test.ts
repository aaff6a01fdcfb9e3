import { describe, expect, it } from 'vitest';
import { formatReference, parseReference } from '../../../../src/sources/image/reference.ts';
import { isHoistError } from '../../../../src/util/errors.ts';

const D = `sha256:${'a'.repeat(64)}`;

describe('parseReference', () => {
  it('applies Docker Hub rules', () => {
    expect(parseReference('nginx')).toEqual({ registry: 'docker.io', apiHost: 'registry-1.docker.io', repository: 'library/nginx', tag: 'latest' });
    expect(parseReference('acme/app:1.2')).toMatchObject({ registry: 'docker.io', repository: 'acme/app', tag: '1.2' });
    expect(parseReference('docker.io/nginx')).toMatchObject({ repository: 'library/nginx' });
    expect(parseReference('index.docker.io/library/nginx:1')).toMatchObject({ registry: 'docker.io', apiHost: 'registry-1.docker.io', tag: '1' });
  });

  it('recognises registries by dot, port or localhost', () => {
    expect(parseReference('quay.io/acme/bundle:v1')).toMatchObject({ registry: 'quay.io', apiHost: 'quay.io', repository: 'acme/bundle', tag: 'v1' });
    expect(parseReference('127.0.0.1:5000/x/y')).toMatchObject({ registry: '127.0.0.1:5000', repository: 'x/y', tag: 'latest' });
    expect(parseReference('localhost/x')).toMatchObject({ registry: 'localhost', repository: 'x' });
    expect(parseReference('[::1]:5000/x:t')).toMatchObject({ registry: '[::1]:5000', repository: 'x', tag: 't' });
  });

  it('keeps digest and tag, digest pins', () => {
    const r = parseReference(`quay.io/acme/b:v1@${D}`);
    expect(r).toMatchObject({ tag: 'v1', digest: D });
    expect(parseReference(`quay.io/acme/b@${D}`).tag).toBeUndefined();
    expect(formatReference(r)).toBe(`quay.io/acme/b:v1@${D}`);
    expect(formatReference(parseReference('nginx'))).toBe('docker.io/library/nginx:latest');
  });

  it.each(['', 'Upper/case', 'quay.io/acme/b@sha256:abc', 'https://quay.io/a', 'a/b:bad tag', 'a//b', 'quay.io/'])('refuses %j', (raw) => {
    let err: unknown;
    try {
      parseReference(raw);
    } catch (e) {
      err = e;
    }
    expect(isHoistError(err)).toBe(true);
    expect(err).toMatchObject({ stage: 'spec', code: 'invalid-reference', terminal: true });
  });
});
