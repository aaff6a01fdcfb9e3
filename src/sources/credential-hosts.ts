/**
 * Credentials bound to hosts (docs/security.md, "Credentials and the content store"). A Secret
 * used by an http or git source must say which hosts it is for, in the annotation
 * `core.rukpak.io/credential-hosts` (`host` meaning the scheme's default port — 443, or 22 for
 * an ssh repository — or `host:port`, comma-separated); a source on another host, or on plain
 * http, never gets it. Registry credentials
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

/**
 * Parses one annotation entry the same way: `host` → `host:<defaultPort>` (443, the https port;
 * 22 for an ssh repository), `host:port` as written. Undefined when malformed.
 */
export function parseHostEntry(entry: string, defaultPort = 443): string | undefined {
  const e = entry.trim();
  if (e === '' || /[/@?#\s]/.test(e)) return undefined;
  try {
    const url = new URL(`https://${e}`);
    // the URL drops an explicit :443 as https's default: that entry still means 443
    const port = url.port !== '' ? url.port : /:\d+$/.test(e) ? '443' : String(defaultPort);
    return `${url.hostname.toLowerCase()}:${port}`;
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
  const subject = redactUrl(url.toString());
  if (url.protocol !== 'https:') {
    throw refusal(
      `credentials are sent only over https; ${secretName(credentials)} is not used for an http:// url`,
      SourceCode.InsecureCredentials,
      subject,
      stage,
    );
  }
  return boundTo(credentials, hostPort(url), 443, subject, stage);
}

/**
 * The credentials for an ssh repository on `host` (`host:port`, lowercase, IPv6 in brackets):
 * the same binding as for https, a bare annotation entry meaning port 22. Throws like
 * credentialsForUrl; ssh is encrypted, so there is no insecure-transport refusal.
 */
export function credentialsForSshHost(
  credentials: Credentials | undefined,
  host: string,
  subject: string,
  stage: 'resolve' | 'fetch',
): Credentials | undefined {
  if (!credentials) return undefined;
  return boundTo(credentials, host, 22, subject, stage);
}

function secretName(credentials: Credentials): string {
  return credentials.secret ? `secret ${credentials.secret}` : 'the auth secret';
}

function refusal(message: string, code: SourceCode, subject: string, stage: 'resolve' | 'fetch'): HoistError {
  return sourceError(message, { stage, code, subject, terminal: true });
}

function boundTo(credentials: Credentials, here: string, defaultPort: number, subject: string, stage: 'resolve' | 'fetch'): Credentials {
  const secret = secretName(credentials);
  // malformed entries (a URL, a path) bind nothing
  const hosts = (credentials.hosts ?? []).map((h) => parseHostEntry(h, defaultPort)).filter((h): h is string => h !== undefined);
  if (hosts.length === 0)
    throw refusal(
      `${secret} does not say which hosts it is for: annotate it with ${ANNOTATION_CREDENTIAL_HOSTS} (host or host:port, comma-separated)`,
      SourceCode.CredentialHostsMissing,
      subject,
      stage,
    );
  if (!hosts.includes(here))
    throw refusal(`${secret} is not bound to host ${here} (annotation ${ANNOTATION_CREDENTIAL_HOSTS})`, SourceCode.CredentialHostMismatch, subject, stage);
  return credentials;
}
