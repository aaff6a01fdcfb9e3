/**
 * Signature checks of the three webhook endpoints. Every comparison is constant-time over
 * equal-length digests (timingSafeEqual on SHA-256 outputs), so neither the length nor a prefix of
 * a secret leaks through timing. Pure; never logs.
 *
 * - GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body with the secret.
 * - GitLab: `X-Gitlab-Token: <secret>`, the secret itself (GitLab signs nothing).
 * - generic: `X-Hoist-Signature: sha256=<hex>`, HMAC-SHA256 of `<timestamp>.<raw body>` with the
 *   secret, and `X-Hoist-Timestamp: <unix seconds>`; binding the timestamp into the MAC lets the
 *   receiver refuse old deliveries (replay) without remembering them forever.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

const digest = (s: string | Buffer): Buffer => createHash('sha256').update(s).digest();

/** constant-time equality of two strings of any length (compares their SHA-256 digests) */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export function hmacHex(secret: Buffer, ...parts: (string | Buffer)[]): string {
  const h = createHmac('sha256', secret);
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

/** `sha256=<hex>` header over `parts` with `secret`; missing or malformed headers are false */
function signedBy(header: string | undefined, secret: Buffer, parts: (string | Buffer)[]): boolean {
  if (!header || secret.length === 0) return false;
  const expected = `sha256=${hmacHex(secret, ...parts)}`;
  return safeEqual(header.trim().toLowerCase(), expected);
}

export function verifyGithub(body: Buffer, signatureHeader: string | undefined, secret: Buffer): boolean {
  return signedBy(signatureHeader, secret, [body]);
}

export function verifyGitlab(tokenHeader: string | undefined, secret: Buffer): boolean {
  if (tokenHeader === undefined || secret.length === 0) return false;
  return safeEqual(tokenHeader, secret.toString('utf8'));
}

export type GenericVerdict = 'ok' | 'bad-signature' | 'stale';

/**
 * The generic endpoint's check: the signature first (an unsigned request learns nothing about
 * the clock), then the timestamp within ±windowMs of now.
 */
export function verifyGeneric(
  body: Buffer,
  signatureHeader: string | undefined,
  timestampHeader: string | undefined,
  secret: Buffer,
  nowMs: number,
  windowMs: number,
): GenericVerdict {
  if (!timestampHeader || !/^\d{1,12}$/.test(timestampHeader.trim())) return 'bad-signature';
  const ts = timestampHeader.trim();
  if (!signedBy(signatureHeader, secret, [ts, '.', body])) return 'bad-signature';
  return Math.abs(nowMs - Number(ts) * 1000) <= windowMs ? 'ok' : 'stale';
}

/** what a sender puts in X-Hoist-Signature for `body` sent at `unixSeconds` (docs, tests, clients) */
export function signGeneric(body: string | Buffer, unixSeconds: number, secret: Buffer): string {
  return `sha256=${hmacHex(secret, String(unixSeconds), '.', body)}`;
}
