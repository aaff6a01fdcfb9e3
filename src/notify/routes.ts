/**
 * Which routes want a transition record (docs/notifications.md, "Who may route what"). Pure.
 *
 * A route selects only BundleDeployments of its namespace's scope: a BD belongs to the namespace
 * its identity acts in, `spec.installNamespace` (the tenancy policy makes a BD with
 * installNamespace N act as an account of N, so only someone who may act in N creates one), and a
 * BD without installNamespace — the controller acts for it — to the controller's namespace. A
 * route in namespace B therefore never sees a BD of namespace A, whatever its names or selector say.
 */
import { parseDuration } from '../../api/v1alpha2/defaults.ts';
import { NOTIFICATION_EVENTS, type NotificationRoute } from '../../api/v1alpha2/notification-types.ts';
import { selects } from '../apply/drift-ignore.ts';
import { SEVERITY_RANK, type TransitionRecord } from './transitions.ts';

/** the namespace whose routes may select this BD */
export function scopeOf(bd: { installNamespace?: string | undefined }, controllerNamespace: string): string {
  return bd.installNamespace ?? controllerNamespace;
}

/** whether `route` wants `record` (scope, suspend, names/selector, events, severity) */
export function routeWants(route: NotificationRoute, record: TransitionRecord, controllerNamespace: string): boolean {
  const spec = route.spec;
  if (spec.suspend) return false;
  if (scopeOf(record.bd, controllerNamespace) !== route.metadata.namespace) return false;
  const which = spec.bundleDeployments;
  const byName = which?.names?.includes(record.bd.name) ?? false;
  const bySelector = which?.selector ? selects(which.selector, record.bd.labels) : false;
  if (which && (which.names?.length || which.selector) && !byName && !bySelector) return false;
  const events = spec.events?.length ? spec.events : NOTIFICATION_EVENTS;
  if (!events.includes(record.event)) return false;
  return SEVERITY_RANK[record.severity] >= SEVERITY_RANK[spec.severity ?? 'info'];
}

/** spec.minInterval in ms (default 1m); a value the CRD would refuse counts as the default */
export function minIntervalOf(route: NotificationRoute): number {
  try {
    return parseDuration(route.spec.minInterval ?? '1m', 'spec.minInterval');
  } catch {
    return 60_000;
  }
}
