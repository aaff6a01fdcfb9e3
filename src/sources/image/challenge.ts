/**
 * `WWW-Authenticate` parsing (RFC 7235 §4.1): one header may hold several challenges, each a
 * scheme followed by comma-separated `name=value` or `name="quoted \"value\""` parameters.
 * Registries send `Bearer realm="…",service="…",scope="…"` or `Basic realm="…"`.
 *
 * Pure: no I/O.
 */

export interface AuthChallenge {
  /** lowercase: `bearer`, `basic`, … */
  scheme: string;
  /** parameter names lowercased */
  params: Record<string, string>;
}

const TOKEN_CHARS = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;

/** Parses every challenge in the header(s); malformed trailing input is ignored, never thrown. */
export function parseChallenges(header: string | string[] | undefined): AuthChallenge[] {
  if (header === undefined) return [];
  const headers = Array.isArray(header) ? header : [header];
  const out: AuthChallenge[] = [];
  for (const h of headers) out.push(...parseOne(h));
  return out;
}

function parseOne(s: string): AuthChallenge[] {
  const out: AuthChallenge[] = [];
  let i = 0;
  const n = s.length;
  const skipWs = (): void => {
    while (i < n && (s[i] === ' ' || s[i] === '\t')) i++;
  };
  const readToken = (): string => {
    const start = i;
    while (i < n && TOKEN_CHARS.test(s[i] ?? '')) i++;
    return s.slice(start, i);
  };
  let current: AuthChallenge | undefined;
  while (i < n) {
    skipWs();
    if (s[i] === ',') {
      i++;
      continue;
    }
    const start = i;
    const tok = readToken();
    if (tok === '') {
      i++; // skip a stray character rather than loop forever
      continue;
    }
    skipWs();
    if (s[i] === '=' && current) {
      // a parameter of the current challenge (token68 values like "abc==" are not used by registries)
      i++;
      skipWs();
      let value = '';
      if (s[i] === '"') {
        i++;
        while (i < n && s[i] !== '"') {
          if (s[i] === '\\' && i + 1 < n) i++;
          value += s[i];
          i++;
        }
        i++; // closing quote
      } else {
        value = readToken();
      }
      current.params[tok.toLowerCase()] = value;
      continue;
    }
    if (start === i && tok === '') break;
    current = { scheme: tok.toLowerCase(), params: {} };
    out.push(current);
  }
  return out;
}

/** The challenge we can answer, preferring Bearer (scoped, short-lived) over Basic. */
export function pickChallenge(challenges: AuthChallenge[]): AuthChallenge | undefined {
  return challenges.find((c) => c.scheme === 'bearer' && c.params.realm) ?? challenges.find((c) => c.scheme === 'basic');
}
