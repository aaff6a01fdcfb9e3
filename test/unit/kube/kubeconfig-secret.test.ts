import { describe, expect, it } from 'vitest';
import { clusterConfigFromKubeconfig, KubeconfigRefusedError, MAX_KUBECONFIG_BYTES } from '../../../src/kube/kubeconfig-secret.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** a Cluster API style kubeconfig; `cluster` and `user` are YAML flow mappings merged into the entries */
function kubeconfig(cluster = '', user = `client-certificate-data: ${b64('CERT')}, client-key-data: ${b64('KEY')}`): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: { server: "https://10.0.0.1:6443/", certificate-authority-data: ${b64('CA')}${cluster ? `, ${cluster}` : ''} }
users:
- name: c1-admin
  user: { ${user} }
contexts:
- name: c1-admin@c1
  context: { cluster: c1, user: c1-admin }
current-context: c1-admin@c1
`;
}

function refusal(text: string): { field: string; message: string } {
  try {
    clusterConfigFromKubeconfig(text, 'secret ns/c1-kubeconfig key value');
  } catch (e) {
    if (e instanceof KubeconfigRefusedError) return { field: e.field, message: e.message };
    throw e;
  }
  throw new Error('accepted');
}

describe('clusterConfigFromKubeconfig (a tenant-supplied kubeconfig)', () => {
  it('reads the current context: server, inline CA, client certificate; TLS verified', () => {
    const cfg = clusterConfigFromKubeconfig(kubeconfig('tls-server-name: api.c1'), 'src');
    expect(cfg).toEqual({
      server: 'https://10.0.0.1:6443',
      ca: 'CA',
      cert: 'CERT',
      key: 'KEY',
      tlsServerName: 'api.c1',
      insecureSkipTLSVerify: false,
      source: 'src',
    });
  });

  it('reads a token, and basic auth', () => {
    expect(clusterConfigFromKubeconfig(kubeconfig('', 'token: abc'), 'src').token).toBe('abc');
    expect(clusterConfigFromKubeconfig(kubeconfig('', 'username: u, password: p'), 'src')).toMatchObject({ username: 'u', password: 'p' });
  });

  it.each([
    [
      'an exec plugin',
      'exec: { command: /bin/sh, apiVersion: client.authentication.k8s.io/v1 }',
      'users[c1-admin].user.exec',
      /exec credential plugins run a program/,
    ],
    ['an auth provider', 'auth-provider: { name: gcp }', 'users[c1-admin].user.auth-provider', /auth provider/],
    ['a client certificate file', 'client-certificate: /etc/hoist/tls.crt, client-key-data: a2V5', 'users[c1-admin].user.client-certificate', /file path/],
    ['a client key file', `client-certificate-data: ${b64('C')}, client-key: /var/run/key`, 'users[c1-admin].user.client-key', /file path/],
    [
      'a token file (the controller’s own token)',
      'tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token',
      'users[c1-admin].user.tokenFile',
      /file path/,
    ],
    ['kubeconfig impersonation', 'token: t, as: system:admin', 'users[c1-admin].user.as', /impersonation/],
    ['a certificate without its key', `client-certificate-data: ${b64('C')}`, 'users[c1-admin].user.client-key-data', /needs its key/],
  ])('refuses %s, naming the field', (_what, user, field, message) => {
    const r = refusal(kubeconfig('', user));
    expect(r.field).toBe(field);
    expect(r.message).toMatch(message);
  });

  it.each([
    ['insecure-skip-tls-verify', 'insecure-skip-tls-verify: true', 'clusters[c1].cluster.insecure-skip-tls-verify', /always verified/],
    ['a CA file', 'certificate-authority: /etc/ssl/ca.pem', 'clusters[c1].cluster.certificate-authority', /file path/],
    ['a proxy', 'proxy-url: "http://proxy:3128"', 'clusters[c1].cluster.proxy-url', /proxies/],
  ])('refuses %s, naming the field', (_what, cluster, field, message) => {
    const r = refusal(kubeconfig(cluster));
    expect(r.field).toBe(field);
    expect(r.message).toMatch(message);
  });

  it('accepts insecure-skip-tls-verify: false', () => {
    expect(clusterConfigFromKubeconfig(kubeconfig('insecure-skip-tls-verify: false'), 'src').insecureSkipTLSVerify).toBe(false);
  });

  it.each([
    ['plain http', kubeconfig().replace('https://10.0.0.1:6443/', 'http://10.0.0.1:8080'), 'clusters[c1].cluster.server', /must be https/],
    ['credentials in the URL', kubeconfig().replace('https://', 'https://u:p@'), 'clusters[c1].cluster.server', /must not carry credentials/],
    ['no current context', kubeconfig().replace(/current-context: .*/, ''), 'current-context', /missing/],
    ['a context that is not defined', kubeconfig().replace('current-context: c1-admin@c1', 'current-context: other'), 'contexts[other]', /not defined/],
    ['a user that is not defined', kubeconfig().replace('user: c1-admin }', 'user: ghost }'), 'users[ghost]', /not defined/],
    ['not YAML', 'clusters: [ {', '(file)', /not valid YAML/],
    ['not a mapping', '- a\n- b\n', '(file)', /no mapping/],
    ['too large', `# ${'x'.repeat(MAX_KUBECONFIG_BYTES)}\n${kubeconfig()}`, '(file)', /larger than/],
  ])('refuses %s', (_what, text, field, message) => {
    const r = refusal(text);
    expect(r.field).toBe(field);
    expect(r.message).toMatch(message);
  });

  it('never quotes the text in a YAML error (it may hold a credential)', () => {
    const r = refusal(`users:\n- name: u\n  user: { token: "SECRET-TOKEN-VALUE }\n`);
    expect(r.message).not.toContain('SECRET');
  });
});
