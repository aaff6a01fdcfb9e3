/** A minimal CustomResourceDefinition for tests: one served and stored version `v1`. */
import type { KubeObject } from '../../src/kube/types.ts';

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
