/**
 * Git over SSH end to end (issue 36), through the real controller: a repository made with git,
 * served by a real sshd (Debian's openssh-server, forced to git-upload-pack, on loopback) and
 * fetched with the real OpenSSH client. It installs at a branch (ssh:// URL,
 * kubernetes.io/ssh-auth Secret), an annotated tag (scp-like address, a Flux-style Secret whose
 * key has a passphrase) and a commit, each from a directory; it upgrades when the branch moves;
 * a wrong host key, a Secret without known_hosts, a key the server refuses and a Secret bound to
 * another host are refused naming the host, the installed revision intact. Connections are
 * counted from sshd's own log; no key material reaches status, events or the controller's log.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_REQUESTED_AT, type BundleDeployment, type SourceSpec } from '../../api/v1alpha2/types.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { BD_TYPE, cond, describeStatus, isDone, startTestController, type TestController } from '../support/controller.ts';
import { git } from '../support/git-server.ts';
import { generateSshKey, startSshServer, type SshKeyPair, type SshServer } from '../support/ssh-server.ts';

const PASSPHRASE = 'ssh-e2e-passphrase-4b7d-never-shown';
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const cm = (name: string, value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

let t: TestController;
let server: SshServer;
let root: string;
let work: string;
let bare: string;
let deploy: SshKeyPair;
let locked: SshKeyPair;
let stranger: SshKeyPair;
let c1: string;

/** every string of key material the test hands out: none may appear in status, events or logs */
const secretValues = (): string[] => [PASSPHRASE, ...[deploy, locked, stranger].map((k) => k.privateKey.split('\n')[1]!)];

async function commit(file: string, content: string): Promise<string> {
  await mkdir(join(work, file, '..'), { recursive: true });
  await writeFile(join(work, file), content);
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', `update ${file}`]);
  git(work, ['push', '-q', bare, 'main']);
  return git(work, ['rev-parse', 'HEAD']);
}

async function secret(name: string, type: string, stringData: Record<string, string>, hosts = `127.0.0.1:${server.port}`): Promise<void> {
  await t.client.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: t.namespace, annotations: { 'core.rukpak.io/credential-hosts': hosts } },
    type,
    stringData,
  } as unknown as KubeObject);
}

function gitSource(repository: string, ref: Record<string, string>, directory: string, secretName: string): SourceSpec {
  return { kind: 'git', git: { repository, ref, directory, auth: { secretRef: { name: secretName } } } };
}

async function configMap(name: string, ns: string): Promise<{ uid: string; value: string } | undefined> {
  const o = (await t.client.get(CM, name, ns)) as (KubeObject & { data?: Record<string, string> }) | undefined;
  return o ? { uid: o.metadata.uid!, value: o.data?.value ?? '' } : undefined;
}

async function expectNoKeyMaterial(name: string): Promise<void> {
  const bd = await t.get(name);
  const events = await t.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  const text = JSON.stringify(bd?.status) + JSON.stringify(events.items) + JSON.stringify(t.log.records);
  for (const v of secretValues()) expect(text).not.toContain(v);
}

const ns = (s: string): string => `ssh-${s}-${t.runId}`;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hoist-e2e-ssh-'));
  bare = join(root, 'repos', 'deploy.git');
  git('/', ['init', '-q', '--bare', '-b', 'main', bare]);
  work = join(root, 'work');
  await mkdir(work);
  git(work, ['init', '-q', '-b', 'main']);
  await writeFile(join(work, 'README.md'), '# not a manifest\n');
  await commit('other/app/cm.yaml', cm('from-other', 'other-1'));
  c1 = await commit('manifests/cm.yaml', cm('from-git', 'git-1'));
  git(work, ['tag', '-a', 'v1', '-m', 'release v1']);
  git(work, ['push', '-q', bare, 'v1']);
  deploy = await generateSshKey(root, 'deploy');
  locked = await generateSshKey(root, 'locked', PASSPHRASE);
  stranger = await generateSshKey(root, 'stranger');
  server = await startSshServer({ root: join(root, 'repos'), authorizedKeys: [deploy.publicKey, locked.publicKey] });
  t = await startTestController();
  const otherHostKey = (await generateSshKey(root, 'impostor-host')).publicKey.split(' ').slice(0, 2).join(' ');
  await secret('ssh-key', 'kubernetes.io/ssh-auth', { 'ssh-privatekey': deploy.privateKey, known_hosts: server.knownHosts });
  // Flux's names; the key has a passphrase
  await secret('flux-key', 'Opaque', { identity: locked.privateKey, 'identity.pub': locked.publicKey, password: PASSPHRASE, known_hosts: server.knownHosts });
  await secret('ssh-impostor', 'kubernetes.io/ssh-auth', { 'ssh-privatekey': deploy.privateKey, known_hosts: `[127.0.0.1]:${server.port} ${otherHostKey}` });
  await secret('ssh-no-known-hosts', 'kubernetes.io/ssh-auth', { 'ssh-privatekey': deploy.privateKey });
  await secret('ssh-stranger', 'kubernetes.io/ssh-auth', { 'ssh-privatekey': stranger.privateKey, known_hosts: server.knownHosts });
  await secret('ssh-elsewhere', 'kubernetes.io/ssh-auth', { 'ssh-privatekey': deploy.privateKey, known_hosts: server.knownHosts }, 'git.example.com');
}, 120_000);

afterAll(async () => {
  await t?.stop();
  await server?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('a repository served over ssh', () => {
  it('installs at a branch from a directory (ssh:// URL, kubernetes.io/ssh-auth Secret): one connection to resolve, one to fetch', async () => {
    const before = server.connections();
    await t.create('ssh-branch', {
      installNamespace: ns('branch'),
      format: 'plain',
      sources: [gitSource(server.url('deploy.git'), { branch: 'main' }, 'manifests', 'ssh-key')],
    });
    const bd = await t.waitFor('ssh-branch', isDone, 'installed', 90_000);
    expect(cond(bd, 'Installed')?.message).toBe('revision 1: 1 objects');
    expect(bd.status?.resolvedSources?.[0]).toMatchObject({ kind: 'git', commit: c1, ref: 'refs/heads/main' });
    expect(await configMap('from-git', ns('branch'))).toMatchObject({ value: 'git-1' });
    // README.md and other/ are outside the directory
    expect(await configMap('from-other', ns('branch'))).toBeUndefined();
    expect(server.connections() - before).toBe(2);
    await expectNoKeyMaterial('ssh-branch');
  });

  it('installs at an annotated tag (scp-like address; Flux names, a key with a passphrase)', async () => {
    await t.create('ssh-tag', {
      installNamespace: ns('tag'),
      format: 'plain',
      sources: [gitSource(server.scpUrl('deploy.git'), { tag: 'v1' }, 'other/app', 'flux-key')],
    });
    const bd = await t.waitFor('ssh-tag', isDone, 'installed', 90_000);
    expect(bd.status?.resolvedSources?.[0]).toMatchObject({ kind: 'git', commit: c1, ref: 'refs/tags/v1' });
    expect(await configMap('from-other', ns('tag'))).toMatchObject({ value: 'other-1' });
    expect((await server.commands()).filter((c) => c === "git-upload-pack 'deploy.git'")).toHaveLength(2);
    await expectNoKeyMaterial('ssh-tag');
  });

  it('installs at a commit; the commit fetched before with the same key and repository costs no connection', async () => {
    const before = server.connections();
    await t.create('ssh-commit', {
      installNamespace: ns('commit'),
      format: 'plain',
      sources: [gitSource(server.url('deploy.git'), { commit: c1 }, 'manifests', 'ssh-key')],
    });
    const bd = await t.waitFor('ssh-commit', isDone, 'installed', 90_000);
    expect(bd.status?.resolvedSources?.[0]).toMatchObject({ kind: 'git', commit: c1 });
    expect(await configMap('from-git', ns('commit'))).toMatchObject({ value: 'git-1' });
    expect(server.connections() - before).toBe(0);
  });

  it('upgrades when the branch moves (a requested reconcile re-resolves it)', async () => {
    const c2 = await commit('manifests/cm.yaml', cm('from-git', 'git-2'));
    const before = server.connections();
    await t.client.patch(BD_TYPE, 'ssh-branch', undefined, { metadata: { annotations: { [ANNOTATION_REQUESTED_AT]: `move-${Date.now()}` } } }, 'merge');
    const bd = await t.waitFor('ssh-branch', (b) => isDone(b) && b.status?.resolvedSources?.[0]?.commit === c2, 'upgraded to the moved branch', 90_000);
    expect(bd.status?.activeRevision?.number).toBe(2);
    expect(await configMap('from-git', ns('branch'))).toMatchObject({ value: 'git-2' });
    expect(server.connections() - before).toBe(2);
  });
});

describe('refusals name the host and leave the installed revision alone', () => {
  let installed: { uid: string; value: string };

  beforeAll(async () => {
    installed = (await configMap('from-git', ns('branch')))!;
    expect(installed.value).toBe('git-2');
    // new content behind the branch: had a refused spec been fetched, it would install this
    await commit('manifests/cm.yaml', cm('from-git', 'git-3'));
  });

  async function fail(sources: SourceSpec[], stage: 'Resolved' | 'Unpacked'): Promise<{ bd: BundleDeployment; message: string; connections: number }> {
    const before = server.connections();
    await t.patchSpec('ssh-branch', { sources });
    const bd = await t.waitFor('ssh-branch', (b) => cond(b, stage)?.status === 'False', `${stage} failure`, 60_000);
    expect(cond(bd, stage)?.reason, describeStatus(bd)).toBe(stage === 'Resolved' ? 'ResolveFailed' : 'FetchFailed');
    expect(cond(bd, 'Progressing')?.reason, describeStatus(bd)).toBe('Blocked');
    expect(bd.status?.activeRevision?.number).toBe(2);
    expect(cond(bd, 'Installed')?.status).toBe('True');
    expect(await configMap('from-git', ns('branch'))).toEqual(installed);
    await expectNoKeyMaterial('ssh-branch');
    return { bd, message: cond(bd, stage)!.message, connections: server.connections() - before };
  }

  it('a wrong host key: refused before authentication, naming the host and the key the server offered', async () => {
    const r = await fail([gitSource(server.url('deploy.git'), { branch: 'main' }, 'manifests', 'ssh-impostor')], 'Resolved');
    expect(r.message).toContain(server.url('deploy.git'));
    expect(r.message).toMatch(
      new RegExp(
        `host key verification failed: the host key of 127\\.0\\.0\\.1:${server.port} \\(the server offered ED25519 key SHA256:\\S+\\) is not the one known_hosts lists for it`,
      ),
    );
    // a pinned commit in the store does not bypass it: the proof of access connects and is refused
    const pinned = await fail([gitSource(server.url('deploy.git'), { commit: c1 }, 'manifests', 'ssh-impostor')], 'Unpacked');
    expect(pinned.message).toContain(`host key of 127.0.0.1:${server.port}`);
    expect(pinned.connections).toBe(1);
  });

  it('a Secret without known_hosts: refused naming the host, without a connection', async () => {
    const r = await fail([gitSource(server.url('deploy.git'), { branch: 'main' }, 'manifests', 'ssh-no-known-hosts')], 'Resolved');
    expect(r.message).toContain(`secret ${t.namespace}/ssh-no-known-hosts has no known_hosts for ssh host 127.0.0.1:${server.port}`);
    expect(r.connections).toBe(0);
  });

  it('a key the server does not accept: a clear authentication error', async () => {
    const r = await fail([gitSource(server.url('deploy.git'), { branch: 'main' }, 'manifests', 'ssh-stranger')], 'Resolved');
    expect(r.message).toContain(`the server refused the key for ${server.user}@127.0.0.1:${server.port} (permission denied)`);
  });

  it('a Secret bound to another host is never used for this one', async () => {
    const r = await fail([gitSource(server.url('deploy.git'), { branch: 'main' }, 'manifests', 'ssh-elsewhere')], 'Resolved');
    expect(r.message).toContain(`secret ${t.namespace}/ssh-elsewhere is not bound to host 127.0.0.1:${server.port}`);
    expect(r.connections).toBe(0);
  });

  it('back to the right Secret: the moved branch installs', async () => {
    await t.patchSpec('ssh-branch', { sources: [gitSource(server.url('deploy.git'), { branch: 'main' }, 'manifests', 'ssh-key')] });
    const bd = await t.waitFor('ssh-branch', (b) => isDone(b) && cond(b, 'Progressing')?.reason === 'Succeeded', 'installed again', 90_000);
    expect(bd.status?.activeRevision?.number).toBe(3);
    expect(await configMap('from-git', ns('branch'))).toMatchObject({ uid: installed.uid, value: 'git-3' });
    await expectNoKeyMaterial('ssh-branch');
  });
});
