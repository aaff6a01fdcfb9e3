/**
 * The kubeconfig file format, parsed with js-yaml (the manifest reader's fast YAML parser) instead of
 * @kubernetes/client-node, whose import alone costs the controller ~80 MiB of resident memory
 * (issue 10). Only what Hoist supports is read: clusters (server, CA, TLS server name,
 * insecure-skip-tls-verify), users (client certificates, token, basic auth; auth providers and
 * exec plugins are read only to be refused) and contexts. Several files merge as kubectl merges
 * KUBECONFIG: the first file that sets a name or the current context wins.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { load } from 'js-yaml';

export interface KubeconfigCluster {
  server: string;
  caData?: string;
  caFile?: string;
  skipTLSVerify: boolean;
  tlsServerName?: string;
}

export interface KubeconfigUser {
  certData?: string;
  certFile?: string;
  keyData?: string;
  keyFile?: string;
  token?: string;
  username?: string;
  password?: string;
  authProvider?: { name?: string; config?: Record<string, string> };
  exec?: unknown;
}

/** the current context's cluster, user and namespace */
export interface KubeconfigSelection {
  cluster: KubeconfigCluster | undefined;
  user: KubeconfigUser | undefined;
  namespace?: string;
}

interface Named<T> {
  name?: string;
  cluster?: T;
  user?: T;
  context?: T;
}

interface RawFile {
  'current-context'?: string;
  clusters?: Array<Named<Record<string, unknown>>> | null;
  users?: Array<Named<Record<string, unknown>>> | null;
  contexts?: Array<Named<{ cluster?: string; user?: string; namespace?: string }>> | null;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** a relative file path in a kubeconfig is relative to that kubeconfig's directory */
const fileIn = (dir: string, v: unknown): string | undefined => {
  const p = str(v);
  return p === undefined ? undefined : isAbsolute(p) ? p : resolve(dir, p);
};

function readCluster(raw: Record<string, unknown>, dir: string, file: string, name: string): KubeconfigCluster {
  const server = str(raw.server);
  if (!server) throw new Error(`kubeconfig ${file}: cluster ${name} has no server`);
  const c: KubeconfigCluster = { server, skipTLSVerify: raw['insecure-skip-tls-verify'] === true };
  const caData = str(raw['certificate-authority-data']);
  const caFile = fileIn(dir, raw['certificate-authority']);
  const tlsServerName = str(raw['tls-server-name']);
  if (caData) c.caData = caData;
  if (caFile) c.caFile = caFile;
  if (tlsServerName) c.tlsServerName = tlsServerName;
  return c;
}

function readUser(raw: Record<string, unknown>, dir: string): KubeconfigUser {
  const u: KubeconfigUser = {};
  const set = <K extends keyof KubeconfigUser>(k: K, v: KubeconfigUser[K] | undefined) => {
    if (v !== undefined) u[k] = v;
  };
  set('certData', str(raw['client-certificate-data']));
  set('certFile', fileIn(dir, raw['client-certificate']));
  set('keyData', str(raw['client-key-data']));
  set('keyFile', fileIn(dir, raw['client-key']));
  set('token', str(raw.token));
  set('username', str(raw.username));
  set('password', str(raw.password));
  if (raw['auth-provider'] && typeof raw['auth-provider'] === 'object') u.authProvider = raw['auth-provider'] as KubeconfigUser['authProvider'];
  if (raw.exec) u.exec = raw.exec;
  return u;
}

/** merges the files (first wins) and selects the current context's cluster and user */
export function readKubeconfigFiles(files: readonly string[]): KubeconfigSelection {
  const clusters = new Map<string, KubeconfigCluster>();
  const users = new Map<string, KubeconfigUser>();
  const contexts = new Map<string, { cluster?: string; user?: string; namespace?: string }>();
  let current: string | undefined;
  for (const file of files) {
    const raw = (load(readFileSync(file, 'utf8')) ?? {}) as RawFile;
    if (typeof raw !== 'object') throw new Error(`kubeconfig ${file}: not a kubeconfig`);
    const dir = dirname(resolve(file));
    current ??= str(raw['current-context']);
    for (const c of raw.clusters ?? []) if (c?.name && c.cluster && !clusters.has(c.name)) clusters.set(c.name, readCluster(c.cluster, dir, file, c.name));
    for (const u of raw.users ?? []) if (u?.name && !users.has(u.name)) users.set(u.name, readUser(u.user ?? {}, dir));
    for (const x of raw.contexts ?? []) if (x?.name && x.context && !contexts.has(x.name)) contexts.set(x.name, x.context);
  }
  const ctx = current ? contexts.get(current) : undefined;
  const selection: KubeconfigSelection = { cluster: ctx?.cluster ? clusters.get(ctx.cluster) : undefined, user: ctx?.user ? users.get(ctx.user) : undefined };
  if (str(ctx?.namespace)) selection.namespace = ctx!.namespace!;
  return selection;
}
