/**
 * Git's SSH repository addresses, parsed the way git's own `connect.c` reads them, so that the
 * host the credentials are bound to, the host whose key is checked and the path the ref
 * advertisement asks for are exactly what `git fetch` will use. Pure; no I/O.
 *
 * Two forms (git-clone(1), "GIT URLS"):
 * - URL: `ssh://[user@]host[:port]/path` (also `git+ssh://`, `ssh+git://`); percent-escapes are
 *   decoded, as git decodes them; `ssh://host/~/path` and `ssh://host/~user/path` send the `~`
 *   path (relative to a home directory).
 * - scp-like: `[user@]host:path`: a colon before any slash; the path is sent as written (relative
 *   to the login's home directory unless it starts with `/`). No port, unless the host is written
 *   in brackets with one, as git accepts: `git@[host:2222]:org/repo.git`.
 *
 * What git would send to ssh as an option (a host or user starting with `-`) or that is not a
 * plain host name or address is refused.
 */

export interface SshRepository {
  form: 'url' | 'scp';
  /** the login name the address gives (`git` in `git@host:…`); undefined: ssh's default */
  user?: string;
  /** the host ssh connects to: a name or an address, IPv6 without brackets */
  host: string;
  /** 22 unless the address names a port */
  port: number;
  /** the path git asks `git-upload-pack` for, as git sends it */
  path: string;
}

/** why an ssh address is refused; the caller makes the HoistError */
export interface SshUrlProblem {
  problem: string;
  /** the address carried a password */
  credentials?: true;
}

const URL_SCHEME = /^(ssh|git\+ssh|ssh\+git):\/\//;
const HOST_NAME = /^[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;
const USER = /^[A-Za-z0-9._~+=-]+$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** True when git would treat `repository` as an SSH address (either form). */
export function isSshRepository(repository: string): boolean {
  if (URL_SCHEME.test(repository)) return true;
  if (repository.includes('://')) return false;
  // git's url_is_local_not_ssh: a colon with no slash before it
  const colon = repository.indexOf(':');
  const slash = repository.indexOf('/');
  return colon > 0 && (slash < 0 || slash > colon);
}

/** `host:port` as credential-hosts entries and messages spell it (IPv6 in brackets) */
export function sshHostPort(repo: Pick<SshRepository, 'host' | 'port'>): string {
  const host = repo.host.includes(':') ? `[${repo.host}]` : repo.host;
  return `${host.toLowerCase()}:${repo.port}`;
}

/** The host as ssh names it in known_hosts: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(repo: Pick<SshRepository, 'host' | 'port'>): string {
  return repo.port === 22 ? repo.host : `[${repo.host}]:${repo.port}`;
}

/** git's url_decode: `%XX` becomes the byte; anything else stays as it is */
function percentDecode(s: string): string {
  const bytes: number[] = [];
  const raw = Buffer.from(s, 'utf8');
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === 0x25 && i + 2 < raw.length) {
      const hex = String.fromCharCode(raw[i + 1]!, raw[i + 2]!);
      if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
        bytes.push(Number.parseInt(hex, 16));
        i += 2;
        continue;
      }
    }
    bytes.push(c);
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * Splits `[user@]host[:port]`, with brackets around an IPv6 address or, as git allows, around
 * `host:port` or `user@host:port`, the way git's get_host_and_port / get_port read it (the port
 * after the first colon, when only digits follow it).
 */
function hostAndPort(authority: string, form: SshRepository['form']): Omit<SshRepository, 'form' | 'path'> | SshUrlProblem {
  const splitUser = (s: string): [string | undefined, string] => {
    const at = s.lastIndexOf('@');
    return at >= 0 ? [s.slice(0, at), s.slice(at + 1)] : [undefined, s];
  };
  const portAfterColon = (s: string): [string, string | undefined] => {
    const colon = s.indexOf(':');
    return colon >= 0 && /^\d+$/.test(s.slice(colon + 1)) ? [s.slice(0, colon), s.slice(colon + 1)] : [s, undefined];
  };
  let user: string | undefined;
  let host: string;
  let portText: string | undefined;
  const bracket = authority.startsWith('[') ? 0 : authority.indexOf('@[') >= 0 ? authority.indexOf('@[') + 1 : -1;
  if (bracket >= 0) {
    const close = authority.indexOf(']', bracket);
    if (close < 0) return { problem: 'unclosed "[" in the host' };
    let inner = authority.slice(bracket + 1, close);
    const after = authority.slice(close + 1);
    if (bracket > 0) user = authority.slice(0, bracket - 1);
    else [user, inner] = splitUser(inner);
    if (after.startsWith(':')) {
      host = inner;
      portText = after.slice(1);
    } else if (after !== '') {
      return { problem: `unexpected ${JSON.stringify(after)} after the bracketed host` };
    } else [host, portText] = portAfterColon(inner);
  } else {
    let rest: string;
    [user, rest] = splitUser(authority);
    const colon = rest.indexOf(':');
    if (colon >= 0 && form === 'scp') return { problem: 'a port in an scp-like address needs brackets: user@[host:port]:path' };
    [host, portText] = colon >= 0 ? [rest.slice(0, colon), rest.slice(colon + 1)] : [rest, undefined];
  }
  if (user !== undefined) {
    if (user.includes(':')) return { problem: 'the address must not contain a password; use auth.secretRef', credentials: true };
    if (user === '' || user.startsWith('-') || !USER.test(user)) return { problem: `user ${JSON.stringify(user)} is not a valid login name` };
  }
  if (host === '') return { problem: 'no host' };
  if (host.startsWith('-') || !(HOST_NAME.test(host) || (host.includes(':') && IPV6.test(host)))) {
    return { problem: `host ${JSON.stringify(host)} is not a host name or address` };
  }
  let port = 22;
  if (portText !== undefined && portText !== '') {
    if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) return { problem: `port ${JSON.stringify(portText)} is not 1-65535` };
    port = Number(portText);
  }
  return { ...(user !== undefined ? { user } : {}), host, port };
}

/** Parses an SSH repository address (see the file comment). */
export function parseSshRepository(repository: string): SshRepository | SshUrlProblem {
  if (CONTROL.test(repository) || /\s/.test(repository)) return { problem: 'the address must not contain whitespace or control characters' };
  let form: SshRepository['form'];
  let authority: string;
  let path: string;
  const scheme = URL_SCHEME.exec(repository);
  if (scheme) {
    form = 'url';
    const rest = percentDecode(repository.slice(scheme[0].length));
    if (CONTROL.test(rest)) return { problem: 'the address must not contain control characters' };
    // a bracketed host may hold colons; the path starts at the first '/' after it
    const open = rest.indexOf('[');
    const from = open >= 0 && open < (rest.indexOf('/') < 0 ? Infinity : rest.indexOf('/')) ? Math.max(rest.indexOf(']', open), 0) : 0;
    const slash = rest.indexOf('/', from);
    if (slash < 0) return { problem: 'no path after the host' };
    authority = rest.slice(0, slash);
    path = rest.slice(slash);
    // git: ssh://host/~user/repo asks for "~user/repo"
    if (path[1] === '~') path = path.slice(1);
  } else if (isSshRepository(repository)) {
    form = 'scp';
    // the host ends at the first ':' outside brackets
    const bracket = repository.startsWith('[') ? 0 : repository.indexOf('@[') >= 0 ? repository.indexOf('@[') + 1 : -1;
    const from = bracket >= 0 && repository.indexOf(']', bracket) > 0 ? repository.indexOf(']', bracket) : 0;
    const colon = repository.indexOf(':', from);
    if (colon < 0) return { problem: 'no ":" between host and path' };
    authority = repository.slice(0, colon);
    path = repository.slice(colon + 1);
    // git, for both forms: a "~" as the path's second character drops the first ("/~u/r" → "~u/r")
    if (path[1] === '~') path = path.slice(1);
  } else {
    return { problem: 'not an ssh:// or scp-like address' };
  }
  if (path === '' || path === '/') return { problem: 'no repository path' };
  const hp = hostAndPort(authority, form);
  if ('problem' in hp) return hp;
  return { form, ...hp, path };
}

/**
 * `git-upload-pack '<path>'`: the remote command git runs over ssh, quoted as git's sq_quote
 * quotes it (a `'` becomes `'\''`, a `!` becomes `'\!'`), so the server sees the same request.
 */
export function uploadPackCommand(path: string): string {
  return `git-upload-pack '${path.replace(/['!]/g, (c) => `'\\${c}'`)}'`;
}
