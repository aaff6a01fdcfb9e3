/**
 * The notifications of `hoist run`: informers on NotificationProviders and NotificationRoutes (all
 * namespaces), the dispatcher, the sender, the routes' status and the metrics. The reconciler hands
 * it transition records (`record`, which returns at once); nothing here runs on a reconcile's path.
 *
 * Identity: a provider's Secrets are read as `spec.serviceAccountName` of its namespace
 * (impersonated), else as the controller's `--default-service-account` there, else as the
 * controller. Route status is written with the controller's identity, at most once per
 * `statusIntervalMs` per route and only when it changed.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import {
  NOTIFICATION_PROVIDER_KIND,
  NOTIFICATION_ROUTE_KIND,
  type NotificationCondition,
  type NotificationProvider,
  type NotificationRoute,
  type NotificationRouteStatus,
} from '../../api/v1alpha2/notification-types.ts';
import { API_VERSION } from '../../api/v1alpha2/types.ts';
import { isConflict, isNotFound } from '../kube/api-error.ts';
import { Informer } from '../kube/informer.ts';
import type { KubeClient, KubeObject } from '../kube/types.ts';
import { systemClock, type Clock, type ClockTimer } from '../util/clock.ts';
import { HoistError } from '../util/errors.ts';
import { Dispatcher, type DeliveryOutcome, type DispatcherOptions, type RouteTarget } from './dispatcher.ts';
import { NotifyCode, notifyError } from './errors.ts';
import type { Message } from './message.ts';
import { requestFor } from './providers.ts';
import { resolveProvider } from './resolve-provider.ts';
import { minIntervalOf, routeWants } from './routes.ts';
import { Sender } from './sender.ts';
import type { TransitionRecord } from './transitions.ts';

export interface NotifierOptions {
  client: KubeClient;
  log: Logger;
  controllerNamespace: string;
  defaultServiceAccount?: string | undefined;
  registry?: Registry | undefined;
  clock?: Clock | undefined;
  dispatcher?: DispatcherOptions | undefined;
  /** at most one status write per route per this long (default 2 s) */
  statusIntervalMs?: number | undefined;
}

type ProviderObject = NotificationProvider & KubeObject;
type RouteObject = NotificationRoute & KubeObject;

const PROVIDER_TYPE = { apiVersion: API_VERSION, kind: NOTIFICATION_PROVIDER_KIND };
const ROUTE_TYPE = { apiVersion: API_VERSION, kind: NOTIFICATION_ROUTE_KIND };

function notificationCounter(registry: Registry | undefined): Counter<'type' | 'result'> | undefined {
  if (!registry) return undefined;
  const existing = registry.getSingleMetric('hoist_notifications_total');
  if (existing) return existing as Counter<'type' | 'result'>;
  return new Counter({
    name: 'hoist_notifications_total',
    help: 'notification messages by provider type and result (delivered, failed, retried, dropped, duplicate, superseded, digested)',
    labelNames: ['type', 'result'],
    registers: [registry],
  });
}

export class Notifier {
  private readonly providers: Informer<ProviderObject>;
  private readonly routes: Informer<RouteObject>;
  readonly dispatcher: Dispatcher;
  private readonly sender = new Sender();
  private readonly clock: Clock;
  private readonly counter: Counter<'type' | 'result'> | undefined;
  private enabled = false;
  /** per route: the status to write, and when it may be written next */
  private readonly statuses = new Map<string, NotificationRouteStatus>();
  private readonly statusTimers = new Map<string, ClockTimer>();
  private readonly lastStatusWrite = new Map<string, number>();
  private readonly failures = new Map<string, number>();
  private readonly readers = new Map<string, KubeClient>();

  constructor(private readonly o: NotifierOptions) {
    this.clock = o.clock ?? systemClock;
    this.providers = new Informer<ProviderObject>({ client: o.client, type: PROVIDER_TYPE, logger: o.log });
    this.routes = new Informer<RouteObject>({ client: o.client, type: ROUTE_TYPE, logger: o.log });
    this.counter = notificationCounter(o.registry);
    this.dispatcher = new Dispatcher(
      {
        clock: this.clock,
        log: o.log,
        match: (r) => this.match(r),
        send: (target, message) => this.send(target, message),
        report: (outcome) => this.report(outcome),
        count: (what, type, n = 1) => this.counter?.inc({ type, result: what }, n),
      },
      o.dispatcher,
    );
  }

  /** starts the informers when the notification CRDs are served; without them notifications are off (one warning) */
  async start(signal?: AbortSignal): Promise<void> {
    const served = await this.o.client.discovery.resourceFor(ROUTE_TYPE).catch(() => undefined);
    const providers = await this.o.client.discovery.resourceFor(PROVIDER_TYPE).catch(() => undefined);
    if (!served || !providers) {
      this.o.log.warn({}, 'notifications off: the NotificationRoute and NotificationProvider CRDs are not installed');
      return;
    }
    this.providers.start();
    this.routes.start();
    await Promise.all([this.providers.waitForSync(signal), this.routes.waitForSync(signal)]);
    this.enabled = true;
  }

  async stop(): Promise<void> {
    this.enabled = false;
    this.dispatcher.stop();
    for (const t of this.statusTimers.values()) this.clock.clearTimeout(t);
    await Promise.all([this.providers.stop(), this.routes.stop()]);
    await this.sender.close();
  }

  /** the reconciler's records; returns at once */
  record(records: readonly TransitionRecord[]): void {
    if (this.enabled) this.dispatcher.record(records);
  }

  forget(bd: string): void {
    this.dispatcher.forget(bd);
  }

  private match(r: TransitionRecord): RouteTarget[] {
    const out: RouteTarget[] = [];
    for (const route of this.routes.list()) {
      if (!routeWants(route, r, this.o.controllerNamespace)) continue;
      const provider = this.providers.getByName(route.spec.providerRef.name, route.metadata.namespace);
      out.push({
        route: `${route.metadata.namespace}/${route.metadata.name}`,
        namespace: route.metadata.namespace,
        routeName: route.metadata.name,
        provider: `${route.metadata.namespace}/${route.spec.providerRef.name}`,
        providerType: provider?.spec.type ?? 'generic',
        minIntervalMs: minIntervalOf(route),
        linkTemplate: route.spec.linkTemplate,
      });
    }
    return out;
  }

  /** the client that reads a provider's Secrets */
  private readerFor(p: NotificationProvider): KubeClient {
    const sa = p.spec.serviceAccountName ?? this.o.defaultServiceAccount;
    if (!sa) return this.o.client;
    const user = `system:serviceaccount:${p.metadata.namespace}:${sa}`;
    let c = this.readers.get(user);
    if (!c) this.readers.set(user, (c = this.o.client.impersonate(user)));
    return c;
  }

  private async send(target: RouteTarget, message: Message): Promise<void> {
    const [ns, name] = target.provider.split('/') as [string, string];
    const provider = this.providers.getByName(name, ns);
    if (!provider) throw notifyError(`provider ${name} not found in namespace ${ns}`, NotifyCode.ProviderNotFound, `NotificationRoute ${target.route}`, true);
    const resolved = await resolveProvider(this.readerFor(provider), provider);
    let req;
    try {
      req = requestFor(resolved.settings, message);
    } catch (e) {
      throw notifyError(e instanceof Error ? e.message : String(e), NotifyCode.BadAddress, resolved.send.subject, true);
    }
    if (!req) return;
    await this.sender.send(req, resolved.send);
  }

  private report(outcome: DeliveryOutcome): void {
    const { target, records } = outcome;
    const first = records[0]!;
    const bd = records.length === 1 ? first.bd.name : `${records.length} BundleDeployments`;
    const event = records.length === 1 ? first.event : 'Digest';
    const status = { ...(this.statuses.get(target.route) ?? this.routes.getByName(target.routeName, target.namespace)?.status ?? {}) };
    const at = outcome.at.toISOString().replace(/\.\d+Z$/, 'Z');
    if (outcome.ok) {
      this.counter?.inc({ type: target.providerType, result: 'delivered' });
      this.o.log.info({ route: target.route, provider: target.provider, bd, event }, 'notification delivered');
      status.lastDelivered = { at, event, bundleDeployment: bd };
      status.conditions = setReady(status.conditions, 'True', 'Delivered', `the last message (${event}, ${bd}) was delivered`, at);
    } else {
      this.counter?.inc({ type: target.providerType, result: 'failed' });
      const message = outcome.error.describe();
      this.o.log.warn({ route: target.route, provider: target.provider, bd, event, attempts: outcome.attempts, err: message }, 'notification not delivered');
      const failed = (this.failures.get(target.route) ?? 0) + 1;
      this.failures.set(target.route, failed);
      status.failedDeliveries = failed;
      status.lastFailure = { at, event, bundleDeployment: bd, message: `after ${outcome.attempts} attempt(s): ${message}`.slice(0, 4000) };
      status.conditions = setReady(status.conditions, 'False', 'DeliveryFailed', status.lastFailure.message, at);
    }
    this.statuses.set(target.route, status);
    this.scheduleStatus(target);
  }

  private scheduleStatus(target: RouteTarget): void {
    if (this.statusTimers.has(target.route)) return;
    const interval = this.o.statusIntervalMs ?? 2000;
    const last = this.lastStatusWrite.get(target.route) ?? 0;
    const wait = Math.max(0, last + interval - this.clock.now());
    const timer = this.clock.setTimeout(() => {
      this.statusTimers.delete(target.route);
      void this.writeStatus(target);
    }, wait);
    timer.unref();
    this.statusTimers.set(target.route, timer);
  }

  private async writeStatus(target: RouteTarget): Promise<void> {
    const next = this.statuses.get(target.route);
    const route = this.routes.getByName(target.routeName, target.namespace);
    if (!next || !route || !this.enabled) return;
    this.lastStatusWrite.set(target.route, this.clock.now());
    const status: NotificationRouteStatus = { ...route.status, ...next, observedGeneration: route.metadata.generation };
    if (JSON.stringify(status) === JSON.stringify(route.status)) return;
    try {
      await this.o.client.updateStatus({ ...route, status } as unknown as KubeObject);
      this.statuses.delete(target.route);
    } catch (e) {
      if (isNotFound(e)) {
        this.statuses.delete(target.route);
        return;
      }
      // a conflict (the cache was behind) or an API error: the next delivery or a retry writes it
      if (!isConflict(e))
        this.o.log.warn({ route: target.route, err: e instanceof HoistError || e instanceof Error ? e.message : String(e) }, 'route status not written');
      this.scheduleStatus(target);
    }
  }
}

function setReady(
  conditions: readonly NotificationCondition[] | undefined,
  status: 'True' | 'False',
  reason: string,
  message: string,
  at: string,
): NotificationCondition[] {
  const prev = conditions?.find((c) => c.type === 'Ready');
  const next: NotificationCondition = {
    type: 'Ready',
    status,
    reason,
    message,
    lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : at,
  };
  return [...(conditions ?? []).filter((c) => c.type !== 'Ready'), next];
}
