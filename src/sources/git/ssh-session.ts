/**
 * Git over SSH with the system's OpenSSH client, for one resolve or fetch. The key, known_hosts
 * and the client configuration live in a private directory (0700, files 0600) made for the
 * operation and removed with it; nothing goes through argv or a shell:
 *
 * - `ssh`: the client configuration, executable, whose first line is `#!<ssh> -F`, so running
 *   it runs `ssh -F <this file> <git's arguments>` (the controller image has no shell to run a
 *   GIT_SSH_COMMAND). git gets it as GIT_SSH. It pins the host key (`StrictHostKeyChecking yes`
 *   against this known_hosts only, no global file, no learning of new keys), the one identity
 *   (`IdentitiesOnly`, no agent), public-key authentication only, and turns off forwarding,
 *   proxies, control sockets and every other configuration source (`-F` skips ~/.ssh/config and
 *   /etc/ssh/ssh_config).
 * - `id` and `known_hosts`: from the Secret (./ssh-auth.ts).
 * - `askpass` (only for a key with a passphrase): a node script ssh runs for the key's passphrase
 *   prompt (SSH_ASKPASS_REQUIRE=force, BatchMode off); it answers that prompt only, with the
 *   passphrase from its environment (HOIST_SSH_PASSPHRASE), which only processes of this user can
 *   read. Without a passphrase ssh runs in BatchMode and never asks anything.
 *
 * The ref advertisement is read over ssh directly (`git-upload-pack '<path>'`, protocol v0,
 * answered with a flush so the server sends nothing more) and parsed as it arrives by the same
 * stream parser as smart HTTP's, under the same byte cap; `git fetch` runs the same client.
 */
import { accessSync, constants } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import { HoistError, type Stage } from '../../util/errors.ts';
import { SourceCode, sourceError } from '../errors.ts';
import { classifyFetchFailure, GitCommandError, runProgram, type GitRunOptions } from './git-cli.ts';
import { AdvertisementStream, type RefAdvertisement, type RefWants } from './ref-advertisement.ts';
import type { SshAuth } from './ssh-auth.ts';
import { knownHostsName, sshHostPort, uploadPackCommand, type SshRepository } from './ssh-url.ts';

/** The programs git over SSH runs. */
export interface SshPrograms {
  /** the OpenSSH client */
  ssh: string;
  /** checks a key (and its passphrase) before a connection is tried */
  keygen: string;
  /** runs the askpass script (the controller's own node) */
  node: string;
}

/** An operation's private ssh directory, written by `writeSshSession`. */
export interface SshSession {
  /** the configuration file, also the executable git runs as GIT_SSH */
  config: string;
  /** the private key file */
  keyFile: string;
  /** the directory: removed by the caller with the operation's temp directory */
  dir: string;
  /** environment for git and ssh: GIT_SSH, and the askpass when the key has a passphrase */
  env: Record<string, string>;
  programs: SshPrograms;
}

/** the absolute path of `name` on PATH, or undefined */
export function findProgram(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return undefined;
}

/** an ssh_config value: quoted, with ssh's `%` tokens escaped */
function configPath(p: string): string {
  return `"${p.replace(/%/g, '%%')}"`;
}

/** The client configuration (see the file comment); exported for the unit test that reads it. */
export function sshConfig(programs: SshPrograms, files: { keyFile: string; knownHosts: string }, batch: boolean): string {
  return [
    `#!${programs.ssh} -F`,
    '# Hoist: the ssh client configuration of one git operation, removed with it',
    'Host *',
    '  StrictHostKeyChecking yes',
    `  UserKnownHostsFile ${configPath(files.knownHosts)}`,
    '  GlobalKnownHostsFile /dev/null',
    '  UpdateHostKeys no',
    '  CheckHostIP no',
    '  VerifyHostKeyDNS no',
    `  IdentityFile ${configPath(files.keyFile)}`,
    '  IdentitiesOnly yes',
    '  IdentityAgent none',
    '  AddKeysToAgent no',
    `  BatchMode ${batch ? 'yes' : 'no'}`,
    '  NumberOfPasswordPrompts 1',
    '  PreferredAuthentications publickey',
    '  PubkeyAuthentication yes',
    '  PasswordAuthentication no',
    '  KbdInteractiveAuthentication no',
    '  GSSAPIAuthentication no',
    '  HostbasedAuthentication no',
    '  ConnectTimeout 30',
    // a server that stops answering is dropped after a minute, like http's low-speed limit
    '  ServerAliveInterval 15',
    '  ServerAliveCountMax 4',
    '  ForwardAgent no',
    '  ForwardX11 no',
    '  ClearAllForwardings yes',
    '  PermitLocalCommand no',
    '  ProxyCommand none',
    '  ProxyJump none',
    '  ControlMaster no',
    '  ControlPath none',
    '  RequestTTY no',
    '  EscapeChar none',
    '  LogLevel ERROR',
    '',
  ].join('\n');
}

/** the askpass script: answers ssh's prompt for the key's passphrase, and nothing else */
function askpassScript(node: string): string {
  return [
    `#!${node}`,
    "// Hoist: answers ssh's passphrase prompt for the key of one git operation; removed with it",
    "const prompt = process.argv[2] ?? '';",
    "if (!prompt.startsWith('Enter passphrase for key ')) process.exit(1);",
    "process.stdout.write(`${process.env.HOIST_SSH_PASSPHRASE ?? ''}\\n`);",
    '',
  ].join('\n');
}

/** a path the kernel accepts in a `#!` line: absolute, no whitespace */
function shebangSafe(p: string): boolean {
  return isAbsolute(p) && !/\s/.test(p) && p.length < 200;
}

/**
 * Writes the operation's ssh directory at `dir` (created, 0700; must not exist). Throws a
 * terminal `ssh-unavailable` HoistError when a program cannot be named in a `#!` line.
 */
export async function writeSshSession(dir: string, auth: SshAuth, programs: SshPrograms, stage: Stage, subject: string): Promise<SshSession> {
  for (const p of [programs.ssh, ...(auth.passphrase !== undefined ? [programs.node] : [])]) {
    if (!shebangSafe(p))
      throw sourceError(`cannot run ${p} for git over ssh: its path must be absolute and without spaces`, {
        stage,
        code: SourceCode.SshUnavailable,
        subject,
        terminal: true,
      });
  }
  await mkdir(dir, { mode: 0o700 });
  const keyFile = join(dir, 'id');
  const knownHosts = join(dir, 'known_hosts');
  const config = join(dir, 'ssh');
  await writeFile(keyFile, auth.privateKey, { mode: 0o600, flag: 'wx' });
  await writeFile(knownHosts, auth.knownHosts, { mode: 0o600, flag: 'wx' });
  await writeFile(config, sshConfig(programs, { keyFile, knownHosts }, auth.passphrase === undefined), { mode: 0o700, flag: 'wx' });
  const env: Record<string, string> = { GIT_SSH: config, GIT_SSH_VARIANT: 'ssh', SSH_ASKPASS_REQUIRE: 'never' };
  if (auth.passphrase !== undefined) {
    const askpass = join(dir, 'askpass');
    await writeFile(askpass, askpassScript(programs.node), { mode: 0o700, flag: 'wx' });
    Object.assign(env, { SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', HOIST_SSH_PASSPHRASE: auth.passphrase });
  }
  return { config, keyFile, dir, env, programs };
}

/** git config for a git command over ssh: ssh only, never http(s) */
export const SSH_PROTOCOL_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['protocol.ssh.allow', 'always'],
  ['protocol.https.allow', 'never'],
  ['protocol.http.allow', 'never'],
];

/**
 * Whether the key loads with the passphrase given (`ssh-keygen -y`, the passphrase on stdin):
 * undefined when it does, else why not, in words for a message. Run before a connection, so a
 * wrong passphrase is named as such instead of as a refused key.
 */
export async function privateKeyProblem(
  session: SshSession,
  auth: SshAuth,
  run: Pick<GitRunOptions, 'home' | 'timeoutMs' | 'signal'>,
): Promise<string | undefined> {
  try {
    await runProgram(session.programs.keygen, ['-y', '-f', session.keyFile], {
      ...run,
      env: { SSH_ASKPASS_REQUIRE: 'never' },
      input: `${auth.passphrase ?? ''}\n`,
    });
    return undefined;
  } catch (e) {
    // killed, or ssh-keygen did not run at all: that says nothing about the key
    if (!(e instanceof GitCommandError) || e.aborted || e.timedOut || e.exitCode === null) throw e;
    if (/incorrect passphrase/i.test(e.stderr)) {
      return auth.passphrase === undefined
        ? 'the private key is encrypted: put its passphrase in the secret as "passphrase" (or Flux\'s "password")'
        : 'the passphrase does not decrypt the private key';
    }
    const why = /Load key "[^"]*": (.+)/.exec(e.stderr)?.[1]?.trim();
    return `the private key cannot be read by ssh${why ? ` (${why})` : ''}`;
  }
}

/** What a failed ssh connection means, from OpenSSH's and the server's words on stderr. */
export interface SshFailure {
  code: SourceCode;
  message: string;
  terminal: boolean;
}

/**
 * Reads ssh's stderr (or git's, which carries ssh's): host key refusals, refused keys, missing
 * repositories and network trouble. Undefined when none of these; the caller falls back to its
 * own classification. Pure; the messages name the host, never a file of the session.
 */
export function classifySshFailure(stderr: string, repo: Pick<SshRepository, 'host' | 'port' | 'user'>): SshFailure | undefined {
  const host = sshHostPort(repo);
  // first: a failed askpass ends in "Permission denied (publickey)" too, which is not the server's refusal
  if (/cannot exec '[^']*': Permission denied|ssh_askpass: exec\([^)]*\): Permission denied/.test(stderr)) {
    return {
      code: SourceCode.SshUnavailable,
      message:
        "cannot run the ssh client's files from the operation's temporary directory (permission denied): the content cache and the temp directory must allow running files (not mounted noexec)",
      terminal: true,
    };
  }
  const offered = /The fingerprint for the (\S+) key sent by the remote host is\s+(\S+?)\.?\s*$/m.exec(stderr);
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for \S+ has changed|host key .* is marked as revoked/i.test(stderr)) {
    const which = offered ? ` (the server offered ${offered[1]} key ${offered[2]})` : '';
    return {
      code: SourceCode.HostKeyMismatch,
      message: `host key verification failed: the host key of ${host}${which} is not the one known_hosts lists for it; nothing was fetched`,
      terminal: true,
    };
  }
  const unknown = /No (\S+) host key is known for (\S+)/.exec(stderr);
  if (unknown) {
    return {
      code: SourceCode.HostKeyUnknown,
      message: `host key verification failed: known_hosts has no ${unknown[1]} key for ${host} (ssh looks it up as ${knownHostsName(repo)}); nothing was fetched`,
      terminal: true,
    };
  }
  if (/Host key verification failed/i.test(stderr)) {
    return { code: SourceCode.HostKeyMismatch, message: `host key verification failed for ${host}; nothing was fetched`, terminal: true };
  }
  if (/Permission denied \(/.test(stderr)) {
    return {
      code: SourceCode.AuthFailed,
      message: `the server refused the key for ${repo.user !== undefined ? `${repo.user}@` : ''}${host} (permission denied)`,
      terminal: true,
    };
  }
  if (/does not appear to be a git repository|repository not found|no such repository/i.test(stderr)) {
    return { code: SourceCode.NotFound, message: `repository not found on ${host}`, terminal: true };
  }
  const network =
    /(Connection refused|Connection timed out|Operation timed out|No route to host|Network is unreachable|Could not resolve hostname|Name or service not known|Temporary failure in name resolution|Connection reset|Connection closed|Broken pipe|Timeout, server \S+ not responding)/i.exec(
      stderr,
    );
  if (network) return { code: SourceCode.Network, message: `ssh to ${host}: ${network[1]!.toLowerCase()}`, terminal: false };
  return undefined;
}

export interface SshAdvertisementOptions {
  stage: Extract<Stage, 'resolve' | 'fetch'>;
  subject: string;
  signal: AbortSignal;
  wants: RefWants;
  maxBytes: number;
  /** the private HOME (cwd) of the ssh process */
  home: string;
  timeoutMs: number;
  secrets: readonly string[];
}

/**
 * The ref advertisement over ssh: one connection running `git-upload-pack '<path>'`, read as it
 * arrives into the stream parser keeping only the refs `wants` names, at most `maxBytes` (ssh is
 * killed past it: `too-large`). Throws HoistError; the deadline's reason when `signal` fires.
 */
export async function sshRefAdvertisement(session: SshSession, repo: SshRepository, opts: SshAdvertisementOptions): Promise<RefAdvertisement> {
  const stream = new AdvertisementStream(opts.wants);
  const fail = (message: string, code: SourceCode, terminal: boolean, cause?: unknown): HoistError =>
    sourceError(message, { stage: opts.stage, code, subject: opts.subject, terminal, ...(cause ? { cause } : {}) });
  let bytes = 0;
  const onStdout = (chunk: Buffer): void => {
    bytes += chunk.length;
    if (bytes > opts.maxBytes) throw fail(`ref advertisement is larger than the ${opts.maxBytes} bytes allowed`, SourceCode.TooLarge, true);
    try {
      stream.push(chunk);
    } catch (e) {
      throw fail(`malformed ref advertisement: ${(e as Error).message}`, SourceCode.ProtocolError, false);
    }
  };
  const destination = repo.user !== undefined ? `${repo.user}@${repo.host}` : repo.host;
  try {
    // "0000": the client wants nothing; upload-pack reads it after advertising and exits
    await runProgram(session.programs.ssh, ['-F', session.config, '-p', String(repo.port), '--', destination, uploadPackCommand(repo.path)], {
      home: opts.home,
      env: session.env,
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      secrets: opts.secrets,
      input: '0000',
      onStdout,
    });
  } catch (e) {
    if (e instanceof HoistError) throw e;
    if (!(e instanceof GitCommandError)) throw e;
    // killed by the deadline or the caller: withDeadline names the cause
    if (e.aborted || e.timedOut) throw classifyFetchFailure(e, opts.stage, opts.subject, true, opts.timeoutMs);
    if (!stream.complete) {
      const known = classifySshFailure(e.stderr, repo);
      if (known) throw fail(known.message, known.code, known.terminal, e);
      throw fail(`ssh to ${sshHostPort(repo)} failed: ${lastLine(e.stderr, session.dir) || `exit ${e.exitCode}`}`, SourceCode.Network, false, e);
    }
  }
  if (!stream.complete) throw fail('the server closed the connection before the end of the ref advertisement', SourceCode.ProtocolError, false);
  return { refs: stream.refs, capabilities: stream.capabilities, finalUrl: '' };
}

/** the last meaningful stderr line, without the session's paths */
export function lastLine(stderr: string, dir: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  return (lines.at(-1) ?? '')
    .split(dir)
    .join('')
    .replace(/^(fatal|error):\s*/i, '');
}
