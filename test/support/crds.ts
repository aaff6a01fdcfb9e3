/** A minimal CustomResourceDefinition for tests: one served and stored version `v1`. */
import { waitEstablished, waitServed } from '../../src/apply/crd-established.ts';
import type { KubeClient, KubeObject, TypeRef } from '../../src/kube/types.ts';

export interface CrdOptions {
  scope?: 'Namespaced' | 'Cluster';
  /** openAPIV3Schema; default: an object that keeps unknown fields */
  schema?: Record<string, unknown>;
  /** serve the status subresource (a controller writes status separately) */
  status?: boolean;
}

/** `kind` in `group`, plural lowercase kind + "s" */
export function crdOf(group: string, kind: string, opts: CrdOptions = {}): KubeObject {
  const plural = `${kind.toLowerCase()}s`;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: opts.scope ?? 'Namespaced',
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          ...(opts.status ? { subresources: { status: {} } } : {}),
          schema: { openAPIV3Schema: opts.schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  } as KubeObject;
}

/**
 * Resolves once CRD `crdName` is Established and every given client's discovery serves `type`
 * (discovery follows Established by a moment: a request in between is refused as a kind not
 * served). The applier's own waits, so the tests wait as the controller does.
 */
export async function untilServed(crdName: string, type: TypeRef, clients: readonly KubeClient[], timeoutMs = 30_000): Promise<void> {
  await waitEstablished(clients[0]!, [crdName], timeoutMs);
  for (const c of clients) {
    await waitServed(c, [{ ...type, metadata: { name: crdName } }], timeoutMs);
    if (!(await c.discovery.resourceFor(type))) throw new Error(`${crdName}: ${type.apiVersion} ${type.kind} not in discovery after ${timeoutMs} ms`);
  }
}
