/**
 * Credentials bound to hosts (docs/security.md, "Credentials and the content store"). A Secret
 * used by an http or git source must say which hosts it is for, in the annotation
 * `core.rukpak.io/credential-hosts` (`host` meaning port 443, or `host:port`, comma-separated);
 * a source on another host, or on plain http, never gets it. Registry credentials
 * (dockerconfigjson) name their registries themselves and are matched by the image source.
 *
 * Pure: no I/O. Messages name the secret and the host, never the secret's content.
 */
import { ANNOTATION_CREDENTIAL_HOSTS } from '../../api/v1alpha2/types.ts';
import { HoistError, redactUrl } from '../util/errors.ts';
import type { Credentials } from './source.ts';
import { SourceCode, sourceError } from './errors.ts';

/** `host:port` of a URL, lowercase, with the scheme's default port spelled out */
export function hostPort(url: URL): string {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  return `${url.hostname.toLowerCase()}:${port}`;
}

/** Parses one annotation entry the same way: `host` → `host:443`. Undefined when malformed. */
export function parseHostEntry(entry: string): string | undefined {
  const e = entry.trim();
  if (e === '' || /[/@?#\s]/.test(e)) return undefined;
  try {
    return hostPort(new URL(`https://${e}`));
  } catch {
    return undefined;
  }
}

/**
 * The credentials to use for `url`, or throws a terminal HoistError (stage as given) when the
 * secret is not bound to the URL's host, or the URL is not https. No credentials → undefined.
 */
export function credentialsForUrl(credentials: Credentials | undefined, url: URL, stage: 'resolve' | 'fetch'): Credentials | undefined {
  if (!credentials) return undefined;
  const secret = credentials.secret ? `secret ${credentials.secret}` : 'the auth secret';
  const fail = (message: string, code: SourceCode): HoistError => sourceError(message, { stage, code, subject: redactUrl(url.toString()), terminal: true });
  if (url.protocol !== 'https:') throw fail(`credentials are sent only over https; ${secret} is not used for an http:// url`, SourceCode.InsecureCredentials);
  // malformed entries (a URL, a path) bind nothing
  const hosts = (credentials.hosts ?? []).map(parseHostEntry).filter((h): h is string => h !== undefined);
  if (hosts.length === 0)
    throw fail(
      `${secret} does not say which hosts it is for: annotate it with ${ANNOTATION_CREDENTIAL_HOSTS} (host or host:port, comma-separated)`,
      SourceCode.CredentialHostsMissing,
    );
  const here = hostPort(url);
  if (!hosts.includes(here))
    throw fail(`${secret} is not bound to host ${here} (annotation ${ANNOTATION_CREDENTIAL_HOSTS})`, SourceCode.CredentialHostMismatch);
  return credentials;
}
