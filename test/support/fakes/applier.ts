/**
 * The applier as the pipeline sees it (PipelineApplier, src/reconciler/pipeline/context.ts): it
 * writes a revision's objects into a FakeKube labelled for their BundleDeployment, as the real
 * applier's objects are (so the real prune, src/apply/prune.ts, finds them ours), remembers the
 * uid it wrote, and fails when a test says so. No SSA, collision or CRD logic: those are the real
 * applier's, tested against the real API server (test/integration/apply, test/e2e).
 */
import { LABEL_LINEAGE, LABEL_OWNER_NAME } from '../../../api/v1alpha2/types.ts';
import type { ApplyTarget } from '../../../src/apply/applier.ts';
import type { ApplyReport } from '../../../src/apply/result.ts';
import { objectId } from '../../../src/apply/object-id.ts';
import type { ObjectResult } from '../../../src/apply/result.ts';
import { describeObject, type KubeObject } from '../../../src/kube/types.ts';
import type { PipelineApplier } from '../../../src/reconciler/pipeline/context.ts';
import { hashOf } from '../../../src/util/hash.ts';
import type { FakeKube } from './kube.ts';

export interface ApplyFailure {
  err: Error;
  /** only applies of this revision number fail (default: every apply) */
  revision?: number;
  /** the objects are written before the failure is thrown (a failure part-way, after the writes) */
  afterWrites?: boolean;
}

export class FakeApplier implements PipelineApplier {
  /** every apply call, in order: which BD, which revision, which objects */
  readonly applies: Array<{ name: string; revision: number; objects: string[] }> = [];
  private failure: ApplyFailure | undefined;
  private readonly written = new Map<string, Map<string, string>>();

  constructor(private readonly kube: FakeKube) {}

  /** the next applies fail as told, until heal() */
  fail(failure: ApplyFailure): void {
    this.failure = failure;
  }

  heal(): void {
    this.failure = undefined;
  }

  async apply(target: ApplyTarget, objects: readonly KubeObject[]): Promise<ApplyReport> {
    this.applies.push({ name: target.name, revision: target.revision, objects: objects.map(describeObject) });
    const failure = this.failure && (this.failure.revision === undefined || this.failure.revision === target.revision) ? this.failure : undefined;
    if (failure && !failure.afterWrites) throw failure.err;
    const results = objects.map((o) => this.write(target, o));
    if (failure) throw failure.err;
    return { results, skippedOptional: [], appliedDigest: hashOf(results.map((r) => [r.id, r.written?.uid])) };
  }

  async ensureInstallNamespace(): Promise<void> {}

  writtenUid(bdName: string, obj: KubeObject): string | undefined {
    return this.written.get(bdName)?.get(objectId(obj));
  }

  forget(bdName: string): void {
    this.written.delete(bdName);
  }

  private write(target: ApplyTarget, o: KubeObject): ObjectResult {
    const live = this.kube.peek(o, o.metadata.name, o.metadata.namespace);
    const labels = { ...o.metadata.labels, [LABEL_OWNER_NAME]: target.name, [LABEL_LINEAGE]: target.lineage };
    const desired = { ...o, metadata: { ...o.metadata, labels } };
    const same = live !== undefined && hashOf(strip(live)) === hashOf(desired);
    const stored = same ? live : this.kube.put(desired);
    const uid = stored.metadata.uid!;
    let ours = this.written.get(target.name);
    if (!ours) this.written.set(target.name, (ours = new Map()));
    ours.set(objectId(o), uid);
    return { id: objectId(o), subject: describeObject(o), action: same ? 'unchanged' : live ? 'configured' : 'created', written: { uid } };
  }
}

/** the object without what the store adds (uid, resourceVersion) */
function strip(o: KubeObject): KubeObject {
  const { uid: _uid, resourceVersion: _rv, ...metadata } = o.metadata;
  return { ...o, metadata };
}
