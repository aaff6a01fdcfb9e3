/**
 * The revision store as the pipeline sees it (PipelineRevisions): revisions kept in memory by
 * BundleDeployment and number, with the inputs that produced them. Packing is JSON without
 * compression or a size cap (src/revisions/revision-store.ts and its integration test have those).
 */
import type { PackedRevision, RevisionRecord } from '../../../src/revisions/revision-store.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import type { PipelineRevisions } from '../../../src/reconciler/pipeline/context.ts';

export class FakeRevisionStore implements PipelineRevisions {
  private readonly stored = new Map<string, Map<number, { record: RevisionRecord; objects: KubeObject[] }>>();

  /** the revision numbers stored for a BD, ascending */
  numbers(bdName: string): number[] {
    return [...(this.stored.get(bdName)?.keys() ?? [])].sort((a, b) => a - b);
  }

  async pack(objects: readonly KubeObject[]): Promise<PackedRevision> {
    return { packed: Buffer.from(JSON.stringify(objects)) };
  }

  async save(bdName: string, rev: RevisionRecord, content: readonly KubeObject[] | PackedRevision): Promise<number> {
    const packed = 'packed' in content ? content.packed : Buffer.from(JSON.stringify(content));
    let revisions = this.stored.get(bdName);
    if (!revisions) this.stored.set(bdName, (revisions = new Map()));
    revisions.set(rev.number, { record: structuredClone(rev), objects: JSON.parse(packed.toString('utf8')) as KubeObject[] });
    return packed.length;
  }

  isStored(bdName: string, rev: { number: number; contentDigest: string }): boolean {
    return this.stored.get(bdName)?.get(rev.number)?.record.contentDigest === rev.contentDigest;
  }

  async list(bdName: string): Promise<RevisionRecord[]> {
    return this.numbers(bdName).map((n) => structuredClone(this.stored.get(bdName)!.get(n)!.record));
  }

  async findByInputs(bdName: string, inputs: string): Promise<RevisionRecord | undefined> {
    const found = [...(this.stored.get(bdName)?.values() ?? [])].find((r) => r.record.inputs === inputs);
    return found ? { number: found.record.number, contentDigest: found.record.contentDigest, inputs } : undefined;
  }

  async load(bdName: string, rev: RevisionRecord): Promise<KubeObject[] | undefined> {
    const found = this.stored.get(bdName)?.get(rev.number);
    return found?.record.contentDigest === rev.contentDigest ? structuredClone(found.objects) : undefined;
  }

  async prune(bdName: string, keep?: ReadonlySet<number>): Promise<number> {
    const revisions = this.stored.get(bdName);
    if (!revisions) return 0;
    const doomed = [...revisions.keys()].filter((n) => !keep?.has(n));
    for (const n of doomed) revisions.delete(n);
    return doomed.length;
  }
}
