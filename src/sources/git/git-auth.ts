/**
 * Turns the referenced Secret's data into what the git source sends: one Authorization header
 * (Basic) and an optional custom CA. Pure; never logs.
 *
 * Secret keys (the conventions of Flux and Argo CD):
 * - `username` + `password`: Basic auth.
 * - `token`: Basic auth with the token as password and `username` if given, else
 *   `x-access-token`. Basic-with-token is what GitHub, GitLab, Gitea, Bitbucket and Azure DevOps
 *   all accept over smart HTTP; `Authorization: Bearer` is not universally accepted for git.
 * - `ca.crt` (optional): PEM bundle trusted for this repository, beside `defaultCa` (the
 *   controller's bundle, `--ca-dir`, the source's caSecretRef / caConfigMapRef) and the roots.
 */
import type { Credentials } from '../source.ts';
import { HoistError, type Stage } from '../../util/errors.ts';
import { SourceCode, sourceError } from '../errors.ts';
import type { SshAuth } from './ssh-auth.ts';

export interface GitAuth {
  /** full Authorization header value, or undefined for anonymous access */
  header?: string;
  /** extra PEM CAs, trusted beside the roots; undefined = the roots only */
  ca?: string;
  /** every secret string that must never appear in a message (password, token, header value) */
  secrets: string[];
  /** an ssh repository's key and known_hosts (./ssh-auth.ts); then there is no header or CA */
  ssh?: SshAuth;
}

export const DEFAULT_TOKEN_USERNAME = 'x-access-token';

/** Validates the Secret's shape; a half-filled secret is a terminal spec problem, not a retry. */
export function gitAuthFrom(credentials: Credentials | undefined, stage: Stage, subject: string, defaultCa?: string): GitAuth {
  const data = credentials?.data ?? {};
  const cas = [defaultCa, nonEmpty(data['ca.crt'])].filter((c): c is string => c !== undefined);
  const ca = cas.length > 0 ? cas.join('\n') : undefined;
  const username = nonEmpty(data.username);
  const password = nonEmpty(data.password);
  const token = nonEmpty(data.token);
  const invalid = (message: string): HoistError => sourceError(message, { stage, code: SourceCode.InvalidCredentials, subject, terminal: true });
  let user: string | undefined;
  let secret: string | undefined;
  if (token !== undefined) {
    if (password !== undefined) throw invalid('auth secret has both "token" and "password"; keep one');
    user = username ?? DEFAULT_TOKEN_USERNAME;
    secret = token;
  } else if (password !== undefined) {
    if (username === undefined) throw invalid('auth secret has "password" but no "username"');
    user = username;
    secret = password;
  } else if (username !== undefined) {
    throw invalid('auth secret has "username" but neither "password" nor "token"');
  }
  if (user !== undefined && user.includes(':')) throw invalid('auth secret "username" must not contain ":"');
  const auth: GitAuth = { secrets: [] };
  if (ca !== undefined) auth.ca = ca;
  if (user !== undefined && secret !== undefined) {
    const encoded = Buffer.from(`${user}:${secret}`, 'utf8').toString('base64');
    auth.header = `Basic ${encoded}`;
    auth.secrets = [secret, encoded, auth.header];
    if (password !== undefined) auth.secrets.push(password);
  }
  return auth;
}

function nonEmpty(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const t = v.replace(/[\r\n]+$/, '');
  return t.length > 0 ? t : undefined;
}

/**
 * Replaces every occurrence of a secret (and URL userinfo) in text meant for a message. Defence
 * in depth: messages are built from our own words and git's stderr, neither of which should hold
 * a secret, but a misbehaving server may echo one back.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text.replace(/(\w+:\/\/)[^/@\s]*@/g, '$1');
  for (const s of secrets) {
    if (s.length >= 4) out = out.split(s).join('[redacted]');
  }
  return out;
}
