/**
 * Who acts for a BundleDeployment (DESIGN §7). With `spec.serviceAccount`, or the controller's
 * `--default-service-account` for BDs that name none, every API call made on the BD's behalf
 * (apply, collision reads, prune, uninstall, install-namespace creation, CRD Established reads)
 * runs as `system:serviceaccount:<installNamespace>:<name>` through impersonation. Without either,
 * the controller's own identity acts. Watches, revision Secrets and the BD's own status, finalizer
 * and events always use the controller's identity.
 *
 * Impersonating clients are cached per user and share the controller client's connection pool
 * and discovery cache: impersonation costs one header, never a connection or a request.
 */
import type { BundleDeployment } from '../../api/v1alpha2/types.ts';
import type { KubeClient } from '../kube/types.ts';
import { ReconcileCode, reconcileError } from './errors.ts';

export interface Actor {
  client: KubeClient;
  /** "system:serviceaccount:ns:name" when impersonating; undefined = the controller itself */
  user?: string;
}

/** the ServiceAccount that acts for `bd` ("ns/name"), or undefined when the controller does; throws when it cannot be determined */
export function serviceAccountOf(bd: BundleDeployment, defaultServiceAccount?: string): { namespace: string; name: string } | undefined {
  const named = bd.spec.serviceAccount?.name;
  const name = named ?? defaultServiceAccount;
  if (!name) return undefined;
  const namespace = bd.spec.installNamespace;
  if (!namespace) {
    // the CRD refuses serviceAccount without installNamespace; only the default can get here
    throw reconcileError(
      `no installNamespace to look service account ${name} up in: the controller runs with --default-service-account ${name}, so a BundleDeployment without spec.serviceAccount must set installNamespace`,
      ReconcileCode.NoServiceAccountNamespace,
      { stage: 'spec', subject: `BundleDeployment ${bd.metadata.name}`, terminal: true },
    );
  }
  return { namespace, name };
}

export class Identities {
  private readonly clients = new Map<string, KubeClient>();

  constructor(
    /** the controller's own client */
    readonly controller: KubeClient,
    /** `hoist run --default-service-account`: impersonated for BDs that name no serviceAccount */
    readonly defaultServiceAccount?: string,
  ) {}

  /** the actor for `bd`; throws a terminal HoistError when the default account has no namespace to live in */
  for(bd: BundleDeployment): Actor {
    const sa = serviceAccountOf(bd, this.defaultServiceAccount);
    if (!sa) return { client: this.controller };
    const user = `system:serviceaccount:${sa.namespace}:${sa.name}`;
    let client = this.clients.get(user);
    if (!client) this.clients.set(user, (client = this.controller.impersonate(user)));
    return { client, user };
  }
}
