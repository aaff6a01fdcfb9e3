import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { safeEqual, signGeneric, verifyGeneric, verifyGithub, verifyGitlab } from '../../../src/webhook/signatures.ts';

const SECRET = Buffer.from('s3cret-for-tests');
const body = Buffer.from('{"ref":"refs/heads/main"}');
// computed independently of the module: what GitHub sends
const githubSig = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;

describe('GitHub X-Hub-Signature-256', () => {
  it('accepts the HMAC-SHA256 of the raw body, in either hex case', () => {
    expect(verifyGithub(body, githubSig, SECRET)).toBe(true);
    expect(verifyGithub(body, githubSig.toUpperCase().replace('SHA256=', 'sha256='), SECRET)).toBe(true);
  });
  it('refuses another body, another secret, a missing, truncated or sha1 header, an empty secret', () => {
    expect(verifyGithub(Buffer.from(`${body.toString()} `), githubSig, SECRET)).toBe(false);
    expect(verifyGithub(body, githubSig, Buffer.from('other'))).toBe(false);
    expect(verifyGithub(body, undefined, SECRET)).toBe(false);
    expect(verifyGithub(body, githubSig.slice(0, -2), SECRET)).toBe(false);
    expect(verifyGithub(body, githubSig.replace('sha256=', 'sha1='), SECRET)).toBe(false);
    expect(verifyGithub(body, `sha256=${createHmac('sha256', '').update(body).digest('hex')}`, Buffer.alloc(0))).toBe(false);
  });
});

describe('GitLab X-Gitlab-Token', () => {
  it('is the secret itself, compared whole', () => {
    expect(verifyGitlab('s3cret-for-tests', SECRET)).toBe(true);
    expect(verifyGitlab('s3cret-for-test', SECRET)).toBe(false);
    expect(verifyGitlab('s3cret-for-testss', SECRET)).toBe(false);
    expect(verifyGitlab(undefined, SECRET)).toBe(false);
    expect(verifyGitlab('', Buffer.alloc(0))).toBe(false);
  });
});

describe('generic X-Hoist-Signature over "<timestamp>.<body>"', () => {
  const now = 1_800_000_000_000;
  const ts = now / 1000;
  const sig = `sha256=${createHmac('sha256', SECRET).update(`${ts}.${body.toString()}`).digest('hex')}`;
  it('accepts a signature made as documented, within the window', () => {
    expect(signGeneric(body, ts, SECRET)).toBe(sig);
    expect(verifyGeneric(body, sig, String(ts), SECRET, now, 300_000)).toBe('ok');
    expect(verifyGeneric(body, sig, String(ts), SECRET, now + 300_000, 300_000)).toBe('ok');
  });
  it('refuses a timestamp outside the window only once the signature holds', () => {
    expect(verifyGeneric(body, sig, String(ts), SECRET, now + 300_001, 300_000)).toBe('stale');
    expect(verifyGeneric(body, sig, String(ts), SECRET, now - 300_001, 300_000)).toBe('stale');
    // a moved timestamp breaks the MAC: the sender cannot refresh an old delivery
    expect(verifyGeneric(body, sig, String(ts + 1), SECRET, now, 300_000)).toBe('bad-signature');
  });
  it('refuses missing or malformed headers', () => {
    expect(verifyGeneric(body, sig, undefined, SECRET, now, 300_000)).toBe('bad-signature');
    expect(verifyGeneric(body, sig, '1e9', SECRET, now, 300_000)).toBe('bad-signature');
    expect(verifyGeneric(body, undefined, String(ts), SECRET, now, 300_000)).toBe('bad-signature');
  });
});

it('safeEqual compares strings of different lengths without throwing', () => {
  expect(safeEqual('a', 'a')).toBe(true);
  expect(safeEqual('a', 'ab')).toBe(false);
  expect(safeEqual('', '')).toBe(true);
});
