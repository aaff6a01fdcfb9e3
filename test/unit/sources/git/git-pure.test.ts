/** Pure parts of the git source: pkt-lines, advertisement parsing, paths, auth, the git env. */
import { describe, expect, it } from 'vitest';
import { isSafeTreePath, LsTreeStream, parseLsTree, symlinkStaysInside, type TreeEntry } from '../../../../src/sources/git/checkout.ts';
import { gitAuthFrom, redactSecrets } from '../../../../src/sources/git/git-auth.ts';
import { classifyFetchFailure, GitCommandError, gitEnv } from '../../../../src/sources/git/git-cli.ts';
import { normalizeDirectory, parseGitSpec } from '../../../../src/sources/git/git-source.ts';
import { AdvertisementStream, parseAdvertisement, parsePktLines } from '../../../../src/sources/git/ref-advertisement.ts';
import { HoistError } from '../../../../src/util/errors.ts';

function pkt(s: string): string {
  return (s.length + 4).toString(16).padStart(4, '0') + s;
}

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);

describe('ref advertisement', () => {
  it('parses refs, capabilities and peeled tags', () => {
    const body = Buffer.from(
      pkt('# service=git-upload-pack\n') +
        '0000' +
        pkt(`${A} HEAD\0multi_ack symref=HEAD:refs/heads/main\n`) +
        pkt(`${A} refs/heads/main\n`) +
        pkt(`${B} refs/tags/v1\n`) +
        pkt(`${C} refs/tags/v1^{}\n`) +
        '0000',
    );
    const { refs, capabilities } = parseAdvertisement(body);
    expect(capabilities).toContain('symref=HEAD:refs/heads/main');
    expect(refs.get('refs/heads/main')).toEqual({ name: 'refs/heads/main', oid: A });
    expect(refs.get('refs/tags/v1')).toEqual({ name: 'refs/tags/v1', oid: B, peeled: C });
  });

  it('streams: fed one byte at a time it keeps only the refs asked for, peeled values included', () => {
    const body = Buffer.from(
      pkt('# service=git-upload-pack\n') +
        '0000' +
        pkt(`${A} HEAD\0multi_ack symref=HEAD:refs/heads/main\n`) +
        pkt(`${A} refs/heads/main\n`) +
        pkt(`${B} refs/tags/v1\n`) +
        pkt(`${C} refs/tags/v1^{}\n`) +
        pkt(`${B} refs/tags/v2\n`) +
        '0000',
    );
    const byName = new AdvertisementStream({ names: ['refs/tags/v1'] });
    for (let i = 0; i < body.length; i++) byName.push(body.subarray(i, i + 1));
    byName.end();
    expect([...byName.refs.values()]).toEqual([{ name: 'refs/tags/v1', oid: B, peeled: C }]);
    expect(byName.capabilities).toContain('multi_ack');
    // by commit: a ref whose own id or peeled id is the commit
    const byCommit = new AdvertisementStream({ commit: C });
    byCommit.push(body);
    byCommit.end();
    expect([...byCommit.refs.keys()]).toEqual(['refs/tags/v1']);
    const none = new AdvertisementStream({});
    none.push(body);
    expect(none.refs.size).toBe(0);
    const cut = new AdvertisementStream({});
    cut.push(body.subarray(0, 50));
    expect(() => cut.end()).toThrow('malformed pkt-line length');
  });

  it('handles an empty repository and refuses garbage', () => {
    const empty = Buffer.from(pkt('# service=git-upload-pack\n') + '0000' + pkt(`${'0'.repeat(40)} capabilities^{}\0agent=git\n`) + '0000');
    expect(parseAdvertisement(empty).refs.size).toBe(0);
    expect(() => parsePktLines(Buffer.from('zzzz'))).toThrow();
    expect(() => parseAdvertisement(Buffer.from(pkt('not a ref line\n')))).toThrow();
  });
});

describe('tree paths and symlinks', () => {
  it('accepts plain relative paths only', () => {
    expect(isSafeTreePath('a/b.yaml')).toBe(true);
    for (const p of ['', '/etc', 'a/../b', './a', 'a//b', '.git/config', 'x/.GIT/hooks']) expect(isSafeTreePath(p)).toBe(false);
  });

  it('keeps symlinks inside the checked-out directory', () => {
    expect(symlinkStaysInside('a/link', 'b.yaml')).toBe(true);
    expect(symlinkStaysInside('a/link', '../c.yaml')).toBe(true);
    expect(symlinkStaysInside('a/link', '../../c.yaml')).toBe(false);
    expect(symlinkStaysInside('link', '/etc/passwd')).toBe(false);
    expect(symlinkStaysInside('link', '..')).toBe(false);
    expect(symlinkStaysInside('link', '')).toBe(false);
  });

  it('parses ls-tree -r -l -z', () => {
    const out = Buffer.from(`100644 blob ${A}     12\ta b.yaml\x00120000 blob ${B}      5\tlink\x00160000 commit ${C}       -\tsub\0`);
    expect(parseLsTree(out)).toEqual([
      { mode: '100644', type: 'blob', oid: A, size: 12, path: 'a b.yaml' },
      { mode: '120000', type: 'blob', oid: B, size: 5, path: 'link' },
      { mode: '160000', type: 'commit', oid: C, size: 0, path: 'sub' },
    ]);
  });

  it('streams ls-tree records split anywhere, and refuses a record that never ends', () => {
    const out = Buffer.from(`100644 blob ${A}     12\ta b.yaml\x00120000 blob ${B}      5\tlink\x00`);
    const got: TreeEntry[] = [];
    const stream = new LsTreeStream((e) => got.push(e));
    for (let i = 0; i < out.length; i += 7) stream.push(out.subarray(i, i + 7));
    stream.end();
    expect(got).toEqual(parseLsTree(out));
    const endless = new LsTreeStream(() => undefined);
    expect(() => endless.push(Buffer.alloc(65 * 1024, 0x61))).toThrow('ls-tree record longer than 65536 bytes');
  });

  it('normalizes the directory and refuses escapes', () => {
    expect(normalizeDirectory(undefined)).toBe('');
    expect(normalizeDirectory('.')).toBe('');
    expect(normalizeDirectory('./manifests/app/')).toBe('manifests/app');
    expect(normalizeDirectory('/manifests')).toBe('manifests');
    expect(normalizeDirectory('a/../../b')).toBeUndefined();
    expect(normalizeDirectory('.git')).toBeUndefined();
  });
});

describe('spec', () => {
  it('needs exactly one ref and a 40-hex commit', () => {
    const s = (ref: Record<string, string>) => ({ kind: 'git' as const, git: { repository: 'https://h/r.git', ref } });
    expect(parseGitSpec(s({ branch: 'main' }), 'resolve').ref).toEqual({ kind: 'branch', value: 'main' });
    const refs: Record<string, string>[] = [{}, { branch: 'a', tag: 'b' }, { commit: 'abc' }];
    for (const ref of refs) {
      expect(() => parseGitSpec(s(ref), 'resolve')).toThrow(HoistError);
    }
  });
});

describe('auth', () => {
  it('builds Basic headers from username/password and from a token', () => {
    const up = gitAuthFrom({ data: { username: 'u', password: 'p@ss' } }, 'fetch', 's');
    expect(up.header).toBe(`Basic ${Buffer.from('u:p@ss').toString('base64')}`);
    const tok = gitAuthFrom({ data: { token: 'tkn-123' } }, 'fetch', 's');
    expect(tok.header).toBe(`Basic ${Buffer.from('x-access-token:tkn-123').toString('base64')}`);
    expect(gitAuthFrom(undefined, 'fetch', 's').header).toBeUndefined();
    expect(gitAuthFrom({ data: { 'ca.crt': 'PEM' } }, 'fetch', 's')).toEqual({ ca: 'PEM', secrets: [] });
    // the Secret's ca.crt joins the other CAs (controller bundle, --ca-dir, caSecretRef), never replaces them
    expect(gitAuthFrom({ data: { 'ca.crt': 'PEM' } }, 'fetch', 's', 'OTHER').ca).toBe('OTHER\nPEM');
  });

  it('refuses half-filled secrets without echoing them', () => {
    const bad: Record<string, string>[] = [{ username: 'u' }, { password: 'only-pw' }, { token: 't', password: 'p' }];
    for (const data of bad) {
      try {
        gitAuthFrom({ data }, 'resolve', 's');
        throw new Error('expected a throw');
      } catch (e) {
        expect((e as HoistError).code).toBe('invalid-credentials');
        expect((e as HoistError).message).not.toContain('only-pw');
      }
    }
  });

  it('redacts secrets and URL userinfo', () => {
    expect(redactSecrets('fatal: https://u:pw@h/r.git said hunter2-secret', ['hunter2-secret'])).toBe('fatal: https://h/r.git said [redacted]');
  });
});

describe('git environment', () => {
  it('puts config in GIT_CONFIG_* env, disables prompts and system/global config, drops tracing', () => {
    const before = process.env.GIT_TRACE;
    process.env.GIT_TRACE = '1';
    try {
      const env = gitEnv({ home: '/tmp/h', config: [['http.https://h/.extraHeader', 'Authorization: Basic eA==']] });
      expect(env.GIT_TERMINAL_PROMPT).toBe('0');
      expect(env.GIT_CONFIG_NOSYSTEM).toBe('1');
      expect(env.GIT_CONFIG_GLOBAL).toBe('/dev/null');
      expect(env.HOME).toBe('/tmp/h');
      expect(env.GIT_TRACE).toBeUndefined();
      const n = Number(env.GIT_CONFIG_COUNT);
      const pairs = Array.from({ length: n }, (_, i) => [env[`GIT_CONFIG_KEY_${i}`], env[`GIT_CONFIG_VALUE_${i}`]]);
      expect(pairs).toContainEqual(['http.https://h/.extraHeader', 'Authorization: Basic eA==']);
      expect(pairs).toContainEqual(['protocol.allow', 'never']);
    } finally {
      if (before === undefined) delete process.env.GIT_TRACE;
      else process.env.GIT_TRACE = before;
    }
  });

  it('classifies git failures as terminal or transient', () => {
    const f = (stderr: string) =>
      classifyFetchFailure(new GitCommandError('x', { stderr, exitCode: 128, timedOut: false, aborted: false }), 'fetch', 's', true, 1000);
    expect(f("fatal: Authentication failed for 'https://h/r.git/'").code).toBe('auth-failed');
    expect(f("fatal: repository 'https://h/r.git/' not found").code).toBe('not-found');
    expect(f('fatal: remote error: upload-pack: not our ref ' + A).code).toBe('unknown-ref');
    const net = f("fatal: unable to access 'https://h/r.git/': Could not resolve host: h");
    expect(net.code).toBe('network');
    expect(net.terminal).toBe(false);
    const timeout = classifyFetchFailure(new GitCommandError('x', { stderr: '', exitCode: null, timedOut: true, aborted: false }), 'fetch', 's', false, 1000);
    expect(timeout.code).toBe('timeout');
    expect(timeout.terminal).toBe(false);
  });

  it("names an unknown authority in the transport's words, never curl's CA file", () => {
    const f = (stderr: string) =>
      classifyFetchFailure(new GitCommandError('x', { stderr, exitCode: 128, timedOut: false, aborted: false }), 'fetch', 's', false, 1000);
    const gnutls = f(
      "fatal: unable to access 'https://h/r.git/': server certificate verification failed. CAfile: /tmp/hoist-git-ab12/home/ca.pem CRLfile: none",
    );
    const openssl = f("fatal: unable to access 'https://h/r.git/': SSL certificate problem: unable to get local issuer certificate");
    for (const e of [gnutls, openssl]) {
      expect(e.code).toBe('tls-verify-failed');
      expect(e.terminal).toBe(true);
      expect(e.message).toMatch(/^tls verification failed: certificate signed by unknown authority; trust its CA with --ca-dir, or caSecretRef/);
    }
    const other = f("fatal: unable to access 'https://h/r.git/': error setting certificate file: /tmp/hoist-git-ab12/home/ca.pem");
    expect(other.code).toBe('tls-verify-failed');
    expect(other.message).not.toContain('/tmp');
  });
});
