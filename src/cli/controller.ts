/**
 * `hoist run`: the controller process. Connects to the API server, optionally installs the CRD,
 * serves /healthz, /readyz and /metrics, takes part in leader election, and reconciles
 * BundleDeployments until SIGTERM, then drains.
 */
import type { Logger } from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { bundleDeploymentCRD, CRD_NAME } from '../../api/v1alpha2/crd.ts';
import { notificationCRDs } from '../../api/v1alpha2/notification-crds.ts';
import { Notifier } from '../notify/notifier.ts';
import type { DispatcherOptions } from '../notify/dispatcher.ts';
import { TENANCY_POLICY_NAME, tenancyPolicy, type AdmissionObject } from '../../api/v1alpha2/tenancy-policy.ts';
import { FsContentStore } from '../cache/fs-content-store.ts';
import { createKubeClient, loadKubeConfig, type RestKubeClient } from '../kube/client.ts';
import { isAlreadyExists } from '../kube/api-error.ts';
import type { KubeClient, KubeObject } from '../kube/types.ts';
import type { Clock } from '../util/clock.ts';
import { RenderPool, threadedRegistry } from '../processors/threads/render-pool.ts';
import { createProcessorRegistry } from '../processors/registry.ts';
import { toolPath } from '../devcluster/tools.ts';
import type { HealthRules } from '../health/rules/rule-set.ts';
import { BundleDeploymentManager } from '../reconciler/manager.ts';
import { createSourceRegistry, type SourceRegistryOptions } from '../sources/registry.ts';
import { sleep } from '../util/sleep.ts';

export interface ControllerOptions {
  kubeconfig?: string;
  /** the controller's namespace: revision Secrets and source credentials live here */
  namespace: string;
  /**
   * apply the BundleDeployment CRD and the tenancy policy (api/v1alpha2/tenancy-policy.yaml) at
   * start-up (development; the chart installs both otherwise)
   */
  installCRD?: boolean;
  cacheDir?: string;
  workers?: number;
  maxConcurrentRenders?: number;
  /** render plain and registry+v1 bundles on this many worker threads (hoist run --render-threads); 0 or unset: on the controller's thread */
  renderThreads?: number;
  log: Logger;
  registry?: Registry;
  /** reconcile only BundleDeployments matching this label selector */
  selector?: string;
  /** start reconciling at once (default); false when leader election decides when */
  autoStart?: boolean;
  /** User-Agent of the controller's API requests (default "hoist"); tests make it unique to find one controller's requests in the audit log */
  userAgent?: string;
  /** source options (extra CAs, insecure registry hosts, unpack limits); the store is the controller's */
  sources?: Omit<SourceRegistryOptions, 'store'>;
  /** content-store garbage collection period (default 10 min) */
  gcIntervalMs?: number;
  /** a ServiceAccount name (in each BD's installNamespace) impersonated for BDs without spec.serviceAccount */
  defaultServiceAccount?: string;
  /** field managers every apply takes over besides the kubectl ones (hoist run --override-manager) */
  overrideManagers?: readonly string[];
  /** size budget of the content store, enforced on every write (see FsContentStore); undefined = unlimited */
  cacheMaxBytes?: number;
  /** the largest revision stored, compressed, in bytes (--max-revision-size; default 8 MiB) */
  maxRevisionBytes?: number;
  /** the time budget of one reconcile in ms (--reconcile-timeout; default 5 min) */
  reconcileTimeoutMs?: number;
  /** the clock of the reconcile budget's timer (default: the system clock); tests fire the budget alone */
  budgetClock?: Clock;
  /** spec.kubeConfig may name the management API server or link-local/metadata addresses (--allow-restricted-targets) */
  allowRestrictedTargets?: boolean;
  /** concurrent reconciles per remote target cluster (default 4) */
  targetConcurrency?: number;
  /** notification noise control (burst, digest window, retries); the defaults of src/notify/dispatcher.ts otherwise */
  notifications?: DispatcherOptions & { statusIntervalMs?: number };
  /** the health rules in force (hoist run --health-rules, then the shipped library) */
  healthRules?: HealthRules;
}

export interface RunningController {
  client: RestKubeClient;
  manager: BundleDeploymentManager;
  notifier: Notifier;
  registry: Registry;
  stop(): Promise<void>;
}

/** applies the BundleDeployment CRD and the notification CRDs and waits until each is Established */
export async function installCRD(client: RestKubeClient, log: Logger): Promise<void> {
  const crds = [bundleDeploymentCRD(), ...notificationCRDs()];
  for (const crd of crds) await client.apply(crd as unknown as KubeObject, { fieldManager: 'hoist-installer', force: true });
  const deadline = Date.now() + 30_000;
  for (const name of crds.map((c) => c.metadata.name)) {
    for (;;) {
      const crd = await client.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, name);
      const conds = (crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions ?? [];
      if (conds.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not established after 30s`);
      await sleep(100);
    }
  }
  client.discovery.invalidate();
  log.info({ crd: CRD_NAME }, 'CRD installed');
}

/** the user name this client's requests authenticate as (a SelfSubjectReview: one request, allowed to every authenticated user) */
export async function whoAmI(client: KubeClient): Promise<string> {
  const review = await client.create({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview', metadata: { name: '' } });
  const user = (review.status as { userInfo?: { username?: string } } | undefined)?.userInfo?.username;
  if (!user) throw new Error('SelfSubjectReview returned no user name');
  return user;
}

/** applies the policy and then its binding (server-side apply, idempotent) */
export async function applyTenancyPolicy(client: KubeClient, objects: readonly AdmissionObject[]): Promise<void> {
  for (const o of objects) await client.apply(o, { fieldManager: 'hoist-installer', force: true });
}

/**
 * Installs the tenancy policy for this controller: the controller's own user name (asked of the
 * API server) and its --default-service-account fill in who a BundleDeployment without
 * spec.serviceAccount acts as. Idempotent.
 */
export async function installTenancyPolicy(client: KubeClient, log: Logger, defaultServiceAccount?: string): Promise<void> {
  const controllerUser = await whoAmI(client);
  await applyTenancyPolicy(client, tenancyPolicy({ controllerUser, ...(defaultServiceAccount ? { defaultServiceAccount } : {}) }));
  log.info({ policy: TENANCY_POLICY_NAME, controllerUser }, 'tenancy policy installed');
}

async function ensureNamespace(client: RestKubeClient, name: string): Promise<void> {
  if (await client.get({ apiVersion: 'v1', kind: 'Namespace' }, name)) return;
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch((e: unknown) => {
    if (!isAlreadyExists(e)) throw e;
  });
}

export async function startController(opts: ControllerOptions): Promise<RunningController> {
  const processors = createProcessorRegistry({
    helmBinary: () => process.env.HOIST_HELM ?? toolPath('helm'),
    kustomizeBinary: () => process.env.HOIST_KUSTOMIZE ?? toolPath('kustomize'),
  });
  const renderPool = opts.renderThreads ? new RenderPool({ threads: opts.renderThreads, log: opts.log }) : undefined;
  const { processorFor } = renderPool ? threadedRegistry(processors, renderPool) : processors;
  const cfg = loadKubeConfig(opts.kubeconfig);
  const client = createKubeClient(cfg, opts.userAgent ? { userAgent: opts.userAgent } : {});
  const registry = opts.registry ?? new Registry();
  if (!opts.registry) collectDefaultMetrics({ register: registry });
  if (opts.installCRD) {
    await installCRD(client, opts.log);
    await installTenancyPolicy(client, opts.log, opts.defaultServiceAccount);
  }
  await ensureNamespace(client, opts.namespace);
  const store = new FsContentStore({
    ...(opts.cacheDir ? { root: opts.cacheDir } : {}),
    ...(opts.cacheMaxBytes !== undefined ? { maxBytes: opts.cacheMaxBytes } : {}),
  });
  const sources = createSourceRegistry({ ...opts.sources, store });
  const notifier = new Notifier({
    client,
    log: opts.log,
    controllerNamespace: opts.namespace,
    defaultServiceAccount: opts.defaultServiceAccount,
    registry,
    dispatcher: opts.notifications,
    statusIntervalMs: opts.notifications?.statusIntervalMs,
  });
  const manager = new BundleDeploymentManager({
    notices: notifier,
    client,
    log: opts.log,
    controllerNamespace: opts.namespace,
    store,
    sourceFor: (kind) => sources.sourceFor(kind),
    processorFor,
    workers: opts.workers,
    maxConcurrentRenders: opts.maxConcurrentRenders,
    registry,
    selector: opts.selector,
    gcIntervalMs: opts.gcIntervalMs,
    defaultServiceAccount: opts.defaultServiceAccount,
    overrideManagers: opts.overrideManagers,
    maxRevisionBytes: opts.maxRevisionBytes,
    reconcileTimeoutMs: opts.reconcileTimeoutMs,
    budgetClock: opts.budgetClock,
    managementServer: cfg.server,
    ...(opts.allowRestrictedTargets ? { allowRestrictedTargets: true } : {}),
    ...(opts.targetConcurrency !== undefined ? { targetConcurrency: opts.targetConcurrency } : {}),
    ...(opts.userAgent ? { userAgent: opts.userAgent } : {}),
    ...(opts.healthRules ? { healthRules: opts.healthRules } : {}),
  });
  // before the reconciles: their first transitions find the routes
  await notifier.start();
  if (opts.autoStart !== false) await manager.start();
  return {
    client,
    manager,
    notifier,
    registry,
    async stop() {
      await manager.stop();
      await renderPool?.close();
      await notifier.stop();
      await client.close();
    },
  };
}
