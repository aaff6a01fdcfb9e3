/**
 * Reads connection settings (server, CA, client certificate, token) from a kubeconfig file, the
 * KUBECONFIG environment variable, ~/.kube/config, or the in-cluster service account. The file
 * format is read by kubeconfig-file.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isIPv6 } from 'node:net';
import { delimiter, join } from 'node:path';
import { readKubeconfigFiles, type KubeconfigSelection } from './kubeconfig-file.ts';

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
  let selection: KubeconfigSelection;
  let source: string;
  if (path) {
    selection = readKubeconfigFiles([path]);
    source = path;
  } else if (process.env.KUBECONFIG) {
    // kubectl skips files of the list that do not exist
    const files = process.env.KUBECONFIG.split(delimiter).filter((f) => f && existsSync(f));
    if (files.length === 0) throw new Error(`KUBECONFIG=${process.env.KUBECONFIG}: no such file`);
    selection = readKubeconfigFiles(files);
    source = process.env.KUBECONFIG;
  } else if (existsSync(join(homedir(), '.kube', 'config'))) {
    selection = readKubeconfigFiles([join(homedir(), '.kube', 'config')]);
    source = join(homedir(), '.kube', 'config');
  } else if (process.env.KUBERNETES_SERVICE_HOST && existsSync(join(SERVICE_ACCOUNT_DIR, 'token'))) {
    selection = inCluster(process.env.KUBERNETES_SERVICE_HOST, process.env.KUBERNETES_SERVICE_PORT ?? '443');
    source = 'in-cluster service account';
  } else {
    throw new Error('no kubeconfig: pass a path, set KUBECONFIG, create ~/.kube/config or run in a pod');
  }
  return fromKubeConfig(selection, source);
}

/** the pod's service account: the API server's Service address, its CA and the projected token */
function inCluster(host: string, port: string): KubeconfigSelection {
  return {
    cluster: { server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`, caFile: join(SERVICE_ACCOUNT_DIR, 'ca.crt'), skipTLSVerify: false },
    user: { authProvider: { name: 'tokenFile', config: { tokenFile: join(SERVICE_ACCOUNT_DIR, 'token') } } },
  };
}

function fromKubeConfig(selection: KubeconfigSelection, source: string): ClusterConfig {
  const { cluster, user } = selection;
  if (!cluster) throw new Error(`kubeconfig ${describeSource(source)}: current context names no cluster`);
  const cfg: ClusterConfig = {
    server: cluster.server.replace(/\/+$/, ''),
    insecureSkipTLSVerify: cluster.skipTLSVerify,
    source,
  };
  cfg.ca = pem(cluster.caData, cluster.caFile);
  if (cluster.tlsServerName) cfg.tlsServerName = cluster.tlsServerName;
  if (selection.namespace) cfg.namespace = selection.namespace.trim();
  if (user) {
    cfg.cert = pem(user.certData, user.certFile);
    cfg.key = pem(user.keyData, user.keyFile);
    if (user.token) cfg.token = user.token;
    if (user.username) cfg.username = user.username;
    if (user.password) cfg.password = user.password;
    const provider = user.authProvider;
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

/** kubeconfig stores inline data base64-encoded; file paths were made absolute by kubeconfig-file.ts */
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
