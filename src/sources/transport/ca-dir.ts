/**
 * A CA directory like containers' `certs.d`, flattened: one PEM file per host, named
 * `host:port.crt` (that port only) or `host.crt` (any port). The certificates are trusted for
 * that host only, in addition to the system roots and any global bundle, by every source.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FailureReason } from '../../util/errors.ts';
import { SourceCode, sourceError } from '../errors.ts';

/** `host[:port]` (lowercase) → PEM */
export type HostCAs = ReadonlyMap<string, string>;

/** Reads `dir`; a file that is not `<host>[:port].crt` or holds no PEM certificate is a start-up error. */
export async function readCaDir(dir: string): Promise<HostCAs> {
  const cas = new Map<string, string>();
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    // Kubernetes mounts ConfigMaps through `..data` symlinks and hidden directories
    if (entry.name.startsWith('.') || !entry.name.endsWith('.crt')) continue;
    const host = entry.name.slice(0, -'.crt'.length).toLowerCase();
    const pem = await readFile(join(dir, entry.name), 'utf8');
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
      throw sourceError(`${entry.name} in the CA directory ${dir} holds no PEM certificate`, {
        stage: 'spec',
        reason: FailureReason.InvalidConfig,
        code: SourceCode.InvalidCaDir,
        subject: dir,
        terminal: true,
      });
    }
    cas.set(host, pem);
  }
  return cas;
}

/** The CA for `url`'s host: `host:port` first, then `host`. */
export function caForUrl(cas: HostCAs | undefined, url: URL): string | undefined {
  if (!cas || cas.size === 0) return undefined;
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return cas.get(`${url.hostname.toLowerCase()}:${port}`) ?? cas.get(url.hostname.toLowerCase());
}
