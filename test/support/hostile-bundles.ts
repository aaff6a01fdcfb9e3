/**
 * Hostile BundleDeployments, one per class of issue 23's bounded-work budgets, for the isolation
 * e2e test and bench/isolation.ts: each with the condition (or admission refusal) that must name
 * the limit that stopped it. Content is made unique per `id`, so every BundleDeployment fetches
 * and renders it afresh (nothing answered from the cache).
 *
 * Servers are the caller's: a file server for tarballs, a git server over createHostileRepos's
 * repositories, and a plain-http registry the controller is told is insecure (--registries-conf).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { BundleDeploymentSpec } from '../../api/v1alpha2/types.ts';
import type { RegistryClient } from '../../src/sources/image/client.ts';
import { pushImage, writeLayer, type LayerEntry } from '../../src/sources/image/push.ts';
import { parseReference } from '../../src/sources/image/reference.ts';
import { MAX_SYMLINK_HOPS, DEFAULT_MAX_LINK_HOPS, DEFAULT_MAX_LINKS } from '../../src/util/content-tree.ts';
import type { HostileRepos } from './git-hostile.ts';
import { sha256, type FileServer } from './http-files.ts';
import { cm, servePinned } from './upgrade-fixtures.ts';

type Spec = Omit<BundleDeploymentSpec, 'installNamespace'>;

export interface HostileServers {
  files: FileServer;
  /** startGitServer over createHostileRepos(...).repos */
  git: { url: string; tips: HostileRepos['tips'] };
  /** a plain-http registry (host:port) and a client that may push to it */
  registry: { host: string; client: RegistryClient };
  /** scratch directory for layer files */
  work: string;
}

/** where the refusal shows: a condition of the hostile BD, or the API server refusing its create */
export type Refusal = { condition: string; status: 'True' | 'False'; reason: string; message: RegExp } | { admission: RegExp };

export interface HostileInput {
  name: string;
  /** one line: what the input is */
  what: string;
  /** the hostile BundleDeployment's spec (without installNamespace), its content unique to `id` */
  spec(id: string): Promise<Spec>;
  refusal: Refusal;
}

/**
 * the anchors of a `levels`-level alias bomb as mapping entries `l0` … `l<levels>`, each line
 * after `indent`: 10 scalars, then each level ten aliases of the one before (`*l<levels>` is
 * 10^(levels+1) nodes)
 */
export function aliasBombEntries(levels: number, indent = ''): string {
  let text = `${indent}l0: &l0 ["x","x","x","x","x","x","x","x","x","x"]\n`;
  for (let i = 1; i <= levels; i++) text += `${indent}l${i}: &l${i} [${Array.from({ length: 10 }, () => `*l${i - 1}`).join(',')}]\n`;
  return text;
}

/** a `levels`-level alias bomb in a ConfigMap */
function aliasBomb(levels: number): string {
  return `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n${aliasBombEntries(levels, '  ')}`;
}

/** CEL: `levels` nested all() over ten-element lists, 10^levels steps */
function nestedCel(levels: number): string {
  const ten = `[${Array.from({ length: 10 }, (_, i) => i).join(',')}]`;
  let cel = 'self.data.size() > 0';
  for (let d = levels; d >= 1; d--) cel = `${ten}.all(x${d}, ${cel})`;
  return cel;
}

/** a gzip tarball of `entries` served at `path`, pinned by sha256 */
async function serveLayer(s: HostileServers, path: string, entries: LayerEntry[]): Promise<Spec['sources']> {
  const layer = await writeLayer(entries, join(s.work, `${path.replace(/\W/g, '_')}.tgz`));
  const body = await readFile(layer.path);
  s.files.set(path, body);
  return [{ kind: 'http', http: { url: s.files.url(path), sha256: sha256(body) } }];
}

/**
 * chains of the longest length a chain may have: each link costs up to MAX_SYMLINK_HOPS lookups;
 * fits DEFAULT_MAX_LINKS with a loop after them (refused by the hop budget per tree long before)
 */
const CHAINS = Math.floor((DEFAULT_MAX_LINKS - 2) / MAX_SYMLINK_HOPS);

/** the manifest, `chains` chains of `length` symlinks each ending at it, then `more` */
function linkChains(id: string, chains: number, length: number, more: LayerEntry[]): LayerEntry[] {
  const entries: LayerEntry[] = [{ name: 'cm.yaml', data: cm(`links-${id}`, { a: '1' }) }];
  for (let c = 0; c < chains; c++) {
    for (let j = 0; j < length; j++) entries.push({ name: `c${c}-${j}`, type: 'symlink', linkname: j + 1 < length ? `c${c}-${j + 1}` : 'cm.yaml' });
  }
  return [...entries, ...more];
}

const git = (s: HostileServers, repo: string, ref: { commit?: string; branch?: string }): Spec['sources'] => [
  { kind: 'git', git: { repository: `${s.git.url}/${repo}`, ref } },
];

const plain = (sources: Spec['sources'], extra: Partial<Spec> = {}): Spec => ({ format: 'plain', sources, ...extra });

export function hostileInputs(s: HostileServers): HostileInput[] {
  const processFailed = (message: RegExp): Refusal => ({ condition: 'Unpacked', status: 'False', reason: 'ProcessFailed', message });
  const fetchFailed = (message: RegExp): Refusal => ({ condition: 'Unpacked', status: 'False', reason: 'FetchFailed', message });
  const unhealthy = (message: RegExp): Refusal => ({ condition: 'Healthy', status: 'False', reason: 'Unhealthy', message });
  const YAML_LIMIT = /a YAML document expands to more than 1000000 nodes \(the limit per document; aliases are counted as expanded\)/;
  return [
    {
      name: 'yaml-alias-bomb',
      what: 'one 2.5 MB manifest: a 9-level alias bomb (10^9 nodes) behind a comment',
      spec: async (id) => plain(await servePinned(s.files, `/bomb-${id}.tgz`, { 'bomb.yaml': `# ${'padding '.repeat(312_500)}\n${aliasBomb(9)}` })),
      refusal: processFailed(YAML_LIMIT),
    },
    {
      name: 'yaml-huge-document',
      what: 'one 15 MiB document without aliases: a flow sequence of 7.5 M one-digit numbers',
      spec: async (id) =>
        plain(
          await servePinned(s.files, `/huge-${id}.tgz`, {
            'huge.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge}\ndata:\n  list: [${'1,'.repeat(7_500_000)}1]\n`,
          }),
        ),
      refusal: processFailed(YAML_LIMIT),
    },
    {
      name: 'cel-nested',
      what: 'a CEL health check of 9 nested all() over ten-element lists (10^9 steps)',
      spec: async (id) =>
        plain(await servePinned(s.files, `/cel-${id}.tgz`, { 'cm.yaml': cm(`cel-${id}`, { a: '1' }) }), {
          healthChecks: [{ name: 'bomb', match: { kind: 'ConfigMap' }, cel: nestedCel(9) }],
        }),
      refusal: unhealthy(/^healthChecks\[bomb\]: cel: estimated cost \S+ exceeds the limit of 1000000 /),
    },
    {
      name: 'jsonpath-descent',
      what: 'a jsonPath health check $..*..*..* (repeated recursive descent)',
      spec: async (id) =>
        plain(await servePinned(s.files, `/jp-${id}.tgz`, { 'cm.yaml': cm(`jp-${id}`, { a: '1' }) }), {
          healthChecks: [{ name: 'descent', match: { kind: 'ConfigMap' }, jsonPath: { path: '$..*..*..*', value: 'x' } }],
        }),
      refusal: unhealthy(/^healthChecks\[descent\]: jsonPath \$\.\.\*\.\.\*\.\.\*: more than one recursive descent \(\.\.\) is not allowed/),
    },
    {
      name: 'jsonpath-results',
      what: 'a jsonPath health check $..* over a ConfigMap of 5000 keys',
      spec: async (id) => {
        const data = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, 'v']));
        return plain(await servePinned(s.files, `/jpr-${id}.tgz`, { 'cm.yaml': cm(`jpr-${id}`, data) }), {
          healthChecks: [{ name: 'all', match: { kind: 'ConfigMap' }, jsonPath: { path: '$..*', value: 'x' }, periodSeconds: 1, failureThreshold: 1 }],
        });
      },
      // a revision that never became healthy stays Progressing (until progressDeadline), naming why
      refusal: {
        condition: 'Healthy',
        status: 'False',
        reason: 'Progressing',
        message: /health check all: jsonPath \$\.\.\*: yields more than 1000 values \(the limit\)/,
      },
    },
    {
      name: 'git-tree-bomb',
      what: 'a git tree of 10^9 paths (one 1000-entry subtree repeated three levels deep) in a pack of a few KiB',
      spec: async () => plain(git(s, 'bounds.git', { commit: s.git.tips.bomb })),
      refusal: fetchFailed(/directory has more than 100000 entries \(the limit\)/),
    },
    {
      name: 'git-symlink-blob',
      what: 'a git symlink whose target is 1 MiB',
      spec: async () => plain(git(s, 'bounds.git', { commit: s.git.tips.biglink })),
      refusal: fetchFailed(/symlink link: its target is 1048576 bytes, more than the limit of 4096 bytes per link/),
    },
    {
      name: 'git-ref-advertisement',
      what: 'a git repository advertising 150,000 refs (about 10 MiB)',
      spec: async () => plain(git(s, 'refs.git', { branch: 'main' })),
      refusal: { condition: 'Resolved', status: 'False', reason: 'ResolveFailed', message: /ref advertisement is larger than the 8388608 bytes allowed/ },
    },
    {
      name: 'symlink-count',
      what: `a tarball of ${DEFAULT_MAX_LINKS + 1} symlinks, each a valid link to the manifest`,
      spec: async (id) => plain(await serveLayer(s, `/links-${id}.tgz`, linkChains(id, DEFAULT_MAX_LINKS + 1, 1, []))),
      refusal: fetchFailed(new RegExp(`archive has more than ${DEFAULT_MAX_LINKS} symlinks \\(the limit per tree\\)`)),
    },
    {
      name: 'symlink-chain',
      what: `a tarball of ${CHAINS * MAX_SYMLINK_HOPS} symlinks in chains of ${MAX_SYMLINK_HOPS} (the longest a chain may be), then a loop`,
      spec: async (id) =>
        plain(
          await serveLayer(
            s,
            `/chain-${id}.tgz`,
            linkChains(id, CHAINS, MAX_SYMLINK_HOPS, [
              { name: 'zz-a', type: 'symlink', linkname: 'zz-b' },
              { name: 'zz-b', type: 'symlink', linkname: 'zz-a' },
            ]),
          ),
        ),
      refusal: fetchFailed(new RegExp(`took more than ${DEFAULT_MAX_LINK_HOPS} link hops \\(the limit per tree`)),
    },
    {
      name: 'revision-too-large',
      what: 'a rendered revision of 12 MiB of random text, about 9 MiB gzip-compressed (over the 8Mi --max-revision-size)',
      spec: async (id) =>
        plain(await servePinned(s.files, `/big-${id}.tgz`, { 'big.yaml': cm(`big-${id}`, { blob: randomBytes(9 * 1024 * 1024).toString('base64') }) })),
      refusal: processFailed(/over the limit of 8 MiB per revision \(hoist run --max-revision-size\)/),
    },
    {
      name: 'poll-interval',
      what: 'pollInterval: 1ms',
      spec: async (id) => plain(await servePinned(s.files, `/poll-${id}.tgz`, { 'cm.yaml': cm(`poll-${id}`, { a: '1' }) }), { pollInterval: '1ms' }),
      refusal: { admission: /must be at least 10s/ },
    },
    {
      name: 'oci-whiteout',
      what: 'an image whose second layer holds the whiteout ".wh..." (it would remove the unpack directory\'s parent)',
      spec: async (id) => {
        const base = await writeLayer([{ name: 'cm.yaml', data: cm(`wh-${id}`, { a: '1' }) }], join(s.work, `wh-${id}-1.tgz`));
        const escape = await writeLayer([{ name: '.wh...', data: '' }], join(s.work, `wh-${id}-2.tgz`));
        const pushed = await pushImage(s.registry.client, parseReference(`${s.registry.host}/iso/whiteout-${id}:v1`), [base, escape], { stage: 'fetch' });
        return plain([{ kind: 'image', image: { ref: `${s.registry.host}/iso/whiteout-${id}@${pushed.digest}` } }]);
      },
      refusal: { condition: 'Unpacked', status: 'False', reason: 'FetchFailed', message: /whiteout "\.wh\.\.\." names "\.\.", not an entry of its directory/ },
    },
  ];
}

/**
 * a healthy plain bundle: `objects` ConfigMaps (default one) named `healthy-<id>[-<n>]`, each
 * with 256 bytes of padding when there are several, so a benchmark can choose an install long enough to measure
 */
export async function healthySpec(files: FileServer, id: string, objects = 1): Promise<Spec> {
  const docs = Array.from({ length: objects }, (_, i) =>
    stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: objects === 1 ? `healthy-${id}` : `healthy-${id}-${i}` },
      data: objects === 1 ? { id } : { id, pad: 'x'.repeat(256) },
    }),
  );
  return plain(await servePinned(files, `/healthy-${id}.tgz`, { 'cm.yaml': docs.join('---\n') }));
}
