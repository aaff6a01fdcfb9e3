/**
 * Playing cert-manager in tests that install its kinds without running it: status blocks as
 * cert-manager writes them (cert-manager/cert-manager, Apache-2.0: the readiness controller's
 * Ready condition, the trigger controller's Issuing condition, the issuers' set-up; the same
 * states as testdata/health-rules/cert-manager.yaml), written through the status subresource.
 */
import type { KubeClient, KubeObject } from '../../src/kube/types.ts';
import { sleep } from './wait.ts';

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** the first issuance under way: no Secret yet (policies/checks.go DoesNotExist) */
export function certificateIssuing(generation: number): Record<string, unknown> {
  const c = (type: string, status: string) => ({
    type,
    status,
    reason: 'DoesNotExist',
    message: 'Issuing certificate as Secret does not exist',
    observedGeneration: generation,
    lastTransitionTime: now(),
  });
  return { conditions: [c('Issuing', 'True'), c('Ready', 'False')] };
}

/** issued and valid (readiness_controller.go BuildReadyConditionFromChain) */
export function certificateReady(generation: number): Record<string, unknown> {
  const from = Date.now();
  return {
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Ready',
        message: 'Certificate is up to date and has not expired',
        observedGeneration: generation,
        lastTransitionTime: now(),
      },
    ],
    notBefore: new Date(from).toISOString().replace(/\.\d+Z$/, 'Z'),
    notAfter: new Date(from + 90 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z'),
    renewalTime: new Date(from + 60 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z'),
    revision: 1,
  };
}

/** a self-signed Issuer set up (pkg/issuer/selfsigned/setup.go: Ready True, reason IsReady, no message) */
export function issuerReady(generation: number): Record<string, unknown> {
  return { conditions: [{ type: 'Ready', status: 'True', reason: 'IsReady', message: '', observedGeneration: generation, lastTransitionTime: now() }] };
}

const ready = (o: KubeObject) =>
  ((o.status as { conditions?: Array<{ type: string; status: string; observedGeneration?: number }> } | undefined)?.conditions ?? []).some(
    (c) => c.type === 'Ready' && c.status === 'True' && c.observedGeneration === o.metadata.generation,
  );

/**
 * Until stopped, gives every Issuer and Certificate of `namespace` that is not Ready at its
 * generation the status cert-manager writes once it is set up or issued (it issues nothing: no
 * Secret is written). Polls; the kinds need not be served yet.
 */
export function standInCertManager(client: KubeClient, namespace: string): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const [kind, status] of [
        ['Issuer', issuerReady],
        ['Certificate', certificateReady],
      ] as const) {
        const items = await client.list({ apiVersion: 'cert-manager.io/v1', kind }, { namespace }).then(
          (r) => r.items,
          () => [],
        );
        for (const o of items.filter((x) => !ready(x))) {
          await client.updateStatus({ ...o, status: status(o.metadata.generation ?? 1) }).catch(() => undefined);
        }
      }
      await sleep(250);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
