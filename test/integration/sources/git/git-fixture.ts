/**
 * The repositories the git source tests run against, built with the real git CLI and served by
 * `git http-backend` (test/support/git-server.ts): one public server speaking protocol v2, one
 * with Basic auth, one that only speaks v0 (refuses unadvertised wants).
 */
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git, setAllowUnadvertisedWants, startGitServer, type GitServer } from '../../../support/git-server.ts';
import { makePki, type TestPki } from '../../../support/registry.ts';

export interface GitFixture {
  root: string;
  /** working clone used to create new commits (then pushed to the bare repos) */
  work: string;
  /** initial commit (README.md only): no ref points at it */
  c0: string;
  /** first commit: tagged v1 (annotated) and v1-light (lightweight); no branch points at it */
  c1: string;
  /** second commit: tip of main */
  c2: string;
  /** tip of branch "evil": a symlink escaping manifests/app */
  evil: string;
  /** reachable only through the annotated tag "annotated-only" (no branch, no lightweight tag) */
  cTag: string;
  /** tip of branch "links": a symlink staying inside manifests/app */
  links: string;
  /**
   * tip of branch "chain": in manifests/app, `d -> .` and `leak.yaml -> d/d/…/d/../../…/etc/hostname`
   * (20 of each): every link alone stays inside lexically, the chain reaches the host's /etc/hostname
   */
  chain: string;
  /** where the kernel resolves manifests/app/leak.yaml of a plain checkout of "chain" */
  chainResolvesTo: string;
  publicServer: GitServer;
  /** https (credentials go only over https), certificate from `pki` */
  privateServer: GitServer;
  pki: TestPki;
  v0Server: GitServer;
  users: { username: string; password: string }[];
  /** commits in `work` and pushes to every served repo; returns the new commit */
  commitAndPush(file: string, content: string): Promise<string>;
  close(): Promise<void>;
}

async function put(dir: string, rel: string, content: string): Promise<void> {
  const p = join(dir, rel);
  await mkdir(join(p, '..'), { recursive: true });
  await writeFile(p, content);
}

export async function createGitFixture(): Promise<GitFixture> {
  const root = await mkdtemp(join(tmpdir(), 'hoist-git-fixture-'));
  const work = join(root, 'work');
  const repos = join(root, 'repos');
  await mkdir(work);
  await mkdir(repos);
  git(work, ['init', '-q', '-b', 'main']);
  await put(work, 'README.md', '# demo\n');
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', 'c0']);
  const c0 = git(work, ['rev-parse', 'HEAD']);
  await put(work, 'manifests/app/deploy.yaml', 'kind: Deployment\nmetadata: { name: app }\n');
  await put(work, 'manifests/app/svc.yaml', 'kind: Service\nmetadata: { name: app }\n');
  await put(work, 'manifests/app/nested/cm.yaml', 'kind: ConfigMap\nmetadata: { name: app }\n');
  await put(work, 'manifests/other/x.yaml', 'kind: ConfigMap\nmetadata: { name: other }\n');
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', 'c1']);
  const c1 = git(work, ['rev-parse', 'HEAD']);
  git(work, ['tag', '-a', 'v1', '-m', 'release v1']);
  git(work, ['tag', 'v1-light']);
  await put(work, 'manifests/app/deploy.yaml', 'kind: Deployment\nmetadata: { name: app, labels: { v: "2" } }\n');
  git(work, ['commit', '-qam', 'c2']);
  const c2 = git(work, ['rev-parse', 'HEAD']);

  git(work, ['checkout', '-q', '-b', 'evil']);
  await symlink('../../../../etc/passwd', join(work, 'manifests/app/passwd'));
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', 'escaping symlink']);
  const evil = git(work, ['rev-parse', 'HEAD']);

  git(work, ['checkout', '-q', 'main']);
  git(work, ['checkout', '-q', '-b', 'tmp']);
  await put(work, 'manifests/app/tagged.yaml', 'kind: ConfigMap\nmetadata: { name: tagged }\n');
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', 'tagged only']);
  const cTag = git(work, ['rev-parse', 'HEAD']);
  git(work, ['tag', '-a', 'annotated-only', '-m', 'only an annotated tag points here']);
  git(work, ['checkout', '-q', 'main']);
  git(work, ['branch', '-q', '-D', 'tmp']);
  git(work, ['checkout', '-q', '-b', 'links']);
  await symlink('nested/cm.yaml', join(work, 'manifests/app/alias.yaml'));
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', 'inside symlink']);
  const links = git(work, ['rev-parse', 'HEAD']);
  git(work, ['checkout', '-q', 'main']);
  git(work, ['checkout', '-q', '-b', 'chain']);
  await symlink('.', join(work, 'manifests/app/d'));
  await symlink(`${'d/'.repeat(20)}${'../'.repeat(20)}etc/hostname`, join(work, 'manifests/app/leak.yaml'));
  const chainResolvesTo = await realpath(join(work, 'manifests/app/leak.yaml')).catch((e: Error) => `unresolved: ${e.message}`);
  git(work, ['add', '.']);
  git(work, ['commit', '-qm', 'a chain of links out of the tree']);
  const chain = git(work, ['rev-parse', 'HEAD']);
  git(work, ['checkout', '-q', 'main']);

  for (const name of ['public', 'private', 'v0']) {
    git(root, ['clone', '-q', '--bare', '--mirror', work, join(repos, `${name}.git`)]);
    // git's default: only advertised tips may be wanted over v0
    setAllowUnadvertisedWants(join(repos, `${name}.git`), false);
  }
  const users = [
    { username: 'alice', password: 's3cret-pw' },
    { username: 'x-access-token', password: 'tok-0123456789' },
  ];
  const publicServer = await startGitServer({ projectRoot: repos });
  const pki = await makePki(join(root, 'pki'));
  const privateServer = await startGitServer({ projectRoot: repos, users, tls: pki });
  const v0Server = await startGitServer({ projectRoot: repos, protocolV2: false });
  return {
    root,
    work,
    c0,
    c1,
    c2,
    evil,
    cTag,
    links,
    chain,
    chainResolvesTo,
    publicServer,
    privateServer,
    pki,
    v0Server,
    users,
    async commitAndPush(file, content) {
      await put(work, file, content);
      git(work, ['add', '.']);
      git(work, ['commit', '-qm', `update ${file}`]);
      for (const name of ['public', 'private', 'v0']) git(work, ['push', '-q', join(repos, `${name}.git`), 'main']);
      return git(work, ['rev-parse', 'HEAD']);
    },
    async close() {
      await Promise.all([publicServer.close(), privateServer.close(), v0Server.close()]);
      await rm(root, { recursive: true, force: true });
    },
  };
}
