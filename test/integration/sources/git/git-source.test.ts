/**
 * The git source against a real `git http-backend` (DESIGN §9): request budgets are asserted from
 * the server's own request log, so they are exact on a noisy machine.
 */
import { lstat, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceSpec } from '../../../../api/v1alpha2/types.ts';
import { FsContentStore } from '../../../../src/cache/fs-content-store.ts';
import { GitSource, gitContentKey } from '../../../../src/sources/git/git-source.ts';
import type { Credentials, SourceContext } from '../../../../src/sources/source.ts';
import { HoistError } from '../../../../src/util/errors.ts';
import { expectNoControllerPaths } from '../../../support/controller-paths.ts';
import { createGitFixture, type GitFixture } from './git-fixture.ts';

let fx: GitFixture;
let storeRoot: string;

beforeAll(async () => {
  fx = await createGitFixture();
  storeRoot = await mkdtemp(join(tmpdir(), 'hoist-git-store-'));
});
afterAll(async () => {
  await fx?.close();
  await rm(storeRoot, { recursive: true, force: true });
});

function newStore(): FsContentStore {
  return new FsContentStore({ root: join(storeRoot, `s-${Math.random().toString(36).slice(2)}`) });
}

function spec(repository: string, ref: { commit?: string; tag?: string; branch?: string }, directory?: string): SourceSpec {
  return { kind: 'git', git: { repository, ref, ...(directory !== undefined ? { directory } : {}) } };
}

async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.push(relative(dir, p));
    }
  };
  await walk(dir);
  return out.sort();
}

async function hoistError(p: Promise<unknown>): Promise<HoistError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(HoistError);
    return e as HoistError;
  }
  throw new Error('expected a HoistError');
}

/** Every string a HoistError could surface: message, describe(), subject, causes. */
function surfaced(e: HoistError): string {
  const parts = [e.message, e.describe(), e.subject ?? '', String(e.stack)];
  let c: unknown = e.cause;
  while (c instanceof Error) {
    parts.push(c.message, String(c.stack), (c as { stderr?: string }).stderr ?? '');
    c = c.cause;
  }
  return parts.join('\n');
}

const pub = (): string => `${fx.publicServer.url}/public.git`;
const priv = (): string => `${fx.privateServer.url}/private.git`;
/** a secret bound to the private server's host */
const creds = (data: Record<string, string>): SourceContext => ({ credentials: { data, hosts: [new URL(fx.privateServer.url).host] } satisfies Credentials });

describe('resolve', () => {
  it('a pinned commit resolves with no request', async () => {
    fx.publicServer.resetRequests();
    const r = await new GitSource().resolve(spec(pub(), { commit: fx.c1.toUpperCase() }, 'manifests/app'), {});
    expect(r).toEqual({ status: { kind: 'git', commit: fx.c1 }, key: `git:${fx.c1}:manifests/app`, pinned: true });
    expect(fx.publicServer.requests).toHaveLength(0);
  });

  it('a branch resolves to its tip with one ref advertisement', async () => {
    fx.publicServer.resetRequests();
    const r = await new GitSource().resolve(spec(pub(), { branch: 'main' }), {});
    expect(r.status.commit).toBe(fx.c2);
    expect(r.status.ref).toBe('refs/heads/main');
    expect(r.pinned).toBe(false);
    expect(r.key).toBe(gitContentKey(fx.c2, ''));
    expect(fx.publicServer.requests.map((q) => `${q.method} ${q.url}`)).toEqual(['GET /public.git/info/refs?service=git-upload-pack']);
  });

  it('an annotated tag is peeled to its commit; a lightweight tag is the commit', async () => {
    const src = new GitSource();
    expect((await src.resolve(spec(pub(), { tag: 'v1' }), {})).status.commit).toBe(fx.c1);
    expect((await src.resolve(spec(pub(), { tag: 'v1-light' }), {})).status.commit).toBe(fx.c1);
  });

  it('unknown branch and tag are terminal unknown-ref errors', async () => {
    const src = new GitSource();
    for (const ref of [{ branch: 'nope' }, { tag: 'v9' }]) {
      const e = await hoistError(src.resolve(spec(pub(), ref), {}));
      expect(e.code).toBe('unknown-ref');
      expect(e.stage).toBe('resolve');
      expect(e.terminal).toBe(true);
      expect(e.subject).toContain(pub());
    }
  });

  it('a poll with ctx.previous sees a new commit on the branch, with one request', async () => {
    const src = new GitSource();
    const first = await src.resolve(spec(pub(), { branch: 'main' }), {});
    const next = await fx.commitAndPush('manifests/app/new.yaml', 'kind: Secret\n');
    fx.publicServer.resetRequests();
    const polled = await src.resolve(spec(pub(), { branch: 'main' }), { previous: first.status, recheck: true });
    expect(polled.status.commit).toBe(next);
    expect(polled.key).not.toBe(first.key);
    expect(fx.publicServer.requests).toHaveLength(1);
    fx.c2 = next;
  });

  it('network failures are transient; bad specs are terminal', async () => {
    const src = new GitSource({ resolveTimeoutMs: 5_000 });
    const closed = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const net = await hoistError(src.resolve(spec(`http://127.0.0.1:${closed}/x.git`, { branch: 'main' }), {}));
    expect(net.code).toBe('network');
    expect(net.terminal).toBe(false);
    const daemon = await hoistError(src.resolve(spec('git://example.com/x.git', { branch: 'main' }), {}));
    expect(daemon.code).toBe('unsupported-url');
    expect(daemon.terminal).toBe(true);
    // ssh needs a Secret with known_hosts: refused before any connection (test/e2e/git-ssh.test.ts)
    const ssh = await hoistError(src.resolve(spec('ssh://git@example.com/x.git', { branch: 'main' }), {}));
    expect(ssh).toMatchObject({ code: 'known-hosts-missing', terminal: true });
    const inUrl = await hoistError(src.resolve(spec('https://bob:hunter22@example.com/x.git', { branch: 'main' }), {}));
    expect(inUrl.code).toBe('credentials-in-url');
    expect(surfaced(inUrl)).not.toContain('hunter22');
    const dotdot = await hoistError(src.resolve(spec(pub(), { branch: 'main' }, '../etc'), {}));
    expect(dotdot.code).toBe('invalid-directory');
    const missing = await hoistError(src.resolve(spec(`${fx.publicServer.url}/missing.git`, { branch: 'main' }), {}));
    expect(missing.code).toBe('not-found');
    expect(missing.terminal).toBe(true);
  });
});

describe('fetch', () => {
  it('lands only the directory of a pinned commit, without .git; a second fetch makes zero requests', async () => {
    const store = newStore();
    const src = new GitSource();
    const s = spec(pub(), { commit: fx.c1 }, 'manifests/app');
    fx.publicServer.resetRequests();
    const r = await src.resolve(s, {});
    const dir = await src.fetch(s, r, store, {});
    expect(await listTree(dir)).toEqual(['deploy.yaml', 'nested/cm.yaml', 'svc.yaml']);
    expect(await readFile(join(dir, 'deploy.yaml'), 'utf8')).toBe('kind: Deployment\nmetadata: { name: app }\n');
    expect(fx.publicServer.requests.filter((q) => q.url.endsWith('/git-upload-pack'))).toHaveLength(1);

    fx.publicServer.resetRequests();
    const again = await src.fetch(s, await src.resolve(s, {}), store, {});
    expect(again).toBe(dir);
    expect(fx.publicServer.requests).toHaveLength(0);
  });

  // issue 23: the temp repository lives in the store's scratch space, and what git fetches into it
  // counts against --cache-max-size while it arrives, beside the checkout
  it('the fetched objects count against the store budget: a fetch they do not fit in is refused naming it, and nothing is left behind', async () => {
    const root = join(storeRoot, `budget-${Math.random().toString(36).slice(2)}`);
    const s = spec(pub(), { commit: fx.c1 }, 'manifests/app');
    const src = new GitSource();
    // the checkout alone (three small manifests) fits in 200 bytes; with the objects fetched it does not
    const err = await hoistError(src.fetch(s, await src.resolve(s, {}), new FsContentStore({ root, maxBytes: 200 }), {}));
    expect(err).toMatchObject({ stage: 'fetch', code: 'cache-budget', terminal: true, subject: 'fetched git objects' });
    expect(err.message).toMatch(
      /^the fetched git objects would take more than the whole content-store budget of 200 bytes \(hoist run --cache-max-size\): \d+ bytes so far$/,
    );
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    // with room for both, the same fetch lands
    const dir = await src.fetch(s, await src.resolve(s, {}), new FsContentStore({ root, maxBytes: 1024 * 1024 }), {});
    expect(await listTree(dir)).toEqual(['deploy.yaml', 'nested/cm.yaml', 'svc.yaml']);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
  });

  it('fetches the root of a branch tip and a peeled annotated tag', async () => {
    const store = newStore();
    const src = new GitSource();
    const branch = spec(pub(), { branch: 'main' });
    const dir = await src.fetch(branch, await src.resolve(branch, {}), store, {});
    expect(await listTree(dir)).toContain('manifests/app/new.yaml');
    expect(await listTree(dir)).toContain('README.md');
    const tag = spec(pub(), { tag: 'v1' }, 'manifests');
    const tagDir = await src.fetch(tag, await src.resolve(tag, {}), store, {});
    expect(await listTree(tagDir)).toEqual(['app/deploy.yaml', 'app/nested/cm.yaml', 'app/svc.yaml', 'other/x.yaml']);
  });

  it('two concurrent fetches of one commit fetch once', async () => {
    const store = newStore();
    const a = new GitSource();
    const s = spec(pub(), { commit: fx.c1 }, 'manifests');
    const r = await a.resolve(s, {});
    fx.publicServer.resetRequests();
    const [d1, d2] = await Promise.all([a.fetch(s, r, store, {}), a.fetch(s, r, store, {})]);
    expect(d1).toBe(d2);
    expect(fx.publicServer.requests.filter((q) => q.url.endsWith('/git-upload-pack'))).toHaveLength(1);
  });

  it('an unknown commit is a terminal unknown-ref error', async () => {
    const src = new GitSource();
    const s = spec(pub(), { commit: 'deadbeef'.repeat(5) });
    const e = await hoistError(src.fetch(s, await src.resolve(s, {}), newStore(), {}));
    expect(e.code).toBe('unknown-ref');
    expect(e.stage).toBe('fetch');
    expect(e.terminal).toBe(true);
  });

  it('a missing directory (or a file in its place) is a terminal directory-missing error', async () => {
    const src = new GitSource();
    for (const directory of ['manifests/nope', 'README.md']) {
      const s = spec(pub(), { commit: fx.c1 }, directory);
      const e = await hoistError(src.fetch(s, await src.resolve(s, {}), newStore(), {}));
      expect(e.code).toBe('directory-missing');
      expect(e.terminal).toBe(true);
      expect(e.message).toContain(directory);
    }
  });

  it('refuses a symlink escaping the directory and keeps one that stays inside', async () => {
    const src = new GitSource();
    const store = newStore();
    const evil = spec(pub(), { commit: fx.evil }, 'manifests/app');
    const e = await hoistError(src.fetch(evil, await src.resolve(evil, {}), store, {}));
    expect(e.code).toBe('symlink-escape');
    expect(e.terminal).toBe(true);
    expect(await store.has(gitContentKey(fx.evil, 'manifests/app'))).toBe(false);

    const ok = spec(pub(), { commit: fx.links }, 'manifests/app');
    const dir = await src.fetch(ok, await src.resolve(ok, {}), store, {});
    expect((await lstat(join(dir, 'alias.yaml'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(dir, 'alias.yaml'))).toBe('nested/cm.yaml');
  });

  it('refuses a chain of links that leaves the directory although each link alone stays inside', async () => {
    // the attack is real: a plain checkout of this commit resolves the link to the host's file
    expect(fx.chainResolvesTo).toBe('/etc/hostname');
    const src = new GitSource();
    const store = newStore();
    const chain = spec(pub(), { commit: fx.chain }, 'manifests/app');
    const e = await hoistError(src.fetch(chain, await src.resolve(chain, {}), store, {}));
    expect(e).toMatchObject({ stage: 'fetch', code: 'symlink-escape', terminal: true, subject: 'leak.yaml' });
    expect(e.message).toMatch(/^git .+: symlink "leak\.yaml" leads outside the content tree; other offending links: "d"$/);
    expectNoControllerPaths(e.describe(), [storeRoot, fx.root]);
    expect(await store.has(gitContentKey(fx.chain, 'manifests/app'))).toBe(false);
  });

  it('enforces the file-count limit before writing', async () => {
    const src = new GitSource({ limits: { maxFiles: 2 } });
    const s = spec(pub(), { commit: fx.c1 }, 'manifests/app');
    const e = await hoistError(src.fetch(s, await src.resolve(s, {}), newStore(), {}));
    expect(e.code).toBe('too-many-files');
  });
});

describe('a server that speaks only protocol v0 and refuses unadvertised wants', () => {
  const v0 = (): string => `${fx.v0Server.url}/v0.git`;

  it('fetches an advertised tip directly', async () => {
    const src = new GitSource();
    const s = spec(v0(), { commit: fx.links }, 'manifests/app');
    fx.v0Server.resetRequests();
    const dir = await src.fetch(s, await src.resolve(s, {}), newStore(), {});
    expect(await listTree(dir)).toContain('alias.yaml');
    // one advertisement; v0 stateless shallow negotiation takes up to two POSTs
    expect(fx.v0Server.requests.filter((q) => q.method === 'GET')).toHaveLength(1);
  });

  it('fetches a commit only a peeled annotated tag points at through that tag, shallowly', async () => {
    const src = new GitSource();
    const s = spec(v0(), { commit: fx.cTag }, 'manifests/app');
    fx.v0Server.resetRequests();
    const dir = await src.fetch(s, await src.resolve(s, {}), newStore(), {});
    expect(await listTree(dir)).toContain('tagged.yaml');
    // refused by-id attempt, our advertisement, then the fetch of the tag
    expect(fx.v0Server.requests.filter((q) => q.url.includes('/info/refs'))).toHaveLength(3);
  });

  it('fetches a commit no ref points at from the full history', async () => {
    const src = new GitSource();
    const s = spec(v0(), { commit: fx.c0 });
    const dir = await src.fetch(s, await src.resolve(s, {}), newStore(), {});
    expect(await listTree(dir)).toEqual(['README.md']);
  });

  it('reports an unknown commit as unknown-ref', async () => {
    const src = new GitSource();
    const s = spec(v0(), { commit: 'feedface'.repeat(5) });
    const e = await hoistError(src.fetch(s, await src.resolve(s, {}), newStore(), {}));
    expect(e.code).toBe('unknown-ref');
    expect(e.terminal).toBe(true);
  });
});

describe('auth', () => {
  it('username/password and token work for resolve and fetch; the header goes out preemptively', async () => {
    const secrets: Record<string, string>[] = [{ username: 'alice', password: 's3cret-pw' }, { token: 'tok-0123456789' }];
    for (const data of secrets) {
      const src = new GitSource({ caBundle: fx.pki.caCert });
      const s = spec(priv(), { branch: 'main' }, 'manifests/app');
      fx.privateServer.resetRequests();
      const r = await src.resolve(s, creds(data));
      expect(r.status.commit).toBe(fx.c2);
      const dir = await src.fetch(s, r, newStore(), creds(data));
      expect(await listTree(dir)).toContain('deploy.yaml');
      expect(fx.privateServer.requests.every((q) => q.status === 200 && q.authorization?.startsWith('Basic '))).toBe(true);
    }
  });

  it('missing credentials are a terminal auth-failed error at resolve and at fetch', async () => {
    const src = new GitSource({ caBundle: fx.pki.caCert });
    const r = await hoistError(src.resolve(spec(priv(), { branch: 'main' }), {}));
    expect(r.code).toBe('auth-failed');
    expect(r.terminal).toBe(true);
    const pinned = spec(priv(), { commit: fx.c1 });
    const f = await hoistError(src.fetch(pinned, await src.resolve(pinned, {}), newStore(), {}));
    expect(f.code).toBe('auth-failed');
    expect(f.stage).toBe('fetch');
    expect(f.terminal).toBe(true);
  });

  it('wrong credentials are terminal and never surface in errors', async () => {
    const src = new GitSource({ caBundle: fx.pki.caCert });
    const wrong = { username: 'alice', password: 'wrong-password-42' };
    const r = await hoistError(src.resolve(spec(priv(), { branch: 'main' }), creds(wrong)));
    expect(r.code).toBe('auth-failed');
    expect(r.terminal).toBe(true);
    const pinned = spec(priv(), { commit: fx.c1 });
    const f = await hoistError(src.fetch(pinned, await src.resolve(pinned, {}), newStore(), creds(wrong)));
    expect(f.code).toBe('auth-failed');
    const header = Buffer.from('alice:wrong-password-42').toString('base64');
    for (const e of [r, f]) {
      expect(surfaced(e)).not.toContain('wrong-password-42');
      expect(surfaced(e)).not.toContain(header);
    }
    const tok = await hoistError(src.resolve(spec(priv(), { branch: 'main' }), creds({ token: 'bad-token-77777' })));
    expect(surfaced(tok)).not.toContain('bad-token-77777');
  });

  it('a cache hit by another identity is authorized first; a wrong identity is refused', async () => {
    const store = newStore();
    const src = new GitSource({ caBundle: fx.pki.caCert });
    const s = spec(priv(), { commit: fx.c1 }, 'manifests');
    const r = await src.resolve(s, {});
    await src.fetch(s, r, store, creds({ username: 'alice', password: 's3cret-pw' }));
    fx.privateServer.resetRequests();
    await src.fetch(s, r, store, creds({ token: 'tok-0123456789' }));
    expect(fx.privateServer.requests.map((q) => q.url)).toEqual(['/private.git/info/refs?service=git-upload-pack']);
    const e = await hoistError(src.fetch(s, r, store, {}));
    expect(e.code).toBe('auth-failed');
  });

  // redirects, downgrades and proxies: tested once for every source in ../network-rules.test.ts
});
