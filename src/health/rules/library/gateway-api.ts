/**
 * Gateway API (https://gateway-api.sigs.k8s.io/reference/spec/, apis/v1/gateway_types.go and
 * shared_types.go): conditions carry the generation they were written for.
 *
 * - Gateway: ready when `Accepted` and `Programmed` are True. The CRD defaults both to Unknown /
 *   Pending ("Waiting for controller") until an implementation reconciles it. `Accepted=False`
 *   (Invalid, InvalidParameters, UnsupportedAddress, ListenersNotValid) is the implementation
 *   refusing the spec: Failed — except the reasons that mean "not reconciled yet" (Pending, and
 *   the deprecated NotReconciled). `Programmed=False` (AddressNotAssigned, NoResources, …) is in
 *   progress: addresses and data planes come.
 * - HTTPRoute, GRPCRoute: status is per parent (`status.parents[]`, one entry per Gateway whose
 *   implementation handles it). Ready when there is at least one and every one has
 *   `Accepted=True` and no `ResolvedRefs=False`. A parent that does not accept the route
 *   (NotAllowedByListeners, NoMatchingListenerHostname, NoMatchingParent, UnsupportedValue, …;
 *   not Pending) fails it; unresolved references (BackendNotFound, RefNotPermitted, …) are in
 *   progress: a backend Service may come with the next phase.
 */
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condField, condGeneration, firstOf, lowest } from './cel.ts';

const SPEC = 'https://gateway-api.sigs.k8s.io/reference/spec/';
const NOT_RECONCILED = '["Pending", "NotReconciled"]';

const gateway: HealthRuleSpec = {
  name: 'gateway.networking.k8s.io/Gateway',
  group: 'gateway.networking.k8s.io',
  kinds: ['Gateway'],
  observedGeneration: condGeneration('Accepted', 'Programmed'),
  ready: `${cond('Accepted')} && ${cond('Programmed')}`,
  failed: `self.status.conditions.exists(c, c.type == "Accepted" && c.status == "False" && !(c.reason in ${NOT_RECONCILED}))`,
  message: firstOf([[`!${cond('Accepted')}`, condField('Accepted', 'message')]], condField('Programmed', 'message')),
  source: `${SPEC}#gateway.networking.k8s.io/v1.GatewayStatus`,
};

const refused = `p.conditions.exists(c, c.type == "Accepted" && c.status == "False" && !(c.reason in ${NOT_RECONCILED}))`;
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
