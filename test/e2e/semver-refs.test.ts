/**
 * Semver ranges for refs (issue 28): with tags 1.8.4, 1.9.0, 1.9.1 and 2.0.0-rc.1 in a real
 * registry (docker-registry, the tag list read page by page) and in a git repository served by
 * git http-backend, `>=1.9 <2.0` resolves to 1.9.1 for both (the pre-release and 1.8.4 left
 * out) and the status names the tag with the digest or commit; pushing 1.9.2 is installed by the
 * next poll, without a spec change. (docker-registry 2.8 answers the tag list in one page; the
 * Link pagination is checked in test/unit/sources/image/tags.test.ts.)
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/kube/types.ts';
import { RegistryClient } from '../../src/sources/image/client.ts';
import { pushImage, writeLayer } from '../../src/sources/image/push.ts';
import { parseReference } from '../../src/sources/image/reference.ts';
import { DEFAULT_TAG_LIST_LIMITS, listTags } from '../../src/sources/image/tags.ts';
import { isDone, startTestController, type TestController } from '../support/controller.ts';
import { until } from '../support/e2e-bundles.ts';
import { git, startGitServer, type GitServer } from '../support/git-server.ts';
import { startRegistry, type TestRegistry } from '../support/registry.ts';

const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const cm = (version: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: "${version}"\n`;
const TAGS = ['1.8.4', '1.9.0', '1.9.1', '2.0.0-rc.1'];

let t: TestController;
let reg: TestRegistry;
let client: RegistryClient;
let server: GitServer;
let work: string;
let checkout: string;
let bare: string;
let seq = 0;
const digests = new Map<string, string>();
const commits = new Map<string, string>();

async function pushTag(tag: string, version = tag): Promise<void> {
  const layer = await writeLayer([{ name: 'app.yaml', data: cm(version) }], join(work, `layer-${seq++}.tgz`));
  digests.set(tag, (await pushImage(client, parseReference(`${reg.host}/apps/web:${tag}`), [layer], { stage: 'fetch' })).digest);
}

async function tagGit(tag: string): Promise<void> {
  await writeFile(join(checkout, 'app.yaml'), cm(tag));
  git(checkout, ['add', '-A']);
  git(checkout, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', tag]);
  // annotated, as releases usually are: the commit is the tag's peeled value
  git(checkout, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'tag', '-a', '-m', tag, tag]);
  commits.set(tag, git(checkout, ['rev-parse', 'HEAD']).trim());
  git(checkout, ['push', '-q', bare, 'main', tag]);
}

async function versionIn(ns: string): Promise<string | undefined> {
  return ((await t.client.get(CM, 'app', ns)) as (KubeObject & { data?: { version?: string } }) | undefined)?.data?.version;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hoist-e2e-semver-'));
  reg = await startRegistry();
  client = new RegistryClient({ insecureHosts: [reg.host] });
  for (const tag of TAGS) await pushTag(tag);
  // a tag that is not a version is ignored by every range
  await pushTag('latest', '1.8.4');
  const repos = join(work, 'repos');
  await mkdir(repos);
  bare = join(repos, 'app.git');
  checkout = join(work, 'app');
  await mkdir(checkout);
  git('/', ['init', '-q', '--bare', '-b', 'main', bare]);
  git(checkout, ['init', '-q', '-b', 'main']);
  for (const tag of TAGS) await tagGit(`v${tag}`);
  server = await startGitServer({ projectRoot: repos });
  t = await startTestController({ sources: { image: { insecureHosts: [reg.host], retry: { attempts: 2, baseDelayMs: 5 } } } });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await client?.close();
  await server?.close();
  await reg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('semver ranges', () => {
  it("the registry's tag list is read whole, and bounded", async () => {
    const web = parseReference(`${reg.host}/apps/web`);
    const tags = await listTags(client, web, { stage: 'resolve' });
    expect(tags.sort()).toEqual([...TAGS, 'latest'].sort());
    await expect(listTags(client, web, { stage: 'resolve' }, { ...DEFAULT_TAG_LIST_LIMITS, maxTags: 3 })).rejects.toThrow(/more than 3 tags/);
  });

  it('>=1.9 <2.0 resolves to 1.9.1 for an image and a git repository; 1.9.2 is installed by the next poll', async () => {
    const img = `semver-img-${t.runId}`;
    const gitBd = `semver-git-${t.runId}`;
    await t.create(img, {
      installNamespace: img,
      format: 'plain',
      pollInterval: '10s',
      sources: [{ kind: 'image', image: { ref: `${reg.host}/apps/web`, semver: '>=1.9 <2.0' } }],
    });
    await t.create(gitBd, {
      installNamespace: gitBd,
      format: 'plain',
      pollInterval: '10s',
      sources: [{ kind: 'git', git: { repository: `${server.url}/app.git`, ref: { semver: '>=1.9 <2.0' } } }],
    });
    const imgDone = await t.waitFor(img, isDone, 'image installed', 60_000);
    const gitDone = await t.waitFor(gitBd, isDone, 'git installed', 60_000);
    expect(imgDone.status?.resolvedSources?.[0]).toMatchObject({
      kind: 'image',
      digest: digests.get('1.9.1'),
      ref: `${reg.host}/apps/web:1.9.1@${digests.get('1.9.1')}`,
    });
    expect(gitDone.status?.resolvedSources?.[0]).toMatchObject({ kind: 'git', commit: commits.get('v1.9.1'), ref: 'refs/tags/v1.9.1' });
    expect(await versionIn(img)).toBe('1.9.1');
    expect(await versionIn(gitBd)).toBe('v1.9.1');

    await pushTag('1.9.2');
    await tagGit('v1.9.2');
    // one poll interval (10 s) plus the time a reconcile takes, with room for a loaded machine
    await until(async () => (await versionIn(img)) === '1.9.2', 'the image BD at 1.9.2', 45_000);
    await until(async () => (await versionIn(gitBd)) === 'v1.9.2', 'the git BD at v1.9.2', 45_000);
    const imgAfter = await t.waitFor(img, (b) => isDone(b) && b.status?.resolvedSources?.[0]?.digest === digests.get('1.9.2'), 'image status at 1.9.2', 30_000);
    const gitAfter = await t.waitFor(
      gitBd,
      (b) => isDone(b) && b.status?.resolvedSources?.[0]?.commit === commits.get('v1.9.2'),
      'git status at v1.9.2',
      30_000,
    );
    expect(imgAfter.status?.resolvedSources?.[0]?.ref).toBe(`${reg.host}/apps/web:1.9.2@${digests.get('1.9.2')}`);
    expect(gitAfter.status?.resolvedSources?.[0]?.ref).toBe('refs/tags/v1.9.2');
    expect(imgAfter.metadata.generation).toBe(imgDone.metadata.generation);
  }, 180_000);

  it('a range no tag satisfies waits (Resolved=False naming the range), and a pre-release range takes 2.0.0-rc.1', async () => {
    const none = `semver-none-${t.runId}`;
    await t.create(none, { installNamespace: none, format: 'plain', sources: [{ kind: 'image', image: { ref: `${reg.host}/apps/web`, semver: '>=5' } }] });
    const waiting = await t.waitFor(
      none,
      (b) => b.status?.conditions?.some((c) => c.type === 'Resolved' && c.status === 'False') ?? false,
      'not resolved',
      60_000,
    );
    expect(waiting.status?.conditions?.find((c) => c.type === 'Resolved')?.message).toContain('is a version semver ">=5" admits');
    const pre = `semver-pre-${t.runId}`;
    await t.create(pre, { installNamespace: pre, format: 'plain', sources: [{ kind: 'image', image: { ref: `${reg.host}/apps/web`, semver: '>=2.0.0-0' } }] });
    await t.waitFor(pre, isDone, 'pre-release installed', 60_000);
    expect(await versionIn(pre)).toBe('2.0.0-rc.1');
  }, 120_000);
});
