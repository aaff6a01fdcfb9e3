/**
 * Writes around the applier's main path that touch objects it does not own yet: the install
 * namespace (created when missing, read once per process) and handing back an apply that
 * landed on an object which existed after all.
 */
import type { Logger } from 'pino';
import { ANNOTATION_REVISION, LABEL_LINEAGE, LABEL_OWNER_NAME } from '../../api/v1alpha2/types.ts';
import { isAlreadyExists, isForbidden } from '../kube/api-error.ts';
import { describeObject, type KubeClient, type KubeObject } from '../kube/types.ts';
import type { ManagedFieldsEntry } from './field-managers.ts';
import { isNamespace } from './object-id.ts';

/** install namespaces known to exist (read or created by this process) */
export class InstallNamespaces {
  private readonly namespaces = new Set<string>();

  constructor(private readonly log: Logger) {}

  known(name: string): boolean {
    return this.namespaces.has(name);
  }

  /** a write found it missing: read it again next time */
  forget(name: string): void {
    this.namespaces.delete(name);
  }

  /**
   * The install namespace must exist; the actor creates it when missing. An actor that may not
   * read or create namespaces (a ServiceAccount with rights only inside its own namespace, which
   * therefore exists) goes on: its writes say so if the namespace is missing. False when nothing
   * was done (the bundle brings the namespace itself, or the actor may not).
   */
  async ensure(client: KubeClient, name: string | undefined, objects: readonly KubeObject[], signal?: AbortSignal): Promise<boolean> {
    if (!name || objects.some((o) => isNamespace(o) && o.metadata.name === name)) return false;
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
    try {
      if (await client.get(ns, name, undefined, { signal })) {
        this.namespaces.add(name);
        return true;
      }
      await client.create(ns, { signal });
      this.log.info({ namespace: name }, 'created install namespace');
    } catch (e) {
      if (isForbidden(e)) return false;
      if (!isAlreadyExists(e)) throw e;
    }
    this.namespaces.add(name);
    return true;
  }
}

/**
 * A presumed-new object existed after all and the apply (without force, so sharing only equal
 * values) changed it: an empty apply by the same manager removes the fields only Hoist owns —
 * its labels and annotation, fields the object lacked — and leaves the shared ones as they were.
 * An object without any other manager cannot say which fields it had: then only Hoist's labels
 * and annotation are removed. Failing to hand back fails the apply: the labels must not stay.
 */
export async function handBack(client: KubeClient, obj: KubeObject, manager: string, log: Logger, signal?: AbortSignal): Promise<void> {
  const { name, namespace } = obj.metadata;
  const others = ((obj.metadata.managedFields ?? []) as ManagedFieldsEntry[]).some((e) => e.manager !== manager && !e.subresource);
  log.info({ object: describeObject(obj) }, 'object existed after all: handing back what the apply set');
  if (others) {
    await client.apply(
      { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name, ...(namespace ? { namespace } : {}) } },
      { fieldManager: manager, force: false, signal },
    );
    return;
  }
  const esc = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');
  await client.patch(
    obj,
    name,
    namespace,
    [
      { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
      { op: 'remove', path: `/metadata/labels/${esc(LABEL_OWNER_NAME)}` },
      { op: 'remove', path: `/metadata/labels/${esc(LABEL_LINEAGE)}` },
      { op: 'remove', path: `/metadata/annotations/${esc(ANNOTATION_REVISION)}` },
    ],
    'json',
    { signal },
  );
}
