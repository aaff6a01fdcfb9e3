/**
 * The `git` Source (DESIGN §2): smart HTTP(S), and SSH (`ssh://` and scp-like addresses) with a
 * key and known_hosts from the auth Secret (./ssh-session.ts: the system's OpenSSH client, host
 * key always verified).
 *
 * - `resolve` turns `{ branch }` / `{ tag }` into a commit with one GET of the ref advertisement
 *   (no clone, no process); `{ commit }` is pinned and resolves with no network at all. Annotated
 *   tags are peeled to their commit. A poll (`ctx.previous` set) costs the same single request.
 * - `fetch` lands `git:<commit>:<directory>` in the content store: a cache hit makes no request;
 *   a miss runs, once per key even when asked concurrently (the store's `put` shares in-flight
 *   writes), a depth-1 fetch of exactly that commit with the git CLI into a private temp repo and
 *   checks out only `directory` into the store's temp dir (no `.git` in the stored tree).
 *
 * Why the git CLI and not isomorphic-git: measured in README.md (about 2x faster for the whole
 * tree, 3x for a subdirectory, and it can fetch a bare commit id).
 *
 * Cache-hit authorization (DESIGN §2, ../cached-fetch.ts): the store records which repository
 * URL and credential fetched or proved each commit; a hit for the same URL with another credential
 * costs one authenticated ref advertisement, a hit fetched only from another URL is fetched again
 * from this one (git verifies every object against the commit id).
 *
 * Network rules, the same as the other sources': credentials only for the hosts the Secret names
 * (../credential-hosts.ts) and only over https; resolve uses the shared transport
 * (../transport/transport.ts). The git CLI gets them as config: the Authorization header as a
 * URL-scoped `http.<origin>/.extraHeader` in the environment, `http.followRedirects=false` while
 * credentials are configured (git would otherwise replay the header to wherever the first
 * redirect pointed), and `protocol.http.allow=never` for an https repository, so no redirect can
 * downgrade it. HTTPS_PROXY/HTTP_PROXY/NO_PROXY pass through to git. One overall deadline per
 * resolve and per fetch; at the deadline the git process is killed. An ssh repository's Secret is
 * bound to its host the same way (a bare host meaning port 22); resolve reads the ref
 * advertisement over one ssh connection, fetch runs git with the operation's ssh client
 * (GIT_SSH), and every connection checks the host key against the Secret's known_hosts.
 *
 * Bounded work (docs/security.md): the ref advertisement is streamed, capped at 8 MiB and only
 * the refs asked for are kept; the fetch's object store is capped (`maxPackBytes`, 1 GiB,
 * ./pack-limit.ts); the listing, symlink targets and the containment check are bounded in
 * ./checkout.ts.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { rootCertificates } from 'node:tls';
import type { ResolvedSourceStatus, SourceSpec } from '../../../api/v1alpha2/types.ts';
import type { ContentStore, Scratch, SpaceAllowance } from '../../cache/content-store.ts';
import { HoistError, redactUrl, type Stage } from '../../util/errors.ts';
import { fetchThroughStore } from '../cached-fetch.ts';
import { credentialsForSshHost, credentialsForUrl } from '../credential-hosts.ts';
import { withDeadline } from '../transport/deadline.ts';
import { caForUrl, type HostCAs } from '../transport/ca-dir.ts';
import { HttpTransport, type SourceStage } from '../transport/transport.ts';
import type { Resolved, Source, SourceContext } from '../source.ts';
import { highestMatching, semverRangeProblem } from '../semver-select.ts';
import { DEFAULT_MAX_LINKS } from '../../util/content-tree.ts';
import { checkoutDirectory, type CheckoutLimits } from './checkout.ts';
import { gitAuthFrom, type GitAuth } from './git-auth.ts';
import { GitCommandError, classifyFetchFailure, runGit, type GitRunOptions } from './git-cli.ts';
import { fetchWithPackLimit, PACK_CONFIG } from './pack-limit.ts';
import { DEFAULT_MAX_ADVERTISEMENT_BYTES, fetchRefAdvertisement, type AdvertisedRef, type RefAdvertisement, type RefWants } from './ref-advertisement.ts';
import { SourceCode, sourceError } from '../errors.ts';
import { sshAuthFrom, sshSecrets, type SshAuth } from './ssh-auth.ts';
import {
  classifySshFailure,
  findProgram,
  privateKeyProblem,
  SSH_PROTOCOL_CONFIG,
  sshRefAdvertisement,
  writeSshSession,
  type SshPrograms,
  type SshSession,
} from './ssh-session.ts';
import { isSshRepository, parseSshRepository, sshHostPort, type SshRepository } from './ssh-url.ts';

export interface GitSourceOptions {
  /**
   * parent of the private temp repositories used while fetching. Default: a scratch directory of
   * the content store (its disk), the fetched objects counted against its budget as they arrive
   */
  workRoot?: string;
  /** overall deadline of one resolve (the ref advertisement); default 60 s */
  resolveTimeoutMs?: number;
  /** overall deadline of one fetch (every git process and request in it); default 10 min */
  fetchTimeoutMs?: number;
  /** limits on the checked-out directory; defaults 100 000 entries, 1 GiB, 10 000 symlinks */
  limits?: Partial<CheckoutLimits>;
  /** largest ref advertisement accepted; default 8 MiB (DEFAULT_MAX_ADVERTISEMENT_BYTES) */
  maxAdvertisementBytes?: number;
  /** largest object store a fetch may build (the received pack); default 1 GiB */
  maxPackBytes?: number;
  /** PEM CA bundle trusted for every repository without its own `ca.crt`; default system roots */
  caBundle?: string;
  /** per-host CAs (`--ca-dir`): added to `caBundle` for repositories on that host */
  hostCAs?: HostCAs;
  /** the programs git over ssh runs; default `ssh` and `ssh-keygen` from PATH, this process's node */
  ssh?: Partial<SshPrograms>;
}

/** A git source spec after validation: what resolve and fetch work from. */
export interface GitTarget {
  /** the repository URL as given (validated: http(s) without userinfo, or an ssh address) */
  repository: string;
  /** the URL safe to show: no userinfo, no query (an ssh address as given: it holds no secret) */
  displayUrl: string;
  /** set for an ssh repository: its host, port, user and path as git reads them */
  ssh?: SshRepository;
  ref: { kind: 'commit' | 'tag' | 'branch' | 'semver'; value: string };
  /** normalized: no leading/trailing slash, "" for the root */
  directory: string;
}

const HEX40 = /^[0-9a-fA-F]{40}$/;
const DEFAULT_LIMITS: CheckoutLimits = { maxFiles: 100_000, maxBytes: 1024 * 1024 * 1024, maxLinks: DEFAULT_MAX_LINKS };
const DEFAULT_MAX_PACK_BYTES = 1024 * 1024 * 1024;

/** The content-store key: the content is fully identified by the commit and the directory. */
export function gitContentKey(commit: string, directory: string): string {
  return `git:${commit.toLowerCase()}:${directory}`;
}

/** "manifests/", "./manifests", "/manifests" → "manifests"; "" and "." → "". Refuses "..". */
export function normalizeDirectory(directory: string | undefined): string | undefined {
  if (directory === undefined) return '';
  const trimmed = directory.trim();
  if (trimmed.includes('\0') || trimmed.includes('\\')) return undefined;
  const norm = posix.normalize(`/${trimmed}`).replace(/^\/+|\/+$/g, '');
  if (trimmed.split('/').some((seg) => seg === '..')) return undefined;
  if (norm.split('/').some((seg) => seg.toLowerCase() === '.git')) return undefined;
  return norm === '.' ? '' : norm;
}

function refLabel(ref: GitTarget['ref']): string {
  return `${ref.kind} ${ref.value}`;
}

/** Validates `spec.git`; every problem here is terminal (the spec must change). */
export function parseGitSpec(spec: SourceSpec, stage: Stage): GitTarget {
  const git = spec.git;
  const bad = (message: string, code: SourceCode, subject?: string): HoistError => sourceError(message, { stage, code, subject, terminal: true });
  if (spec.kind !== 'git' || !git) throw bad('source is not of kind git', SourceCode.InvalidSpec);
  const { displayUrl, ssh } = parseRepository(git.repository, bad);
  const set = (['commit', 'tag', 'branch', 'semver'] as const).filter((k) => (git.ref?.[k] ?? '') !== '');
  if (set.length !== 1) throw bad('ref must set exactly one of commit, tag, branch, semver', SourceCode.InvalidRef, displayUrl);
  const kind = set[0] as GitTarget['ref']['kind'];
  const value = (git.ref[kind] ?? '').trim();
  const subject = `${displayUrl} ${kind} ${value}`;
  if (kind === 'commit' && !HEX40.test(value)) throw bad('commit must be 40 hex characters', SourceCode.InvalidRef, subject);
  const rangeProblem = kind === 'semver' ? semverRangeProblem(value) : undefined;
  if (rangeProblem) throw bad(`semver ${rangeProblem}`, SourceCode.InvalidRef, subject);
  const directory = normalizeDirectory(git.directory);
  if (directory === undefined)
    throw bad(`directory ${JSON.stringify(git.directory)} must be a relative path inside the repository`, SourceCode.InvalidDirectory, subject);
  return {
    repository: git.repository,
    displayUrl,
    ...(ssh ? { ssh } : {}),
    ref: { kind, value: kind === 'commit' ? value.toLowerCase() : value },
    directory,
  };
}

/** an http(s) URL without credentials, or an ssh address (./ssh-url.ts) */
function parseRepository(
  repository: string,
  bad: (message: string, code: SourceCode, subject?: string) => HoistError,
): { displayUrl: string; ssh?: SshRepository } {
  if (isSshRepository(repository)) {
    const parsed = parseSshRepository(repository);
    const displayUrl = 'problem' in parsed && parsed.credentials ? redactUrl(repository) : repository;
    if ('problem' in parsed)
      throw bad(`ssh repository: ${parsed.problem}`, parsed.credentials ? SourceCode.CredentialsInUrl : SourceCode.UnsupportedUrl, displayUrl);
    return { displayUrl, ssh: parsed };
  }
  let url: URL;
  try {
    url = new URL(repository);
  } catch {
    throw bad('repository is not a valid url', SourceCode.UnsupportedUrl, redactUrl(repository));
  }
  const displayUrl = redactUrl(repository);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw bad(`only http(s) and ssh repositories are supported, not ${url.protocol.replace(/:$/, '')}`, SourceCode.UnsupportedUrl, displayUrl);
  }
  if (url.username !== '' || url.password !== '') {
    // Credentials in the URL would end up in status, logs and `ps`; they belong in a Secret.
    throw bad('repository url must not contain credentials; use auth.secretRef', SourceCode.CredentialsInUrl, displayUrl);
  }
  return { displayUrl };
}

/** Full ref name for a branch or tag; full names ("refs/heads/x") are accepted as given. */
function refName(ref: GitTarget['ref']): string {
  if (ref.value.startsWith('refs/')) return ref.value;
  return ref.kind === 'branch' ? `refs/heads/${ref.value}` : `refs/tags/${ref.value}`;
}

const TAGS = 'refs/tags/';

/** The commit a ref points at: annotated tags are peeled through every tag level. */
function commitOf(ref: AdvertisedRef): string {
  return ref.peeled ?? ref.oid;
}

export class GitSource implements Source {
  readonly kind = 'git' as const;
  /** an explicit parent for temp repositories (uncounted); undefined: the store's scratch */
  private readonly workRoot: string | undefined;
  private readonly resolveTimeoutMs: number;
  private readonly fetchTimeoutMs: number;
  private readonly limits: CheckoutLimits;
  private readonly maxAdvertisementBytes: number;
  private readonly maxPackBytes: number;
  private readonly caBundle: string | undefined;
  private readonly hostCAs: HostCAs | undefined;
  /** one transport (connection pool) per trust configuration */
  private readonly transports = new Map<string, HttpTransport>();
  private readonly sshOptions: Partial<SshPrograms>;
  private programs: SshPrograms | undefined;
  /** whether an ssh key (with its passphrase) loads, by SshAuth.id: undefined when it does, else why not */
  private readonly keyChecks = new Map<string, string | undefined>();

  constructor(opts: GitSourceOptions = {}) {
    this.workRoot = opts.workRoot;
    this.resolveTimeoutMs = opts.resolveTimeoutMs ?? 60_000;
    this.fetchTimeoutMs = opts.fetchTimeoutMs ?? 600_000;
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.maxAdvertisementBytes = opts.maxAdvertisementBytes ?? DEFAULT_MAX_ADVERTISEMENT_BYTES;
    this.maxPackBytes = opts.maxPackBytes ?? DEFAULT_MAX_PACK_BYTES;
    this.caBundle = opts.caBundle;
    this.hostCAs = opts.hostCAs;
    this.sshOptions = opts.ssh ?? {};
  }

  /** Closes the transports' connections. */
  async close(): Promise<void> {
    for (const t of this.transports.values()) await t.close();
    this.transports.clear();
  }

  /**
   * Cheap: a pinned commit makes no request; a branch or tag makes exactly one (the ref
   * advertisement), also when polling with `ctx.previous`. Throws HoistError (stage resolve).
   */
  async resolve(spec: SourceSpec, ctx: SourceContext): Promise<Resolved> {
    const target = parseGitSpec(spec, 'resolve');
    const directory = target.directory;
    const subject = `${target.displayUrl} ${refLabel(target.ref)}`;
    // checked even when no request follows: the BD says at once that the secret is not for this host
    const auth = this.auth(target, ctx, 'resolve', subject);
    if (target.ref.kind === 'commit') {
      const commit = target.ref.value;
      return { status: { kind: 'git', commit }, key: gitContentKey(commit, directory), pinned: true };
    }
    const recorded = ctx.previous;
    if (recorded?.kind === 'git' && recorded.commit && !ctx.recheck) {
      // resolved once per spec generation: reuse the recorded commit without a request
      return { status: { ...recorded }, key: gitContentKey(recorded.commit, directory), pinned: false };
    }
    if (target.ref.kind === 'semver') return this.resolveSemver(target, auth, subject, ctx);
    const name = refName(target.ref);
    const adv = await withDeadline(ctx.signal, this.resolveTimeoutMs, 'resolve', subject, (signal) =>
      this.advertise(target, auth, 'resolve', subject, signal, { names: [name] }),
    );
    const ref = adv.refs.get(name);
    if (!ref) {
      throw sourceError(`${target.ref.kind} ${JSON.stringify(target.ref.value)} not found in repository`, {
        stage: 'resolve',
        code: SourceCode.UnknownRef,
        subject,
        terminal: true,
      });
    }
    const commit = commitOf(ref);
    const status: ResolvedSourceStatus = { kind: 'git', commit, ref: name, resolvedAt: new Date().toISOString() };
    return { status, key: gitContentKey(commit, directory), pinned: false };
  }

  /**
   * The highest tag the range admits (../semver-select.ts), from one ref advertisement keeping
   * only the tags. None matching is transient: the next poll (or a retry) may find one pushed.
   */
  private async resolveSemver(target: GitTarget, auth: GitAuth, subject: string, ctx: SourceContext): Promise<Resolved> {
    const adv = await withDeadline(ctx.signal, this.resolveTimeoutMs, 'resolve', subject, (signal) =>
      this.advertise(target, auth, 'resolve', subject, signal, { prefix: TAGS }),
    );
    const tags = new Map([...adv.refs.values()].map((r) => [r.name.slice(TAGS.length), r]));
    const chosen = highestMatching(tags.keys(), target.ref.value);
    if (!chosen) {
      throw sourceError(`no tag of ${tags.size} is a version semver ${JSON.stringify(target.ref.value)} admits`, {
        stage: 'resolve',
        code: SourceCode.NoMatchingVersion,
        subject,
        terminal: false,
      });
    }
    const commit = commitOf(tags.get(chosen.tag)!);
    const status: ResolvedSourceStatus = { kind: 'git', commit, ref: `${TAGS}${chosen.tag}`, resolvedAt: new Date().toISOString() };
    return { status, key: gitContentKey(commit, target.directory), pinned: false };
  }

  /**
   * Idempotent: returns the store directory holding `directory` of the resolved commit. A hit this
   * repository URL and credential proved before makes no request (see the file comment). Throws
   * HoistError (stage fetch).
   */
  async fetch(spec: SourceSpec, resolved: Resolved, store: ContentStore, ctx: SourceContext): Promise<string> {
    const target = parseGitSpec(spec, 'fetch');
    const commit = resolved.status.commit?.toLowerCase() ?? '';
    const subject = `${target.displayUrl} commit ${commit}`;
    if (!HEX40.test(commit)) {
      throw sourceError('resolved source has no commit', { stage: 'fetch', code: SourceCode.InvalidRef, subject, terminal: true });
    }
    const auth = this.auth(target, ctx, 'fetch', subject);
    return withDeadline(ctx.signal, this.fetchTimeoutMs, 'fetch', subject, (signal) =>
      fetchThroughStore({
        store,
        key: gitContentKey(commit, target.directory),
        origin: { location: target.repository, credential: auth.header ?? auth.ssh?.id, display: target.displayUrl },
        subject,
        ...(ctx.onStore ? { observe: ctx.onStore } : {}),
        download: (tmpDir, space) => this.fetchInto(target, commit, tmpDir, auth, subject, signal, space, () => store.scratch('fetched git objects')),
        prove: async () => {
          await this.advertise(target, auth, 'fetch', subject, signal, {});
        },
      }),
    );
  }

  /** the secret's credentials, when it is bound to the repository's host (else a terminal error) */
  private auth(target: GitTarget, ctx: SourceContext, stage: SourceStage, subject: string): GitAuth {
    if (target.ssh) {
      const host = sshHostPort(target.ssh);
      const ssh = sshAuthFrom(credentialsForSshHost(ctx.credentials, host, target.displayUrl, stage), host, stage, subject);
      return { secrets: sshSecrets(ssh), ssh };
    }
    const url = new URL(target.repository);
    // every CA that applies to this repository: the global bundle, its host's (--ca-dir), its own (caSecretRef)
    const cas = [this.caBundle, caForUrl(this.hostCAs, url), ctx.ca?.pem].filter((c): c is string => c !== undefined);
    return gitAuthFrom(credentialsForUrl(ctx.credentials, url, stage), stage, subject, cas.length > 0 ? cas.join('\n') : undefined);
  }

  private transport(ca: string | undefined): HttpTransport {
    const id = ca ?? '';
    let t = this.transports.get(id);
    if (!t) {
      t = new HttpTransport(ca === undefined ? {} : { ca });
      this.transports.set(id, t);
    }
    return t;
  }

  /** the ref advertisement, keeping only the refs `wants` names */
  private async advertise(
    target: GitTarget,
    auth: GitAuth,
    stage: SourceStage,
    subject: string,
    signal: AbortSignal,
    wants: RefWants,
  ): Promise<RefAdvertisement> {
    if (target.ssh && auth.ssh) {
      const repo = target.ssh;
      const sshAuth = auth.ssh;
      // its own private directory: a resolve has no temp repository
      const dir = await mkdtemp(join(this.workRoot ?? tmpdir(), 'hoist-ssh-'));
      try {
        const session = await this.openSsh(dir, sshAuth, stage, subject, signal);
        return await sshRefAdvertisement(session, repo, {
          stage,
          subject,
          signal,
          wants,
          maxBytes: this.maxAdvertisementBytes,
          home: dir,
          timeoutMs: stage === 'resolve' ? this.resolveTimeoutMs : this.fetchTimeoutMs,
          secrets: auth.secrets,
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
    return fetchRefAdvertisement(target.repository, {
      auth,
      transport: this.transport(auth.ca),
      stage,
      subject,
      signal,
      wants,
      maxBytes: this.maxAdvertisementBytes,
    });
  }

  /** the ssh programs, found on PATH once; a terminal `ssh-unavailable` while they are not there */
  private sshPrograms(stage: SourceStage, subject: string): SshPrograms {
    if (this.programs) return this.programs;
    const ssh = this.sshOptions.ssh ?? findProgram('ssh');
    const keygen = this.sshOptions.keygen ?? findProgram('ssh-keygen');
    if (ssh === undefined || keygen === undefined) {
      throw sourceError('git over ssh needs the OpenSSH client (ssh and ssh-keygen) on PATH', {
        stage,
        code: SourceCode.SshUnavailable,
        subject,
        terminal: true,
      });
    }
    this.programs = { ssh, keygen, node: this.sshOptions.node ?? process.execPath };
    return this.programs;
  }

  /**
   * Writes the operation's ssh directory under `parent` (./ssh-session.ts) and checks that the key
   * loads with its passphrase (once per key and passphrase, remembered): a key that does not is a
   * terminal `invalid-credentials`, before any connection.
   */
  private async openSsh(parent: string, auth: SshAuth, stage: SourceStage, subject: string, signal: AbortSignal): Promise<SshSession> {
    const session = await writeSshSession(join(parent, 'ssh'), auth, this.sshPrograms(stage, subject), stage, subject);
    // remembered once known (a result depends only on the key and passphrase); operations that
    // meet a new key at the same time each check it, with their own files and signal
    let problem: string | undefined;
    if (this.keyChecks.has(auth.id)) problem = this.keyChecks.get(auth.id);
    else {
      try {
        problem = await privateKeyProblem(session, auth, { home: parent, timeoutMs: this.resolveTimeoutMs, signal });
      } catch (e) {
        if (!(e instanceof GitCommandError)) throw e;
        if (e.aborted || e.timedOut) throw classifyFetchFailure(e, stage, subject, true, this.resolveTimeoutMs);
        throw sourceError(`git over ssh cannot run ssh-keygen: ${e.message}`, { stage, code: SourceCode.SshUnavailable, subject, terminal: true, cause: e });
      }
      if (this.keyChecks.size >= 1000) this.keyChecks.clear();
      this.keyChecks.set(auth.id, problem);
    }
    if (problem !== undefined)
      throw sourceError(`${auth.label} "ssh-privatekey": ${problem}`, { stage, code: SourceCode.InvalidCredentials, subject, terminal: true });
    return session;
  }

  /**
   * Fetches `commit` into a private temp repository and checks `directory` out into `out`: the
   * checkout charged to `space`, the repository's objects to its scratch directory's allowance
   * (the store's, unless workRoot names another place).
   */
  private async fetchInto(
    target: GitTarget,
    commit: string,
    out: string,
    auth: GitAuth,
    subject: string,
    signal: AbortSignal,
    space: SpaceAllowance,
    scratch: () => Promise<Scratch>,
  ): Promise<void> {
    const dir = this.workRoot === undefined ? await scratch() : { dir: await mkdtemp(join(this.workRoot, 'hoist-git-')), space: undefined };
    const work = dir.dir;
    // the object store grows while git fetches: each measurement charges what it grew by
    let packCharged = 0;
    const onPack = async (bytes: number): Promise<void> => {
      const more = bytes - packCharged;
      if (more <= 0 || !dir.space) return;
      packCharged = bytes;
      await dir.space.charge(more).catch((e: unknown) => {
        packCharged -= more;
        throw e;
      });
    };
    try {
      const home = join(work, 'home');
      await mkdir(home, { mode: 0o700 });
      const gitDir = join(work, 'repo.git');
      const config: Array<readonly [string, string]> = [...PACK_CONFIG];
      // an ssh repository speaks ssh only; an https one never plain http, not even after a redirect
      if (target.ssh) config.push(...SSH_PROTOCOL_CONFIG);
      else if (target.repository.startsWith('https:')) config.push(['protocol.http.allow', 'never']);
      if (auth.header !== undefined) {
        // URL-scoped: git sends the header only to this origin. Redirects off: after an initial
        // redirect git would send the same headers to the new base URL, whatever its host.
        config.push([`http.${new URL(target.repository).origin}/.extraHeader`, `Authorization: ${auth.header}`]);
        config.push(['http.followRedirects', 'false']);
      }
      if (auth.ca !== undefined) {
        // git's sslCAInfo replaces its trust store: the roots the ref advertisement trusts go in
        // too, so an extra CA adds trust and takes none away. The file is inside `work`, removed below.
        const caFile = join(home, 'ca.pem');
        await writeFile(caFile, [...rootCertificates, auth.ca].join('\n'), { mode: 0o600 });
        config.push(['http.sslCAInfo', caFile]);
      }
      const run: Omit<GitRunOptions, 'input' | 'env'> = {
        home,
        config,
        timeoutMs: this.fetchTimeoutMs,
        secrets: auth.secrets,
        ...(signal ? { signal } : {}),
      };
      await runGit(['init', '--quiet', '--bare', gitDir], run);
      // git fetch runs ssh with the operation's key and known_hosts (GIT_SSH, in its environment)
      const session = auth.ssh ? await this.openSsh(work, auth.ssh, 'fetch', subject, signal) : undefined;
      await this.fetchCommit(target, commit, gitDir, session ? { ...run, env: session.env } : run, auth, subject, signal, onPack);
      await checkoutDirectory({
        gitDir,
        commit,
        directory: target.directory,
        target: out,
        limits: this.limits,
        subject,
        run,
        indexFile: join(work, 'index'),
        charge: (n: number) => space.charge(n),
      });
    } finally {
      if ('dispose' in dir) await dir.dispose();
      else await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Depth-1 fetch of one commit by id. Protocol v2 servers (git ≥ 2.18 behind http-backend,
   * GitHub, GitLab, Gitea) accept any commit id. A v0-only server refuses ids no ref points at
   * unless uploadpack.allow*SHA1InWant is set; then we fetch a ref that points at the commit
   * (depth 1), and as a last resort all branches and tags with full history.
   */
  private async fetchCommit(
    target: GitTarget,
    commit: string,
    gitDir: string,
    run: Omit<GitRunOptions, 'input'>,
    auth: GitAuth,
    subject: string,
    signal: AbortSignal,
    onPack: (bytes: number) => Promise<void>,
  ): Promise<void> {
    const fetchArgs = (depth: boolean, refspecs: readonly string[]): string[] => [
      '--git-dir',
      gitDir,
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
      '--no-auto-gc',
      ...(depth ? ['--depth', '1'] : []),
      target.repository,
      ...refspecs,
    ];
    const withAuth = auth.header !== undefined || auth.ssh !== undefined;
    const failure = (e: GitCommandError): HoistError => {
      const ssh = target.ssh && classifySshFailure(e.stderr, target.ssh);
      if (ssh && !e.aborted && !e.timedOut) return sourceError(ssh.message, { stage: 'fetch', code: ssh.code, subject, terminal: ssh.terminal, cause: e });
      return classifyFetchFailure(e, 'fetch', subject, withAuth, this.fetchTimeoutMs);
    };
    try {
      await fetchWithPackLimit(fetchArgs(true, [`+${commit}:refs/hoist/commit`]), gitDir, this.maxPackBytes, subject, run, onPack);
      return;
    } catch (e) {
      if (!(e instanceof GitCommandError)) throw e;
      if (!/unadvertised object/i.test(e.stderr)) throw failure(e);
    }
    const adv = await this.advertise(target, auth, 'fetch', subject, signal, { commit });
    const pointing = [...adv.refs.values()].filter((r) => r.oid === commit || r.peeled === commit).map((r) => r.name);
    try {
      if (pointing.length > 0) {
        const name = pointing.find((n) => n.startsWith('refs/heads/')) ?? pointing[0] ?? '';
        await fetchWithPackLimit(fetchArgs(true, [`+${name}:refs/hoist/commit`]), gitDir, this.maxPackBytes, subject, run, onPack);
        return;
      }
      await fetchWithPackLimit(
        fetchArgs(false, ['+refs/heads/*:refs/hoist/heads/*', '+refs/tags/*:refs/hoist/tags/*']),
        gitDir,
        this.maxPackBytes,
        subject,
        run,
        onPack,
      );
    } catch (e) {
      if (!(e instanceof GitCommandError)) throw e;
      throw failure(e);
    }
    try {
      await runGit(['--git-dir', gitDir, 'cat-file', '-e', `${commit}^{commit}`], run);
    } catch {
      throw sourceError(`commit ${commit} not found on any branch or tag`, {
        stage: 'fetch',
        code: SourceCode.UnknownRef,
        subject,
        terminal: true,
      });
    }
  }
}
