/**
 * Turns the referenced Secret's data into what the git source needs for an ssh repository: the
 * private key, its passphrase and the known_hosts the server's host key is checked against.
 * Pure; never logs; messages name the Secret's keys, never their content.
 *
 * Secret keys (Kubernetes' `kubernetes.io/ssh-auth` type and Flux's names, so either Secret works
 * as it is):
 * - `ssh-privatekey` (kubernetes.io/ssh-auth, kapp-controller) or `identity` (Flux): the private
 *   key, OpenSSH or PEM format;
 * - `passphrase`, or Flux's `password`: the key's passphrase, when it has one;
 * - `known_hosts` (Flux), or `ssh-knownhosts` (kapp-controller): known_hosts lines for the
 *   repository's host. Required: the host key is always verified.
 * Flux's `identity.pub` is not needed (ssh derives it) and not read.
 */
import { createHash } from 'node:crypto';
import type { Stage } from '../../util/errors.ts';
import type { Credentials } from '../source.ts';
import { SourceCode, sourceError } from '../errors.ts';

export interface SshAuth {
  /** the private key, LF line ends, ending in a newline (ssh refuses a key without one) */
  privateKey: string;
  passphrase?: string;
  /** known_hosts lines, LF line ends */
  knownHosts: string;
  /**
   * sha256 over the key, the passphrase and known_hosts: the credential the content store records
   * (another known_hosts is another credential, so a cache hit is proven against its host key)
   */
  id: string;
  /** `secret ns/name`, for messages */
  label: string;
}

/** the Secret keys read, in order of preference, for each part */
export const SSH_KEY_NAMES = {
  privateKey: ['ssh-privatekey', 'identity'],
  passphrase: ['passphrase', 'password'],
  knownHosts: ['known_hosts', 'ssh-knownhosts'],
} as const;

const MAX_KEY_BYTES = 64 * 1024;
const MAX_KNOWN_HOSTS_BYTES = 1024 * 1024;
/** ssh reads an askpass answer into a 1 KiB buffer */
const MAX_PASSPHRASE_BYTES = 1000;

/**
 * Validates the Secret for an ssh repository on `host` (`host:port`, for messages). Every problem
 * is terminal (the Secret must change): no Secret or no known_hosts is `known-hosts-missing`
 * naming the host; a missing, malformed or doubly given key is `invalid-credentials`.
 */
export function sshAuthFrom(credentials: Credentials | undefined, host: string, stage: Stage, subject: string): SshAuth {
  const data = credentials?.data ?? {};
  const secret = credentials?.secret ? `secret ${credentials.secret}` : 'the auth secret';
  const invalid = (message: string) => sourceError(message, { stage, code: SourceCode.InvalidCredentials, subject, terminal: true });
  const one = (names: readonly string[]): string | undefined => {
    const given = names.filter((n) => normalized(data[n]) !== undefined);
    const values = new Set(given.map((n) => normalized(data[n])));
    if (values.size > 1) throw invalid(`${secret} has both ${given.map((n) => `"${n}"`).join(' and ')} with different values; keep one`);
    return given.length > 0 ? normalized(data[given[0]!]) : undefined;
  };
  const knownHosts = one(SSH_KEY_NAMES.knownHosts);
  if (!credentials || knownHosts === undefined) {
    throw sourceError(
      credentials
        ? `${secret} has no known_hosts for ssh host ${host}: the host key is always verified; add the host's public keys as "known_hosts" (ssh-keyscan output)`
        : `ssh host ${host} needs auth.secretRef: a Secret with "ssh-privatekey" and "known_hosts" (the host key is always verified)`,
      { stage, code: SourceCode.KnownHostsMissing, subject, terminal: true },
    );
  }
  if (Buffer.byteLength(knownHosts) > MAX_KNOWN_HOSTS_BYTES) throw invalid(`${secret} "known_hosts" is larger than 1 MiB`);
  const privateKey = one(SSH_KEY_NAMES.privateKey);
  if (privateKey === undefined) throw invalid(`${secret} has no "ssh-privatekey" (or Flux's "identity") for ssh host ${host}`);
  if (Buffer.byteLength(privateKey) > MAX_KEY_BYTES) throw invalid(`${secret} "ssh-privatekey" is larger than 64 KiB`);
  if (!/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(privateKey)) {
    const pub = /^(ssh-|ecdsa-|sk-)\S+ AAAA/.test(privateKey) || privateKey.includes('PUBLIC KEY-----');
    throw invalid(`${secret} "ssh-privatekey" is ${pub ? 'a public key; it needs the private key' : 'not a private key (no "-----BEGIN … PRIVATE KEY-----")'}`);
  }
  const passphrase = one(SSH_KEY_NAMES.passphrase)?.replace(/\n$/, '');
  if (passphrase !== undefined) {
    if (passphrase.includes('\n')) throw invalid(`${secret} "passphrase" must be one line`);
    if (Buffer.byteLength(passphrase) > MAX_PASSPHRASE_BYTES) throw invalid(`${secret} "passphrase" is longer than ${MAX_PASSPHRASE_BYTES} bytes`);
  }
  const id = createHash('sha256')
    .update(privateKey)
    .update('\0')
    .update(passphrase ?? '')
    .update('\0')
    .update(knownHosts)
    .digest('hex');
  return { privateKey, knownHosts, id: `ssh-key-sha256:${id}`, label: secret, ...(passphrase !== undefined ? { passphrase } : {}) };
}

/** the strings that must never appear in a message: the passphrase and every line of the key's body */
export function sshSecrets(auth: SshAuth): string[] {
  const body = auth.privateKey.split('\n').filter((l) => l.length >= 8 && !l.startsWith('-----'));
  return [...(auth.passphrase !== undefined ? [auth.passphrase] : []), ...body];
}

/** CRLF → LF, one trailing newline; undefined when empty */
function normalized(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const t = v.replace(/\r\n?/g, '\n').replace(/\n+$/, '');
  return t.trim().length > 0 ? `${t}\n` : undefined;
}
