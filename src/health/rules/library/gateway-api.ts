/**
 * Gateway API (https://gateway-api.sigs.k8s.io/reference/spec/, apis/v1/gateway_types.go and
 * shared_types.go): conditions carry the generation they were written for.
 *
 * - Gateway: ready when `Accepted` and `Programmed` are True. The CRD defaults both to Unknown /
 *   Pending ("Waiting for controller") until an implementation reconciles it. `Accepted=False`
 *   for a reason that refuses the Gateway's own spec (Invalid, UnsupportedAddress,
 *   ListenersNotValid) is Failed: it needs a change. InvalidParameters (the GatewayClass's
 *   parameters object may come with the same bundle), the "not reconciled yet" reasons (Pending,
 *   the deprecated NotReconciled), an implementation's own reasons and `Programmed=False`
 *   (AddressNotAssigned, NoResources, …) are in progress.
 * - HTTPRoute, GRPCRoute: status is per parent (`status.parents[]`, one entry per Gateway whose
 *   implementation handles it). Ready when there is at least one and every one has
 *   `Accepted=True` and no `ResolvedRefs=False`. A parent refusing the route's own spec
 *   (UnsupportedValue, IncompatibleFilters) fails it. A refusal that depends on the Gateway
 *   (NotAllowedByListeners, NoMatchingListenerHostname, NoMatchingParent: a listener the same
 *   revision adds may not be programmed yet) and unresolved references (BackendNotFound,
 *   RefNotPermitted, …: a backend Service may come with the next phase) are in progress.
 */
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condField, condGeneration, firstOf, lowest } from './cel.ts';

const SPEC = 'https://gateway-api.sigs.k8s.io/reference/spec/';
/** Accepted=False reasons that refuse the object's own spec: a change is needed */
const GATEWAY_REFUSED = '["Invalid", "UnsupportedAddress", "ListenersNotValid"]';
const ROUTE_REFUSED = '["UnsupportedValue", "IncompatibleFilters"]';

const gateway: HealthRuleSpec = {
  name: 'gateway.networking.k8s.io/Gateway',
  group: 'gateway.networking.k8s.io',
  kinds: ['Gateway'],
  observedGeneration: condGeneration('Accepted', 'Programmed'),
  ready: `${cond('Accepted')} && ${cond('Programmed')}`,
  failed: `self.status.conditions.exists(c, c.type == "Accepted" && c.status == "False" && c.reason in ${GATEWAY_REFUSED})`,
  message: firstOf([[`!${cond('Accepted')}`, condField('Accepted', 'message')]], condField('Programmed', 'message')),
  source: `${SPEC}#gateway.networking.k8s.io/v1.GatewayStatus`,
};

const refused = `p.conditions.exists(c, c.type == "Accepted" && c.status == "False" && c.reason in ${ROUTE_REFUSED})`;
const unready =
  'p.conditions.exists(c, c.type == "Accepted" && c.status == "True") && !p.conditions.exists(c, c.type == "ResolvedRefs" && c.status == "False")';
/** the message of the first parent that is not ready: its refusing or unresolved condition, else its Accepted one */
const parentMessage = `self.status.parents.filter(p, !(${unready})).map(p, cel.bind(bad, p.conditions.filter(c, (c.type == "Accepted" && c.status != "True") || (c.type == "ResolvedRefs" && c.status == "False")), size(bad) > 0 ? bad[0].message : "not accepted yet"))[0]`;

const route = (kind: 'HTTPRoute' | 'GRPCRoute'): HealthRuleSpec => ({
  name: `gateway.networking.k8s.io/${kind}`,
  group: 'gateway.networking.k8s.io',
  kinds: [kind],
  // each parent's Accepted condition; no parents yet: nothing to be stale (and not ready)
  observedGeneration: `size(self.status.parents) == 0 ? self.metadata.generation : ${lowest(
    'self.status.parents.map(p, cel.bind(a, p.conditions.filter(c, c.type == "Accepted").map(c, has(c.observedGeneration) ? c.observedGeneration : self.metadata.generation), size(a) > 0 ? a[0] : self.metadata.generation))',
  )}`,
  ready: `size(self.status.parents) > 0 && self.status.parents.all(p, ${unready})`,
  failed: `self.status.parents.exists(p, ${refused})`,
  message: firstOf([['size(self.status.parents) == 0', '"no Gateway has accepted or refused it yet (status.parents is empty)"']], parentMessage),
  source: `${SPEC}#gateway.networking.k8s.io/v1.RouteParentStatus`,
});

export const GATEWAY_API: HealthRuleSpec[] = [gateway, route('HTTPRoute'), route('GRPCRoute')];
