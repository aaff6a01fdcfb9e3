/**
 * `hoist run`: the controller process. Serves /healthz, /readyz and /metrics, optionally takes
 * part in leader election on a Lease (reconciling only while leading; losing leadership exits so
 * the pod restarts clean, as controller-runtime does), and drains gracefully on SIGTERM/SIGINT.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { LeaderElector } from '../kube/leader-election.ts';
import { startManagerServer, type ManagerServer } from '../kube/manager-server.ts';
import { handleShutdown } from '../kube/shutdown.ts';
import { readFile } from 'node:fs/promises';
import { readCaDir } from '../sources/transport/ca-dir.ts';
import { parseRegistriesConf } from '../sources/image/registries-conf.ts';
import type { SourceRegistryOptions } from '../sources/registry.ts';
import { parseHealthRules } from '../health/rules/config.ts';
import { BUILTIN_RULES, HealthRules } from '../health/rules/rule-set.ts';
import { startController } from './controller.ts';
import { startWebhook } from './webhook.ts';
import { checkShard, shardLease, shardSelector } from './shard.ts';

export interface RunOptions {
  kubeconfig?: string;
  namespace: string;
  installCRD: boolean;
  /** host:port, ":port", or "0" to disable */
  metricsBindAddress: string;
  leaderElect: boolean;
  workers: number;
  maxConcurrentRenders?: number;
  renderThreads?: number;
  /** reconcile only BundleDeployments of this shard (label core.rukpak.io/shard); ''/undefined: unlabelled ones */
  shard?: string;
  selector?: string;
  cacheDir?: string;
  /** content-store budget in bytes (--cache-max-size); undefined = unlimited */
  cacheMaxBytes?: number;
  /** the largest revision stored, compressed, in bytes (--max-revision-size) */
  maxRevisionBytes?: number;
  /** overall deadline of one source resolve or fetch (--fetch-timeout) */
  fetchTimeoutMs?: number;
  /** the largest index.yaml a helm source reads, in bytes (--helm-index-max-size) */
  helmIndexMaxBytes?: number;
  /** the time budget of one reconcile (--reconcile-timeout) */
  reconcileTimeoutMs?: number;
  defaultServiceAccount?: string;
  /** remote targets (spec.kubeConfig) may be the management API server or link-local/metadata addresses (--allow-restricted-targets) */
  allowRestrictedTargets?: boolean;
  /** field managers taken over on every apply besides the kubectl ones (--override-manager) */
  overrideManagers?: string[];
  /** containers' registries.conf v2 (--registries-conf): blocked, insecure and mirrored registries */
  registriesConf?: string;
  /** one PEM per host, `host:port.crt` or `host.crt` (--ca-dir) */
  caDir?: string;
  /** a YAML list of cluster-wide health rules (--health-rules), ahead of the shipped library */
  healthRules?: string;
  /** host:port of the push receiver (--webhook-bind-address); undefined or "0": none */
  webhookBindAddress?: string;
  /** namespace/name of the Secret with the webhook secrets (--webhook-secret; default <namespace>/hoist-webhook) */
  webhookSecret?: string;
  log: Logger;
}

/** Source options from the flags; a bad file stops start-up with its name and why. */
async function sourceOptions(
  opts: Pick<RunOptions, 'fetchTimeoutMs' | 'helmIndexMaxBytes' | 'registriesConf' | 'caDir'>,
): Promise<Omit<SourceRegistryOptions, 'store'>> {
  const out: Omit<SourceRegistryOptions, 'store'> = {};
  if (opts.fetchTimeoutMs !== undefined) out.fetchTimeoutMs = opts.fetchTimeoutMs;
  if (opts.helmIndexMaxBytes !== undefined) out.helm = { maxIndexBytes: opts.helmIndexMaxBytes };
  if (opts.registriesConf) out.image = { registries: parseRegistriesConf(await readFile(opts.registriesConf, 'utf8'), opts.registriesConf) };
  if (opts.caDir) out.hostCAs = await readCaDir(opts.caDir);
  return out;
}

/** The health rules in force: the file's (compiled now; a bad rule stops start-up naming it), then the library. */
export async function loadHealthRules(file: string | undefined, log: Logger): Promise<HealthRules> {
  if (!file) return BUILTIN_RULES;
  const text = await readFile(file, 'utf8').catch((e: unknown) => {
    throw new Error(`--health-rules ${file}: cannot be read: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  });
  const rules = new HealthRules(parseHealthRules(text, file));
  log.info({ file, rules: rules.clusterRules }, 'cluster-wide health rules loaded');
  return rules;
}

function parseBind(addr: string, flag = '--metrics-bind-address'): { host: string; port: number } | undefined {
  if (addr === '0' || addr === '') return undefined;
  const i = addr.lastIndexOf(':');
  const host = i > 0 ? addr.slice(0, i) : '0.0.0.0';
  const port = Number(addr.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad ${flag} ${addr}`);
  return { host, port };
}

export async function runController(opts: RunOptions): Promise<number> {
  checkShard(opts.shard);
  const log = opts.shard ? opts.log.child({ shard: opts.shard }) : opts.log;
  const ctl = await startController({
    kubeconfig: opts.kubeconfig,
    namespace: opts.namespace,
    installCRD: opts.installCRD,
    workers: opts.workers,
    ...(opts.maxConcurrentRenders ? { maxConcurrentRenders: opts.maxConcurrentRenders } : {}),
    ...(opts.renderThreads ? { renderThreads: opts.renderThreads } : {}),
    selector: shardSelector(opts.shard, opts.selector),
    cacheDir: opts.cacheDir,
    ...(opts.cacheMaxBytes !== undefined ? { cacheMaxBytes: opts.cacheMaxBytes } : {}),
    ...(opts.maxRevisionBytes !== undefined ? { maxRevisionBytes: opts.maxRevisionBytes } : {}),
    ...(opts.reconcileTimeoutMs !== undefined ? { reconcileTimeoutMs: opts.reconcileTimeoutMs } : {}),
    sources: await sourceOptions(opts),
    healthRules: await loadHealthRules(opts.healthRules, log),
    defaultServiceAccount: opts.defaultServiceAccount,
    ...(opts.allowRestrictedTargets ? { allowRestrictedTargets: true } : {}),
    overrideManagers: opts.overrideManagers,
    log,
    autoStart: !opts.leaderElect,
  });

  const leaderAbort = new AbortController();
  let elector: LeaderElector | undefined;
  let electionDone: Promise<void> = Promise.resolve();
  if (opts.leaderElect) {
    elector = new LeaderElector({
      client: ctl.client,
      name: shardLease(opts.shard),
      namespace: opts.namespace,
      identity: `${hostname()}_${randomBytes(4).toString('hex')}`,
      logger: log,
      onStartedLeading: async (signal) => {
        log.info('leading: starting the controller');
        await ctl.manager.start(signal);
      },
      onStoppedLeading: () => {
        if (leaderAbort.signal.aborted) return;
        log.error('lost leadership: exiting so a fresh process can stand by');
        process.exit(1);
      },
    });
    electionDone = elector.run(leaderAbort.signal);
  }

  const bind = parseBind(opts.metricsBindAddress);
  let server: ManagerServer | undefined;
  if (bind) {
    // a standby has not started its informers (the manager starts when it leads): it is ready as a
    // candidate, or a rolling update of the chart's Deployment (maxUnavailable 0) waits forever for
    // a new Pod that cannot lead until the old leader is gone (test/e2e/chart-real-node.test.ts)
    const informers = () => (elector && elector.state !== 'leading' ? [] : [ctl.manager]);
    server = await startManagerServer({ port: bind.port, host: bind.host, registry: ctl.registry, informers, ...(elector ? { elector } : {}), logger: log });
  }
  const hookBind = parseBind(opts.webhookBindAddress ?? '', '--webhook-bind-address');
  const webhook = hookBind
    ? await startWebhook({
        client: ctl.client,
        pushes: ctl.manager.pushes,
        secret: opts.webhookSecret ?? `${opts.namespace}/hoist-webhook`,
        ...hookBind,
        registry: ctl.registry,
        log,
      })
    : undefined;

  const done = new Promise<boolean>((resolve) => {
    handleShutdown({
      // the receiver closes with the probes: a push during the drain is noticed at the next poll
      ...(server || webhook
        ? { server: { markShuttingDown: () => server?.markShuttingDown(), close: async () => void (await Promise.all([server?.close(), webhook?.close()])) } }
        : {}),
      controllers: [{ stop: (ms) => ctl.manager.stop(ms) }],
      ...(elector ? { leaderElection: { abort: leaderAbort, done: electionDone } } : {}),
      logger: log,
      onDone: (clean) => resolve(clean),
    });
  });
  const clean = await done;
  await ctl.client.close();
  return clean ? 0 : 1;
}
