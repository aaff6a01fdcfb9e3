import { describe, expect, it } from 'vitest';
import { GitSource } from '../../../src/sources/git/git-source.ts';
import { HttpSource, httpContentKey } from '../../../src/sources/http-source.ts';
import { ImageSource } from '../../../src/sources/image/image-source.ts';
import { createSourceRegistry } from '../../../src/sources/registry.ts';
import type { Source } from '../../../src/sources/source.ts';
import { isHoistError } from '../../../src/util/errors.ts';

describe('source registry', () => {
  it('serves every built-in kind and refuses unknown kinds as a terminal spec error', () => {
    const { sourceFor } = createSourceRegistry();
    expect(sourceFor('http')).toBeInstanceOf(HttpSource);
    expect(sourceFor('image')).toBeInstanceOf(ImageSource);
    expect(sourceFor('git')).toBeInstanceOf(GitSource);
    const r = createSourceRegistry();
    expect(r.kinds()).toEqual(['git', 'helm', 'http', 'image']);
    try {
      r.sourceFor('ftp');
      expect.unreachable();
    } catch (e) {
      expect(isHoistError(e) && e.stage === 'spec' && e.code === 'unsupported-source' && e.terminal).toBe(true);
    }
  });

  it('replaces a kind with another implementation', () => {
    const r = createSourceRegistry();
    const git: Source = { kind: 'git', resolve: async () => ({ status: { kind: 'git' }, key: 'k', pinned: true }), fetch: async () => '/x' };
    r.register(git);
    expect(r.sourceFor('git')).toBe(git);
    expect(r.kinds()).toEqual(['git', 'helm', 'http', 'image']);
  });
});

describe('http source spec handling (no network)', () => {
  const s = new HttpSource();
  it('a pin resolves without I/O, lower-cased', async () => {
    const hex = 'AB'.repeat(32);
    const r = await s.resolve({ kind: 'http', http: { url: 'https://nowhere.invalid/x.tgz', sha256: hex } }, {});
    expect(r).toEqual({ status: { kind: 'http', sha256: hex.toLowerCase() }, key: httpContentKey(hex.toLowerCase()), pinned: true });
  });

  it.each([
    [{ url: 'ftp://h/x.tgz' }, 'invalid-url'],
    [{ url: 'not a url' }, 'invalid-url'],
    [{ url: 'https://h/x.tgz', sha256: 'abc' }, 'invalid-digest'],
  ])('refuses %j as %s', async (http, code) => {
    await expect(s.resolve({ kind: 'http', http }, {})).rejects.toMatchObject({ stage: 'spec', code, terminal: true });
  });
});
