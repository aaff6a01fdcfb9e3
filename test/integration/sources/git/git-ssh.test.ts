/**
 * The git source over SSH against a real OpenSSH server (test/support/ssh-server.ts: Debian's
 * sshd on loopback, forced to git-upload-pack) and the real OpenSSH client: both address forms,
 * passphrase keys, the host key always verified, the same bounds and deadlines as smart HTTP,
 * protocol v0 servers, and key material only in 0600 files of a private directory that is gone
 * afterwards — never in argv. Budgets are counted from the server's own logs, so they are exact.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../../src/cache/fs-content-store.ts';
import { GitSource, type GitSourceOptions } from '../../../../src/sources/git/git-source.ts';
import type { SourceContext } from '../../../../src/sources/source.ts';
import { failure } from '../../../support/failure.ts';
import { git, setAllowUnadvertisedWants } from '../../../support/git-server.ts';
import { createHostileRepos, type HostileRepos } from '../../../support/git-hostile.ts';
import { generateSshKey, startSshServer, type SshKeyPair, type SshServer } from '../../../support/ssh-server.ts';

const PASSPHRASE = 'correct horse 7f3a-never-shown';

let root: string;
let repos: string;
let server: SshServer;
let v0: SshServer;
let key: SshKeyPair;
let locked: SshKeyPair;
let stranger: SshKeyPair;
let c1: string;
let c2: string;
/** on no branch or tag tip: v0 servers refuse to serve it by id */
let c0: string;
let tips: HostileRepos['tips'];
let work: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hoist-git-ssh-'));
  ({ repos, tips } = await createHostileRepos(join(root, 'hostile')));
  work = join(root, 'work');
  await mkdir(join(work, 'manifests', 'app'), { recursive: true });
  git(work, ['init', '-q', '-b', 'main']);
  await writeFile(join(work, 'README.md'), '# demo\n');
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', 'c0']);
  c0 = git(work, ['rev-parse', 'HEAD']);
  await writeFile(join(work, 'manifests', 'app', 'cm.yaml'), 'kind: ConfigMap\nmetadata: { name: one }\n');
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', 'c1']);
  c1 = git(work, ['rev-parse', 'HEAD']);
  git(work, ['tag', '-a', 'v1.0.0', '-m', 'release 1.0.0']);
  await writeFile(join(work, 'manifests', 'app', 'cm.yaml'), 'kind: ConfigMap\nmetadata: { name: two }\n');
  git(work, ['commit', '-qam', 'c2']);
  c2 = git(work, ['rev-parse', 'HEAD']);
  git(work, ['tag', 'v1.1.0']);
  await mkdir(join(repos, 'org'), { recursive: true });
  git(root, ['clone', '-q', '--bare', '--mirror', work, join(repos, 'org', 'deploy.git')]);
  git(root, ['clone', '-q', '--bare', '--mirror', work, join(repos, 'org', 'deploy-stall.git')]);
  setAllowUnadvertisedWants(join(repos, 'org', 'deploy.git'), false);
  key = await generateSshKey(root, 'deploy');
  locked = await generateSshKey(root, 'locked', PASSPHRASE);
  stranger = await generateSshKey(root, 'stranger');
  server = await startSshServer({ root: repos, authorizedKeys: [key.publicKey, locked.publicKey], stall: { suffix: '-stall.git', seconds: 30 } });
  v0 = await startSshServer({ root: repos, authorizedKeys: [key.publicKey], protocolV2: false });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await v0?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

const newStore = (): FsContentStore => new FsContentStore({ root: join(root, `store-${Math.random().toString(36).slice(2)}`) });

function spec(repository: string, ref: Record<string, string>, directory = 'manifests/app'): SourceSpec {
  return { kind: 'git', git: { repository, ref, directory } };
}

function ctx(srv: SshServer, data: Record<string, string>, hosts = [`127.0.0.1:${srv.port}`]): SourceContext {
  return { credentials: { data, secret: 'ns/deploy-key', hosts } };
}
const good = (srv: SshServer = server): SourceContext => ctx(srv, { 'ssh-privatekey': key.privateKey, known_hosts: srv.knownHosts });

/** the commands and connections the server saw while `f` ran */
async function seen<T>(srv: SshServer, f: () => Promise<T>): Promise<{ result: T; commands: string[]; connections: number }> {
  const before = { commands: (await srv.commands()).length, connections: srv.connections() };
  const result = await f();
  // sshd logs a connection as it accepts it; the wrapper logs the command before it runs
  return { result, commands: (await srv.commands()).slice(before.commands), connections: srv.connections() - before.connections };
}

async function sourceOf(opts: GitSourceOptions = {}): Promise<{ source: GitSource; workRoot: string }> {
  const workRoot = await mkdtemp(join(root, 'wr-'));
  return { source: new GitSource({ workRoot, ...opts }), workRoot };
}

describe('resolve and fetch over ssh', () => {
  it('a branch: one connection to resolve (the ref advertisement), one to fetch, none for a second fetch', async () => {
    const { source, workRoot } = await sourceOf();
    const store = newStore();
    const s = spec(server.url('org/deploy.git'), { branch: 'main' });
    const r = await seen(server, () => source.resolve(s, good()));
    expect(r.result.status).toMatchObject({ kind: 'git', commit: c2, ref: 'refs/heads/main' });
    expect(r.commands).toEqual(["git-upload-pack '/org/deploy.git'"]);
    expect(r.connections).toBe(1);
    const f = await seen(server, () => source.fetch(s, r.result, store, good()));
    expect(await readFile(join(f.result, 'cm.yaml'), 'utf8')).toContain('name: two');
    expect(await readdir(f.result)).toEqual(['cm.yaml']);
    expect(f.commands).toEqual(["git-upload-pack '/org/deploy.git'"]);
    const again = await seen(server, () => source.fetch(s, r.result, store, good()));
    expect(again.result).toBe(f.result);
    expect([again.commands, again.connections]).toEqual([[], 0]);
    // the key, known_hosts and ssh configuration were in directories that are gone
    expect(await readdir(workRoot)).toEqual([]);
  });

  it('an annotated tag (peeled), a semver range and a pinned commit, through the scp-like form', async () => {
    const { source } = await sourceOf();
    const store = newStore();
    const scp = server.scpUrl('org/deploy.git');
    const tag = await source.resolve(spec(scp, { tag: 'v1.0.0' }), good());
    expect(tag.status).toMatchObject({ commit: c1, ref: 'refs/tags/v1.0.0' });
    const semver = await source.resolve(spec(scp, { semver: '>=1.0.0 <2' }), good());
    expect(semver.status).toMatchObject({ commit: c2, ref: 'refs/tags/v1.1.0' });
    const pinned = await seen(server, async () => {
      const s = spec(scp, { commit: c1 });
      const r = await source.resolve(s, good());
      return source.fetch(s, r, store, good());
    });
    // scp-like: the path as written, relative to the login's home
    expect(pinned.commands).toEqual(["git-upload-pack 'org/deploy.git'"]);
    expect(await readFile(join(pinned.result, 'cm.yaml'), 'utf8')).toContain('name: one');
  });

  it('a key with a passphrase (Flux names: identity, password); a wrong passphrase is refused before connecting', async () => {
    const { source } = await sourceOf();
    const s = spec(server.url('org/deploy.git'), { branch: 'main' });
    const flux = ctx(server, { identity: locked.privateKey, 'identity.pub': locked.publicKey, password: PASSPHRASE, known_hosts: server.knownHosts });
    const r = await source.resolve(s, flux);
    expect(r.status.commit).toBe(c2);
    expect(await readFile(join(await source.fetch(s, r, newStore(), flux), 'cm.yaml'), 'utf8')).toContain('name: two');
    const wrong = await seen(server, () =>
      failure(source.resolve(s, ctx(server, { 'ssh-privatekey': locked.privateKey, passphrase: 'not it', known_hosts: server.knownHosts }))),
    );
    expect(wrong.result).toMatchObject({ code: 'invalid-credentials', terminal: true, stage: 'resolve' });
    expect(wrong.result.message).toBe('secret ns/deploy-key "ssh-privatekey": the passphrase does not decrypt the private key');
    const none = await seen(server, () => failure(source.resolve(s, ctx(server, { 'ssh-privatekey': locked.privateKey, known_hosts: server.knownHosts }))));
    expect(none.result.message).toMatch(/the private key is encrypted: put its passphrase in the secret as "passphrase"/);
    expect([wrong.connections, none.connections]).toEqual([0, 0]);
  });

  it('a hashed known_hosts (ssh-keygen -H) verifies the same', async () => {
    const file = join(root, 'known_hosts_hashed');
    await writeFile(file, `${server.knownHosts}\n`);
    execFileSync('ssh-keygen', ['-q', '-H', '-f', file], { stdio: 'ignore' });
    const hashed = await readFile(file, 'utf8');
    expect(hashed).toMatch(/^\|1\|/);
    const { source } = await sourceOf();
    const r = await source.resolve(
      spec(server.url('org/deploy.git'), { branch: 'main' }),
      ctx(server, { 'ssh-privatekey': key.privateKey, known_hosts: hashed }),
    );
    expect(r.status.commit).toBe(c2);
  });

  it('a protocol v0 server: a commit no ref points at is found through the ref advertisement over ssh', async () => {
    const { source } = await sourceOf();
    const s = spec(v0.url('org/deploy.git'), { commit: c0 }, '');
    const f = await seen(v0, async () => source.fetch(s, await source.resolve(s, good(v0)), newStore(), good(v0)));
    expect(await readdir(f.result)).toEqual(['README.md']);
    // the refused depth-1 fetch, the advertisement, the fetch of every branch and tag
    expect(f.commands).toEqual(Array(3).fill("git-upload-pack '/org/deploy.git'"));
  });
});

describe('the host key is always verified', () => {
  const otherHostKey = async (): Promise<string> =>
    (await generateSshKey(root, `h-${Math.random().toString(36).slice(2)}`)).publicKey.split(' ').slice(0, 2).join(' ');

  it('a wrong host key is refused naming the host, with the key the server offered; nothing is fetched', async () => {
    const { source, workRoot } = await sourceOf();
    const wrong = ctx(server, { 'ssh-privatekey': key.privateKey, known_hosts: `[127.0.0.1]:${server.port} ${await otherHostKey()}` });
    const r = await seen(server, () => failure(source.resolve(spec(server.url('org/deploy.git'), { branch: 'main' }), wrong)));
    expect(r.result).toMatchObject({ code: 'host-key-mismatch', terminal: true, stage: 'resolve', subject: `${server.url('org/deploy.git')} branch main` });
    expect(r.result.message).toMatch(
      new RegExp(
        `^host key verification failed: the host key of 127\\.0\\.0\\.1:${server.port} \\(the server offered ED25519 key SHA256:\\S+\\) is not the one known_hosts lists for it; nothing was fetched$`,
      ),
    );
    // the connection was refused before authentication: no command ran
    expect(r.commands).toEqual([]);
    expect(await readdir(workRoot)).toEqual([]);
  });

  it('a cached commit is not served to a known_hosts that does not match the server: the proof connects and is refused', async () => {
    const { source } = await sourceOf();
    const store = newStore();
    const s = spec(server.url('org/deploy.git'), { commit: c1 });
    const r = await source.resolve(s, good());
    await source.fetch(s, r, store, good());
    const wrong = ctx(server, { 'ssh-privatekey': key.privateKey, known_hosts: `[127.0.0.1]:${server.port} ${await otherHostKey()}` });
    const e = await seen(server, () => failure(source.fetch(s, r, store, wrong)));
    expect(e.result).toMatchObject({ code: 'host-key-mismatch', stage: 'fetch' });
    expect([e.connections, e.commands]).toEqual([1, []]);
  });

  it('known_hosts without this host, and no known_hosts at all, are refused naming the host; the latter without connecting', async () => {
    const { source } = await sourceOf();
    const s = spec(server.url('org/deploy.git'), { branch: 'main' });
    const elsewhere = await failure(source.resolve(s, ctx(server, { 'ssh-privatekey': key.privateKey, known_hosts: `github.com ${await otherHostKey()}` })));
    expect(elsewhere).toMatchObject({ code: 'host-key-unknown', terminal: true });
    expect(elsewhere.message).toBe(
      `host key verification failed: known_hosts has no ED25519 key for 127.0.0.1:${server.port} (ssh looks it up as [127.0.0.1]:${server.port}); nothing was fetched`,
    );
    const missing = await seen(server, () => failure(source.resolve(s, ctx(server, { 'ssh-privatekey': key.privateKey }))));
    expect(missing.result).toMatchObject({ code: 'known-hosts-missing', terminal: true });
    expect(missing.result.message).toContain(`ssh host 127.0.0.1:${server.port}`);
    const noSecret = await seen(server, () => failure(source.resolve(spec(server.url('org/deploy.git'), { commit: c1 }), {})));
    expect(noSecret.result).toMatchObject({ code: 'known-hosts-missing', terminal: true });
    expect([missing.connections, noSecret.connections]).toEqual([0, 0]);
  });
});

describe('credentials and refusals', () => {
  it('a key the server does not accept is a terminal auth failure naming the login and host', async () => {
    const { source } = await sourceOf();
    const e = await failure(
      source.resolve(
        spec(server.url('org/deploy.git'), { branch: 'main' }),
        ctx(server, { 'ssh-privatekey': stranger.privateKey, known_hosts: server.knownHosts }),
      ),
    );
    expect(e).toMatchObject({ code: 'auth-failed', terminal: true, stage: 'resolve' });
    expect(e.message).toBe(`the server refused the key for ${server.user}@127.0.0.1:${server.port} (permission denied)`);
  });

  it('a secret bound to another host (or to port 22 only) never reaches this server', async () => {
    const { source } = await sourceOf();
    const s = spec(server.url('org/deploy.git'), { branch: 'main' });
    for (const hosts of [['git.example.com'], ['127.0.0.1']]) {
      const r = await seen(server, () => failure(source.resolve(s, ctx(server, { 'ssh-privatekey': key.privateKey, known_hosts: server.knownHosts }, hosts))));
      expect(r.result).toMatchObject({ code: 'credential-host-mismatch', terminal: true });
      expect(r.result.message).toBe(`secret ns/deploy-key is not bound to host 127.0.0.1:${server.port} (annotation core.rukpak.io/credential-hosts)`);
      expect(r.connections).toBe(0);
    }
  });

  it('a missing repository is not-found; a closed port is a transient network failure', async () => {
    const { source } = await sourceOf();
    const missing = await failure(source.resolve(spec(server.url('org/nope.git'), { branch: 'main' }), good()));
    expect(missing).toMatchObject({ code: 'not-found', terminal: true, message: `repository not found on 127.0.0.1:${server.port}` });
    const closed = await startSshServer({ root: repos, authorizedKeys: [] });
    const port = closed.port;
    const known = closed.knownHosts;
    await closed.close();
    const url = `ssh://git@127.0.0.1:${port}/org/deploy.git`;
    const net = await failure(
      source.resolve(spec(url, { branch: 'main' }), ctx(closed, { 'ssh-privatekey': key.privateKey, known_hosts: known }, [`127.0.0.1:${port}`])),
    );
    expect(net).toMatchObject({ code: 'network', terminal: false, message: `ssh to 127.0.0.1:${port}: connection refused` });
  });
});

describe('bounded work over ssh', () => {
  const hostile = (repo: string, ref: Record<string, string>): SourceSpec => spec(server.url(repo), ref, '');

  it('a ref advertisement over 8 MiB is refused naming the limit, as over https', async () => {
    const { source } = await sourceOf();
    const e = await failure(source.resolve(hostile('refs.git', { branch: 'main' }), good()));
    expect(e).toMatchObject({ stage: 'resolve', code: 'too-large', terminal: true });
    expect(e.message).toBe('ref advertisement is larger than the 8388608 bytes allowed');
  });

  it('a fetch whose objects exceed maxPackBytes is refused naming the limit', async () => {
    const { source } = await sourceOf({ maxPackBytes: 1024 * 1024 });
    const s = hostile('bounds.git', { commit: tips.big });
    const e = await failure(source.fetch(s, await source.resolve(s, good()), newStore(), good()));
    expect(e).toMatchObject({ stage: 'fetch', code: 'pack-too-large', terminal: true });
    expect(e.message).toMatch(/^the fetched objects take \d+ bytes, more than the limit of 1 MiB per fetch \(git packs\)$/);
  });

  it('a server that stalls meets the resolve deadline; meanwhile the key is a 0600 file in a 0700 directory and in no argv', async () => {
    const { source, workRoot } = await sourceOf({ resolveTimeoutMs: 4_000 });
    const s = spec(server.url('org/deploy-stall.git'), { branch: 'main' });
    const c = ctx(server, { 'ssh-privatekey': locked.privateKey, passphrase: PASSPHRASE, known_hosts: server.knownHosts });
    const pending = failure(source.resolve(s, c));
    // while the server sleeps: the session's files, and every process's command line
    let checked = false;
    for (let i = 0; i < 100 && !checked; i++) {
      await new Promise((r) => setTimeout(r, 30));
      const sessions = await readdir(workRoot);
      if (sessions.length === 0 || (await server.commands()).at(-1) !== "git-upload-pack '/org/deploy-stall.git'") continue;
      const dir = join(workRoot, sessions[0]!, 'ssh');
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
      for (const f of ['id', 'known_hosts']) expect([f, (await stat(join(dir, f))).mode & 0o777]).toEqual([f, 0o600]);
      const body = locked.privateKey.split('\n')[1]!;
      for (const pid of await readdir('/proc')) {
        if (!/^\d+$/.test(pid)) continue;
        const cmdline = await readFile(join('/proc', pid, 'cmdline'), 'utf8').catch(() => '');
        expect(cmdline).not.toContain(PASSPHRASE);
        expect(cmdline).not.toContain(body);
      }
      checked = true;
    }
    expect(checked).toBe(true);
    const e = await pending;
    expect(e).toMatchObject({ stage: 'resolve', code: 'deadline-exceeded', terminal: false, message: 'resolve exceeded its deadline of 4s' });
    expect(await readdir(workRoot)).toEqual([]);
  });
});
