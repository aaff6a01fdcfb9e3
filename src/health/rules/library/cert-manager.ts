/**
 * cert-manager (https://cert-manager.io/docs/reference/api-docs/): Certificate, Issuer and
 * ClusterIssuer report a `Ready` condition written for a generation (`observedGeneration` on the
 * condition), which kstatus does not read.
 *
 * - Certificate: Ready=True when its Secret holds a valid certificate matching the spec (the
 *   readiness controller re-evaluates it for every generation). An issuance that failed leaves
 *   `Issuing=False` with `status.lastFailureTime` set, and cert-manager retries only after a
 *   back-off of an hour and more (doubling per failed attempt): Failed, unless the Secret still
 *   holds a valid certificate (Ready=True: a failed renewal) or a retry is under way
 *   (Issuing=True).
 * - Issuer, ClusterIssuer: Ready=True once set up (ACME account registered, CA key pair
 *   verified, …). Ready=False is retried on every resync, and its common causes go away by
 *   themselves (a CA Secret that another Certificate of the same bundle is still issuing), so it
 *   is in progress, never failed.
 */
import type { HealthRuleSpec } from '../rule.ts';
import { cond, condField, condGeneration, firstOf, notCond } from './cel.ts';

const API = 'https://cert-manager.io/docs/reference/api-docs/';

const issuer = (kind: 'Issuer' | 'ClusterIssuer'): HealthRuleSpec => ({
  name: `cert-manager.io/${kind}`,
  group: 'cert-manager.io',
  kinds: [kind],
  observedGeneration: condGeneration('Ready'),
  ready: cond('Ready'),
  message: condField('Ready', 'message'),
  source: `${API}#cert-manager.io/v1.IssuerStatus`,
});

export const CERT_MANAGER: HealthRuleSpec[] = [
  {
    name: 'cert-manager.io/Certificate',
    group: 'cert-manager.io',
    kinds: ['Certificate'],
    observedGeneration: condGeneration('Ready'),
    ready: cond('Ready'),
    failed: `has(self.status.lastFailureTime) && ${notCond('Ready')} && ${notCond('Issuing')}`,
    message: firstOf(
      [
        [`has(self.status.lastFailureTime) && ${cond('Issuing', 'False')}`, condField('Issuing', 'message')],
        [cond('Issuing'), condField('Issuing', 'message')],
      ],
      condField('Ready', 'message'),
    ),
    source: `${API}#cert-manager.io/v1.CertificateStatus`,
  },
  issuer('Issuer'),
  issuer('ClusterIssuer'),
];
