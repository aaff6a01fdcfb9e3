/**
 * Registry credentials from a `kubernetes.io/dockerconfigjson` (or legacy `kubernetes.io/dockercfg`)
 * Secret, matched to an image the way the kubelet does it (pkg/credentialprovider keyring):
 *
 * - a key is `host[:port][/path]`, with or without a scheme; the port must match exactly;
 * - each DNS label of the host may be a glob (`*.example.com` matches `a.example.com`, not
 *   `example.com` nor `a.b.example.com`: the number of labels must be equal);
 * - the key's path must be a prefix of the image's repository path. Unlike the kubelet (a plain
 *   string prefix) we compare whole path components, so `acme` does not match `acme-evil`;
 * - `index.docker.io`, `registry-1.docker.io` and `https://index.docker.io/v1/` mean `docker.io`.
 *
 * When several keys match, the most specific wins: an exact host before a wildcard, then the longer
 * path. Only the winner's credentials are ever sent, and only to that registry (DESIGN §7).
 *
 * Pure: no I/O. Never puts credentials into error messages.
 */
import { createHash } from 'node:crypto';
import { HoistError } from '../../util/errors.ts';
import type { ImageReference } from './reference.ts';
import { SourceCode, sourceError } from '../errors.ts';

export interface RegistryCredential {
  username?: string;
  password?: string;
  /** an OAuth2 refresh token (`identitytoken` in docker config), exchanged at the token realm */
  identityToken?: string;
  /** a ready bearer token for the registry (`registrytoken` in docker config) */
  registryToken?: string;
}

interface KeyringEntry {
  hostLabels: string[];
  port: string;
  pathParts: string[];
  wildcard: boolean;
  credential: RegistryCredential;
}

export interface Keyring {
  /** the best credential for `ref`, or undefined (anonymous) */
  lookup(ref: ImageReference): RegistryCredential | undefined;
}

function badSecret(why: string): HoistError {
  return sourceError(`registry credentials secret is invalid: ${why}`, {
    stage: 'resolve',
    code: SourceCode.InvalidSecret,
    terminal: true,
  });
}

function normalizeHost(host: string): string {
  const h = host.toLowerCase();
  return h === 'index.docker.io' || h === 'registry-1.docker.io' ? 'docker.io' : h;
}

function parseKey(key: string): { hostLabels: string[]; port: string; pathParts: string[] } | undefined {
  const noScheme = key.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const slash = noScheme.indexOf('/');
  const hostPort = slash >= 0 ? noScheme.slice(0, slash) : noScheme;
  let path = slash >= 0 ? noScheme.slice(slash + 1) : '';
  if (hostPort === '') return undefined;
  let host = hostPort;
  let port = '';
  const m = /^(.*):([0-9]+)$/.exec(hostPort);
  if (m && !hostPort.endsWith(']')) {
    host = m[1] ?? '';
    port = m[2] ?? '';
  }
  host = normalizeHost(host);
  // Docker Hub's legacy key is https://index.docker.io/v1/: the /v1/ is an API version, not a path
  if (host === 'docker.io' && /^v[12]\/?$/.test(path)) path = '';
  return { hostLabels: host.split('.'), port, pathParts: path.split('/').filter((p) => p !== '') };
}

/** Go's filepath.Match restricted to what appears in registry hosts: `*` and `?` within one label. */
function globLabel(glob: string, label: string): boolean {
  if (!glob.includes('*') && !glob.includes('?')) return glob === label;
  const re = new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^.]*')
      .replace(/\?/g, '[^.]')}$`,
  );
  return re.test(label);
}

function decodeEntry(value: unknown): RegistryCredential {
  if (typeof value !== 'object' || value === null) throw badSecret('an auths entry is not an object');
  const v = value as Record<string, unknown>;
  const cred: RegistryCredential = {};
  if (typeof v.username === 'string' && v.username !== '') cred.username = v.username;
  if (typeof v.password === 'string' && v.password !== '') cred.password = v.password;
  if (typeof v.auth === 'string' && v.auth !== '' && cred.username === undefined) {
    const decoded = Buffer.from(v.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw badSecret('an "auth" field is not base64 of user:password');
    cred.username = decoded.slice(0, colon);
    cred.password = decoded.slice(colon + 1);
  }
  if (typeof v.identitytoken === 'string' && v.identitytoken !== '') cred.identityToken = v.identitytoken;
  if (typeof v.registrytoken === 'string' && v.registrytoken !== '') cred.registryToken = v.registrytoken;
  return cred;
}

/**
 * Builds a keyring from Secret data: `.dockerconfigjson` (`{"auths": {...}}`) or `.dockercfg`
 * (the bare map). Empty data gives an empty keyring.
 */
export function keyringFromSecretData(data: Record<string, string> | undefined): Keyring {
  const entries: KeyringEntry[] = [];
  const rawJson = data?.['.dockerconfigjson'] ?? data?.['.dockercfg'];
  if (data && rawJson === undefined && Object.keys(data).length > 0) {
    throw badSecret('expected a kubernetes.io/dockerconfigjson secret with a .dockerconfigjson key');
  }
  if (rawJson !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawJson);
    } catch {
      throw badSecret('not valid JSON');
    }
    if (typeof parsed !== 'object' || parsed === null) throw badSecret('not a JSON object');
    const obj = parsed as Record<string, unknown>;
    const auths = data?.['.dockerconfigjson'] !== undefined ? obj.auths : obj;
    if (typeof auths !== 'object' || auths === null) throw badSecret('missing "auths"');
    for (const [key, value] of Object.entries(auths as Record<string, unknown>)) {
      const k = parseKey(key);
      if (!k) continue;
      entries.push({ ...k, wildcard: k.hostLabels.some((l) => l.includes('*') || l.includes('?')), credential: decodeEntry(value) });
    }
  }
  // most specific first: exact hosts before globs, then longer paths
  entries.sort((a, b) => Number(a.wildcard) - Number(b.wildcard) || b.pathParts.length - a.pathParts.length);
  return {
    lookup(ref: ImageReference): RegistryCredential | undefined {
      const m = /^(.*):([0-9]+)$/.exec(ref.registry);
      const host = normalizeHost(m && !ref.registry.endsWith(']') ? (m[1] ?? '') : ref.registry);
      const port = m && !ref.registry.endsWith(']') ? (m[2] ?? '') : '';
      const labels = host.split('.');
      const repoParts = ref.repository.split('/');
      for (const e of entries) {
        if (e.port !== port || e.hostLabels.length !== labels.length) continue;
        if (!e.hostLabels.every((g, i) => globLabel(g, labels[i] ?? ''))) continue;
        if (!e.pathParts.every((p, i) => repoParts[i] === p)) continue;
        return e.credential;
      }
      return undefined;
    },
  };
}

/**
 * A stable, non-reversible identity of a credential (or "anonymous"), for telling whether two
 * BundleDeployments use the same access. An unsalted sha256 prefix is enough: it is compared in
 * memory only and never logged or written to status.
 */
export function credentialIdentity(cred: RegistryCredential | undefined): string {
  if (!cred) return 'anonymous';
  const h = createHash('sha256');
  h.update(JSON.stringify([cred.username ?? '', cred.password ?? '', cred.identityToken ?? '', cred.registryToken ?? '']));
  return `cred:${h.digest('hex').slice(0, 32)}`;
}
