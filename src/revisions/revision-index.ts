/**
 * Which revision Secrets exist, per BundleDeployment, without a LIST per question (issue 10: three
 * `list secrets` per reconcile of a new revision). A metadata-only watch of the controller
 * namespace's revision Secrets (labels and annotations only, never their data) fills it; what this
 * process writes or deletes goes in at once, so a reconcile reads its own writes even before the
 * watch delivers them. Until the watch has synced the store keeps listing.
 */
import type { Logger } from 'pino';
import { Informer } from '../kube/informer.ts';
import type { KubeObject, Reader, Watcher } from '../kube/types.ts';

/** what the store needs of a revision Secret: its name, labels and annotations */
export interface RevisionSecretMeta {
  name: string;
  /** '' when this process found the Secret already there (AlreadyExists) */
  resourceVersion: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export class RevisionIndex {
  private readonly informer: Informer;
  /** bd name → secret name → metadata */
  private readonly byBd = new Map<string, Map<string, RevisionSecretMeta>>();

  constructor(
    client: Reader & Watcher,
    namespace: string,
    private readonly ownerLabel: string,
    componentSelector: string,
    logger?: Logger,
  ) {
    this.informer = new Informer({
      client,
      type: { apiVersion: 'v1', kind: 'Secret' },
      namespace,
      labelSelector: `${componentSelector},${ownerLabel}`,
      metadataOnly: true,
      ...(logger ? { logger } : {}),
    });
    this.informer.addHandler({
      onAdd: (s) => this.put(s),
      onUpdate: (_, s) => this.put(s),
      // a delayed event of a deletion must not drop a Secret this process re-created since
      onDelete: (s) => this.removed(s.metadata.labels?.[ownerLabel] ?? '', s.metadata.name, s.metadata.resourceVersion),
    });
  }

  start(): void {
    this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** resolves once the watch has listed every revision Secret (reconciles wait for it, as for any cache) */
  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.informer.waitForSync(signal);
  }

  hasSynced(): boolean {
    return this.informer.hasSynced();
  }

  /** the revision Secrets of a BD, or undefined while the watch has not synced (ask the API server) */
  secretsOf(bdName: string): RevisionSecretMeta[] | undefined {
    if (!this.informer.hasSynced()) return undefined;
    return [...(this.byBd.get(bdName)?.values() ?? [])];
  }

  /** this process created (or found existing) a revision Secret */
  put(s: Pick<KubeObject, 'metadata'>): void {
    const bd = s.metadata.labels?.[this.ownerLabel];
    if (!bd) return;
    let secrets = this.byBd.get(bd);
    if (!secrets) this.byBd.set(bd, (secrets = new Map()));
    secrets.set(s.metadata.name, {
      name: s.metadata.name,
      resourceVersion: s.metadata.resourceVersion ?? '',
      labels: { ...s.metadata.labels },
      annotations: { ...s.metadata.annotations },
    });
  }

  /** this process deleted a revision Secret, or the watch says that version of it is gone */
  removed(bdName: string, secretName: string, resourceVersion?: string): void {
    const secrets = this.byBd.get(bdName);
    const known = secrets?.get(secretName);
    if (!known || (resourceVersion !== undefined && known.resourceVersion !== '' && known.resourceVersion !== resourceVersion)) return;
    secrets!.delete(secretName);
    if (secrets?.size === 0) this.byBd.delete(bdName);
  }
}
