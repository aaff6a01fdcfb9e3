import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../src/kube/kube-config.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function write(dir: string, name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

/** a fresh directory, removed after the test */
const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kc-'));
  dirs.push(dir);
  return dir;
}

describe('loadKubeConfig (kubeconfig files without client-node)', () => {
  const saved = process.env.KUBECONFIG;
  afterEach(() => {
    if (saved === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = saved;
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('reads the current context: server, inline CA and client certificate, namespace', () => {
    const dir = tempDir();
    const file = write(
      dir,
      'config',
      `apiVersion: v1
kind: Config
current-context: b
clusters:
- name: one
  cluster: { server: "https://10.0.0.1:6443/", certificate-authority-data: ${b64('CA-PEM')}, tls-server-name: api.internal }
- name: two
  cluster: { server: "https://10.0.0.2:6443", insecure-skip-tls-verify: true }
users:
- name: u
  user: { client-certificate-data: ${b64('CERT')}, client-key-data: ${b64('KEY')} }
contexts:
- name: a
  context: { cluster: two, user: u }
- name: b
  context: { cluster: one, user: u, namespace: team }
`,
    );
    expect(loadKubeConfig(file)).toEqual({
      server: 'https://10.0.0.1:6443',
      ca: 'CA-PEM',
      tlsServerName: 'api.internal',
      cert: 'CERT',
      key: 'KEY',
      namespace: 'team',
      insecureSkipTLSVerify: false,
      source: file,
    });
  });

  it('resolves file paths relative to the kubeconfig and reads tokens', () => {
    const dir = tempDir();
    write(dir, 'ca.crt', 'CA-FROM-FILE');
    const file = write(
      dir,
      'config',
      `current-context: c\nclusters: [{ name: k, cluster: { server: "https://h:1", certificate-authority: ca.crt } }]\nusers: [{ name: t, user: { token: abc } }]\ncontexts: [{ name: c, context: { cluster: k, user: t } }]\n`,
    );
    expect(loadKubeConfig(file)).toMatchObject({ server: 'https://h:1', ca: 'CA-FROM-FILE', token: 'abc', insecureSkipTLSVerify: false });
  });

  it('merges KUBECONFIG files: the first to set a name or the current context wins; missing files are skipped', () => {
    const dir = tempDir();
    const first = write(dir, 'first', `current-context: c\nclusters: [{ name: k, cluster: { server: "https://first:1" } }]\n`);
    const second = write(
      dir,
      'second',
      `current-context: other\nclusters: [{ name: k, cluster: { server: "https://second:1" } }]\nusers: [{ name: t, user: { token: xyz } }]\ncontexts: [{ name: c, context: { cluster: k, user: t } }]\n`,
    );
    process.env.KUBECONFIG = [join(dir, 'missing'), first, second].join(delimiter);
    expect(loadKubeConfig()).toMatchObject({ server: 'https://first:1', token: 'xyz' });
  });

  it('refuses exec plugins and auth providers, and a context without a cluster, naming the file', () => {
    const dir = tempDir();
    const exec = write(
      dir,
      'exec',
      `current-context: c\nclusters: [{ name: k, cluster: { server: "https://h:1" } }]\nusers: [{ name: e, user: { exec: { command: aws } } }]\ncontexts: [{ name: c, context: { cluster: k, user: e } }]\n`,
    );
    expect(() => loadKubeConfig(exec)).toThrow(`kubeconfig ${exec}: exec credential plugins are not supported`);
    const provider = write(
      dir,
      'provider',
      `current-context: c\nclusters: [{ name: k, cluster: { server: "https://h:1" } }]\nusers: [{ name: e, user: { auth-provider: { name: gcp } } }]\ncontexts: [{ name: c, context: { cluster: k, user: e } }]\n`,
    );
    expect(() => loadKubeConfig(provider)).toThrow('auth provider gcp is not supported');
    const none = write(dir, 'none', `current-context: nope\n`);
    expect(() => loadKubeConfig(none)).toThrow(`kubeconfig ${none}: current context names no cluster`);
  });
});
