/**
 * A kubeconfig handed to the controller by a tenant (the Secret a BundleDeployment's
 * `spec.kubeConfig.secretRef` names, as Cluster API writes it) → the ClusterConfig of its current
 * context. Stricter than a kubeconfig file the operator gives `hoist run` (kube-config.ts):
 * the controller must run no binary and read no file a tenant names, and must verify TLS. So:
 * exec plugins, auth providers, every file path (certificate-authority, client-certificate,
 * client-key, tokenFile), insecure-skip-tls-verify, proxy-url and kubeconfig impersonation
 * (`as`, `as-groups`, ...) are refused, each naming its field; the server must be https.
 * Pure; bounded (the text is at most a Secret's 1 MiB; js-yaml never copies aliases).
 */
import { load } from 'js-yaml';
import type { ClusterConfig } from './kube-config.ts';

/** the largest kubeconfig text read (a Secret holds at most 1 MiB) */
export const MAX_KUBECONFIG_BYTES = 1 << 20;

/** a kubeconfig that is refused; `field` names where, e.g. users[admin].user.exec */
export class KubeconfigRefusedError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeconfigRefusedError';
  }
}

interface Named {
  name?: unknown;
  cluster?: unknown;
  user?: unknown;
  context?: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** cluster fields that name files or weaken TLS; user fields that run programs, read files or impersonate */
const REFUSED_CLUSTER_FIELDS: Record<string, string> = {
  'certificate-authority': 'a file path: a kubeconfig from a Secret carries its CA inline (certificate-authority-data)',
  'insecure-skip-tls-verify': 'TLS is always verified for a remote cluster',
  'proxy-url': 'proxies are not supported for remote clusters',
};
const REFUSED_USER_FIELDS: Record<string, string> = {
  exec: 'exec credential plugins run a program: the controller runs no binary a kubeconfig names (use a token or a client certificate)',
  'auth-provider': 'auth provider plugins are not supported (use a token or a client certificate)',
  'client-certificate': 'a file path: use client-certificate-data',
  'client-key': 'a file path: use client-key-data',
  tokenFile: 'a file path: use token',
  as: 'kubeconfig impersonation is not supported (spec.serviceAccount is impersonated on the remote cluster)',
  'as-uid': 'kubeconfig impersonation is not supported',
  'as-groups': 'kubeconfig impersonation is not supported',
  'as-user-extra': 'kubeconfig impersonation is not supported',
};

function entry(
  list: unknown,
  name: string,
  what: 'clusters' | 'users' | 'contexts',
  field: 'cluster' | 'user' | 'context',
): Record<string, unknown> | undefined {
  if (!Array.isArray(list)) return undefined;
  const found = (list as Named[]).find((x) => isObject(x) && x.name === name);
  const v = found?.[field];
  if (found && v !== undefined && v !== null && !isObject(v)) throw new KubeconfigRefusedError(`${what}[${name}].${field}`, 'not a mapping');
  return found ? ((v as Record<string, unknown> | undefined) ?? {}) : undefined;
}

const b64 = (field: string, v: unknown): string | undefined => {
  const s = str(v);
  if (s === undefined) return undefined;
  if (!/^[A-Za-z0-9+/=\s]+$/.test(s)) throw new KubeconfigRefusedError(field, 'not base64');
  return Buffer.from(s, 'base64').toString('utf8');
};

/**
 * The current context's cluster and user of kubeconfig `text`, as a ClusterConfig, or a
 * KubeconfigRefusedError naming the field that is refused or missing. `source` names the text in
 * messages (e.g. "secret ns/name key value"); it carries no credentials.
 */
export function clusterConfigFromKubeconfig(text: string, source: string): ClusterConfig {
  if (Buffer.byteLength(text) > MAX_KUBECONFIG_BYTES) throw new KubeconfigRefusedError('(file)', `larger than ${MAX_KUBECONFIG_BYTES} bytes`);
  let raw: unknown;
  try {
    raw = load(text, { json: true });
  } catch (e) {
    // js-yaml's message quotes the offending text, which may be a credential: the position only
    const mark = (e as { mark?: { line?: number } }).mark;
    throw new KubeconfigRefusedError('(file)', `not valid YAML${mark?.line !== undefined ? ` (line ${mark.line + 1})` : ''}`);
  }
  if (!isObject(raw)) throw new KubeconfigRefusedError('(file)', 'not a kubeconfig (no mapping)');
  const current = str(raw['current-context']);
  if (!current) throw new KubeconfigRefusedError('current-context', 'missing: the kubeconfig names no current context');
  const context = entry(raw.contexts, current, 'contexts', 'context');
  if (!context) throw new KubeconfigRefusedError(`contexts[${current}]`, 'the current context is not defined');
  const clusterName = str(context.cluster);
  if (!clusterName) throw new KubeconfigRefusedError(`contexts[${current}].context.cluster`, 'missing');
  const cluster = entry(raw.clusters, clusterName, 'clusters', 'cluster');
  if (!cluster) throw new KubeconfigRefusedError(`clusters[${clusterName}]`, 'the context names a cluster that is not defined');
  const at = (f: string) => `clusters[${clusterName}].cluster.${f}`;
  for (const [f, why] of Object.entries(REFUSED_CLUSTER_FIELDS)) {
    // insecure-skip-tls-verify: false is harmless; any other value of these fields is refused
    if (cluster[f] !== undefined && cluster[f] !== null && !(f === 'insecure-skip-tls-verify' && cluster[f] === false))
      throw new KubeconfigRefusedError(at(f), why);
  }
  const server = str(cluster.server);
  if (!server) throw new KubeconfigRefusedError(at('server'), 'missing');
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new KubeconfigRefusedError(at('server'), 'not a URL');
  }
  if (url.protocol !== 'https:') throw new KubeconfigRefusedError(at('server'), `must be https (is ${url.protocol.replace(/:$/, '')})`);
  if (url.username || url.password) throw new KubeconfigRefusedError(at('server'), 'must not carry credentials');
  const cfg: ClusterConfig = { server: server.replace(/\/+$/, ''), insecureSkipTLSVerify: false, source };
  const ca = b64(at('certificate-authority-data'), cluster['certificate-authority-data']);
  if (ca) cfg.ca = ca;
  const tlsServerName = str(cluster['tls-server-name']);
  if (tlsServerName) cfg.tlsServerName = tlsServerName;

  const userName = str(context.user);
  if (userName) {
    const user = entry(raw.users, userName, 'users', 'user');
    if (!user) throw new KubeconfigRefusedError(`users[${userName}]`, 'the context names a user that is not defined');
    const uat = (f: string) => `users[${userName}].user.${f}`;
    for (const [f, why] of Object.entries(REFUSED_USER_FIELDS)) if (user[f] !== undefined && user[f] !== null) throw new KubeconfigRefusedError(uat(f), why);
    const cert = b64(uat('client-certificate-data'), user['client-certificate-data']);
    const key = b64(uat('client-key-data'), user['client-key-data']);
    if (!cert !== !key)
      throw new KubeconfigRefusedError(
        uat(cert ? 'client-key-data' : 'client-certificate-data'),
        'a client certificate needs its key and a key its certificate',
      );
    if (cert && key) Object.assign(cfg, { cert, key });
    const token = str(user.token);
    if (token) cfg.token = token;
    const username = str(user.username);
    const password = str(user.password);
    if (username !== undefined && password !== undefined) Object.assign(cfg, { username, password });
  }
  return cfg;
}
