/**
 * One spelling per git repository, so a forge's push payload (clone_url, html_url, git_http_url)
 * can be compared with a BundleDeployment's `spec.sources[].git.repository`: scheme and host are
 * lowercased, userinfo and a default port dropped, and a trailing slash and `.git` removed. The
 * path keeps its case (servers disagree on whether it matters). Pure; never throws: a string that
 * is not a URL is returned trimmed and without the suffixes.
 */
export function normalizeRepoUrl(raw: string): string {
  const trimmed = raw.trim();
  let u: URL;
  try {
    u = new URL(trimmed);
  } catch {
    return stripSuffixes(trimmed);
  }
  const defaultPort = (u.protocol === 'https:' && u.port === '443') || (u.protocol === 'http:' && u.port === '80');
  const host = u.hostname.toLowerCase() + (u.port && !defaultPort ? `:${u.port}` : '');
  return `${u.protocol.toLowerCase()}//${host}${stripSuffixes(u.pathname)}`;
}

function stripSuffixes(path: string): string {
  let p = path.replace(/\/+$/, '');
  if (p.toLowerCase().endsWith('.git')) p = p.slice(0, -4);
  return p.replace(/\/+$/, '');
}
