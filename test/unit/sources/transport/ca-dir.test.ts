import { mkdtemp, rm, symlink, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { caForUrl, readCaDir } from '../../../../src/sources/transport/ca-dir.ts';

const PEM = (n: string) => `-----BEGIN CERTIFICATE-----\n${n}\n-----END CERTIFICATE-----\n`;

describe('caForUrl', () => {
  const cas = new Map([
    ['registry.corp:5000', PEM('port')],
    ['registry.corp', PEM('any')],
  ]);
  it('prefers host:port, falls back to host, uses the scheme default port', () => {
    expect(caForUrl(cas, new URL('https://registry.corp:5000/v2/'))).toBe(PEM('port'));
    expect(caForUrl(cas, new URL('https://REGISTRY.corp:5001/v2/'))).toBe(PEM('any'));
    expect(caForUrl(new Map([['git.corp:443', PEM('443')]]), new URL('https://git.corp/x.git'))).toBe(PEM('443'));
    expect(caForUrl(cas, new URL('https://other.corp/'))).toBeUndefined();
    expect(caForUrl(undefined, new URL('https://registry.corp/'))).toBeUndefined();
  });
});

describe('readCaDir', () => {
  it('reads <host>[:port].crt, follows ConfigMap-style ..data links, skips other files, refuses non-PEM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hoist-ca-dir-'));
    try {
      await mkdir(join(dir, '..2026_data'));
      await writeFile(join(dir, '..2026_data', 'registry.corp:5000.crt'), PEM('a'));
      await symlink('..2026_data', join(dir, '..data'));
      await symlink('..data/registry.corp:5000.crt', join(dir, 'registry.corp:5000.crt'));
      await writeFile(join(dir, 'README'), 'not a cert');
      expect([...(await readCaDir(dir)).entries()]).toEqual([['registry.corp:5000', PEM('a')]]);
      await writeFile(join(dir, 'bad.crt'), 'garbage');
      await expect(readCaDir(dir)).rejects.toThrow(/bad.crt in the CA directory .* holds no PEM certificate/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
