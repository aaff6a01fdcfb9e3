/**
 * Reads connection settings (server, CA, client certificate, token) from a kubeconfig file, the
 * KUBECONFIG environment variable, ~/.kube/config, or the in-cluster service account. The
 * @kubernetes/client-node KubeConfig is used only as a parser; no request goes through it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Everything needed to open a connection to one API server as one identity. */
export interface ClusterConfig {
  /** e.g. https://127.0.0.1:6443, possibly with a path prefix */
  server: string;
  /** PEM CA bundle; undefined means the system trust store */
  ca?: string;
  /** PEM client certificate and key for mTLS */
  cert?: string;
  key?: string;
  /** static bearer token */
  token?: string;
  /** bearer token re-read from this file (projected service account tokens rotate) */
  tokenFile?: string;
  username?: string;
  password?: string;
  /** only ever set from an explicit kubeconfig setting */
  insecureSkipTLSVerify: boolean;
  tlsServerName?: string;
  /** the context's namespace, or the pod's namespace in-cluster */
  namespace?: string;
  /** where the settings came from, for messages */
  source: string;
}

/**
 * Loads connection settings. Order: the explicit path; KUBECONFIG (files merged, first wins);
 * ~/.kube/config; the in-cluster service account. Throws when none is available rather than
 * silently falling back to localhost:8080.
 */
export function loadKubeConfig(path?: string): ClusterConfig {
  const kc = new KubeConfig();
  let source: string;
  if (path) {
    kc.loadFromFile(path);
    source = path;
  } else if (process.env.KUBECONFIG) {
    kc.loadFromDefault();
    source = process.env.KUBECONFIG;
  } else if (existsSync(join(homedir(), '.kube', 'config'))) {
    kc.loadFromFile(join(homedir(), '.kube', 'config'));
    source = join(homedir(), '.kube', 'config');
  } else if (process.env.KUBERNETES_SERVICE_HOST && existsSync(join(SERVICE_ACCOUNT_DIR, 'token'))) {
    kc.loadFromCluster();
    source = 'in-cluster service account';
  } else {
    throw new Error('no kubeconfig: pass a path, set KUBECONFIG, create ~/.kube/config or run in a pod');
  }
  return fromKubeConfig(kc, source);
}

function fromKubeConfig(kc: KubeConfig, source: string): ClusterConfig {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster) throw new Error(`kubeconfig ${describeSource(source)}: current context names no cluster`);
  const cfg: ClusterConfig = {
    server: cluster.server.replace(/\/+$/, ''),
    insecureSkipTLSVerify: cluster.skipTLSVerify,
    source,
  };
  cfg.ca = pem(cluster.caData, cluster.caFile);
  if (cluster.tlsServerName) cfg.tlsServerName = cluster.tlsServerName;
  const ctx = kc.getContextObject(kc.getCurrentContext());
  if (ctx?.namespace) cfg.namespace = ctx.namespace.trim();
  if (user) {
    cfg.cert = pem(user.certData, user.certFile);
    cfg.key = pem(user.keyData, user.keyFile);
    if (user.token) cfg.token = user.token;
    if (user.username) cfg.username = user.username;
    if (user.password) cfg.password = user.password;
    const provider = user.authProvider as { name?: string; config?: { tokenFile?: string } } | undefined;
    if (provider?.name === 'tokenFile' && provider.config?.tokenFile) cfg.tokenFile = provider.config.tokenFile;
    else if (provider) throw new Error(`kubeconfig ${describeSource(source)}: auth provider ${String(provider.name)} is not supported`);
    // exec plugins run arbitrary commands; Hoist supports certificates and tokens only
    if (user.exec) throw new Error(`kubeconfig ${describeSource(source)}: exec credential plugins are not supported`);
  }
  if (source === 'in-cluster service account') {
    const nsFile = join(SERVICE_ACCOUNT_DIR, 'namespace');
    if (existsSync(nsFile)) cfg.namespace = readFileSync(nsFile, 'utf8').trim();
  }
  return dropUndefined(cfg);
}

/** kubeconfig stores inline data base64-encoded; file paths were made absolute by the parser */
function pem(data: string | undefined, file: string | undefined): string | undefined {
  if (data) return Buffer.from(data, 'base64').toString('utf8');
  if (file) return readFileSync(file, 'utf8');
  return undefined;
}

function describeSource(source: string): string {
  return source.split(delimiter)[0] ?? source;
}

function dropUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}
