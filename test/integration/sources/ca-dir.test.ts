/**
 * `--ca-dir` and a source's own CA (caSecretRef / caConfigMapRef, read by the reconciler into
 * `ctx.ca`) for http and git sources (issue 16): a server signed by a private CA works once its
 * CA is filed under its host or given to the source, and fails naming the URL and the unknown
 * authority without it. Real https file and git http-backend servers with a generated CA.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../api/v1alpha2/types.ts';
import type { SourceContext } from '../../../src/sources/source.ts';
import { FsContentStore } from '../../../src/cache/fs-content-store.ts';
import { GitSource } from '../../../src/sources/git/git-source.ts';
import { readCaDir, type HostCAs } from '../../../src/sources/transport/ca-dir.ts';
import { HttpSource } from '../../../src/sources/http-source.ts';
import { git, startGitServer, type GitServer } from '../../support/git-server.ts';
import { startFileServer, tarGz, type FileServer } from '../../support/http-files.ts';
import { makePki } from '../../support/registry.ts';
import { failure } from '../../support/failure.ts';

let work: string;
let files: FileServer;
let gitServer: GitServer;
let cas: HostCAs;
let commit: string;
let caPem: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-ca-dir-it-'));
  const pki = await makePki(join(work, 'pki'));
  files = await startFileServer({ tls: pki });
  files.set('/app.tgz', await tarGz({ 'cm.yaml': 'kind: ConfigMap\n' }));
  const src = join(work, 'src');
  await mkdir(src);
  git(src, ['init', '-q', '-b', 'main']);
  await writeFile(join(src, 'cm.yaml'), 'kind: ConfigMap\n');
  git(src, ['add', '.']);
  git(src, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'one']);
  commit = git(src, ['rev-parse', 'HEAD']);
  const repos = join(work, 'repos');
  await mkdir(repos);
  git(work, ['clone', '-q', '--bare', src, join(repos, 'app.git')]);
  gitServer = await startGitServer({ projectRoot: repos, tls: pki });
  const dir = join(work, 'certs.d');
  await mkdir(dir);
  // `host.crt` (any port) for the file server, `host:port.crt` would work the same
  await writeFile(join(dir, '127.0.0.1.crt'), pki.caCert);
  cas = await readCaDir(dir);
  caPem = pki.caCert;
});

afterAll(async () => {
  await files?.close();
  await gitServer?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('--ca-dir for http and git sources', () => {
  it('http: trusted with the host CA, unknown authority without it', async () => {
    const spec: SourceSpec = { kind: 'http', http: { url: files.url('/app.tgz') } };
    const store = new FsContentStore({ root: await mkdtemp(join(work, 'store-')) });
    const ok = new HttpSource({ hostCAs: cas, store });
    const dir = await ok.fetch(spec, await ok.resolve(spec, {}), store, {});
    expect(await readFile(join(dir, 'cm.yaml'), 'utf8')).toBe('kind: ConfigMap\n');
    const bare = new HttpSource({ store });
    const e = await failure(bare.resolve(spec, {}));
    expect(e.code).toBe('tls-verify-failed');
    expect(e.message).toContain('certificate signed by unknown authority');
    expect(e.describe()).toContain(new URL(files.url('/')).host);
  });

  it('git: trusted with the host CA (ref advertisement and the git CLI), refused without it', async () => {
    const spec: SourceSpec = { kind: 'git', git: { repository: `${gitServer.url}/app.git`, ref: { branch: 'main' } } };
    const store = new FsContentStore({ root: await mkdtemp(join(work, 'store-')) });
    const ok = new GitSource({ hostCAs: cas });
    const resolved = await ok.resolve(spec, {});
    expect(resolved.status.commit).toBe(commit);
    const dir = await ok.fetch(spec, resolved, store, {});
    expect(await readFile(join(dir, 'cm.yaml'), 'utf8')).toBe('kind: ConfigMap\n');
    const e = await failure(new GitSource({}).resolve(spec, {}));
    expect(e.code).toBe('tls-verify-failed');
    expect(e.message).toContain('unknown authority');
  });
});

describe("a source's own CA (ctx.ca) for http and git", () => {
  const ca = (): SourceContext => ({ ca: { pem: caPem, ref: 'secret ops/corp-ca key ca.crt' } });

  it('http: trusted for the source that names it, and only for it', async () => {
    const spec: SourceSpec = { kind: 'http', http: { url: files.url('/app.tgz') } };
    const store = new FsContentStore({ root: await mkdtemp(join(work, 'store-')) });
    const src = new HttpSource({ store });
    const dir = await src.fetch(spec, await src.resolve(spec, ca()), store, ca());
    expect(await readFile(join(dir, 'cm.yaml'), 'utf8')).toBe('kind: ConfigMap\n');
    // the same source object, another spec without the CA: the trust did not leak
    const e = await failure(src.resolve(spec, {}));
    expect(e.code).toBe('tls-verify-failed');
    expect(e.describe()).toContain(new URL(files.url('/')).host);
    expect(e.message).toContain('certificate signed by unknown authority');
    expect(e.message).toContain('caSecretRef');
    await src.close();
  });

  it('git: the CLI gets the CA in a temp file (removed afterwards); without it the fetch names the unknown authority, not the file', async () => {
    const pinned: SourceSpec = { kind: 'git', git: { repository: `${gitServer.url}/app.git`, ref: { commit } } };
    const workRoot = await mkdtemp(join(work, 'git-work-'));
    const g = new GitSource({ workRoot });
    const store = new FsContentStore({ root: await mkdtemp(join(work, 'store-')) });
    // a pinned commit makes no request at resolve: the git CLI is the first to meet the server
    const e = await failure(g.fetch(pinned, await g.resolve(pinned, {}), store, {}));
    expect(e.code).toBe('tls-verify-failed');
    expect(e.message).toContain('certificate signed by unknown authority');
    expect(e.describe()).toContain(new URL(gitServer.url).host);
    expect(e.message).not.toMatch(/cafile|\.pem/i);

    const dir = await g.fetch(pinned, await g.resolve(pinned, ca()), store, ca());
    expect(await readFile(join(dir, 'cm.yaml'), 'utf8')).toBe('kind: ConfigMap\n');
    const branch: SourceSpec = { kind: 'git', git: { repository: `${gitServer.url}/app.git`, ref: { branch: 'main' } } };
    expect((await g.resolve(branch, ca())).status.commit).toBe(commit);
    expect(await readdir(workRoot)).toEqual([]);
    await g.close();
  });
});
