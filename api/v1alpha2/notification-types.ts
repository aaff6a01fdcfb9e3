/**
 * Notifications (docs/notifications.md): two namespaced kinds of group
 * core.rukpak.io, version v1alpha2, mirrored from notificationprovider-crd.yaml and
 * notificationroute-crd.yaml.
 *
 * - NotificationProvider: where messages go (a type, an address or a Secret holding it, a token,
 *   an optional CA and proxy) and as whom its Secrets are read.
 * - NotificationRoute: which BundleDeployments (by name or label selector) and which events go to
 *   one provider of the same namespace. A route selects only BundleDeployments of its own
 *   namespace's scope: those whose spec.installNamespace is the route's namespace (the namespace
 *   their identity acts in), or, for those without one, the controller's namespace.
 */
import type { Condition, LabelSelector } from './types.ts';

/** a condition of a notification object (type Ready) */
export type NotificationCondition = Omit<Condition, 'type'> & { type: 'Ready' };

export const NOTIFICATION_PROVIDER_KIND = 'NotificationProvider';
export const NOTIFICATION_PROVIDER_PLURAL = 'notificationproviders';
export const NOTIFICATION_ROUTE_KIND = 'NotificationRoute';
export const NOTIFICATION_ROUTE_PLURAL = 'notificationroutes';

export const PROVIDER_TYPES = ['generic', 'slack', 'msteams', 'pagerduty', 'opsgenie', 'github', 'gitlab', 'gitea', 'alertmanager'] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

/** the transitions a route may ask for (docs/notifications.md says when each is emitted) */
export const NOTIFICATION_EVENTS = [
  'InstallSucceeded',
  'UpgradeSucceeded',
  'RolloutStarted',
  'RolledBack',
  'Blocked',
  'DriftReverted',
  'Paused',
  'Resumed',
  'Unhealthy',
  'Recovered',
  'DependencyNotReady',
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];

export const SEVERITIES = ['info', 'warning', 'error'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** the Secret keys a provider reads (docs/notifications.md, "Secrets") */
export const SECRET_KEY_ADDRESS = 'address';
export const SECRET_KEY_TOKEN = 'token';

export interface NotificationProviderSpec {
  type: ProviderType;
  /** the endpoint (a webhook URL, a repository URL for commit statuses, an API base); or `address` in secretRef */
  address?: string;
  /** keys `address` and/or `token` (the routing key, API key, bearer token or HMAC key); annotated with core.rukpak.io/credential-hosts */
  secretRef?: { name: string };
  /** a CA bundle (PEM) trusted for this provider in addition to the system roots */
  certSecretRef?: { name: string; key?: string };
  /** an http(s) proxy for this provider's requests */
  proxy?: string;
  /** the Secrets are read as this ServiceAccount of the provider's namespace (impersonated) */
  serviceAccountName?: string;
  /** per-request timeout, e.g. 15s (default 15s) */
  timeout?: string;
  /** the commit status context prefix (git providers); default "hoist" */
  context?: string;
  /** slack with a token (Web API chat.postMessage): the channel ID or name to post to */
  channel?: string;
}

export interface NotificationProvider {
  apiVersion: string;
  kind: typeof NOTIFICATION_PROVIDER_KIND;
  metadata: { name: string; namespace: string; uid?: string; generation?: number; resourceVersion?: string; labels?: Record<string, string> };
  spec: NotificationProviderSpec;
  status?: { observedGeneration?: number; conditions?: NotificationCondition[] };
}

export interface NotificationRouteSpec {
  providerRef: { name: string };
  /** which BundleDeployments of this namespace's scope: by name, by label selector, or both (either matches); neither = all */
  bundleDeployments?: { names?: string[]; selector?: LabelSelector };
  /** which transitions; default all */
  events?: NotificationEvent[];
  /** the least severity sent (info: everything, error: failures only); default info */
  severity?: Severity;
  /** at least this long between two messages about one BundleDeployment to this provider, e.g. 1m (default 1m) */
  minInterval?: string;
  /** a link each message carries: {{name}}, {{namespace}}, {{revision}}, {{event}} are replaced, URL-encoded */
  linkTemplate?: string;
  /** true: nothing is sent */
  suspend?: boolean;
}

export interface RouteDeliveryFailure {
  at: string;
  event: string;
  bundleDeployment: string;
  message: string;
}

export interface NotificationRouteStatus {
  observedGeneration?: number;
  conditions?: NotificationCondition[];
  /** the last message delivered */
  lastDelivered?: { at: string; event: string; bundleDeployment: string };
  /** the last message given up on after its retries */
  lastFailure?: RouteDeliveryFailure;
  /** deliveries given up on since the controller started */
  failedDeliveries?: number;
}

export interface NotificationRoute {
  apiVersion: string;
  kind: typeof NOTIFICATION_ROUTE_KIND;
  metadata: { name: string; namespace: string; uid?: string; generation?: number; resourceVersion?: string; labels?: Record<string, string> };
  spec: NotificationRouteSpec;
  status?: NotificationRouteStatus;
}
