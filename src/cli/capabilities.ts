/**
 * What `hoist render` and `hoist diff` tell helm and registry-v1 about the target cluster
 * (.Capabilities): the cluster's discovery when there is one, otherwise an assumed Kubernetes
 * version — the one Hoist's own tools are built at, not helm's compiled-in v1.20.0, so charts that
 * declare `kubeVersion: >=1.25.0-0` preview offline. `--kube-version` replaces the version and
 * `--api-versions` adds group/versions, as the same flags of `helm template` do.
 */
import { toolVersions } from '../devcluster/tools.ts';
import { builtinApiVersions } from '../kube/builtin-scopes.ts';
import type { Discovery } from '../kube/types.ts';
import type { Capabilities } from '../reconciler/render-bundle.ts';

export interface CapabilityFlags {
  /** --kube-version: replaces the cluster's (or the assumed) Kubernetes version */
  kubeVersion?: string | undefined;
  /** --api-versions: added to the cluster's (or the built-in) served group/versions */
  apiVersions?: readonly string[] | undefined;
}

/** helm's ParseKubeVersion accepts what Masterminds/semver's lenient NewVersion does: "1.30", "v1.30.2", "1.30.0-rc.1" */
const KUBE_VERSION = /^v?\d+(\.\d+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
/** "v1", "apps/v1", "monitoring.coreos.com/v1" and helm's "group/version/Kind" form */
const API_VERSION = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?v[0-9a-z]+(\/[A-Za-z][A-Za-z0-9]*)?$/;

/** Checks the flags (a usage error names the flag); --api-versions may repeat and hold lists "a,b" as helm's. */
export function parseCapabilityFlags(kubeVersion: string | undefined, apiVersions: readonly string[] | undefined): CapabilityFlags {
  if (kubeVersion !== undefined && !KUBE_VERSION.test(kubeVersion)) {
    throw new Error(`--kube-version ${JSON.stringify(kubeVersion)} is not a Kubernetes version (e.g. v1.30.0 or 1.30)`);
  }
  const versions = (apiVersions ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  for (const v of versions) {
    if (!API_VERSION.test(v)) throw new Error(`--api-versions ${JSON.stringify(v)} is not a group/version (e.g. apps/v1, monitoring.coreos.com/v1)`);
  }
  return {
    ...(kubeVersion !== undefined ? { kubeVersion: kubeVersion.startsWith('v') ? kubeVersion : `v${kubeVersion}` } : {}),
    ...(versions.length ? { apiVersions: versions } : {}),
  };
}

/** the Kubernetes version Hoist's tools are built at (scripts/tool-versions.env), assumed offline */
export function defaultKubeVersion(): string {
  const v = toolVersions().K8S_VERSION;
  if (!v) throw new Error('scripts/tool-versions.env lacks K8S_VERSION');
  return v;
}

export interface PreviewCapabilities {
  cluster: Capabilities;
  /** one line saying what was assumed (offline or by flag), for stderr; undefined when all came from the cluster */
  assumed?: string;
}

/** the capabilities of a preview: the cluster's discovery (if any) with the flags applied */
export function previewCapabilities(flags: CapabilityFlags, discovery?: Pick<Discovery, 'apiVersions' | 'serverVersion'>): PreviewCapabilities {
  const extra = flags.apiVersions ?? [];
  const withExtra = (served: readonly string[]): string[] => [...new Set([...served, ...extra])];
  if (discovery) {
    const cluster: Capabilities = {
      serverVersion: async () => flags.kubeVersion ?? (await discovery.serverVersion()),
      apiVersions: async () => withExtra(await discovery.apiVersions()),
    };
    const said = [
      flags.kubeVersion ? `Kubernetes ${flags.kubeVersion} (--kube-version) instead of the cluster's` : '',
      extra.length ? `${extra.join(', ')} served besides the cluster's API versions (--api-versions)` : '',
    ].filter(Boolean);
    return { cluster, ...(said.length ? { assumed: `assumed ${said.join('; ')}` } : {}) };
  }
  const kubeVersion = flags.kubeVersion ?? defaultKubeVersion();
  // without --api-versions nothing is claimed about served APIs: helm uses its defaults and
  // registry-v1 skips its served-API check; with them, the built-in kinds are served besides
  const apiVersions = extra.length ? withExtra(builtinApiVersions()) : undefined;
  const cluster: Capabilities = { serverVersion: async () => kubeVersion, apiVersions: async () => apiVersions };
  const version = flags.kubeVersion
    ? `Kubernetes ${kubeVersion} (--kube-version)`
    : `Kubernetes ${kubeVersion} (the version Hoist's tools are built at; --kube-version to choose another)`;
  const apis = extra.length ? `the built-in API versions and ${extra.join(', ')} (--api-versions)` : `helm's default API versions (--api-versions to add more)`;
  return { cluster, assumed: `no cluster: assumed ${version} and ${apis}` };
}
