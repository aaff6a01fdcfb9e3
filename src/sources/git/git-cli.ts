/**
 * Runs the git CLI the way the controller must: no system or global config, no prompts, no
 * inherited tracing, HOME in a private temp dir, only http(s) transports (ssh only, for an ssh
 * repository: ./ssh-session.ts), and configuration passed
 * through GIT_CONFIG_COUNT/KEY/VALUE environment variables. Credentials therefore never appear
 * in argv (visible to every user through `ps`), in a URL, or in a file on disk; a process's
 * environment is readable only by its own user. Memory per command is bounded: stdout is capped
 * (`maxOutputBytes`, default 1 MiB) unless the caller streams it (`onStdout`), stderr keeps its
 * last 16 KiB.
 */
import { spawn } from 'node:child_process';
import { basename } from 'node:path';
import { formatBytes } from '../../util/content-tree.ts';
import { HoistError, type Stage, FailureReason } from '../../util/errors.ts';
import { UNKNOWN_AUTHORITY_HINT } from '../transport/transport.ts';
import { redactSecrets } from './git-auth.ts';
import { SourceCode, sourceError } from '../errors.ts';

/** curl's words (GnuTLS and OpenSSL builds) for a chain that ends at a CA nobody configured */
const UNKNOWN_AUTHORITY =
  /server certificate verification failed|unable to get local issuer certificate|self[- ]signed certificate|unable to get issuer certificate|certificate signer not found|issuer is not known/i;

export interface GitRunOptions {
  /** private directory used as HOME (and as cwd) */
  home: string;
  /** git configuration as key → value, handed over in the environment */
  config?: ReadonlyArray<readonly [string, string]>;
  /** extra environment, e.g. GIT_INDEX_FILE */
  env?: Readonly<Record<string, string>>;
  /** kills the process after this many ms */
  timeoutMs: number;
  signal?: AbortSignal;
  /** written to stdin, then stdin is closed */
  input?: string | Buffer;
  /** secrets to scrub from anything surfaced in an error */
  secrets?: readonly string[];
  /**
   * most bytes of stdout kept in memory (default DEFAULT_MAX_OUTPUT_BYTES, 1 MiB): one more and
   * git is killed and the call rejects with `outputLimit` set. Not applied with `onStdout`.
   */
  maxOutputBytes?: number;
  /**
   * consumes stdout as it arrives instead of buffering it (`stdout` then comes back empty); when
   * it throws, git is killed and the call rejects with that error
   */
  onStdout?: (chunk: Buffer) => void;
}

/** stdout kept per git command unless the caller streams it or says otherwise */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

export interface GitRunResult {
  stdout: Buffer;
  stderr: string;
  code: number;
}

/** Thrown for a non-zero exit; `stderr` is already scrubbed of secrets. */
export class GitCommandError extends Error {
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  /** set when git was killed for writing more than this many bytes to stdout */
  readonly outputLimit: number | undefined;

  constructor(message: string, init: { stderr: string; exitCode: number | null; timedOut: boolean; aborted: boolean; outputLimit?: number }) {
    super(message);
    this.name = 'GitCommandError';
    this.stderr = init.stderr;
    this.exitCode = init.exitCode;
    this.timedOut = init.timedOut;
    this.aborted = init.aborted;
    this.outputLimit = init.outputLimit;
  }
}

// Passed through from the controller's environment: proxies (corporate networks) and the
// operator's choice of trust store. Everything else (GIT_TRACE*, GIT_CURL_VERBOSE, GIT_DIR,
// GIT_SSL_NO_VERIFY, GIT_ASKPASS, …) is dropped: any of them could leak headers or weaken TLS.
const PASSTHROUGH = [
  'PATH',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'all_proxy',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
] as const;

// Always-on hardening, applied before the caller's config so the caller can be more specific.
const BASE_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['protocol.allow', 'never'],
  ['protocol.https.allow', 'always'],
  ['protocol.http.allow', 'always'],
  ['credential.helper', ''],
  ['core.askPass', ''],
  ['http.sslVerify', 'true'],
  // A stalled transfer (less than 1 KiB/s for 60 s) fails instead of hanging until the timeout.
  ['http.lowSpeedLimit', '1024'],
  ['http.lowSpeedTime', '60'],
  ['core.hooksPath', '/dev/null'],
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
  ['advice.detachedHead', 'false'],
  ['init.defaultBranch', 'main'],
];

/** The environment for one git invocation; exported for the tests that inspect it. */
export function gitEnv(opts: Pick<GitRunOptions, 'home' | 'config' | 'env'>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of PASSTHROUGH) {
    const v = process.env[name];
    if (v !== undefined) env[name] = v;
  }
  const config = [...BASE_CONFIG, ...(opts.config ?? [])];
  // GIT_SSL_CAINFO would win over a repository's own CA (http.sslCAInfo): that one is more specific
  if (config.some(([k]) => k === 'http.sslCAInfo')) delete env.GIT_SSL_CAINFO;
  Object.assign(env, {
    HOME: opts.home,
    XDG_CONFIG_HOME: opts.home,
    LANG: 'C',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_CONFIG_COUNT: String(config.length),
  });
  config.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  Object.assign(env, opts.env ?? {});
  return env;
}

/**
 * Runs `git <args>`; resolves with the output on exit 0, rejects with GitCommandError otherwise
 * (or with what `onStdout` threw). Kills the process group (SIGKILL: git holds no state we keep)
 * on timeout, abort, output over `maxOutputBytes`, or a throwing `onStdout`. Memory: at most
 * `maxOutputBytes` of stdout plus 16 KiB of stderr.
 */
export function runGit(args: readonly string[], opts: GitRunOptions): Promise<GitRunResult> {
  return runProgram('git', args, opts);
}

/**
 * runGit for another program of a git operation (ssh, ssh-keygen): the same environment, process
 * group, limits and errors.
 */
export function runProgram(program: string, args: readonly string[], opts: GitRunOptions): Promise<GitRunResult> {
  // what messages call the command: `git fetch`, `ssh` (never its arguments: paths, hosts)
  const name = program === 'git' ? `git ${verb(args)}` : basename(program);
  return new Promise((resolve, reject) => {
    // its own process group: `git fetch` runs git-remote-https (or ssh) as a child that holds the
    // pipes open, so killing git alone would leave the transfer (and this promise) running. Also
    // no controlling terminal: nothing can prompt on one.
    const child = spawn(program, args, { cwd: opts.home, env: gitEnv(opts), stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    const maxOutput = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    let outBytes = 0;
    let outputLimit: number | undefined;
    let consumerError: { error: unknown } | undefined;
    let err = '';
    let timedOut = false;
    let aborted = false;
    const kill = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL'); // the group is gone already
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = (): void => {
      aborted = true;
      kill();
    };
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (d: Buffer) => {
      if (outputLimit !== undefined || consumerError) return; // killed already: drop the rest
      if (opts.onStdout) {
        try {
          opts.onStdout(d);
        } catch (e) {
          consumerError = { error: e };
          kill();
        }
        return;
      }
      outBytes += d.length;
      if (outBytes > maxOutput) {
        outputLimit = maxOutput;
        out.length = 0;
        kill();
        return;
      }
      out.push(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      // Keep the tail only: a chatty failure must not grow memory without bound.
      err = (err + d.toString('utf8')).slice(-16_384);
    });
    child.stdin.on('error', () => undefined);
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
    const finish = (): void => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    child.on('error', (e) => {
      finish();
      reject(new GitCommandError(`cannot run ${basename(program)}: ${e.message}`, { stderr: '', exitCode: null, timedOut, aborted }));
    });
    child.on('close', (code) => {
      finish();
      if (consumerError) {
        reject(consumerError.error);
        return;
      }
      const stderr = redactSecrets(err, opts.secrets ?? []);
      if (code === 0 && !timedOut && !aborted && outputLimit === undefined) {
        resolve({ stdout: Buffer.concat(out), stderr, code });
        return;
      }
      reject(
        new GitCommandError(outputLimit === undefined ? `${name} failed` : `${name} wrote more than ${outputLimit} bytes`, {
          stderr,
          exitCode: code,
          timedOut,
          aborted,
          ...(outputLimit === undefined ? {} : { outputLimit }),
        }),
      );
    });
  });
}

/** the git subcommand of `args` (after global options such as `--git-dir <dir>`), for messages */
function verb(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '--git-dir' || a === '--work-tree' || a === '-C' || a === '-c') i++;
    else if (!a.startsWith('-')) return a;
  }
  return '';
}

/** Last meaningful stderr line without git's "fatal: "/"error: " prefix, for messages. */
function stderrSummary(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('hint:'));
  const last = lines.at(-1) ?? '';
  return last.replace(/^(fatal|error|remote):\s*/i, '').toLowerCase();
}

/**
 * Maps a failed network git command (fetch) to a HoistError: wrong credentials, unknown refs and
 * missing repositories are terminal; network trouble and server errors are transient.
 */
export function classifyFetchFailure(e: GitCommandError, stage: Stage, subject: string, withAuth: boolean, timeoutMs: number): HoistError {
  const reason = stage === 'resolve' ? 'ResolveFailed' : 'FetchFailed';
  const s = e.stderr;
  const summary = stderrSummary(s);
  const make = (message: string, code: SourceCode, terminal: boolean): HoistError => sourceError(message, { stage, reason, code, subject, terminal, cause: e });
  if (e.aborted) return sourceError(SourceCode.Aborted, { stage, reason: FailureReason.Aborted, code: SourceCode.Aborted, subject, terminal: false, cause: e });
  if (e.timedOut) return make(`git fetch timed out after ${timeoutMs} ms`, SourceCode.Timeout, false);
  if (e.outputLimit !== undefined) {
    return make(`${e.message} (the limit of ${formatBytes(e.outputLimit)} of output per git command)`, SourceCode.OutputTooLarge, true);
  }
  if (/could not read (Username|Password)|Authentication failed|returned error: 40[13]\b|terminal prompts disabled/i.test(s)) {
    return make(withAuth ? 'credentials rejected by the repository' : 'repository requires credentials; set auth.secretRef', SourceCode.AuthFailed, true);
  }
  if (/repository '.*' not found|returned error: 404\b/i.test(s)) return make('repository not found', SourceCode.NotFound, true);
  if (/not our ref|unadvertised object|couldn't find remote ref|no such remote ref|bad object/i.test(s)) {
    return make(`ref not found: ${summary}`, SourceCode.UnknownRef, true);
  }
  if (UNKNOWN_AUTHORITY.test(s)) {
    // the same words as the other sources' (transport.ts), not curl's trust-store file names
    return make(`tls verification failed: certificate signed by unknown authority; ${UNKNOWN_AUTHORITY_HINT}`, SourceCode.TlsVerifyFailed, true);
  }
  if (/SSL certificate|certificate verify|server certificate|SSL:|certificate file|CAfile/i.test(s)) {
    // curl names the CA file: the controller's temp directory or trust store, never shown
    return make(
      `tls verification failed: ${summary.replace(/\s*\b(cafile|crlfile|capath|certificate file):?\s*\S+/gi, '').replace(/[.:]$/, '')}`,
      SourceCode.TlsVerifyFailed,
      true,
    );
  }
  if (/returned error: 3\d\d\b/i.test(s)) {
    return make('repository redirected; credentials are not followed across redirects, set spec.git.repository to the final url', SourceCode.Redirect, true);
  }
  return make(`git fetch failed: ${summary || `exit ${e.exitCode}`}`, SourceCode.Network, false);
}
