/**
 * A real OpenSSH server for the git-over-SSH tests: Debian's `sshd` (openssh-server, installed by
 * scripts/ensure-packages.sh) on 127.0.0.1 at a free port, with its own configuration, host key
 * and authorized keys in a temp directory, logging in as the user running the tests (root here),
 * public keys only. Every session is forced through a small wrapper that allows
 * `git-upload-pack '<path>'` only and serves the bare repositories under `root` (as git's ssh
 * paths say them: `/org/repo.git`, `~/org/repo.git` and `org/repo.git` all name
 * `<root>/org/repo.git`), and logs each command it is asked to run — what the tests count.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export const SSHD = '/usr/sbin/sshd';

export interface SshServerOptions {
  /** directory holding the bare repositories */
  root: string;
  /** public keys (one `ssh-ed25519 AAAA…` line each) allowed to log in */
  authorizedKeys: readonly string[];
  /**
   * false: do not accept the client's GIT_PROTOCOL, so upload-pack speaks only v0 and refuses
   * wants no ref advertises (like servers that do not pass the variable on). Default true.
   */
  protocolV2?: boolean;
  /** seconds the wrapper sleeps before serving a path ending in this (a stalled server) */
  stall?: { suffix: string; seconds: number };
}

export interface SshServer {
  host: '127.0.0.1';
  port: number;
  /** the login name: the user running the tests */
  user: string;
  /** `[127.0.0.1]:<port> ssh-ed25519 AAAA…`: the known_hosts line of this server's host key */
  knownHosts: string;
  /** `ssh://<user>@127.0.0.1:<port>/<path>` */
  url(path: string): string;
  /** git's scp-like form with the port in brackets: `<user>@[127.0.0.1:<port>]:<path>` */
  scpUrl(path: string): string;
  /** the commands sessions asked for, in order (`git-upload-pack '/deploy.git'`) */
  commands(): Promise<string[]>;
  /** connections accepted so far (authenticated or not), from sshd's log */
  connections(): number;
  /** sshd's log (stderr) */
  log(): string;
  close(): Promise<void>;
}

export interface SshKeyPair {
  privateKey: string;
  publicKey: string;
}

/** A fresh ed25519 key pair made by ssh-keygen, optionally with a passphrase. */
export async function generateSshKey(dir: string, name: string, passphrase = ''): Promise<SshKeyPair> {
  const file = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', `hoist-test-${name}`, '-f', file], { stdio: 'ignore' });
  return { privateKey: await readFile(file, 'utf8'), publicKey: (await readFile(`${file}.pub`, 'utf8')).trim() };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** the forced command: git-upload-pack of a repository under ROOT, nothing else */
function wrapperScript(root: string, commandLog: string, stall: SshServerOptions['stall']): string {
  return `#!/bin/sh
# hoist test sshd: every session runs this instead of what it asked for
printf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> '${commandLog}'
case "$SSH_ORIGINAL_COMMAND" in
  "git-upload-pack '"*"'") ;;
  *) echo "this server runs git-upload-pack only" >&2; exit 1 ;;
esac
p=\${SSH_ORIGINAL_COMMAND#"git-upload-pack '"}
p=\${p%"'"}
case "$p" in *"'"*|*..*) echo "fatal: '$p': not served here" >&2; exit 128 ;; esac
p=\${p#/}
p=\${p#"~/"}
[ -d '${root}'/"$p" ] || { echo "fatal: '$p' does not appear to be a git repository" >&2; exit 128; }
${stall ? `case "$p" in *'${stall.suffix}') sleep ${stall.seconds} ;; esac` : ''}
export HOME='${root}' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
exec git-upload-pack --strict '${root}'/"$p"
`;
}

/** Starts sshd on a free loopback port; resolves once it listens. */
export async function startSshServer(opts: SshServerOptions): Promise<SshServer> {
  if (!existsSync(SSHD)) throw new Error(`${SSHD} not found: install Debian's openssh-server (scripts/ensure-packages.sh)`);
  const dir = await mkdtemp(join(tmpdir(), 'hoist-sshd-'));
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_ed25519')], { stdio: 'ignore' });
  const hostKey = (await readFile(join(dir, 'host_ed25519.pub'), 'utf8')).trim().split(' ').slice(0, 2).join(' ');
  await writeFile(join(dir, 'authorized_keys'), opts.authorizedKeys.map((k) => `${k}\n`).join(''), { mode: 0o600 });
  const commandLog = join(dir, 'commands.log');
  await writeFile(commandLog, '');
  const wrapper = join(dir, 'git-only.sh');
  await writeFile(wrapper, wrapperScript(opts.root, commandLog, opts.stall));
  await chmod(wrapper, 0o755);
  // sshd checks its privilege separation directory exists even with a config of its own
  if (!existsSync('/run/sshd')) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const user = userInfo().username;

  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const config = join(dir, 'sshd_config');
    await writeFile(
      config,
      [
        `ListenAddress 127.0.0.1:${port}`,
        `HostKey ${join(dir, 'host_ed25519')}`,
        'PidFile none',
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
        `AllowUsers ${user}`,
        'StrictModes no',
        'UsePAM no',
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        'DisableForwarding yes',
        'PermitTTY no',
        'PermitUserEnvironment no',
        'MaxStartups 100',
        'LoginGraceTime 30',
        ...(opts.protocolV2 === false ? [] : ['AcceptEnv GIT_PROTOCOL']),
        `ForceCommand ${wrapper}`,
        'LogLevel VERBOSE',
        '',
      ].join('\n'),
    );
    const proc: ChildProcess = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    const listening = await new Promise<boolean>((resolve) => {
      proc.stderr!.on('data', (d: Buffer) => {
        log = (log + d.toString('utf8')).slice(-1_000_000);
        if (log.includes(`Server listening on 127.0.0.1 port ${port}`)) resolve(true);
      });
      proc.on('exit', () => resolve(false));
    });
    if (!listening) {
      if (attempt < 5 && /Address already in use/.test(log)) continue;
      await rm(dir, { recursive: true, force: true });
      throw new Error(`sshd did not start: ${log}`);
    }
    return {
      host: '127.0.0.1',
      port,
      user,
      knownHosts: `[127.0.0.1]:${port} ${hostKey}`,
      url: (path) => `ssh://${user}@127.0.0.1:${port}/${path.replace(/^\//, '')}`,
      scpUrl: (path) => `${user}@[127.0.0.1:${port}]:${path}`,
      async commands() {
        return readFileSync(commandLog, 'utf8')
          .split('\n')
          .filter((l) => l.length > 0);
      },
      connections: () => log.split('\n').filter((l) => l.startsWith('Connection from ')).length,
      log: () => log,
      async close() {
        if (proc.exitCode === null) {
          const exited = new Promise((r) => proc.once('exit', r));
          proc.kill('SIGTERM');
          await exited;
        }
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
}
