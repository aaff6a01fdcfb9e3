/** A minimal CustomResourceDefinition for tests: one served and stored version `v1`. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { RestKubeClient } from '../../src/kube/client.ts';
import type { KubeObject, TypeRef } from '../../src/kube/types.ts';

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

type DiscoveringClient = Pick<RestKubeClient, 'get' | 'discovery'>;

/**
 * Resolves once CRD `crdName` is Established and every given client's discovery serves `type`.
 * Discovery follows Established by a moment; a request in between is refused as a kind not served.
 */
export async function untilServed(crdName: string, type: TypeRef, clients: readonly DiscoveringClient[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const wait = async (what: string, ok: () => Promise<boolean>): Promise<void> => {
    while (!(await ok())) {
      if (Date.now() > deadline) throw new Error(`${crdName}: ${what} after ${timeoutMs} ms`);
      await sleep(100);
    }
  };
  await wait('not Established', async () => {
    const crd = await clients[0]!.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, crdName);
    return ((crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
  });
  for (const c of clients) {
    await wait(`${type.apiVersion} ${type.kind} not in discovery`, async () => {
      c.discovery.invalidate();
      return (await c.discovery.resourceFor(type)) !== undefined;
    });
  }
}
