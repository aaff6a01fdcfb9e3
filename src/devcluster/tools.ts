/**
 * Where the Go-built binaries live: ${HOIST_CACHE:-~/.cache/hoist}/bin/<tool>-<version>, built by
 * scripts/ensure-tools.sh at the versions pinned in scripts/tool-versions.env.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export type Tool =
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kubectl'
  | 'kubelet'
  | 'kube-proxy'
  | 'etcd'
  | 'helm'
  | 'kustomize'
  | 'kwok'
  | 'cosign'
  | 'sops'
  | 'age-keygen'
  | 'flux-postbuild';

const scriptsDir = fileURLToPath(new URL('../../scripts/', import.meta.url));

export function cacheRoot(): string {
  return process.env.HOIST_CACHE ?? join(homedir(), '.cache', 'hoist');
}

let versions: Record<string, string> | undefined;
export function toolVersions(): Record<string, string> {
  if (!versions) {
    versions = {};
    for (const line of readFileSync(join(scriptsDir, 'tool-versions.env'), 'utf8').split('\n')) {
      const m = /^([A-Z0-9_]+)=(\S+)/.exec(line);
      if (m) versions[m[1]!] = m[2]!;
    }
  }
  return versions;
}

function versionOf(tool: Tool): string {
  const v = toolVersions();
  const key =
    tool === 'etcd'
      ? 'ETCD_VERSION'
      : tool === 'helm'
        ? 'HELM_VERSION'
        : tool === 'kustomize'
          ? 'KUSTOMIZE_VERSION'
          : tool === 'kwok'
            ? 'KWOK_VERSION'
            : tool === 'cosign'
              ? 'COSIGN_VERSION'
              : tool === 'sops'
                ? 'SOPS_VERSION'
                : tool === 'age-keygen'
                  ? 'AGE_VERSION'
                  : tool === 'flux-postbuild'
                    ? 'FLUX_KUSTOMIZE_VERSION'
                    : 'K8S_VERSION';
  const version = v[key];
  if (!version) throw new Error(`scripts/tool-versions.env lacks ${key}`);
  return version;
}

/** Path of a tool, building it first (with progress on stderr) when it is not cached yet. */
export function toolPath(tool: Tool): string {
  const path = join(cacheRoot(), 'bin', `${tool}-${versionOf(tool)}`);
  if (!existsSync(path)) {
    const r = spawnSync('bash', [join(scriptsDir, 'ensure-tools.sh'), tool], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0 || !existsSync(path)) throw new Error(`building ${tool} failed (see output above)`);
  }
  return path;
}
