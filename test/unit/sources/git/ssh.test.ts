/**
 * Pure parts of git over SSH: addresses as git reads them, the Secret's keys, host binding, the
 * client configuration, and ssh's own words mapped to codes. The real client against a real sshd
 * is test/integration/sources/git/git-ssh.test.ts and test/e2e/git-ssh.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { credentialsForSshHost, parseHostEntry } from '../../../../src/sources/credential-hosts.ts';
import { parseGitSpec } from '../../../../src/sources/git/git-source.ts';
import { sshAuthFrom, sshSecrets } from '../../../../src/sources/git/ssh-auth.ts';
import { classifySshFailure, lastLine, sshConfig } from '../../../../src/sources/git/ssh-session.ts';
import { isSshRepository, knownHostsName, parseSshRepository, sshHostPort, uploadPackCommand } from '../../../../src/sources/git/ssh-url.ts';
import type { Credentials } from '../../../../src/sources/source.ts';
import { thrown as refusal } from '../../../support/failure.ts';

describe('ssh addresses, read as git reads them', () => {
  it('tells ssh addresses from URLs and local paths (git url_is_local_not_ssh)', () => {
    const table: Array<[string, boolean]> = [
      ['ssh://git@github.com/org/repo.git', true],
      ['git+ssh://git@host/repo', true],
      ['ssh+git://host/repo', true],
      ['git@github.com:org/repo.git', true],
      ['host:repo', true],
      ['git@[::1]:repo.git', true],
      ['https://github.com/org/repo.git', false],
      ['git://host/repo', false],
      ['file:///srv/repo.git', false],
      ['./dir:with-colon', false],
      ['/srv/repo.git', false],
      ['repo', false],
    ];
    for (const [address, ssh] of table) expect([address, isSshRepository(address)]).toEqual([address, ssh]);
  });

  it('parses user, host, port and the path git sends', () => {
    const table: Array<[string, { form: string; user?: string; host: string; port: number; path: string }]> = [
      ['ssh://git@github.com/org/repo.git', { form: 'url', user: 'git', host: 'github.com', port: 22, path: '/org/repo.git' }],
      ['ssh://git@git.corp.example:2222/org/repo.git', { form: 'url', user: 'git', host: 'git.corp.example', port: 2222, path: '/org/repo.git' }],
      ['ssh://host.example/repo', { form: 'url', host: 'host.example', port: 22, path: '/repo' }],
      ['git+ssh://deploy@host:22/a/b', { form: 'url', user: 'deploy', host: 'host', port: 22, path: '/a/b' }],
      // git: ~ paths are sent without the leading slash (relative to a home directory)
      ['ssh://git@host/~/repo.git', { form: 'url', user: 'git', host: 'host', port: 22, path: '~/repo.git' }],
      ['ssh://git@host/~alice/repo.git', { form: 'url', user: 'git', host: 'host', port: 22, path: '~alice/repo.git' }],
      // git decodes percent-escapes of an ssh:// URL
      ['ssh://git@host/my%20repo.git', { form: 'url', user: 'git', host: 'host', port: 22, path: '/my repo.git' }],
      ['ssh://git@[::1]:2222/repo.git', { form: 'url', user: 'git', host: '::1', port: 2222, path: '/repo.git' }],
      ['ssh://[fe80::1]/repo.git', { form: 'url', host: 'fe80::1', port: 22, path: '/repo.git' }],
      ['git@github.com:org/repo.git', { form: 'scp', user: 'git', host: 'github.com', port: 22, path: 'org/repo.git' }],
      ['git@ssh.dev.azure.com:v3/org/project/repo', { form: 'scp', user: 'git', host: 'ssh.dev.azure.com', port: 22, path: 'v3/org/project/repo' }],
      ['host.example:/srv/git/repo.git', { form: 'scp', host: 'host.example', port: 22, path: '/srv/git/repo.git' }],
      ['git@host:~/repo.git', { form: 'scp', user: 'git', host: 'host', port: 22, path: '~/repo.git' }],
      ['git@host:/~u/repo.git', { form: 'scp', user: 'git', host: 'host', port: 22, path: '~u/repo.git' }],
      ['git@[::1]:repo.git', { form: 'scp', user: 'git', host: '::1', port: 22, path: 'repo.git' }],
      // git's bracket form carries a port in an scp-like address, the user outside or inside
      ['git@[127.0.0.1:2222]:org/repo.git', { form: 'scp', user: 'git', host: '127.0.0.1', port: 2222, path: 'org/repo.git' }],
      ['[git@127.0.0.1:2222]:org/repo.git', { form: 'scp', user: 'git', host: '127.0.0.1', port: 2222, path: 'org/repo.git' }],
      ['[host.example]:repo', { form: 'scp', host: 'host.example', port: 22, path: 'repo' }],
    ];
    for (const [address, want] of table) expect([address, parseSshRepository(address)]).toEqual([address, want]);
  });

  it('refuses what git would pass to ssh as an option, passwords, and malformed hosts and ports', () => {
    const table: Array<[string, RegExp, boolean?]> = [
      ['ssh://-oProxyCommand=touch%20x/repo', /host "-oProxyCommand=touch x" is not a host name/],
      ['ssh://-oProxyCommand=x@host/repo', /user "-oProxyCommand=x" is not a valid login name/],
      ['-oProxyCommand=x:repo', /host "-oProxyCommand=x" is not a host name/],
      ['ssh://git:hunter2@host/repo', /must not contain a password/, true],
      ['ssh://host:0/repo', /port "0" is not 1-65535/],
      ['ssh://host:99999/repo', /port "99999" is not 1-65535/],
      ['ssh://host:ssh/repo', /port "ssh" is not 1-65535/],
      ['ssh://host', /no path after the host/],
      ['ssh://host/', /no repository path/],
      ['git@host:', /no repository path/],
      ['ssh://ho st/repo', /whitespace/],
      ['ssh://host/re\npo', /whitespace/],
      ['ssh://host/a%0Ab', /control characters/],
      ['ssh://@host/repo', /user "" is not a valid login name/],
      ['ssh://ho$t/repo', /host "ho\$t" is not a host name/],
      ['git@[::1:repo', /unclosed "\["/],
      ['ssh://[::1]x/repo', /unexpected "x" after the bracketed host/],
    ];
    for (const [address, problem, credentials] of table) {
      const r = parseSshRepository(address);
      expect('problem' in r ? [address, r.problem, r.credentials ?? false] : [address, 'parsed']).toEqual([
        address,
        expect.stringMatching(problem),
        credentials ?? false,
      ]);
    }
  });

  it('names hosts as credential-hosts entries and known_hosts do', () => {
    expect(sshHostPort({ host: 'GitHub.com', port: 22 })).toBe('github.com:22');
    expect(sshHostPort({ host: '::1', port: 2222 })).toBe('[::1]:2222');
    expect(knownHostsName({ host: 'github.com', port: 22 })).toBe('github.com');
    expect(knownHostsName({ host: '127.0.0.1', port: 2222 })).toBe('[127.0.0.1]:2222');
  });

  it("quotes the remote command as git's sq_quote does", () => {
    expect(uploadPackCommand('/org/repo.git')).toBe("git-upload-pack '/org/repo.git'");
    expect(uploadPackCommand("it's!.git")).toBe("git-upload-pack 'it'\\''s'\\!'.git'");
  });

  it('the git spec takes an ssh address as given, and refuses one with a password without showing it', () => {
    const spec = (repository: string) => ({ kind: 'git' as const, git: { repository, ref: { branch: 'main' } } });
    const t = parseGitSpec(spec('git@github.com:org/repo.git'), 'resolve');
    expect(t).toMatchObject({ displayUrl: 'git@github.com:org/repo.git', ssh: { host: 'github.com', path: 'org/repo.git' } });
    expect(parseGitSpec(spec('https://github.com/org/repo.git'), 'resolve').ssh).toBeUndefined();
    const pw = refusal(() => parseGitSpec(spec('ssh://git:hunter22@host/repo.git'), 'resolve'));
    expect(pw).toMatchObject({ code: 'credentials-in-url', terminal: true });
    expect(`${pw.message} ${pw.subject}`).not.toContain('hunter22');
    expect(refusal(() => parseGitSpec(spec('ssh://-oProxyCommand=x/repo'), 'resolve'))).toMatchObject({ code: 'unsupported-url', terminal: true });
    expect(refusal(() => parseGitSpec(spec('git://host/repo'), 'resolve')).message).toBe('only http(s) and ssh repositories are supported, not git');
  });
});

describe('ssh credentials are bound to their host', () => {
  const creds = (hosts?: string[]): Credentials => ({ data: { 'ssh-privatekey': 'k' }, secret: 'ns/deploy-key', ...(hosts ? { hosts } : {}) });

  it('a bare host means port 22 for ssh (443 for https); host:port as written', () => {
    expect(parseHostEntry('github.com', 22)).toBe('github.com:22');
    expect(parseHostEntry('github.com')).toBe('github.com:443');
    expect(parseHostEntry('github.com:443', 22)).toBe('github.com:443');
    expect(parseHostEntry('git.corp:2222', 22)).toBe('git.corp:2222');
    const table: Array<[string[], string, string | undefined]> = [
      [['github.com'], 'github.com:22', undefined],
      [['GitHub.com:22'], 'github.com:22', undefined],
      [['git.corp:2222', 'github.com'], 'git.corp:2222', undefined],
      [['github.com'], 'github.com:2222', 'credential-host-mismatch'],
      [['github.com:443'], 'github.com:22', 'credential-host-mismatch'],
      [['gitlab.com'], 'github.com:22', 'credential-host-mismatch'],
      [['github.com.evil.example'], 'github.com:22', 'credential-host-mismatch'],
      [['[::1]:2222'], '[::1]:2222', undefined],
      [[], 'github.com:22', 'credential-hosts-missing'],
      [['ssh://github.com'], 'github.com:22', 'credential-hosts-missing'],
    ];
    for (const [hosts, here, code] of table) {
      if (code === undefined) {
        expect(credentialsForSshHost(creds(hosts), here, 'ssh://x', 'resolve')).toBeDefined();
        continue;
      }
      const e = refusal(() => credentialsForSshHost(creds(hosts), here, 'ssh://x', 'fetch'));
      expect([hosts, here, e.code, e.terminal, e.stage]).toEqual([hosts, here, code, true, 'fetch']);
      expect(e.message).toContain('ns/deploy-key');
    }
    expect(credentialsForSshHost(undefined, 'github.com:22', 'ssh://x', 'resolve')).toBeUndefined();
  });
});

describe('the Secret of an ssh repository', () => {
  const KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----';
  const KNOWN = 'github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHoistUnitTestHostKeyNotARealOne0000000000';
  const from = (data: Record<string, string> | undefined) =>
    sshAuthFrom(data ? { data, secret: 'ns/deploy-key', hosts: ['github.com'] } : undefined, 'github.com:22', 'resolve', 'git@github.com:o/r.git');

  it('reads the kubernetes.io/ssh-auth key, Flux names and kapp-controller names alike', () => {
    const a = from({ 'ssh-privatekey': KEY, known_hosts: KNOWN });
    expect(a).toMatchObject({ privateKey: `${KEY}\n`, knownHosts: `${KNOWN}\n`, label: 'secret ns/deploy-key' });
    expect(a.passphrase).toBeUndefined();
    const flux = from({ identity: `${KEY}\r\n`, 'identity.pub': 'ssh-ed25519 AAAA x', known_hosts: KNOWN, password: 'pass phrase\n' });
    expect(flux).toMatchObject({ privateKey: `${KEY}\n`, passphrase: 'pass phrase' });
    expect(from({ 'ssh-privatekey': KEY, 'ssh-knownhosts': KNOWN, passphrase: 'p' })).toMatchObject({ knownHosts: `${KNOWN}\n`, passphrase: 'p' });
    // the same key under both names is fine
    expect(from({ 'ssh-privatekey': KEY, identity: KEY, known_hosts: KNOWN }).privateKey).toBe(`${KEY}\n`);
  });

  it('its identity changes with the key, the passphrase and known_hosts, and never holds them', () => {
    const ids = [
      from({ 'ssh-privatekey': KEY, known_hosts: KNOWN }),
      from({ 'ssh-privatekey': KEY, known_hosts: KNOWN, passphrase: 'p' }),
      from({ 'ssh-privatekey': KEY, known_hosts: `${KNOWN}\nother ssh-ed25519 AAAA` }),
      from({ 'ssh-privatekey': KEY.replace('bm9uZQ', 'bm9uZR'), known_hosts: KNOWN }),
    ].map((a) => a.id);
    expect(new Set(ids).size).toBe(4);
    for (const id of ids) expect(id).toMatch(/^ssh-key-sha256:[0-9a-f]{64}$/);
    const secrets = sshSecrets(from({ 'ssh-privatekey': KEY, known_hosts: KNOWN, passphrase: 'pass phrase' }));
    expect(secrets).toEqual(['pass phrase', 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ']);
  });

  it('refuses, naming the host or the key, never the content', () => {
    const table: Array<[Record<string, string> | undefined, string, RegExp]> = [
      [undefined, 'known-hosts-missing', /^ssh host github\.com:22 needs auth\.secretRef/],
      [{ 'ssh-privatekey': KEY }, 'known-hosts-missing', /^secret ns\/deploy-key has no known_hosts for ssh host github\.com:22/],
      [{ 'ssh-privatekey': KEY, known_hosts: '  \n' }, 'known-hosts-missing', /no known_hosts/],
      [{ known_hosts: KNOWN }, 'invalid-credentials', /has no "ssh-privatekey" \(or Flux's "identity"\)/],
      [{ username: 'u', password: 'p', known_hosts: KNOWN }, 'invalid-credentials', /has no "ssh-privatekey"/],
      [{ 'ssh-privatekey': 'ssh-ed25519 AAAAC3Nza hoist', known_hosts: KNOWN }, 'invalid-credentials', /is a public key; it needs the private key/],
      [{ 'ssh-privatekey': 'hunter22-not-a-key', known_hosts: KNOWN }, 'invalid-credentials', /is not a private key/],
      [
        { 'ssh-privatekey': KEY, identity: KEY.replace('bm9uZQ', 'bm9uZR'), known_hosts: KNOWN },
        'invalid-credentials',
        /has both "ssh-privatekey" and "identity" with different values/,
      ],
      [{ 'ssh-privatekey': KEY, known_hosts: KNOWN, passphrase: 'a', password: 'b' }, 'invalid-credentials', /has both "passphrase" and "password"/],
      [{ 'ssh-privatekey': KEY, known_hosts: KNOWN, passphrase: 'two\nlines' }, 'invalid-credentials', /"passphrase" must be one line/],
      [{ 'ssh-privatekey': `${KEY}\n${'A'.repeat(70_000)}`, known_hosts: KNOWN }, 'invalid-credentials', /larger than 64 KiB/],
    ];
    for (const [data, code, message] of table) {
      const e = refusal(() => from(data));
      expect([e.code, e.terminal, e.stage, e.subject]).toEqual([code, true, 'resolve', 'git@github.com:o/r.git']);
      expect(e.message).toMatch(message);
      expect(e.message).not.toContain('hunter22');
      expect(e.message).not.toContain('b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ');
    }
  });
});

describe('the ssh client configuration', () => {
  const programs = { ssh: '/usr/bin/ssh', keygen: '/usr/bin/ssh-keygen', node: '/usr/local/bin/node' };

  it('is an executable that runs ssh -F on itself, pinning the host key, one identity and no other source', () => {
    const text = sshConfig(programs, { keyFile: '/tmp/hoist-ssh-1/ssh/id', knownHosts: '/tmp/hoist-ssh-1/ssh/known_hosts' }, true);
    const lines = text.split('\n');
    expect(lines[0]).toBe('#!/usr/bin/ssh -F');
    for (const want of [
      'StrictHostKeyChecking yes',
      'UserKnownHostsFile "/tmp/hoist-ssh-1/ssh/known_hosts"',
      'GlobalKnownHostsFile /dev/null',
      'UpdateHostKeys no',
      'IdentityFile "/tmp/hoist-ssh-1/ssh/id"',
      'IdentitiesOnly yes',
      'IdentityAgent none',
      'BatchMode yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PreferredAuthentications publickey',
      'ForwardAgent no',
      'ProxyCommand none',
      'ControlPath none',
    ])
      expect(lines).toContain(`  ${want}`);
    // a key with a passphrase: no BatchMode, so ssh asks the askpass once
    expect(sshConfig(programs, { keyFile: '/k', knownHosts: '/h' }, false).split('\n')).toContain('  BatchMode no');
    // ssh expands % tokens in paths: a literal % is doubled
    expect(sshConfig(programs, { keyFile: '/w%d/id', knownHosts: '/h' }, true)).toContain('IdentityFile "/w%%d/id"');
  });
});

describe("ssh's words, mapped to codes that name the host", () => {
  const repo = { user: 'git', host: '127.0.0.1', port: 2222 };
  // what OpenSSH 9.2 (and git-upload-pack behind it) print, as captured from the real client
  const CHANGED = `@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Someone could be eavesdropping on you right now (man-in-the-middle attack)!
It is also possible that a host key has just been changed.
The fingerprint for the ED25519 key sent by the remote host is
SHA256:GIrCopi02v6WErID7oyLf9gAWyLM8tgY607GD6kKm+M.
Please contact your system administrator.
Add correct host key in /tmp/hoist-ssh-Ab12/ssh/known_hosts to get rid of this message.
Offending ED25519 key in /tmp/hoist-ssh-Ab12/ssh/known_hosts:1
  remove with:
  ssh-keygen -f "/tmp/hoist-ssh-Ab12/ssh/known_hosts" -R "[127.0.0.1]:2222"
Host key for [127.0.0.1]:2222 has changed and you have requested strict checking.
Host key verification failed.
fatal: Could not read from remote repository.`;

  it('classifies host key refusals, refused keys, missing repositories and network trouble', () => {
    const table: Array<[string, string | undefined, boolean | undefined, RegExp | undefined]> = [
      [
        CHANGED,
        'host-key-mismatch',
        true,
        /^host key verification failed: the host key of 127\.0\.0\.1:2222 \(the server offered ED25519 key SHA256:GIrC.*M\) is not the one known_hosts lists for it; nothing was fetched$/,
      ],
      [
        'No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\nHost key verification failed.\n',
        'host-key-unknown',
        true,
        /^host key verification failed: known_hosts has no ED25519 key for 127\.0\.0\.1:2222 \(ssh looks it up as \[127\.0\.0\.1\]:2222\)/,
      ],
      ['Host key verification failed.\n', 'host-key-mismatch', true, /^host key verification failed for 127\.0\.0\.1:2222/],
      [
        'git@127.0.0.1: Permission denied (publickey).\r\nfatal: Could not read from remote repository.\n',
        'auth-failed',
        true,
        /^the server refused the key for git@127\.0\.0\.1:2222/,
      ],
      ["fatal: '/org/nope.git' does not appear to be a git repository\n", 'not-found', true, /^repository not found on 127\.0\.0\.1:2222$/],
      ['ERROR: Repository not found.\nfatal: Could not read from remote repository.\n', 'not-found', true, /repository not found/],
      ['ssh: connect to host 127.0.0.1 port 2222: Connection refused\n', 'network', false, /^ssh to 127\.0\.0\.1:2222: connection refused$/],
      ['ssh: Could not resolve hostname nowhere.invalid: Name or service not known\n', 'network', false, /could not resolve hostname/],
      ['kex_exchange_identification: read: Connection reset by peer\n', 'network', false, /connection reset/],
      ["fatal: cannot exec '/tmp/hoist-ssh-Ab12/ssh/ssh': Permission denied\nfatal: unable to fork\n", 'ssh-unavailable', true, /not mounted noexec/],
      [
        'ssh_askpass: exec(/tmp/hoist-ssh-Ab12/ssh/askpass): Permission denied\ngit@127.0.0.1: Permission denied (publickey).\n',
        'ssh-unavailable',
        true,
        /cannot run the ssh client's files/,
      ],
      ['fatal: the remote end hung up unexpectedly\n', undefined, undefined, undefined],
    ];
    for (const [stderr, code, terminal, message] of table) {
      const f = classifySshFailure(stderr, repo);
      if (code === undefined) {
        expect(f).toBeUndefined();
        continue;
      }
      expect([f?.code, f?.terminal]).toEqual([code, terminal]);
      expect(f?.message).toMatch(message!);
      expect(f?.message).not.toContain('/tmp/');
    }
  });

  it('a fallback line leaves out the session directory', () => {
    expect(lastLine('Load key "/tmp/hoist-ssh-Ab12/ssh/id": invalid format\n', '/tmp/hoist-ssh-Ab12/ssh')).toBe('Load key "/id": invalid format');
  });
});
